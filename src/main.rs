//! The `stateous` command: parses the command line and calls the crates.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use stateous_daemon::serve::options as serve_options;

/// Stateous: a durable state-machine engine.
#[derive(Parser)]
#[command(name = "stateous", version, about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Check a workflow (flow.yaml) and write its graph file.
    Compile {
        /// The workflow's file, e.g. sdlc/flow.yaml.
        flow: PathBuf,
        /// The graph file to write. Default: build/<workflow>.json next to FLOW.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write a new workflow's folder, or a supervisor's folder.
    #[command(subcommand)]
    Init(Init),
    /// Run the control plane: the HTTP API (TCP and a Unix socket) and the clock,
    /// over one database.
    Serve(ServeFlags),
}

#[derive(Subcommand)]
enum Init {
    /// Write the starter workflow NAME/flow.yaml, and compile it to NAME/build/NAME.json.
    Workflow {
        /// The workflow's name; also the name of its folder.
        name: String,
    },
}

/// The flags of `stateous serve`; every timing also reads an environment variable.
#[derive(Args)]
struct ServeFlags {
    /// The graph file that `stateous compile` wrote.
    graph: PathBuf,
    /// The database URL: sqlite:///FILE (relative) or sqlite:////ABSOLUTE/PATH.
    #[arg(long, value_name = "URL", default_value = serve_options::DEFAULT_DB)]
    db: String,
    /// HOST:PORT to listen on; port 0 picks a free port.
    #[arg(long, value_name = "HOST:PORT", default_value = serve_options::DEFAULT_LISTEN)]
    listen: String,
    /// The Unix socket to serve the same API on (mode 0600) [default: stateous.sock
    /// in the user's runtime folder].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// How long a claimed task's lease lasts without a heartbeat (e.g. 2m, 30s, 500ms).
    #[arg(long, value_name = "DURATION", env = "STATEOUS_LEASE", default_value = serve_options::DEFAULT_LEASE)]
    lease: String,
    /// The time between two ticks of the clock (timers, timeouts, ended leases).
    #[arg(long, value_name = "DURATION", env = "STATEOUS_TICK", default_value = serve_options::DEFAULT_TICK)]
    tick: String,
    /// How long SQLite waits for another process's write lock; past it: 503 database_busy.
    #[arg(long, value_name = "DURATION", env = "STATEOUS_BUSY_TIMEOUT", default_value = serve_options::DEFAULT_BUSY_TIMEOUT)]
    busy_timeout: String,
    /// How long a control plane's hold on the database lasts without renewal, after
    /// which another control plane may take it.
    #[arg(long, value_name = "DURATION", env = "STATEOUS_STALE_AFTER", default_value = serve_options::DEFAULT_STALE_AFTER)]
    stale_after: String,
}

/// Print `error: <sentence>` on stderr and exit 1, as every command fails.
fn exit_with(error: impl std::fmt::Display) -> ! {
    eprintln!("error: {error}");
    std::process::exit(1)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("stateous {}", env!("CARGO_PKG_VERSION")),
        Command::Compile { flow, out } => {
            stateous_shared::compiler::compile_command(&flow, out.as_deref())
                .unwrap_or_else(|e| exit_with(e));
        }
        Command::Init(Init::Workflow { name }) => {
            stateous_shared::compiler::init_workflow(&name).unwrap_or_else(|e| exit_with(e));
        }
        Command::Serve(flags) => {
            log_to_stderr();
            std::process::exit(stateous_daemon::serve::run(serve_options::ServeArgs {
                graph: flags.graph,
                db: flags.db,
                listen: flags.listen,
                socket: flags.socket,
                lease: flags.lease,
                tick: flags.tick,
                busy_timeout: flags.busy_timeout,
                stale_after: flags.stale_after,
            }));
        }
    }
    Ok(())
}

/// Log lines (`stateous.*` targets at INFO) go to stderr, one line each.
fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STATEOUS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}
