//! The signatures of webhook deliveries (`docs/reference/files.md`, "The hooks
//! file"): GitHub's `X-Hub-Signature-256` and Standard Webhooks v1. Both are
//! HMAC-SHA256 over the raw body bytes (`hmac` and `sha2`); a signature is checked
//! with the `hmac` crate's constant-time comparison, never with `==`.
//!
//! No clock is read here: the moment a Standard Webhooks timestamp is judged
//! against is an input.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How far a Standard Webhooks timestamp may be from now, either way, in seconds
/// (`docs/reference/bounds.md`).
pub const TIMESTAMP_WINDOW_SECONDS: i64 = 5 * 60;

/// The header of a GitHub signature.
pub const GITHUB_SIGNATURE: &str = "x-hub-signature-256";
/// The header of GitHub's delivery id, kept on a redelivery.
pub const GITHUB_DELIVERY: &str = "x-github-delivery";
/// The Standard Webhooks headers: the message id, the timestamp (seconds since
/// the epoch) and the signatures.
pub const WEBHOOK_ID: &str = "webhook-id";
/// See [`WEBHOOK_ID`].
pub const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
/// See [`WEBHOOK_ID`].
pub const WEBHOOK_SIGNATURE: &str = "webhook-signature";

/// How a hook checks its deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, the secret's
    /// bytes as the key.
    Github,
    /// Standard Webhooks v1: `webhook-signature: v1,<base64>` (several, separated
    /// by spaces) over `{webhook-id}.{webhook-timestamp}.{body}`, the key the
    /// base64 after `whsec_`.
    Standard,
    /// No check at all; only with `serve --insecure`.
    None,
}

impl Verify {
    /// The kind as the hooks file names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verify::Github => "github",
            Verify::Standard => "standard",
            Verify::None => "none",
        }
    }

    /// The kind named `text`.
    pub fn parse(text: &str) -> Option<Verify> {
        [Verify::Github, Verify::Standard, Verify::None]
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }

    /// The HMAC key of a secret as the environment gives it: GitHub's secret is
    /// its own bytes; a Standard Webhooks secret is `whsec_` and base64. The error
    /// is a sentence without the secret.
    pub fn key(self, secret: &str) -> Result<Vec<u8>, String> {
        match self {
            Verify::Standard => {
                let Some(encoded) = secret.strip_prefix("whsec_") else {
                    return Err("is not a Standard Webhooks secret (whsec_ and base64)".into());
                };
                match BASE64.decode(encoded) {
                    Ok(key) if !key.is_empty() => Ok(key),
                    _ => Err(
                        "is not a Standard Webhooks secret: the part after whsec_ is not base64"
                            .into(),
                    ),
                }
            }
            _ if secret.is_empty() => Err("is empty".into()),
            _ => Ok(secret.as_bytes().to_vec()),
        }
    }
}

/// Why a delivery's signature was refused; `reason` is its label in `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadSignature {
    /// A header the kind needs is not there.
    Missing(&'static str),
    /// A header is there but cannot be read (not `sha256=` and hex, a timestamp
    /// that is not a number, no `v1,` signature).
    Malformed(&'static str),
    /// The timestamp is more than five minutes from now.
    Stale,
    /// No signature matches any of the hook's secrets.
    Mismatch,
}

impl BadSignature {
    /// The reason as `/metrics` labels it.
    pub fn reason(&self) -> &'static str {
        match self {
            BadSignature::Missing(_) => "missing_header",
            BadSignature::Malformed(_) => "malformed_header",
            BadSignature::Stale => "stale_timestamp",
            BadSignature::Mismatch => "mismatch",
        }
    }

    /// The sentence of the 401 answer.
    pub fn sentence(&self) -> String {
        match self {
            BadSignature::Missing(header) => format!("the delivery has no {header} header"),
            BadSignature::Malformed(header) => format!("the {header} header cannot be read"),
            BadSignature::Stale => format!(
                "the webhook-timestamp is more than {} minutes from now",
                TIMESTAMP_WINDOW_SECONDS / 60
            ),
            BadSignature::Mismatch => "no signature matches the hook's secret".into(),
        }
    }
}

fn mac(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length")
}

fn standard_mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    let mut mac = mac(key);
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The value of GitHub's `X-Hub-Signature-256` for `body`.
pub fn github_signature(key: &[u8], body: &[u8]) -> String {
    let mut mac = mac(key);
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The value of one Standard Webhooks v1 signature (`v1,<base64>`).
pub fn standard_signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = standard_mac(key, id, &timestamp.to_string(), body);
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// Check a delivery: `header` gives a header's value by its lower-case name,
/// `keys` are the hook's keys (the current secret's, then the previous one's),
/// `now` is seconds since the epoch. `Verify::None` accepts everything.
pub fn verify<'h>(
    kind: Verify,
    keys: &[Vec<u8>],
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    now: i64,
) -> Result<(), BadSignature> {
    match kind {
        Verify::None => Ok(()),
        Verify::Github => {
            let value =
                header(GITHUB_SIGNATURE).ok_or(BadSignature::Missing("X-Hub-Signature-256"))?;
            let sent = value
                .trim()
                .strip_prefix("sha256=")
                .and_then(|text| hex::decode(text).ok())
                .ok_or(BadSignature::Malformed("X-Hub-Signature-256"))?;
            let matches = keys.iter().any(|key| {
                let mut mac = mac(key);
                mac.update(body);
                mac.verify_slice(&sent).is_ok()
            });
            matches.then_some(()).ok_or(BadSignature::Mismatch)
        }
        Verify::Standard => {
            let id = header(WEBHOOK_ID).ok_or(BadSignature::Missing(WEBHOOK_ID))?;
            let timestamp =
                header(WEBHOOK_TIMESTAMP).ok_or(BadSignature::Missing(WEBHOOK_TIMESTAMP))?;
            let signatures =
                header(WEBHOOK_SIGNATURE).ok_or(BadSignature::Missing(WEBHOOK_SIGNATURE))?;
            let at: i64 = timestamp
                .trim()
                .parse()
                .map_err(|_| BadSignature::Malformed(WEBHOOK_TIMESTAMP))?;
            if now.abs_diff(at) > TIMESTAMP_WINDOW_SECONDS.unsigned_abs() {
                return Err(BadSignature::Stale);
            }
            let sent: Vec<Vec<u8>> = signatures
                .split_whitespace()
                .filter_map(|one| one.strip_prefix("v1,"))
                .filter_map(|encoded| BASE64.decode(encoded).ok())
                .collect();
            if sent.is_empty() {
                return Err(BadSignature::Malformed(WEBHOOK_SIGNATURE));
            }
            let matches = keys.iter().any(|key| {
                let mac = standard_mac(key, id, timestamp.trim(), body);
                sent.iter().any(|one| mac.clone().verify_slice(one).is_ok())
            });
            matches.then_some(()).ok_or(BadSignature::Mismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(pairs: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    #[test]
    fn a_github_signature_is_the_one_githubs_documentation_gives() {
        // The example of GitHub's "Validating webhook deliveries".
        let signed = github_signature(b"It's a Secret to Everybody", b"Hello, World!");
        assert_eq!(
            signed,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        let sent = [(GITHUB_SIGNATURE, signed)];
        let keys = [b"It's a Secret to Everybody".to_vec()];
        assert_eq!(
            verify(Verify::Github, &keys, headers(&sent), b"Hello, World!", 0),
            Ok(())
        );
        assert_eq!(
            verify(Verify::Github, &keys, headers(&sent), b"Hello, World?", 0),
            Err(BadSignature::Mismatch)
        );
        assert_eq!(
            verify(Verify::Github, &keys, headers(&[]), b"", 0),
            Err(BadSignature::Missing("X-Hub-Signature-256"))
        );
    }

    #[test]
    fn a_standard_signature_is_the_one_the_specification_gives() {
        // The example of the Standard Webhooks specification.
        let key = Verify::Standard
            .key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let body = br#"{"test": 2432232314}"#;
        let signed = standard_signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signed, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let sent = [
            (WEBHOOK_ID, "msg_p5jXN8AQM9LWM0D4loKWxJek".to_string()),
            (WEBHOOK_TIMESTAMP, "1614265330".to_string()),
            (WEBHOOK_SIGNATURE, format!("v1,bm90IGl0 {signed}")),
        ];
        let check = |now| {
            verify(
                Verify::Standard,
                std::slice::from_ref(&key),
                headers(&sent),
                body,
                now,
            )
        };
        assert_eq!(check(1614265330 + 300), Ok(()));
        assert_eq!(check(1614265330 - 300), Ok(()));
        assert_eq!(check(1614265330 + 301), Err(BadSignature::Stale));
        let other = Verify::Standard.key("whsec_c2VjcmV0").unwrap();
        let wrong = verify(Verify::Standard, &[other], headers(&sent), body, 1614265330);
        assert_eq!(wrong, Err(BadSignature::Mismatch));
    }

    #[test]
    fn secrets_that_cannot_be_keys_are_refused_without_showing_them() {
        assert!(Verify::Standard.key("MfKQ9r8").is_err());
        assert!(Verify::Standard.key("whsec_***").is_err());
        assert!(Verify::Github.key("").is_err());
        let sentence = Verify::Standard.key("whsec_***").unwrap_err();
        assert!(!sentence.contains("***"), "{sentence}");
    }
}
