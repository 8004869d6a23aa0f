//! `stateous serve`'s flags as the command line gives them, as text before any
//! check (the checks that make them options are `options.rs`): each flag's help,
//! environment variable and default, read by clap in the binary.

use std::path::PathBuf;

use clap::Args;

use super::options::{
    DEFAULT_BUSY_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DB, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEPALIVE_COUNT, DEFAULT_KEEPALIVE_IDLE, DEFAULT_KEEPALIVE_INTERVAL, DEFAULT_LEASE,
    DEFAULT_LISTEN, DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_POOL_SIZE,
    DEFAULT_RETAIN_EVERY, DEFAULT_STALE_AFTER, DEFAULT_STATEMENT_TIMEOUT, DEFAULT_TICK,
};

/// The flags of `stateous serve`; every timing also reads an environment variable.
/// A timing or count takes a value that starts with `-`, so that `--lease -1s` is
/// refused by its own check (`serve::options`) in one sentence, not by clap as
/// an unknown argument.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ServeArgs {
    /// The graph file that `stateous compile` wrote.
    pub graph: PathBuf,
    /// The database URL: sqlite:///FILE (relative), sqlite:////ABSOLUTE/PATH, or
    /// postgresql://USER:PASSWORD@HOST:PORT/NAME (also postgres://).
    #[arg(long, value_name = "URL", env = "STATEOUS_DB", default_value = DEFAULT_DB)]
    pub db: String,
    /// HOST:PORT to listen on; port 0 picks a free port.
    #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// The Unix socket to serve the same API on (mode 0600) [default: stateous.sock
    /// in the user's runtime folder].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// How long a claimed task's lease lasts without a heartbeat (e.g. 2m, 30s, 500ms).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_LEASE", default_value = DEFAULT_LEASE)]
    pub lease: String,
    /// The time between two ticks of the clock (timers, timeouts, ended leases).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_TICK", default_value = DEFAULT_TICK)]
    pub tick: String,
    /// How long SQLite waits for another process's write lock; past it: 503 database_busy.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_BUSY_TIMEOUT", default_value = DEFAULT_BUSY_TIMEOUT)]
    pub busy_timeout: String,
    /// Kept for scripts of older versions; no longer used: a file lock beside a
    /// SQLite database (a session lock on Postgres) ends with its holder.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_STALE_AFTER", default_value = DEFAULT_STALE_AFTER, hide = true)]
    pub stale_after: String,
    /// Postgres: how long making a connection (the TCP connect and the login) may
    /// take, held on this side too; an unreachable or silent server at start ends
    /// `serve` with exit code 1 after about this long.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_CONNECT_TIMEOUT", default_value = DEFAULT_CONNECT_TIMEOUT)]
    pub connect_timeout: String,
    /// Postgres: how long one statement may run; past it the request answers 503
    /// database_busy and changes nothing. Held on this side too (0.5 s later), for
    /// a server that never got the statement or never answers.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_STATEMENT_TIMEOUT", default_value = DEFAULT_STATEMENT_TIMEOUT)]
    pub statement_timeout: String,
    /// Postgres: how long a statement waits for a lock, a token's too; past it the
    /// request answers 503 database_busy and changes nothing.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_LOCK_TIMEOUT", default_value = DEFAULT_LOCK_TIMEOUT)]
    pub lock_timeout: String,
    /// Postgres: the first TCP keepalive probe after this long without traffic.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_KEEPALIVE_IDLE", default_value = DEFAULT_KEEPALIVE_IDLE)]
    pub keepalive_idle: String,
    /// Postgres: then a keepalive probe this often.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_KEEPALIVE_INTERVAL", default_value = DEFAULT_KEEPALIVE_INTERVAL)]
    pub keepalive_interval: String,
    /// Postgres: a connection is dead after this many unanswered keepalive probes
    /// (with the defaults a dead connection is found in about a minute).
    #[arg(long, value_name = "N", allow_hyphen_values = true, env = "STATEOUS_KEEPALIVE_COUNT", default_value = DEFAULT_KEEPALIVE_COUNT)]
    pub keepalive_count: String,
    /// Postgres: how many connections serve reads, the writer, and requests that run alone.
    #[arg(long, value_name = "N", allow_hyphen_values = true, env = "STATEOUS_POOL_SIZE", default_value = DEFAULT_POOL_SIZE)]
    pub pool_size: String,
    /// Also run the supervisor of FOLDER in this process, speaking to this server
    /// over its socket. For development: one Ctrl-C stops both, the supervisor
    /// gracefully first (the server serves on until its running routines have
    /// reported), then the server; a second Ctrl-C stops both at once (exit 1).
    #[arg(long, value_name = "FOLDER")]
    pub supervise: Option<PathBuf>,
    /// For trying a workflow: a clock that `stateous clock advance 10m`, `freeze`
    /// and `thaw` move, so that hour-long timeouts pass in seconds. Refused on a
    /// database that a control plane on the real clock served.
    #[arg(long)]
    pub dev_clock: bool,
    /// With a dev clock: start it at this moment (ISO 8601, e.g.
    /// 2027-03-28T00:00:00Z) instead of now; implies --dev-clock. For trying
    /// schedules across a date, or a restart after a day away.
    #[arg(long, value_name = "TIME", env = "STATEOUS_DEV_CLOCK_AT")]
    pub dev_clock_at: Option<String>,
    /// Postgres: wait as a hot standby, and take over once the serving control
    /// plane's hold on the database ends; meanwhile GET /health answers 503
    /// standby and every other route 503 not_serving.
    ///
    /// It checks the graph against the database first, as a start does. A holder
    /// that dies on a live machine frees the database at once; the worst case is a
    /// holder whose machine or network died: the Postgres server drops its session
    /// after at most keepalive-idle + keepalive-interval × keepalive-count (the
    /// holder's flags; 30s + 10s × 3 = 60s with the defaults), and the standby
    /// takes over within 250ms more. A holder that is only stopped (SIGSTOP) keeps
    /// the database until its sessions end. Refused with a SQLite database and with
    /// --supervise.
    #[arg(long)]
    pub standby: bool,
    /// Allow what is not secure: --listen on an address other computers reach
    /// without access keys and TLS (without it, such an address is refused: make an
    /// access key over the socket with stateous access add, and serve TLS), and
    /// hooks with `verify: none`, which check no signature.
    #[arg(long)]
    pub insecure: bool,
    /// Serve HTTPS on --listen with this certificate chain (PEM, the server's own
    /// certificate first); needs --tls-key. The files are read again when they
    /// change (looked at most once a second, at a new connection), so a renewed
    /// certificate needs no restart; a new pair that cannot be used is logged and
    /// the one in use kept. Plain HTTP to the port gets no answer.
    #[arg(long, value_name = "PEM", env = "STATEOUS_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", env = "STATEOUS_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Also require a client certificate that chains to these CA certificates
    /// (PEM): a client without one is refused at the handshake (mutual TLS).
    #[arg(long, value_name = "PEM", env = "STATEOUS_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// At most this many TCP connections open at once; more wait, unaccepted,
    /// until one closes. The Unix socket is not capped.
    #[arg(long, value_name = "N", allow_hyphen_values = true, env = "STATEOUS_MAX_CONNECTIONS", default_value = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: String,
    /// A connection must send a whole request head (and finish its TLS
    /// handshake) within this long, also between two requests on one
    /// connection; else it is closed.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_HEADER_TIMEOUT", default_value = DEFAULT_HEADER_TIMEOUT)]
    pub header_timeout: String,
    /// The hooks file: each hook is served at POST /hooks/NAME, its deliveries
    /// checked against a secret read from the environment (docs/reference/files.md).
    /// A variable that is unset stops serve, naming it.
    #[arg(long, value_name = "FILE")]
    pub hooks: Option<PathBuf>,
    /// The limits file (YAML or JSON): limits and retry policies set as serve
    /// takes the database, each on the journal as file:FILE; those it does not
    /// name are left as they are (docs/limits.md).
    #[arg(long, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// Prune the tokens that ended longer ago than this (e.g. 30d), with their
    /// history, tasks, timers, memory and idempotency keys, in small batches; a
    /// pruned token's id can be started again. Without it every token is kept.
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        env = "STATEOUS_RETAIN_ENDED"
    )]
    pub retain_ended: Option<String>,
    /// The time between two passes of --retain-ended.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_RETAIN_EVERY", default_value = DEFAULT_RETAIN_EVERY)]
    pub retain_every: String,
    /// With --retain-ended: first write each pruned token's history into a new
    /// gzipped JSON-lines file in this folder, synced before its rows are deleted.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Send traces (OpenTelemetry, OTLP over HTTP as protobuf) to the collector at
    /// this base URL, e.g. http://127.0.0.1:4318 (spans go to URL/v1/traces).
    /// Without it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
    /// turn traces on; OTEL_EXPORTER_OTLP_HEADERS and OTEL_SERVICE_NAME are read
    /// too (docs/reference/traces.md). Off by default.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The log's format on stderr: text (lines for people) or json (one object per
    /// line: timestamp, level, target, message, and token, task and trace_id where
    /// a line has them).
    #[arg(long, value_name = "FORMAT", env = "STATEOUS_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Notifications: the deadline of one delivery attempt, from connecting to
    /// the end of the answer (docs/notifications.md).
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        env = "STATEOUS_NOTIFY_TIMEOUT",
        default_value = "10s"
    )]
    pub notify_timeout: String,
    /// Notifications: how long after it was written a notification not yet
    /// delivered is dead (listed by stateous notify failed, sent again by hand).
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        env = "STATEOUS_NOTIFY_DEAD_AFTER",
        default_value = "24h"
    )]
    pub notify_dead_after: String,
    /// Notifications: the first backoff after a failed attempt; each failure
    /// doubles it, up to 10 minutes. Shorter for tests.
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        env = "STATEOUS_NOTIFY_BACKOFF",
        default_value = "1s"
    )]
    pub notify_backoff: String,
    /// Notifications: delete a delivered notification, with its attempts, this
    /// long after its delivery (checked every --retain-every, in small batches).
    /// Pending and dead ones are kept.
    #[arg(
        long,
        value_name = "DURATION",
        allow_hyphen_values = true,
        env = "STATEOUS_NOTIFY_KEEP",
        default_value = "7d"
    )]
    pub notify_keep: String,
}

impl ServeArgs {
    /// The flags with their defaults, for `graph`.
    pub fn new(graph: PathBuf) -> ServeArgs {
        ServeArgs {
            graph,
            db: DEFAULT_DB.into(),
            listen: DEFAULT_LISTEN.into(),
            socket: None,
            lease: DEFAULT_LEASE.into(),
            tick: DEFAULT_TICK.into(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT.into(),
            stale_after: DEFAULT_STALE_AFTER.into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT.into(),
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT.into(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT.into(),
            keepalive_idle: DEFAULT_KEEPALIVE_IDLE.into(),
            keepalive_interval: DEFAULT_KEEPALIVE_INTERVAL.into(),
            keepalive_count: DEFAULT_KEEPALIVE_COUNT.into(),
            pool_size: DEFAULT_POOL_SIZE.into(),
            supervise: None,
            dev_clock: false,
            dev_clock_at: None,
            standby: false,
            insecure: false,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            max_connections: DEFAULT_MAX_CONNECTIONS.into(),
            header_timeout: DEFAULT_HEADER_TIMEOUT.into(),
            hooks: None,
            limits: None,
            retain_ended: None,
            retain_every: DEFAULT_RETAIN_EVERY.into(),
            archive: None,
            otlp_endpoint: None,
            log_format: "text".into(),
            notify_timeout: "10s".into(),
            notify_dead_after: "24h".into(),
            notify_backoff: "1s".into(),
            notify_keep: "7d".into(),
        }
    }

    /// Whether `serve` is to serve HTTPS (`--tls-cert` given). A plain fact of the
    /// flags, for checks that depend on it (e.g. what a wide `--listen` needs);
    /// whether the files can be used is [`tls_files`]'s to say.
    pub fn tls_configured(&self) -> bool {
        self.tls_cert.is_some()
    }
}
