//! The exporter's HTTP client: `opentelemetry-http`'s [`HttpClient`] over hyper's
//! pooled client, plain TCP or TLS (rustls on ring, the system's trusted roots),
//! with a deadline on the whole exchange. The exporter asks for an answer per
//! batch; the pool keeps the connection between batches.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};

/// The most of a collector's answer read: it says only whether it took the spans.
const MAX_ANSWER: usize = 1 << 20;

/// An HTTP client for the exporter; each exchange must end within `timeout`.
#[derive(Clone)]
pub struct Http {
    client: Client<Connector, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Http {
    /// A client whose exchanges end within `timeout`, for `http://` and
    /// `https://` collectors. Needs a tokio runtime when it sends.
    pub fn new(timeout: Duration) -> Http {
        let tls = tls_config().map(Arc::new);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(Connector { tls });
        Http { client, timeout }
    }
}

#[async_trait::async_trait]
impl HttpClient for Http {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = hyper::Request::from_parts(parts, Full::new(body));
        let exchange = async {
            let answer = self.client.request(request).await?;
            let (parts, body) = answer.into_parts();
            let body = Limited::new(body, MAX_ANSWER).collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer within {:?}", self.timeout).into()),
        }
    }
}

/// rustls on ring with the system's trusted certificates; `None` if it cannot be
/// set up (each https connection then fails, saying so).
fn tls_config() -> Option<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?;
    Some(builder.with_root_certificates(roots).with_no_client_auth())
}

/// Dials the host of each request's URI, with TLS for `https`.
#[derive(Clone)]
struct Connector {
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Connector {
    async fn connect(self, uri: Uri) -> io::Result<Stream> {
        let host = uri
            .host()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the URL has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        let _ = tcp.set_nodelay(true);
        if !https {
            return Ok(TokioIo::new(Box::new(tcp)));
        }
        let Some(tls) = self.tls else {
            return Err(io::Error::other("TLS could not be set up"));
        };
        let name = ServerName::try_from(host)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error.to_string()))?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await?;
        Ok(TokioIo::new(Box::new(stream)))
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(self.clone().connect(uri))
    }
}

/// Either byte stream the connector makes.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

impl Connection for Box<dyn Io> {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// An open connection, plain or TLS.
type Stream = TokioIo<Box<dyn Io>>;
