//! How the HTTP client reaches an [`Endpoint`]: a TCP connection, a Unix socket,
//! or TLS over TCP. Each transport has its own connector, so the connector dials
//! its endpoint whatever the request's URI names: the URI only keys the pool.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};

use super::tls::Tls;
use super::transport::Endpoint;

/// Dials one endpoint; `tls` is the configuration of an https endpoint (`None`
/// only when it could not be set up, which its connections then say).
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    endpoint: Endpoint,
    tls: Option<Tls>,
}

impl Connector {
    pub(crate) fn new(endpoint: Endpoint, tls: Option<Tls>) -> Connector {
        Connector { endpoint, tls }
    }

    /// A new connection to the endpoint. A TLS failure is an error of the
    /// connection, so the request is known not to have left.
    async fn connect(self) -> io::Result<Stream> {
        match &self.endpoint {
            Endpoint::Tcp { authority } => Ok(boxed(tcp(authority).await?)),
            Endpoint::Unix { path } => Ok(boxed(tokio::net::UnixStream::connect(path).await?)),
            Endpoint::Https { authority, host } => {
                let Some(tls) = &self.tls else {
                    return Err(io::Error::other("TLS could not be set up"));
                };
                let name = ServerName::try_from(host.clone()).map_err(|error| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{host} cannot name a TLS server: {error}"),
                    )
                })?;
                let stream = tcp(authority).await?;
                let stream = tokio_rustls::TlsConnector::from(tls.0.clone())
                    .connect(name, stream)
                    .await
                    .map_err(|error| {
                        io::Error::new(
                            error.kind(),
                            format!(
                                "the TLS handshake with {host} failed: {error}{}",
                                hint(&error)
                            ),
                        )
                    })?;
                Ok(boxed(stream))
            }
        }
    }
}

/// What to do about a handshake that failed for a reason an operator can fix
/// here: a certificate no trusted CA signed, or one for another name.
fn hint(error: &io::Error) -> &'static str {
    let text = error.to_string();
    if text.contains("UnknownIssuer") || text.contains("BadSignature") {
        " (the control plane's certificate is not signed by a CA this client trusts: \
         give that CA with --cacert or STATEOUS_CACERT)"
    } else if text.contains("UnknownCA") || text.contains("DecryptError") {
        " (the control plane does not trust the CA that signed the client certificate: \
         it trusts the CA of its --tls-client-ca)"
    } else if text.contains("NotValidForName") {
        " (the control plane's certificate does not name the host of the URL)"
    } else {
        ""
    }
}

/// A TCP connection without Nagle's delay: requests are small and each waits
/// for its answer.
async fn tcp(authority: &str) -> io::Result<tokio::net::TcpStream> {
    let stream = tokio::net::TcpStream::connect(authority).await?;
    // A socket that keeps Nagle's delay is slower, not wrong.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        Box::pin(self.clone().connect())
    }
}

/// Any of the byte streams a connector makes.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

impl Connection for Box<dyn Io> {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// An open connection, whichever way it was made.
pub(crate) type Stream = TokioIo<Box<dyn Io>>;

/// A connection as the pool keeps it.
fn boxed(io: impl Io + 'static) -> Stream {
    TokioIo::new(Box::new(io))
}
