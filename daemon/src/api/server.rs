//! The HTTP/1 server: the same [`Api`] on a TCP listener and, if given, a Unix
//! socket, until told to stop.
//!
//! A graceful stop closes the listeners, lets each request in progress finish (and
//! closes idle connections at once), and waits for that at most a grace period or
//! until a stop "now" comes. Each request runs in its own task, so a panic in a
//! handler answers 500 `unexpected` and takes nothing else down.
//!
//! The server answers from a [`Front`]: a standby's (`serve --standby`) until its
//! control plane holds the database, then the [`Api`]; it flips once.
//!
//! The TCP listener is guarded ([`Guard`], `docs/reference/bounds.md`): at most
//! `max_connections` open at once (more wait, unaccepted, in the listening
//! socket's queue), a request head must come within `header_within` (an idle
//! connection, a half-sent head or an unfinished TLS handshake is closed then),
//! and with TLS ([`ServerTls`]) a connection that does not complete a handshake,
//! plain HTTP among them, is closed without an answer. The Unix socket, the
//! trusted local door, is not capped, so that an operator gets in while the TCP
//! port is full.

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use stateous_shared::refusal::{Code, Refusal};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use http_body_util::BodyExt;
use hyper::Response;

use super::access::Door;
use super::head_check;
use super::measure::{labelled, RouteLabel};
use super::routes::{self, Route};
use super::tls::ServerTls;
use super::{refusal, Answer, Api, Body};
use crate::metrics::Connections;

/// How a server is asked to stop; sent on a `watch` channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// Keep serving.
    Serving,
    /// Stop taking connections, finish the requests in progress, then end.
    Graceful,
    /// End now: drop the connections that are left.
    Now,
}

/// How many TCP connections are open at most when `serve --max-connections`
/// names no other number.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long a client may take to send a request's head (and, with TLS, to
/// finish its handshake) before its connection is closed, when `serve
/// --header-timeout` names no other: a silent or half-sent request cannot hold a
/// connection, or a graceful stop.
pub const DEFAULT_HEADER_WITHIN: Duration = Duration::from_secs(10);

/// How long after a failed `accept` (e.g. too many open files) the listener tries
/// again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// What the server answers from: nothing but the standby's refusals until the
/// API is set, then the API. Cheap to clone; set once.
#[derive(Clone, Default)]
pub struct Front {
    api: Arc<OnceLock<Api>>,
}

/// `GET /health` of a standby: 503 `standby`.
pub const STANDBY_HEALTH: &str = "this control plane is a standby: another control plane \
                                  holds the database, and this one serves once that one's \
                                  hold ends";

/// Every other route of a standby: 503 `not_serving`.
pub const STANDBY_NOT_SERVING: &str = "this control plane is a standby and does not serve \
                                       yet; send the request to the control plane that \
                                       holds the database";

impl Front {
    /// A front that answers as a standby until [`Front::serve`].
    pub fn standby() -> Front {
        Front::default()
    }

    /// Answer from `api` from now on. Only the first call counts: a front flips once.
    pub fn serve(&self, api: Api) {
        let _ = self.api.set(api);
    }

    fn api(&self) -> Option<&Api> {
        self.api.get()
    }
}

impl From<Api> for Front {
    fn from(api: Api) -> Front {
        let front = Front::standby();
        front.serve(api);
        front
    }
}

/// A standby's answer: `GET /health` (and `HEAD`) 503 `standby`, anything else
/// 503 `not_serving`, each with its sentence.
fn standby_answer(request: &Request<Incoming>) -> Answer {
    let path = routes::decode_path(request.uri().path());
    let routed = routes::route(request.method().as_str(), &path);
    if routed.is_ok_and(|routed| routed.route == Route::Health) {
        refusal(&Refusal::new(Code::Standby, STANDBY_HEALTH))
    } else {
        refusal(&Refusal::new(Code::NotServing, STANDBY_NOT_SERVING))
    }
}

/// How the TCP listener guards itself: its cap on connections, its header
/// timeout, its TLS. Cheap to clone.
#[derive(Clone)]
pub struct Guard {
    /// At most this many TCP connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// A request head (and a TLS handshake) must come within this long.
    pub header_within: Duration,
    /// HTTPS on the TCP listener, or plain HTTP when `None`.
    pub tls: Option<Arc<ServerTls>>,
    /// The counts of connections for `GET /metrics`.
    pub counts: Connections,
}

impl Default for Guard {
    /// Plain HTTP, [`DEFAULT_MAX_CONNECTIONS`], [`DEFAULT_HEADER_WITHIN`].
    fn default() -> Guard {
        Guard {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_within: DEFAULT_HEADER_WITHIN,
            tls: None,
            counts: Connections::default(),
        }
    }
}

/// The server: the API and its listeners. Run it with [`Server::run`].
pub struct Server {
    front: Front,
    tcp: TcpListener,
    unix: Option<UnixListener>,
    grace: Duration,
    guard: Guard,
}

impl Server {
    /// A server of `front` (an [`Api`], or a standby's front) on `tcp` and, if
    /// given, `unix`. A graceful stop waits at most `grace` for the requests in
    /// progress.
    pub fn new(
        front: impl Into<Front>,
        tcp: TcpListener,
        unix: Option<UnixListener>,
        grace: Duration,
    ) -> Server {
        Server {
            front: front.into(),
            tcp,
            unix,
            grace,
            guard: Guard::default(),
        }
    }

    /// The same server with `guard` on its TCP listener.
    pub fn guarded(self, guard: Guard) -> Server {
        Server { guard, ..self }
    }

    /// Serve until `stop` leaves [`Stop::Serving`]; return when the connections
    /// ended (graceful) or were dropped (now, or the grace period is over). The
    /// listeners are closed when it returns.
    pub async fn run(self, mut stop: watch::Receiver<Stop>) {
        let mut connections = JoinSet::new();
        let permits = Arc::new(Semaphore::new(self.guard.max_connections.max(1)));
        let within = self.guard.header_within;
        loop {
            if *stop.borrow_and_update() != Stop::Serving {
                break;
            }
            tokio::select! {
                accepted = accept_tcp(&self.tcp, &permits) => match accepted {
                    Ok((stream, permit)) => {
                        let _ = stream.set_nodelay(true);
                        let guard = self.guard.clone();
                        connections.spawn(tcp_connection(
                            self.front.clone(), stream, stop.clone(), guard, permit,
                        ));
                    }
                    Err(error) => pause_after(error).await,
                },
                accepted = accept_unix(self.unix.as_ref()) => match accepted {
                    Ok(stream) => {
                        let door = local_door(&stream);
                        let (front, stop) = (self.front.clone(), stop.clone());
                        let counts = self.guard.counts.clone();
                        connections.spawn(connection(front, stream, door, stop, within, counts));
                    }
                    Err(error) => pause_after(error).await,
                },
                changed = stop.changed() => if changed.is_err() { break },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(self.tcp);
        drop(self.unix);
        let draining = async { while connections.join_next().await.is_some() {} };
        let stopped_now = async {
            while *stop.borrow_and_update() != Stop::Now {
                if stop.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::select! {
            _ = draining => {}
            _ = tokio::time::sleep(self.grace) => {}
            _ = stopped_now => {}
        }
        connections.shutdown().await;
    }
}

/// The next TCP connection, once fewer than the cap are open: the permit is
/// held as long as the connection.
async fn accept_tcp(
    tcp: &TcpListener,
    permits: &Arc<Semaphore>,
) -> std::io::Result<(tokio::net::TcpStream, OwnedSemaphorePermit)> {
    let permit = Arc::clone(permits)
        .acquire_owned()
        .await
        .map_err(std::io::Error::other)?;
    let (stream, _) = tcp.accept().await?;
    Ok((stream, permit))
}

/// Serve one TCP connection: the TLS handshake first when the listener has TLS
/// (within the header timeout; a failed one is closed without an answer).
async fn tcp_connection(
    front: Front,
    stream: tokio::net::TcpStream,
    stop: watch::Receiver<Stop>,
    guard: Guard,
    permit: OwnedSemaphorePermit,
) {
    let _open = guard.counts.opened();
    let within = guard.header_within;
    let door = Door::Tcp(stream.peer_addr().ok().map(|peer| peer.ip()));
    match &guard.tls {
        None => connection(front, stream, door, stop, within, guard.counts.clone()).await,
        Some(tls) => {
            let acceptor = tls.acceptor();
            match tokio::time::timeout(within, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    connection(front, stream, door, stop, within, guard.counts.clone()).await;
                }
                Ok(Err(error)) => {
                    tracing::debug!(target: "stateous.serve", "a TLS handshake failed: {error}");
                    guard.counts.closed(Connections::TLS_HANDSHAKE);
                }
                Err(_) => guard.counts.closed(Connections::HEADER_TIMEOUT),
            }
        }
    }
    drop(permit);
}

async fn accept_unix(unix: Option<&UnixListener>) -> std::io::Result<tokio::net::UnixStream> {
    match unix {
        Some(listener) => listener.accept().await.map(|(stream, _)| stream),
        None => std::future::pending().await,
    }
}

/// The door of a Unix socket's peer: its own user (the daemon's uid) or root is
/// [`Door::Local`], admin; another uid, or one that cannot be read, a stranger.
fn local_door(stream: &tokio::net::UnixStream) -> Door {
    let own = rustix::process::getuid().as_raw();
    match stream.peer_cred() {
        Ok(peer) if peer.uid() == own || peer.uid() == 0 => Door::Local,
        Ok(peer) => Door::Stranger(peer.uid()),
        Err(_) => Door::Stranger(u32::MAX),
    }
}

async fn pause_after(error: std::io::Error) {
    tracing::warn!(target: "stateous.serve", "cannot take a connection ({error}); trying again");
    tokio::time::sleep(ACCEPT_PAUSE).await;
}

/// Serve one connection until it ends, or until a stop: then finish the request
/// in progress and close. Each request head is checked before hyper reads it
/// (`head_check/`).
async fn connection<S>(
    front: Front,
    stream: S,
    door: Door,
    mut stop: watch::Receiver<Stop>,
    header_within: Duration,
    counts: Connections,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let stream = head_check::Checked::new(stream, header_within);
    let refused = stream.refused();
    let watching = stop.clone();
    let service = service_fn(move |request: Request<Incoming>| {
        let (front, watching) = (front.clone(), watching.clone());
        // Read when hyper hands the request over, not later: it is the stand-in
        // of a refused head exactly when the refusal is there by then.
        let stand_in = refused.get().cloned();
        async move {
            if let Some(refused) = stand_in {
                let answer = labelled(refused_head(&refused), routes::UNROUTED);
                if let Some(api) = front.api() {
                    // Counted as every refusal is, with no route.
                    api.measured(api.measure(), &answer);
                }
                return Ok::<Response<Body>, Infallible>(answer);
            }
            let Some(api) = front.api().cloned() else {
                let answer = standby_answer(&request);
                return Ok::<Response<Body>, Infallible>(answer.map(BodyExt::boxed));
            };
            let measured = api.measure();
            // Cheap copies (shared bytes), for the label of an answer whose
            // request panicked before it was routed.
            let (method, uri) = (request.method().clone(), request.uri().clone());
            let answering = api.clone();
            let mut answer =
                isolated(async move { answering.answer(request, door, watching).await }).await;
            if answer.extensions().get::<RouteLabel>().is_none() {
                answer = labelled(answer, routes::label(method.as_str(), uri.path()));
            }
            api.measured(measured, &answer);
            Ok::<Response<Body>, Infallible>(answer)
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_within)
        .max_buf_size(head_check::HYPER_BUFFER);
    let served = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    let ended = loop {
        if *stop.borrow_and_update() != Stop::Serving {
            served.as_mut().graceful_shutdown();
            break served.await;
        }
        tokio::select! {
            ended = served.as_mut() => break ended,
            changed = stop.changed() => if changed.is_err() {
                break served.await;
            },
        }
    };
    if ended.is_err_and(|error| error.is_timeout()) {
        counts.closed(Connections::HEADER_TIMEOUT);
    }
}

/// The answer to a head `head_check/` refused: the refusal with its status, and the
/// connection closes after it.
fn refused_head(refused: &head_check::Refused) -> Response<Body> {
    let mut answer = refusal(&refused.refusal);
    *answer.status_mut() =
        hyper::StatusCode::from_u16(refused.status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    answer.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    answer.map(BodyExt::boxed)
}

/// The answer to one request: a panic in a handler becomes a 500 `unexpected`,
/// and the server carries on. Caught where it is polled, not in a task of its own:
/// spawning a task per request copied its (large) future several times, about a
/// sixth of the request threads' instructions (measured with callgrind).
async fn isolated<F>(work: F) -> Response<Body>
where
    F: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(work).catch_unwind().await {
        Ok(answer) => answer,
        Err(panic) => {
            let error = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(target: "stateous.serve", "a request failed unexpectedly: {error}");
            let failed = Refusal::new(Code::Unexpected, "the request failed unexpectedly");
            refusal(&failed).map(BodyExt::boxed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_a_handler_answers_500_unexpected() {
        let answer = isolated(async { panic!("a bug in a handler") }).await;
        assert_eq!(answer.status(), 500);
        let body = http_body_util::BodyExt::collect(answer.into_body())
            .await
            .unwrap()
            .to_bytes();
        let refusal: Refusal = serde_json::from_slice(&body).unwrap();
        assert_eq!(refusal.code, Code::Unexpected);
        let fine = isolated(async { refusal_of_nothing().map(BodyExt::boxed) }).await;
        assert_eq!(fine.status(), 404);
    }

    fn refusal_of_nothing() -> Answer {
        refusal(&Refusal::new(Code::NotFound, "no such path"))
    }
}
