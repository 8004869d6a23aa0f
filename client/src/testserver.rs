//! A tiny HTTP server for tests: it records each request and answers from a
//! handler, over TCP or any stream (a Unix socket).

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub key: Option<String>,
    pub last_event_id: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    pub body: Value,
}

pub type Handler = dyn Fn(&Seen) -> (u16, String) + Send + Sync;

/// The server's records: requests and connections.
#[derive(Default)]
pub struct Log {
    pub requests: Mutex<Vec<Seen>>,
    pub connections: AtomicUsize,
}

impl Log {
    pub fn last(&self) -> Seen {
        self.requests.lock().unwrap().last().cloned().unwrap()
    }
}

pub async fn serve_io<T>(io: T, log: Arc<Log>, handler: Arc<Handler>)
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    log.connections.fetch_add(1, Ordering::SeqCst);
    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let log = log.clone();
        let handler = handler.clone();
        async move {
            let method = request.method().to_string();
            let path = request.uri().to_string();
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_string())
            };
            let key = header("idempotency-key");
            let last_event_id = header("last-event-id");
            let authorization = header("authorization");
            let bytes = request.into_body().collect().await.unwrap().to_bytes();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let seen = Seen {
                method,
                path,
                key,
                last_event_id,
                authorization,
                body,
            };
            let (status, text) = handler(&seen);
            log.requests.lock().unwrap().push(seen);
            let response = hyper::Response::builder()
                .status(status)
                .body(Full::new(Bytes::from(text)))
                .unwrap();
            Ok::<_, Infallible>(response)
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await;
}

/// A server on a free TCP port; its URL and log.
pub async fn server(
    handler: impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static,
) -> (String, Arc<Log>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let log = serve_on(listener, Arc::new(handler), |stream| async move {
        Some(TokioIo::new(stream))
    });
    (url, log)
}

/// Serve each connection of `listener` with `handler` once `open` made it ready
/// (a TLS handshake, say; `None` drops it); the server's log.
pub fn serve_on<T, F, Fut>(
    listener: tokio::net::TcpListener,
    handler: Arc<Handler>,
    open: F,
) -> Arc<Log>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<T>> + Send + 'static,
{
    let log = Arc::new(Log::default());
    let served = log.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (opening, served, handler) = (open(stream), served.clone(), handler.clone());
            tokio::spawn(async move {
                if let Some(io) = opening.await {
                    serve_io(io, served, handler).await;
                }
            });
        }
    });
    log
}
