//! One HTTP/1.1 request at a time to the control plane, over TCP or a Unix socket.
//!
//! Each request opens its own connection: the daemon is local or near, and a
//! fresh connection never carries a half-read answer from a failed request.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;

/// Where the control plane listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `http://host:port`, kept as the authority `host:port`.
    Tcp {
        /// `host:port`.
        authority: String,
    },
    /// `unix:///path/to.sock`.
    Unix {
        /// The socket's path.
        path: std::path::PathBuf,
    },
}

impl Endpoint {
    /// The endpoint of a URL: `http://HOST[:PORT]` (port 80 by default) or
    /// `unix:///PATH`. `https://` is refused: the daemon serves plain HTTP.
    pub fn parse(url: &str) -> Result<Endpoint, TransportError> {
        if let Some(path) = url.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(TransportError::BadUrl(url.to_string()));
            }
            return Ok(Endpoint::Unix { path: path.into() });
        }
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(TransportError::BadUrl(url.to_string()));
        };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') {
            return Err(TransportError::BadUrl(url.to_string()));
        }
        let authority = if authority.contains(':') && !authority.ends_with(']') {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        Ok(Endpoint::Tcp { authority })
    }
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The URL is neither `http://HOST:PORT` nor `unix:///PATH`.
    #[error("'{0}' is not a control plane URL; write http://HOST:PORT or unix:///PATH")]
    BadUrl(String),
    /// No connection could be made.
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    /// The connection broke, or the answer was not HTTP.
    #[error("{0}")]
    Http(String),
    /// No answer came in time.
    #[error("no answer in {0:?}")]
    Timeout(Duration),
}

/// An HTTP answer: the status and the body's bytes.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status, e.g. 200, 204, 409.
    pub status: u16,
    /// The body (empty for 204).
    pub body: Bytes,
}

/// Sends requests to one endpoint.
#[derive(Debug, Clone)]
pub struct Transport {
    endpoint: Endpoint,
    timeout: Duration,
}

impl Transport {
    /// A transport to `endpoint`; each request waits at most `timeout` for its answer.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Transport {
        Transport { endpoint, timeout }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Send one request. `body` is sent as JSON when given; `headers` are extra
    /// header pairs (e.g. `Idempotency-Key`).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, TransportError> {
        match tokio::time::timeout(self.timeout, self.send_now(method, path, body, headers)).await {
            Ok(answer) => answer,
            Err(_) => Err(TransportError::Timeout(self.timeout)),
        }
    }

    async fn send_now(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, TransportError> {
        let host = match &self.endpoint {
            Endpoint::Tcp { authority } => authority.clone(),
            Endpoint::Unix { .. } => "localhost".to_string(),
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", host);
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| TransportError::Http(e.to_string()))?;
        let response = match &self.endpoint {
            Endpoint::Tcp { authority } => {
                let stream = tokio::net::TcpStream::connect(authority)
                    .await
                    .map_err(TransportError::Connect)?;
                let _ = stream.set_nodelay(true);
                exchange(TokioIo::new(stream), request).await?
            }
            Endpoint::Unix { path } => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(TransportError::Connect)?;
                exchange(TokioIo::new(stream), request).await?
            }
        };
        Ok(response)
    }
}

async fn exchange<T>(io: T, request: Request<Full<Bytes>>) -> Result<Answer, TransportError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| TransportError::Http(e.to_string()))?;
    let driver = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| TransportError::Http(e.to_string()))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| TransportError::Http(e.to_string()))?
        .to_bytes();
    driver.abort();
    Ok(Answer { status, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_tcp_or_unix_endpoints() {
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:8080").unwrap(),
            Endpoint::Tcp {
                authority: "127.0.0.1:8080".into()
            }
        );
        assert_eq!(
            Endpoint::parse("http://localhost/").unwrap(),
            Endpoint::Tcp {
                authority: "localhost:80".into()
            }
        );
        assert_eq!(
            Endpoint::parse("unix:///run/s.sock").unwrap(),
            Endpoint::Unix {
                path: "/run/s.sock".into()
            }
        );
        assert!(Endpoint::parse("https://x").is_err());
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("unix://").is_err());
    }
}
