//! One HTTP/1.1 request at a time to the control plane, over TCP, a Unix socket or
//! https, on hyper-util's client.
//!
//! By default each request opens its own connection: the daemon is local or near,
//! and a fresh connection never carries a half-read answer from a failed request.
//! [`Transport::keep_alive`] instead keeps idle connections for the next request
//! (the benchmark uses it, so that it measures the daemon and not connects); a
//! connection goes back to the pool only after its answer was read whole, and a
//! request whose pooled connection closed before the request left is sent again
//! on a fresh one.

use std::future::Future;
use std::io;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::{capture_connection, CaptureConnection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::access::AccessKey;
use super::connector::Connector;
use super::tls::{Tls, TlsOptions};

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
    /// `https://host:port`: TLS over TCP.
    Https {
        /// `host:port`.
        authority: String,
        /// The host alone, without brackets: the name the server's certificate
        /// must bear.
        host: String,
    },
}

impl Endpoint {
    /// The endpoint of a URL: `http://HOST[:PORT]` (port 80 by default),
    /// `https://HOST[:PORT]` (port 443 by default) or `unix:///PATH`.
    pub fn parse(url: &str) -> Result<Endpoint, TransportError> {
        let bad = || TransportError::BadUrl(url.to_string());
        if let Some(path) = url.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(bad());
            }
            return Ok(Endpoint::Unix { path: path.into() });
        }
        if let Some(rest) = url.strip_prefix("http://") {
            let authority = authority(rest, 80).ok_or_else(bad)?;
            return Ok(Endpoint::Tcp { authority });
        }
        let rest = url.strip_prefix("https://").ok_or_else(bad)?;
        let authority = authority(rest, 443).ok_or_else(bad)?;
        let host = match authority.strip_prefix('[') {
            Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
            None => authority.rsplit_once(':').map_or("", |(host, _)| host),
        };
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Endpoint::Https {
            host: host.to_string(),
            authority,
        })
    }
}

/// The authority `host:port` of what follows a URL's scheme (`port` when it
/// names none), or `None` when it is empty or has a path.
fn authority(rest: &str, port: u16) -> Option<String> {
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') {
        return None;
    }
    if authority.contains(':') && !authority.ends_with(']') {
        Some(authority.to_string())
    } else {
        Some(format!("{authority}:{port}"))
    }
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The URL is none of `http://HOST:PORT`, `https://HOST:PORT` and `unix:///PATH`.
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

/// Sends requests to one endpoint. Clones share the keep-alive pool, if any.
#[derive(Clone)]
pub struct Transport {
    endpoint: Endpoint,
    timeout: Duration,
    /// The scheme and authority of every request's URI (the pool's key).
    base: String,
    client: Client<Connector, Full<Bytes>>,
    /// Sent as `Authorization: Bearer SECRET` on every request, when given.
    access: Option<AccessKey>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("endpoint", &self.endpoint)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport to `endpoint`; each request waits at most `timeout` for its
    /// answer. An https endpoint trusts the platform's root certificates.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Transport {
        Transport::build(endpoint, timeout, false, None)
    }

    /// A transport that keeps connections open between requests (HTTP/1.1
    /// keep-alive) and reuses them. Requests sent at once each use their own
    /// connection, so the pool grows to the number of requests in flight.
    pub fn keep_alive(endpoint: Endpoint, timeout: Duration) -> Transport {
        Transport::build(endpoint, timeout, true, None)
    }

    /// As [`Transport::new`] or [`Transport::keep_alive`]; an https endpoint
    /// trusts what `tls` says (the platform's roots when `None`).
    pub(crate) fn build(
        endpoint: Endpoint,
        timeout: Duration,
        keep_alive: bool,
        tls: Option<Tls>,
    ) -> Transport {
        let tls = match (&endpoint, tls) {
            (Endpoint::Https { .. }, None) => TlsOptions::default().load().ok(),
            (_, tls) => tls,
        };
        let base = match &endpoint {
            Endpoint::Tcp { authority } => format!("http://{authority}"),
            // The pool needs an authority; the connector dials the socket.
            Endpoint::Unix { .. } => "http://localhost".to_string(),
            Endpoint::Https { authority, .. } => format!("https://{authority}"),
        };
        let mut builder = Client::builder(TokioExecutor::new());
        if !keep_alive {
            // No idle connection is kept, so each request opens its own.
            builder.pool_max_idle_per_host(0);
        }
        Transport {
            client: builder.build(Connector::new(endpoint.clone(), tls)),
            endpoint,
            timeout,
            base,
            access: None,
        }
    }

    /// The transport sending `key` with every request (none when `None`).
    pub fn with_access_key(mut self, key: Option<AccessKey>) -> Transport {
        self.access = key;
        self
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
        self.send_waiting(method, path, body, headers, Duration::ZERO)
            .await
    }

    /// [`Transport::send`] of a request whose answer may come `longer` after the
    /// transport's timeout (a claim that waits for a task,
    /// `docs/reference/http.md`).
    pub async fn send_waiting(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
        longer: Duration,
    ) -> Result<Answer, TransportError> {
        let mut request = self.request(method, path, body, headers)?;
        let connection = capture_connection(&mut request);
        let exchange = async {
            let response = self.head(request).await?;
            let status = response.status().as_u16();
            let total = response
                .headers()
                .get(stateous_shared::wire::TOTAL_COUNT)
                .and_then(|value| value.to_str().ok())
                .and_then(|text| text.parse().ok());
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|error| TransportError::Http(error.to_string()))?
                .to_bytes();
            Ok(Answer {
                status,
                body,
                total,
            })
        };
        self.within_longer(&connection, exchange, longer).await
    }

    /// `work` on the request whose connection `connection` captures, given the
    /// transport's timeout. A timeout before any connection was made is
    /// [`TransportError::Connect`] (the request went nowhere, as when a host is
    /// down), else [`TransportError::Timeout`].
    pub(crate) async fn within<T>(
        &self,
        connection: &CaptureConnection,
        work: impl Future<Output = Result<T, TransportError>>,
    ) -> Result<T, TransportError> {
        self.within_longer(connection, work, Duration::ZERO).await
    }

    /// [`Transport::within`], the timeout `longer` by that much.
    async fn within_longer<T>(
        &self,
        connection: &CaptureConnection,
        work: impl Future<Output = Result<T, TransportError>>,
        longer: Duration,
    ) -> Result<T, TransportError> {
        let timeout = self.timeout.saturating_add(longer);
        match tokio::time::timeout(timeout, work).await {
            Ok(done) => done,
            Err(_) if connection.connection_metadata().is_some() => {
                Err(TransportError::Timeout(timeout))
            }
            Err(_) => Err(TransportError::Connect(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no connection in {:?}", self.timeout),
            ))),
        }
    }

    /// Send `request` and wait for the head of its answer; the body streams.
    pub(crate) async fn head(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, TransportError> {
        self.client.request(request).await.map_err(failure)
    }

    /// The request, with the `host` header and a JSON content type when it has a body.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Request<Full<Bytes>>, TransportError> {
        let host = match &self.endpoint {
            Endpoint::Tcp { authority } | Endpoint::Https { authority, .. } => authority.as_str(),
            Endpoint::Unix { .. } => "localhost",
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("host", host);
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        if let Some(key) = &self.access {
            builder = builder.header("authorization", key.header());
        }
        builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| TransportError::Http(e.to_string()))
    }
}

/// The transport's error for a request hyper-util's client could not carry out:
/// a connector's failure is [`TransportError::Connect`] with the connector's
/// words; anything after is [`TransportError::Http`] with hyper's.
fn failure(error: hyper_util::client::legacy::Error) -> TransportError {
    use std::error::Error as _;
    let cause = error.source();
    let said = cause.map_or_else(|| error.to_string(), |cause| cause.to_string());
    if !error.is_connect() {
        return TransportError::Http(format!("{said}{}", after_handshake(cause)));
    }
    let kind = cause
        .and_then(|cause| cause.downcast_ref::<io::Error>())
        .map_or(io::ErrorKind::Other, io::Error::kind);
    TransportError::Connect(io::Error::new(kind, said))
}

/// What a TLS alert deeper in `cause`'s chain says, for an error hyper words only
/// as `operation was canceled`: with TLS 1.3 a daemon that wants a client
/// certificate (`--tls-client-ca`) refuses after the client's handshake is over,
/// on its first read. Empty when the chain holds no such alert.
fn after_handshake(cause: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut next = cause.and_then(|cause| cause.source());
    while let Some(error) = next {
        let text = error.to_string();
        if text.contains("CertificateRequired") {
            return format!(
                ": {text} (the control plane asks for a client certificate: give one \
                 with --client-cert and --client-key)"
            );
        }
        // A certificate signed by a CA the daemon does not know; or by a key other
        // than that of the CA its issuer names (rustls: a decrypt error).
        if text.contains("UnknownCA") || text.contains("DecryptError") {
            return format!(
                ": {text} (the control plane does not trust the CA that signed the client \
                 certificate: it trusts the CA of its --tls-client-ca)"
            );
        }
        if text.contains("alert") {
            return format!(": {text}");
        }
        next = error.source();
    }
    String::new()
}

#[cfg(test)]
mod tests;
