//! `stateous serve`: the control plane as a process. It serves the HTTP API on TCP
//! and on a Unix socket, runs the clock, and stops gracefully on a signal.
//!
//! The start order is the reference's (`docs/inside/workflows.md`, "Serve"): read
//! `--listen`; read and check the graph file; bind the port (and the socket) before
//! the database opens; refuse a wide address that lacks a key or TLS (before the
//! database is opened or made, when whether it has keys can be read without it);
//! open and take the database; warn about a wide address; print `serving on URL
//! (Ctrl-C stops)` (on every interface: `serving on 0.0.0.0:PORT, every interface
//! of this computer; from this computer: URL (Ctrl-C stops)`). Each refusal at
//! start is one line, `error: <sentence>`, and exit code 1. A first SIGINT or
//! SIGTERM finishes the requests in progress (within [`GRACE`]) and prints
//! `stopped` (exit 0); a second one stops at once. When another control plane
//! takes the database, every request answers 503 `not_serving`, and `serve` stops
//! with exit code 1, also when a stop signal came at the same time (the loss is
//! found at the latest when the hold is given up).
//!
//! A standby (`serve --standby`, Postgres) checks the graph against the database
//! without taking it, binds, and answers as a standby (`GET /health` 503 `standby`,
//! everything else 503 `not_serving`) while [`Control::open`] waits for the database's
//! serving lock; once it holds it, the API flips to serve (the same open as a normal
//! start's, so the same schema check, epoch and lease grace). A signal while it waits
//! stops it at once (exit 0).
//!
//! With a [`Companion`] (`serve --supervise`), the stop signals go to the
//! companion while it runs, and the server serves on, so that its routines can
//! still report; the server stops when the companion has ended, as the
//! reference's does.

mod args;
mod first;
mod hooks;
mod limits_file;
mod lowered;
mod notifier;
pub mod options;
pub mod retain;
mod socket;
mod standby;
mod ticker;
mod tracer;

use std::net::TcpListener as StdTcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use stateous_shared::graph::Graph;
use stateous_shared::refusal::Code;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{watch, Notify};

use crate::api::server::{Front, Guard, Server, Stop};
use crate::api::tls::ServerTls;
use crate::api::Api;
use crate::control::{Checked, Control, Options};
use crate::store::backend::{Database, Standby, STANDBY_NEEDS_POSTGRES};
pub use args::ServeArgs;
use first::{bind_tcp, read_graph};
pub use options::Timings;
use options::{check_database_folder, parse_database, Listen};
use standby::{stand_by, Waited};
pub use ticker::LOST_LINE;

/// How long a graceful stop waits for the requests in progress.
pub const GRACE: Duration = Duration::from_secs(5);

/// How often a standby asks for the database's serving lock: a takeover starts at
/// most this long after the lock is free.
pub const STANDBY_EVERY: Duration = Duration::from_millis(250);

/// A standby's line while it waits (after `standby on URL`).
pub const STANDBY_WAITING_LINE: &str = "standby: waiting for the database's serving lock";

/// How often a standby checks its graph against the database again while it
/// waits: the tokens on record change under the active control plane, so a graph
/// that passed at start may be refused at the takeover.
pub const STANDBY_CHECK_EVERY: Duration = Duration::from_secs(5);

/// The start of a standby's line when its check of the graph cannot read the
/// database (down, or not reachable): nothing is known about the graph then.
pub const STANDBY_UNREAD_LINE: &str =
    "standby: cannot check the graph against the database now: the database cannot be read";

/// A standby's line once it holds the database, before `serving on URL`.
pub const STANDBY_TOOK_LINE: &str =
    "standby: the database's serving lock was free; this control plane took the database";

/// The refusal of `--standby` with `--supervise`.
pub const STANDBY_NO_COMPANION: &str = "--standby does not take --supervise: run the supervisor \
     as its own process (stateous supervise), given both control planes' addresses";

/// The sentence of the last line (`error: ...`) when another control plane took
/// the database, or the hold ended.
pub const LOST_SENTENCE: &str = "another control plane took the database, or this control \
                                 plane's hold on it ended; this control plane stopped";

/// Run `stateous serve` to its end: the process's exit code (0 after a graceful
/// stop, a companion's code when it failed), or the sentence of the `error:` line
/// that ends it with exit code 1 (a refusal at start, a lost database), which the
/// binary prints (`src/cli_errors.rs`). Every other line goes to stderr.
pub fn run(args: ServeArgs) -> Result<i32, String> {
    run_with(args, None)
}

/// Something that runs beside the server in its process (`serve --supervise`) and
/// takes the server's stop signals while it runs.
pub struct Companion {
    /// Called on each SIGINT or SIGTERM while the companion runs: the first one
    /// should stop it gracefully, a second one at once.
    pub on_signal: Box<dyn Fn() + Send + Sync>,
    /// Stop it at once: the server cannot serve on (a lost database).
    pub stop_now: Box<dyn Fn() + Send + Sync>,
    /// Sent the companion's exit code when it has ended; a dropped sender counts
    /// as exit code 1.
    pub done: tokio::sync::oneshot::Receiver<i32>,
}

/// [`run`] with a companion. When the companion ends with exit code 0 the server
/// stops gracefully and prints `stopped`; with another code it stops at once and
/// exits with that code, without `stopped`, as the reference's `serve` does.
pub fn run_with(args: ServeArgs, companion: Option<Companion>) -> Result<i32, String> {
    if args.log_format == "json" {
        JSON_LINES.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    if args.standby {
        if let Some(companion) = companion {
            (companion.stop_now)();
            return Err(STANDBY_NO_COMPANION.to_string());
        }
    }
    start(&args)?.serve(companion)
}

/// Whether serve's own lines (`serving on URL`, `stopped`, ...) are events of the
/// JSON log (`--log-format json`), as the binary set it up, rather than text.
static JSON_LINES: AtomicBool = AtomicBool::new(false);

/// Write one of serve's own lines to stderr: as text, or with `--log-format json`
/// as an event of the log, so that every line of stderr is one JSON object.
pub(crate) fn say(line: &str) {
    if JSON_LINES.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!(target: "stateous.serve", "{line}");
    } else {
        eprintln!("{line}");
    }
}

/// A control plane ready to serve: bound, with its database held or (a standby)
/// checked and waited for.
struct Ready {
    runtime: tokio::runtime::Runtime,
    holding: Holding,
    tcp: StdTcpListener,
    unix: std::os::unix::net::UnixListener,
    socket: socket::SocketFile,
    /// Where it serves, as `serving on ` says it (`Listen::announced`).
    url: String,
    timings: Timings,
    guard: Guard,
    /// The hooks of `--hooks FILE`.
    hooks: crate::api::hooks::Hooks,
    /// The limits file (`--limits FILE`), set as the database is taken; a held
    /// database's before `Ready`.
    limits: Option<limits_file::LimitsFile>,
    /// Where traces go (`--otlp-endpoint`); `None`: off.
    traces: Option<stateous_otlp::Endpoint>,
}

/// The database of a bound control plane.
enum Holding {
    /// Held: a normal start.
    Held(Control),
    /// A standby: [`Control::open`] with these waits until the database is free;
    /// `stop` ends the wait.
    Waiting {
        graph: Arc<Graph>,
        options: Box<Options>,
        stop: Arc<AtomicBool>,
    },
}

/// Every check and step before serving, in the reference's order. Each error is
/// one sentence, and leaves no port, socket or database open.
fn start(args: &ServeArgs) -> Result<Ready, String> {
    let listen = Listen::parse(&args.listen)?;
    let timings = Timings::parse(args)?;
    let traces = crate::traces::endpoint(args.otlp_endpoint.as_deref())?;
    // The certificate files are read before anything is bound: a wrong one is the
    // first thing to say.
    let tls_files = options::tls_files(args)?;
    let tls = match &tls_files {
        Some(files) => Some(Arc::new(ServerTls::load(files.clone())?)),
        None => None,
    };
    let graph = Arc::new(read_graph(&args.graph)?);
    let hooks = hooks::read_hooks(args.hooks.as_deref(), &graph, args.insecure)?;
    let limits = limits_file::read_limits(args.limits.as_deref(), &graph)?;
    let tcp = bind_tcp(&listen)?;
    let (socket_path, folder) = match &args.socket {
        Some(path) => (path.clone(), socket::Folder::MustExist),
        None => (
            stateous_shared::socket::default_socket(),
            socket::Folder::Make,
        ),
    };
    // The database's URL is checked before the socket is taken: a wrong --db must
    // be named as such, not as another daemon's socket.
    let database = parse_database(&args.db)?;
    check_database_folder(&database)?;
    let (unix, socket) = socket::bind(&socket_path, folder)?;
    if args.standby && matches!(database, Database::Sqlite(_)) {
        return Err(STANDBY_NEEDS_POSTGRES.to_string());
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = options::request_threads() {
        builder.worker_threads(threads);
    }
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server's threads: {e}"))?;
    let clock = match (&args.dev_clock_at, args.dev_clock) {
        (Some(at), _) => crate::time_source::Clock::dev_at(dev_clock_start(at)?),
        (None, true) => crate::time_source::Clock::dev(),
        (None, false) => crate::time_source::Clock::system(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let options = Options {
        lease: timings.lease,
        busy_timeout: timings.busy_timeout,
        tick: timings.tick,
        postgres: timings.postgres.clone(),
        clock,
        standby: args.standby.then(|| Standby {
            every: STANDBY_EVERY,
            stop: Arc::clone(&stop),
        }),
        // Waiting claims take at most half the connections (`docs/reference/http.md`).
        waiting_claims: (timings.max_connections / 2).max(1),
        ..Options::on(database)
    };
    // A wide address is judged before the database is opened, so that a refusal
    // leaves nothing behind (no SQLite file, no tables): whether keys exist is read
    // without taking or making the database, and one that does not exist yet has
    // none, and neither does one older than the access keys. What cannot be read
    // so (a schema with the keys that the open upgrades first) is judged after
    // the open, below.
    if !args.standby
        && listen
            .refusal(false, tls.is_some(), args.insecure)
            .is_some()
    {
        if let Ok(Some(keys)) = runtime.block_on(Control::keys_known(&options)) {
            if let Some(refusal) = listen.refusal(keys, tls.is_some(), args.insecure) {
                return Err(refusal);
            }
        }
    }
    let holding = if args.standby {
        // At start either sentence refuses: a standby that cannot read its database
        // now is most likely given the wrong one.
        match runtime.block_on(Control::check(Arc::clone(&graph), &options)) {
            Checked::Agrees => {}
            Checked::Refused(sentence) | Checked::Unread(sentence) => return Err(sentence),
        }
        Holding::Waiting {
            graph,
            options: Box::new(options),
            stop,
        }
    } else {
        Holding::Held(runtime.block_on(Control::open(graph, options))?)
    };
    // Whether keys exist is known only with the database; a standby reads
    // them without taking it.
    let keys = match &holding {
        Holding::Held(control) => runtime
            .block_on(control.access_keys())
            .map_err(|refused| refused.error)?
            .iter()
            .any(|key| key.revoked_at.is_none()),
        Holding::Waiting { options, .. } => runtime.block_on(Control::keys_on_record(options))?,
    };
    if let Some(refusal) = listen.refusal(keys, tls.is_some(), args.insecure) {
        return Err(refusal);
    }
    if let (Holding::Held(control), Some(file)) = (&holding, &limits) {
        runtime.block_on(limits_file::apply(control, file))?;
    }
    if let Some(warning) = listen.warning(keys, tls.is_some()) {
        say(&warning);
    }
    if args.dev_clock || args.dev_clock_at.is_some() {
        say(
            "dev clock: stateous clock advance DURATION, freeze and thaw move this control \
             plane's time",
        );
    }
    let port = tcp
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?
        .port();
    let scheme = if tls.is_some() { "https" } else { "http" };
    // On every interface, the line names the URL a client on this computer uses:
    // with TLS, a name the certificate holds.
    let near = listen.near_names().iter().copied().find(|name| {
        tls_files
            .as_ref()
            .is_none_or(|files| crate::api::tls::names(files, name))
    });
    Ok(Ready {
        url: listen.announced(scheme, port, near),
        runtime,
        holding,
        tcp,
        unix,
        socket,
        guard: Guard {
            max_connections: timings.max_connections,
            header_within: timings.header_timeout,
            tls,
            counts: Default::default(),
        },
        timings,
        hooks,
        limits,
        traces,
    })
}

/// The API of `control` with its access keys read from the database.
async fn keyed_api(control: &Control, lost: &Arc<AtomicBool>) -> Result<Api, String> {
    let api = Api::new(control.clone(), Arc::clone(lost));
    api.load_keys()
        .await
        .map_err(|refused| format!("cannot read the access keys: {}", refused.error))?;
    Ok(api)
}

/// How serving ended.
enum Ending {
    /// A signal stopped it.
    Stopped,
    /// Another control plane took the database.
    Lost,
    /// The companion ended with this exit code (not 0).
    CompanionFailed(i32),
}

impl Ready {
    /// Serve (a standby: first wait for the database) until a signal or a lost
    /// database; the exit code, or the sentence of the line that ends it.
    fn serve(self, companion: Option<Companion>) -> Result<i32, String> {
        let Ready {
            runtime,
            holding,
            tcp,
            unix,
            socket,
            url,
            timings,
            guard,
            hooks,
            limits,
            traces,
        } = self;
        let socket_path = socket.path().display().to_string();
        let standby = matches!(holding, Holding::Waiting { .. });
        let stopped_waiting = match &holding {
            Holding::Waiting { stop, .. } => Some(Arc::clone(stop)),
            Holding::Held(_) => None,
        };
        let ending = runtime.block_on(async move {
            let tcp = tokio::net::TcpListener::from_std(tcp)
                .map_err(|e| format!("cannot listen: {e}"))?;
            unix.set_nonblocking(true)
                .map_err(|e| format!("cannot listen on the socket: {e}"))?;
            let unix = tokio::net::UnixListener::from_std(unix)
                .map_err(|e| format!("cannot listen on the socket: {e}"))?;
            // The handlers are in place before the line that tells a caller to go.
            let mut signals = Signals::new();
            let lost = Arc::new(AtomicBool::new(false));
            let front = Front::standby();
            let counts = guard.counts.clone();
            // The traces begin with what commits once the API serves.
            let mut traced_from = 0;
            if let Holding::Held(control) = &holding {
                control.metrics().adopt(&counts);
                traced_from = control.mark().safe();
                front.serve(keyed_api(control, &lost).await?.with_hooks(hooks.clone()));
            }
            let (stop_server, server_stops) = watch::channel(Stop::Serving);
            let server = Server::new(front.clone(), tcp, Some(unix), GRACE).guarded(guard);
            let server = tokio::spawn(server.run(server_stops));
            let control = match holding {
                Holding::Held(control) => control,
                Holding::Waiting {
                    graph,
                    options,
                    stop,
                } => match stand_by(graph, *options, &stop, &mut signals, &url, &socket_path).await
                {
                    Waited::Took(control) => {
                        if let Some(file) = &limits {
                            limits_file::apply(&control, file).await?;
                        }
                        control.metrics().adopt(&counts);
                        traced_from = control.mark().safe();
                        front.serve(keyed_api(&control, &lost).await?.with_hooks(hooks.clone()));
                        say(STANDBY_TOOK_LINE);
                        control
                    }
                    waited => {
                        let _ = stop_server.send(Stop::Now);
                        let _ = server.await;
                        return match waited {
                            Waited::Failed(sentence) => Err(sentence),
                            _ => Ok(Ending::Stopped),
                        };
                    }
                },
            };
            say(&format!("serving on {url} (Ctrl-C stops)"));
            // Under systemd (Type=notify) the database is open now: READY (a
            // standby said it when it stood by, and now says what it does).
            // Without NOTIFY_SOCKET this does nothing; should it fail, systemd's
            // start timeout tells, and serving is no reason to stop.
            let state = if standby {
                sd_notify::NotifyState::Status("serving")
            } else {
                sd_notify::NotifyState::Ready
            };
            let _ = sd_notify::notify(&[state]);
            say(&format!("the same API on unix://{socket_path}"));
            let serving = Serving {
                control,
                server,
                stop_server,
                lost,
                timings,
                signals,
                traces: traces.map(|endpoint| (endpoint, traced_from)),
            };
            Ok::<Ending, String>(serving.until_stopped(companion).await)
        });
        drop(socket);
        if stopped_waiting.is_some_and(|stop| stop.load(std::sync::atomic::Ordering::SeqCst)) {
            // A standby stops at once: its wait (perhaps inside a connect) is left
            // to end with the process.
            runtime.shutdown_background();
        } else {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
        match ending? {
            Ending::Stopped => {
                say("stopped");
                Ok(0)
            }
            Ending::Lost => Err(LOST_SENTENCE.to_string()),
            Ending::CompanionFailed(code) => Ok(code),
        }
    }
}

/// A bound server with its database, serving.
struct Serving {
    control: Control,
    server: tokio::task::JoinHandle<()>,
    stop_server: watch::Sender<Stop>,
    /// Set when the hold on the database is lost; the API reads it.
    lost: Arc<AtomicBool>,
    timings: Timings,
    signals: Signals,
    /// Where traces go, and the ledger id after which they begin.
    traces: Option<(stateous_otlp::Endpoint, i64)>,
}

impl Serving {
    /// Run the clock beside the server until a signal, the companion's end or a
    /// lost database, then stop them in order: the server (gracefully, unless a
    /// second signal comes or the companion failed), then the clock (after its
    /// tick in progress), then the control plane.
    async fn until_stopped(self, companion: Option<Companion>) -> Ending {
        let Serving {
            control,
            mut server,
            stop_server,
            lost,
            timings,
            mut signals,
            traces,
        } = self;
        let on_lost = Arc::new(Notify::new());
        let (stop_clock, clock_stops) = watch::channel(false);
        let clock = ticker::Clock {
            control: control.clone(),
            every: timings.tick,
            lost: Arc::clone(&lost),
            on_lost: on_lost.clone(),
        };
        let clock = tokio::spawn(clock.run(clock_stops.clone()));
        let tracing =
            traces.and_then(|(to, from)| tracer::start(&control, (to, from), &clock_stops));
        let notifying = notifier::start(&control, timings.notify.clone(), &clock_stops);
        let (pass, every) = timings.notify_retention.clone();
        let notify_retention = retain::NotificationRetention {
            control: control.clone(),
            pass,
            every,
        };
        let notify_retention = tokio::spawn(notify_retention.run(clock_stops.clone()));
        let retention = timings.retention.clone().map(|(pass, every)| {
            let retention = retain::Retention {
                control: control.clone(),
                pass,
                every,
            };
            tokio::spawn(retention.run(clock_stops))
        });
        let mut ending = wait_for_ending(&mut signals, &on_lost, &mut server, companion).await;
        let at_once = matches!(ending, Ending::CompanionFailed(_));
        let _ = stop_server.send(if at_once { Stop::Now } else { Stop::Graceful });
        if !server.is_finished() {
            tokio::select! {
                _ = &mut server => {}
                _ = signals.next() => {
                    let _ = stop_server.send(Stop::Now);
                    let _ = server.await;
                }
            }
        }
        let _ = stop_clock.send(true);
        let _ = clock.await;
        if let Some(retention) = retention {
            let _ = retention.await;
        }
        let _ = notify_retention.await;
        if let Some(tracing) = tracing {
            tracing.finish().await;
        }
        if let Some(notifying) = notifying {
            notifying.finish().await;
        }
        if !matches!(ending, Ending::Lost) && give_up_hold(&control, &lost).await {
            // A stop signal can come together with the loss (a control plane
            // stopped with SIGSTOP, taken over, sent SIGTERM, then SIGCONT): the
            // loss wins, so that its exit code says so.
            ending = Ending::Lost;
        }
        ending
    }
}

/// Give the hold up, so that the next control plane may start at once. True when
/// the hold was lost already: the clock found it (and logged it), or a request or
/// the release itself found it (logged here, with the clock's line).
async fn give_up_hold(control: &Control, logged: &AtomicBool) -> bool {
    if logged.load(std::sync::atomic::Ordering::SeqCst) {
        return true;
    }
    let lost = control.lost()
        || match control.shutdown().await {
            Ok(()) => false,
            Err(refusal) if refusal.code == Code::NotServing => true,
            Err(refusal) => {
                tracing::warn!(
                    target: "stateous.serve",
                    "cannot give up the hold on the database: {}",
                    refusal.error
                );
                false
            }
        };
    if lost {
        tracing::error!(target: "stateous.serve", "{LOST_LINE}");
    }
    lost
}

/// Serve until a signal that the companion does not take, the companion's end, a
/// lost database or the server's own end. A companion still running when the
/// server cannot serve on is stopped at once.
async fn wait_for_ending(
    signals: &mut Signals,
    on_lost: &Notify,
    server: &mut tokio::task::JoinHandle<()>,
    companion: Option<Companion>,
) -> Ending {
    let (mut companion, mut done) = match companion {
        Some(Companion {
            on_signal,
            stop_now,
            done,
        }) => (Some((on_signal, stop_now)), Some(done)),
        None => (None, None),
    };
    let ending = loop {
        let companion_ends = async {
            match done.as_mut() {
                Some(done) => done.await.unwrap_or(1),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = signals.next() => match &companion {
                // The server serves on while the companion stops, so that its
                // routines can still report.
                Some((on_signal, _)) => on_signal(),
                None => break Ending::Stopped,
            },
            code = companion_ends => {
                companion = None;
                if code != 0 {
                    break Ending::CompanionFailed(code);
                }
                break Ending::Stopped;
            }
            _ = on_lost.notified() => break Ending::Lost,
            _ = &mut *server => break Ending::Stopped,
        }
    };
    if let Some((_, stop_now)) = companion {
        stop_now();
    }
    ending
}

/// SIGINT and SIGTERM, as one stream of stop requests.
struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        Signals {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) {
        let interrupt = async {
            match self.interrupt.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let terminate = async {
            match self.terminate.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate => {}
        }
    }
}

/// The moment `--dev-clock-at` names, in microseconds since 1970.
fn dev_clock_start(text: &str) -> Result<i64, String> {
    stateous_shared::time::parse_iso(text)
        .map(stateous_shared::time::to_micros)
        .ok_or_else(|| {
            format!("--dev-clock-at {text:?} is not a moment; write e.g. 2027-03-28T00:00:00Z")
        })
}
