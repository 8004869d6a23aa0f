//! The addresses a client is given: one URL, or several separated by commas
//! (a serving control plane and its standby: README.md, "Run a standby"), each checked here, so a
//! mistyped address reads as a mistake rather than as an outage.

use super::error::ClientError;
use super::transport::Endpoint;

/// The addresses of `list`, in order, each as its URL less a trailing `/` and its
/// endpoint. `list` is one URL or several separated by commas; spaces around
/// each are ignored.
///
/// Errors: [`ClientError::BadUrl`] when an element is empty (`a,,b`, a comma at
/// either end) or is not a URL of a control plane; the sentence names it.
pub(super) fn addresses(list: &str) -> Result<Vec<(String, Endpoint)>, ClientError> {
    if !list.contains(',') {
        return Ok(vec![checked(list)?]);
    }
    let mut addresses = Vec::new();
    for (at, element) in list.split(',').enumerate() {
        let element = element.trim();
        if element.is_empty() {
            return Err(ClientError::BadUrl(format!(
                "{} is not a list of control plane URLs: address {} is empty; write \
                 URL,URL with each http://HOST:PORT or unix:///PATH",
                shown(list),
                at + 1
            )));
        }
        addresses.push(checked(element)?);
    }
    Ok(addresses)
}

/// `text`, cut to 100 characters for an error's sentence.
fn shown(text: &str) -> String {
    if text.chars().count() > 100 {
        format!("{}...", text.chars().take(100).collect::<String>())
    } else {
        text.to_string()
    }
}

/// The URL less a trailing `/`, and its endpoint; a URL whose host is not a host
/// name or an IP address is refused here rather than at connect time, where it
/// would read like an outage (the reference checks hosts the same way).
pub(super) fn checked(url: &str) -> Result<(String, Endpoint), ClientError> {
    if url.trim().is_empty() {
        return Err(ClientError::BadUrl(
            "the URL of the control plane is empty; write http://HOST:PORT or unix:///PATH"
                .to_string(),
        ));
    }
    let trimmed = url.trim_end_matches('/');
    let trimmed = if trimmed.is_empty() { url } else { trimmed };
    let shown = shown(trimmed);
    let endpoint = Endpoint::parse(trimmed).map_err(|_| {
        ClientError::BadUrl(format!(
            "{shown} is not a URL of a control plane; write http://HOST:PORT or unix:///PATH"
        ))
    })?;
    if let Endpoint::Tcp { authority } | Endpoint::Https { authority, .. } = &endpoint {
        if authority.starts_with('[') && !authority.contains(']') {
            return Err(ClientError::BadUrl(format!(
                "{shown} is not a URL: its IPv6 address has no closing ']'"
            )));
        }
        if let Some(problem) = authority_problem(authority) {
            return Err(ClientError::BadUrl(format!(
                "{shown} has a host that is not valid: {problem}"
            )));
        }
    }
    Ok((trimmed.to_string(), endpoint))
}

/// Why `host:port` cannot be connected to, or `None` when it looks right: an IP
/// address (IPv6 in brackets) or dot-separated labels of letters, digits, `-`
/// and `_`, then a port number.
fn authority_problem(authority: &str) -> Option<&'static str> {
    const RULE: &str = "a host has only letters, digits, '-' and '.', or is an IP address";
    let Some((host, port)) = authority.rsplit_once(':') else {
        return Some(RULE);
    };
    if port.parse::<u16>().is_err() {
        return Some("the port is not a number from 0 to 65535");
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return match inner.parse::<std::net::Ipv6Addr>() {
            Ok(_) => None,
            Err(_) => Some(RULE),
        };
    }
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return None;
    }
    let bare = host.strip_suffix('.').unwrap_or(host);
    let label_ok = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if bare.split('.').all(label_ok) {
        None
    } else {
        Some(RULE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_split_at_commas_and_each_address_checked() {
        let two = addresses("http://a:1/, unix:///s.sock").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].0, "http://a:1");
        assert_eq!(two[1].0, "unix:///s.sock");
        let error = addresses("http://a:1,,http://b:2").unwrap_err().to_string();
        assert_eq!(
            error,
            "http://a:1,,http://b:2 is not a list of control plane URLs: address 2 is \
             empty; write URL,URL with each http://HOST:PORT or unix:///PATH"
        );
        let error = addresses("http://a:1,").unwrap_err().to_string();
        assert!(error.contains("address 2 is empty"), "{error}");
        let error = addresses("http://a:1,ftp://b").unwrap_err().to_string();
        assert_eq!(
            error,
            "ftp://b is not a URL of a control plane; write http://HOST:PORT or unix:///PATH"
        );
        let error = addresses("").unwrap_err().to_string();
        assert!(
            error.starts_with("the URL of the control plane is empty"),
            "{error}"
        );
    }
}
