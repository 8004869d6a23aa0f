//! One delivery over HTTP or HTTPS (`docs/notifications.md`, "Delivery"): a POST
//! with a deadline over the whole exchange (connect, TLS, request, answer), a cap
//! on the answer's body, and a connection kept for the next request to the same
//! place. Only a 2xx answer is a delivery; a 3xx, 4xx or 5xx, a bad certificate,
//! a timeout or an answer over the cap is a failed attempt with its reason. An
//! attempt that could not reach the receiver at all (no connection, TLS or HTTP
//! handshake) says so ([`Answered::unreachable`]): the queue then waits for the
//! receiver rather than trying its other notifications.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// The most bytes of an answer's body read; more is a failed attempt.
pub const ANSWER_CAP: usize = 64 * 1024;

/// What one attempt got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// Why it is not a delivery; `None` for a 2xx.
    pub failure: Option<String>,
    /// No request went out: the connection (TCP, TLS or the HTTP handshake)
    /// failed, so any other notification to this URL would fail alike.
    pub unreachable: bool,
}

/// A connection kept per subscription: where it goes, and its sender.
pub struct Kept {
    place: String,
    sender: SendRequest<Full<Bytes>>,
}

fn tls_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|error| format!("TLS cannot be set up: {error}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

async fn connect(uri: &hyper::Uri) -> Result<SendRequest<Full<Bytes>>, String> {
    let https = uri.scheme_str() == Some("https");
    let host = uri.host().ok_or("the URL has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let stream = TcpStream::connect((bare.as_str(), port))
        .await
        .map_err(|error| format!("cannot connect: {error}"))?;
    let _ = stream.set_nodelay(true);
    if https {
        let name = ServerName::try_from(bare)
            .map_err(|_| "the URL's host is not a name TLS can check".to_string())?;
        let tls = TlsConnector::from(tls_config()?)
            .connect(name, stream)
            .await
            .map_err(|error| format!("TLS failed: {error}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|error| format!("HTTP failed: {error}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    } else {
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("HTTP failed: {error}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}

async fn exchange(
    kept: &mut Option<Kept>,
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Answered {
    let failed = |why: String| Answered {
        status: None,
        failure: Some(why),
        unreachable: false,
    };
    let unreachable = |why: String| Answered {
        unreachable: true,
        ..failed(why)
    };
    let uri: hyper::Uri = match url.parse() {
        Ok(uri) => uri,
        Err(_) => return unreachable("the URL cannot be read".into()),
    };
    let place = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map(|a| a.as_str()).unwrap_or("")
    );
    let reuse = kept
        .take()
        .filter(|k| k.place == place && !k.sender.is_closed());
    let mut sender = match reuse {
        Some(k) => k.sender,
        None => match connect(&uri).await {
            Ok(sender) => sender,
            Err(why) => return unreachable(why),
        },
    };
    if sender.ready().await.is_err() {
        sender = match connect(&uri).await {
            Ok(sender) => sender,
            Err(why) => return unreachable(why),
        };
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = hyper::Request::post(path)
        .header(
            hyper::header::HOST,
            uri.authority().map_or("", |a| a.as_str()),
        )
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, "stateous-notify");
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = match request.body(Full::new(Bytes::from(body))) {
        Ok(request) => request,
        Err(error) => return failed(format!("the request cannot be made: {error}")),
    };
    let answer = match sender.send_request(request).await {
        Ok(answer) => answer,
        Err(error) => return failed(format!("HTTP failed: {error}")),
    };
    let status = answer.status().as_u16();
    let mut body = answer.into_body();
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    read += data.len();
                    if read > ANSWER_CAP {
                        return Answered {
                            status: Some(status),
                            failure: Some(format!(
                                "the answer's body is over {} KiB",
                                ANSWER_CAP / 1024
                            )),
                            unreachable: false,
                        };
                    }
                }
            }
            Err(error) => {
                return Answered {
                    status: Some(status),
                    failure: Some(format!("the answer broke off: {error}")),
                    unreachable: false,
                }
            }
        }
    }
    *kept = Some(Kept { place, sender });
    let failure = (!(200..300).contains(&status)).then(|| format!("answered {status}"));
    Answered {
        status: Some(status),
        failure,
        unreachable: false,
    }
}

/// POST `body` to `url` with `headers`, within `timeout` for the whole
/// exchange; the connection in `kept` is used when it goes to the same place
/// and kept for the next one after a whole answer.
pub async fn post(
    kept: &mut Option<Kept>,
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
    timeout: Duration,
) -> Answered {
    match tokio::time::timeout(timeout, exchange(kept, url, headers, body)).await {
        Ok(answered) => answered,
        Err(_) => {
            *kept = None;
            Answered {
                status: None,
                failure: Some(format!(
                    "no answer within {}",
                    stateous_shared::durations::limit_words(timeout)
                )),
                unreachable: false,
            }
        }
    }
}
