//! One HTTP/1.1 request at a time to the control plane, over TCP or a Unix socket.
//!
//! By default each request opens its own connection: the daemon is local or near,
//! and a fresh connection never carries a half-read answer from a failed request.
//! [`Transport::keep_alive`] instead keeps idle connections for the next request
//! (the benchmark uses it, so that it measures the daemon and not connects); a
//! connection goes back to the pool only after its answer was read whole.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    /// No connection could be made (refused, no such socket, or none within the
    /// timeout): the request went nowhere.
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
    /// `GET /tokens`: how many tokens match in all (the `x-total-count` header).
    pub total: Option<u64>,
}

/// The sending half of an open HTTP/1.1 connection.
pub(super) type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Idle keep-alive connections, shared by the clones of one transport.
type Pool = Arc<Mutex<Vec<Sender>>>;

/// Sends requests to one endpoint. Clones share the keep-alive pool, if any.
#[derive(Debug, Clone)]
pub struct Transport {
    endpoint: Endpoint,
    timeout: Duration,
    /// `None`: a connection per request. `Some`: idle connections to reuse.
    pool: Option<Pool>,
}

impl Transport {
    /// A transport to `endpoint`; each request waits at most `timeout` for its answer.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Transport {
        Transport {
            endpoint,
            timeout,
            pool: None,
        }
    }

    /// A transport that keeps connections open between requests (HTTP/1.1
    /// keep-alive) and reuses them. Requests sent at once each use their own
    /// connection, so the pool grows to the number of requests in flight.
    pub fn keep_alive(endpoint: Endpoint, timeout: Duration) -> Transport {
        Transport {
            endpoint,
            timeout,
            pool: Some(Arc::default()),
        }
    }

    /// How long a request waits for its answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
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
        let connected = AtomicBool::new(false);
        let sending = self.send_now(method, path, body, headers, &connected);
        match tokio::time::timeout(self.timeout, sending).await {
            Ok(answer) => answer,
            Err(_) => Err(self.timed_out(&connected)),
        }
    }

    /// The error of a request whose time ran out: [`TransportError::Connect`]
    /// while no connection was made yet (so the request went nowhere, as when
    /// a host is down), else [`TransportError::Timeout`].
    pub(super) fn timed_out(&self, connected: &AtomicBool) -> TransportError {
        if connected.load(Ordering::SeqCst) {
            return TransportError::Timeout(self.timeout);
        }
        TransportError::Connect(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no connection in {:?}", self.timeout),
        ))
    }

    async fn send_now(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
        connected: &AtomicBool,
    ) -> Result<Answer, TransportError> {
        let request = self.request(method, path, body, headers)?;
        let Some(pool) = &self.pool else {
            let (sender, driver) = self.connect().await?;
            connected.store(true, Ordering::SeqCst);
            let answer = exchange(sender, request).await;
            driver.abort();
            return answer.map(|(answer, _)| answer);
        };
        let idle = self.take_idle(pool);
        let fresh = || async {
            let (sender, _) = self.connect().await?;
            connected.store(true, Ordering::SeqCst);
            Ok::<_, TransportError>(sender)
        };
        let (answer, sender) = match idle {
            Some(sender) => {
                connected.store(true, Ordering::SeqCst);
                match try_exchange(sender, request).await {
                    Ok(done) => done,
                    // The idle connection was closed before the request left: it
                    // is safe to send the same request on a fresh one.
                    Err(Failed::Unsent(request, _)) => exchange(fresh().await?, *request).await?,
                    Err(Failed::Broken(why)) => return Err(TransportError::Http(why)),
                }
            }
            None => exchange(fresh().await?, request).await?,
        };
        if let Ok(mut idle) = pool.lock() {
            idle.push(sender);
        }
        Ok(answer)
    }

    /// The request, with the `host` header and a JSON content type when it has a body.
    pub(super) fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Request<Full<Bytes>>, TransportError> {
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
        builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| TransportError::Http(e.to_string()))
    }

    /// An idle pooled connection that is still open, if there is one.
    fn take_idle(&self, pool: &Pool) -> Option<Sender> {
        let mut idle = pool.lock().ok()?;
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() && sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// A new connection: its sender, and the task that drives it.
    pub(super) async fn connect(
        &self,
    ) -> Result<(Sender, tokio::task::JoinHandle<()>), TransportError> {
        match &self.endpoint {
            Endpoint::Tcp { authority } => {
                let stream = tokio::net::TcpStream::connect(authority)
                    .await
                    .map_err(TransportError::Connect)?;
                let _ = stream.set_nodelay(true);
                handshake(TokioIo::new(stream)).await
            }
            Endpoint::Unix { path } => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(TransportError::Connect)?;
                handshake(TokioIo::new(stream)).await
            }
        }
    }
}

async fn handshake<T>(io: T) -> Result<(Sender, tokio::task::JoinHandle<()>), TransportError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| TransportError::Http(e.to_string()))?;
    let driver = tokio::spawn(async move {
        // The connection's own error shows up as the request's error.
        let _ = connection.await;
    });
    Ok((sender, driver))
}

/// Why an exchange on a connection failed.
enum Failed {
    /// The request never left: it comes back, to send on another connection.
    Unsent(Box<Request<Full<Bytes>>>, String),
    /// The request may have been sent; the answer is lost.
    Broken(String),
}

/// Send `request` on `sender` and read the whole answer; the sender comes back for
/// reuse.
async fn exchange(
    sender: Sender,
    request: Request<Full<Bytes>>,
) -> Result<(Answer, Sender), TransportError> {
    try_exchange(sender, request)
        .await
        .map_err(|failed| match failed {
            Failed::Unsent(_, why) | Failed::Broken(why) => TransportError::Http(why),
        })
}

/// As [`exchange`], but a failure tells whether the request left.
async fn try_exchange(
    mut sender: Sender,
    request: Request<Full<Bytes>>,
) -> Result<(Answer, Sender), Failed> {
    if let Err(error) = sender.ready().await {
        return Err(Failed::Unsent(Box::new(request), error.to_string()));
    }
    let response = match sender.try_send_request(request).await {
        Ok(response) => response,
        Err(mut failed) => {
            let why = failed.error().to_string();
            return Err(match failed.take_message() {
                Some(request) => Failed::Unsent(Box::new(request), why),
                None => Failed::Broken(why),
            });
        }
    };
    let status = response.status().as_u16();
    let total = response
        .headers()
        .get(crate::operate::TOTAL_COUNT)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse().ok());
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| Failed::Broken(error.to_string()))?
        .to_bytes();
    Ok((
        Answer {
            status,
            body,
            total,
        },
        sender,
    ))
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
