//! The command line of `stateous serve`.

use std::path::PathBuf;

use clap::Args;
use stateous_daemon::serve::options as serve_options;

/// The flags of `stateous serve`; every timing also reads an environment variable.
#[derive(Args)]
pub struct ServeFlags {
    /// The graph file that `stateous compile` wrote.
    pub graph: PathBuf,
    /// The database URL: sqlite:///FILE (relative) or sqlite:////ABSOLUTE/PATH.
    #[arg(long, value_name = "URL", default_value = serve_options::DEFAULT_DB)]
    pub db: String,
    /// HOST:PORT to listen on; port 0 picks a free port.
    #[arg(long, value_name = "HOST:PORT", default_value = serve_options::DEFAULT_LISTEN)]
    pub listen: String,
    /// The Unix socket to serve the same API on (mode 0600) [default: stateous.sock
    /// in the user's runtime folder].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// How long a claimed task's lease lasts without a heartbeat (e.g. 2m, 30s, 500ms).
    #[arg(long, value_name = "DURATION", env = "STATEOUS_LEASE", default_value = serve_options::DEFAULT_LEASE)]
    pub lease: String,
    /// The time between two ticks of the clock (timers, timeouts, ended leases).
    #[arg(long, value_name = "DURATION", env = "STATEOUS_TICK", default_value = serve_options::DEFAULT_TICK)]
    pub tick: String,
    /// How long SQLite waits for another process's write lock; past it: 503 database_busy.
    #[arg(long, value_name = "DURATION", env = "STATEOUS_BUSY_TIMEOUT", default_value = serve_options::DEFAULT_BUSY_TIMEOUT)]
    pub busy_timeout: String,
    /// How long a control plane's hold on the database lasts without renewal, after
    /// which another control plane may take it.
    #[arg(long, value_name = "DURATION", env = "STATEOUS_STALE_AFTER", default_value = serve_options::DEFAULT_STALE_AFTER)]
    pub stale_after: String,
    /// Also run the supervisor of FOLDER in this process, speaking to this server
    /// over its socket. For development: a first Ctrl-C stops the supervisor
    /// gracefully while the server serves on; then the server stops.
    #[arg(long, value_name = "FOLDER")]
    pub supervise: Option<PathBuf>,
}

/// Run `stateous serve`; its exit code.
pub fn run(flags: ServeFlags) -> i32 {
    log_to_stderr();
    // The supervisor reaches this server over its socket, known before it binds.
    let beside = match &flags.supervise {
        None => None,
        Some(folder) => {
            let socket = flags
                .socket
                .clone()
                .unwrap_or_else(stateous_shared::client::default_socket);
            let url = format!("unix://{}", socket.display());
            match stateous_supervisor::beside::supervise_beside(folder, url) {
                Ok((beside, hooks)) => Some((
                    beside,
                    stateous_daemon::serve::Companion {
                        on_signal: hooks.on_signal,
                        stop_now: hooks.stop_now,
                        done: hooks.done,
                    },
                )),
                Err(e) => {
                    eprintln!("error: {e}");
                    return 1;
                }
            }
        }
    };
    let (beside, companion) = match beside {
        Some((beside, companion)) => (Some(beside), Some(companion)),
        None => (None, None),
    };
    let args = serve_options::ServeArgs {
        graph: flags.graph,
        db: flags.db,
        listen: flags.listen,
        socket: flags.socket,
        lease: flags.lease,
        tick: flags.tick,
        busy_timeout: flags.busy_timeout,
        stale_after: flags.stale_after,
    };
    let code = stateous_daemon::serve::run_with(args, companion);
    match beside {
        Some(beside) => beside.finish(code),
        None => code,
    }
}

/// Log lines (`stateous.*` targets at INFO) go to stderr, one line each.
pub fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STATEOUS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}
