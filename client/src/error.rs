//! How a call of the [`Client`](super::Client) fails: refused, unreachable, a bad
//! URL, or an answer that is not the API's.
//!
//! The split follows the reference (`docs/how-to/steer-tokens.md`, "From Python:
//! the client"): a refusal carries the HTTP status and the refusal's code, and a
//! caller retries only what did not reach the control plane.

use stateous_shared::refusal::{Code, Refusal};

use super::transport::TransportError;

/// Why a call of the client did not succeed. The `Display` text is one sentence,
/// the one the `token` commands print after `error: `.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The control plane answered 400 or more. `refusal` is the answer's
    /// `{"error", "code"}`; when the body is not such a refusal (a proxy, an
    /// unknown code), `synthetic` is true and the code is guessed from the status
    /// (see [`synthetic_code`]) while the sentence is the body's text.
    #[error("the control plane at {url} refused ({status}): {}", refusal.error)]
    Refused {
        /// The URL of the address that gave this result (the last one tried).
        url: String,
        /// The HTTP status, e.g. 409.
        status: u16,
        /// The refusal: its code for programs, its sentence for people.
        refusal: Refusal,
        /// True when the body was not a refusal of the API and the code is a guess.
        synthetic: bool,
    },
    /// No answer: nothing listens at the URL, the connection broke, or the answer
    /// took longer than the client's timeout. The request may or may not have
    /// been applied; request ids, idempotency keys and attempts make a retry safe.
    #[error("cannot reach the control plane at {url}: {source}")]
    Unreachable {
        /// The URL of the address that gave this result (the last one tried).
        url: String,
        /// What the transport saw.
        source: TransportError,
    },
    /// The URL cannot name a control plane.
    #[error("{0}")]
    BadUrl(String),
    /// The TLS options cannot be used: a file cannot be read, or holds no
    /// certificate or key.
    #[error("{0}")]
    BadTls(String),
    /// The call cannot be sent as given (a name that is empty); nothing was sent.
    #[error("{0}")]
    BadCall(String),
    /// The control plane answered with success but the body is not what the route
    /// answers: usually a URL that points at some other server.
    #[error(
        "the control plane at {url} sent an answer of the wrong shape ({detail}); check the URL"
    )]
    BadAnswer {
        /// The URL of the address that gave this result (the last one tried).
        url: String,
        /// The HTTP status of the answer.
        status: u16,
        /// What was wrong with it.
        detail: String,
    },
}

impl ClientError {
    /// True when trying the same call again may succeed: the control plane was not
    /// reached, or it answered 502, 503 or 504 (a proxy, a restart, `database_busy`,
    /// `not_serving` or `standby` while another control plane may take over), as
    /// the reference's supervisor counts them (`supervisor/remote.py`). A client of
    /// several addresses has already tried each of them once where that was safe.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } => true,
            ClientError::Refused { status, .. } => matches!(status, 502..=504),
            ClientError::BadUrl(_)
            | ClientError::BadTls(_)
            | ClientError::BadCall(_)
            | ClientError::BadAnswer { .. } => false,
        }
    }

    /// The refusal's code, when the control plane refused.
    pub fn code(&self) -> Option<Code> {
        match self {
            ClientError::Refused { refusal, .. } => Some(refusal.code),
            _ => None,
        }
    }

    /// The HTTP status, when the control plane answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Refused { status, .. } | ClientError::BadAnswer { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The refusal of an answer of status 400 or more with body `body`.
    pub(crate) fn refused(url: &str, status: u16, body: &[u8]) -> ClientError {
        if let Ok(refusal) = serde_json::from_slice::<Refusal>(body) {
            return ClientError::Refused {
                url: url.to_string(),
                status,
                refusal,
                synthetic: false,
            };
        }
        // Not a refusal of the API: keep whatever sentence there is, on one line.
        let sentence = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| value.get("error")?.as_str().map(str::to_string))
            .unwrap_or_else(|| {
                let text = String::from_utf8_lossy(body);
                text.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(200)
                    .collect()
            });
        let sentence = if sentence.is_empty() {
            format!("the control plane answered {status}")
        } else {
            sentence
        };
        ClientError::Refused {
            url: url.to_string(),
            status,
            refusal: Refusal::new(synthetic_code(status), sentence),
            synthetic: true,
        }
    }
}

/// The code that stands for an answer of `status` without a refusal body: the
/// documented code of that status (`not_found` for 404, `method_not_allowed` for
/// 405, `bad_request` for other 4xx, `database_busy` for 502 to 504 since they
/// mean "try again", `unexpected` for the rest).
pub fn synthetic_code(status: u16) -> Code {
    match status {
        404 => Code::NotFound,
        405 => Code::MethodNotAllowed,
        409 => Code::TokenNotActive,
        422 => Code::InvalidBody,
        400..=499 => Code::BadRequest,
        502..=504 => Code::DatabaseBusy,
        _ => Code::Unexpected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_body_is_read_and_anything_else_is_synthetic() {
        let body = br#"{"error": "token 'T' is cancelled", "code": "token_not_active"}"#;
        let error = ClientError::refused("http://x:1", 409, body);
        assert_eq!(error.code(), Some(Code::TokenNotActive));
        assert_eq!(
            error.to_string(),
            "the control plane at http://x:1 refused (409): token 'T' is cancelled"
        );
        assert!(matches!(
            error,
            ClientError::Refused {
                synthetic: false,
                ..
            }
        ));

        let proxy = ClientError::refused("http://x:1", 502, b"<html>\n Bad   gateway\n</html>");
        assert_eq!(
            proxy.to_string(),
            "the control plane at http://x:1 refused (502): <html> Bad gateway </html>"
        );
        assert!(matches!(
            proxy,
            ClientError::Refused {
                synthetic: true,
                ..
            }
        ));
        assert!(proxy.is_retryable());

        let unknown = ClientError::refused("http://x:1", 409, br#"{"error":"new","code":"zz"}"#);
        assert_eq!(unknown.code(), Some(Code::TokenNotActive));
        assert!(unknown.to_string().ends_with("(409): new"));
        assert!(!unknown.is_retryable());

        let empty = ClientError::refused("http://x:1", 404, b"");
        assert!(empty
            .to_string()
            .ends_with("(404): the control plane answered 404"));
        assert_eq!(empty.code(), Some(Code::NotFound));
    }
}
