//! The `stateous` command: parses the command line and calls the crates.
//!
//! Each command's arguments live beside this file (`token_args.rs`, `ctx_args.rs`);
//! the commands that only speak to a control plane live in `commands/`, the rest
//! of the work in the crates.

mod access_args;
mod backup_args;
mod bench_routines;
mod budget_args;
mod children;
mod cli_errors;
mod client_args;
mod commands;
mod completing;
mod ctx_args;
mod demo;
mod hooks_args;
mod limit_args;
mod logging;
mod manual;
mod notify_args;
mod schedule_args;
mod serve_args;
mod token_args;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use cli_errors::{exit_code, exit_with};
use commands::{bench, token};

/// mimalloc instead of glibc's malloc: allocation and freeing were about a quarter of
/// the control plane's instructions per token (measured with callgrind over `stateous
/// bench`). With the crate's `override` feature it is also the C code's `malloc`
/// (SQLite's), about 3% of the writer thread's instructions less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The version with the commit it was built from, when the build knew it
/// (`build.rs`): `0.1.0 (commit 93afa58c1d2e)`.
const VERSION: &str = env!("STATEOUS_VERSION");

/// Stateous: a durable state-machine engine.
#[derive(Parser)]
#[command(name = "stateous", version = VERSION, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Print the shell completions for SHELL
    ///
    /// For example:
    /// `stateous completions bash > ~/.local/share/bash-completion/completions/stateous`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page stateous(1), or write all pages into DIR
    ///
    /// With --dir, write it and a page for each command (stateous-serve.1, ...)
    /// into DIR.
    Man {
        /// The folder to write the pages into, e.g. ~/.local/share/man/man1.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
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
    /// Copy a SQLite database into a new file while it is served
    ///
    /// The copy is consistent (every change committed when it began, none half
    /// made) and checked before it is given its name; a file that exists is never
    /// overwritten.
    Backup(backup_args::BackupFlags),
    /// Run the control plane: the HTTP API and the clock
    ///
    /// The HTTP API answers on TCP and on a Unix socket; the API and the clock
    /// work over one database.
    Serve(Box<stateous_daemon::serve::ServeArgs>),
    /// Run the routines of a supervisor's folder
    ///
    /// Ctrl-C once: take no new tasks and wait for the running routines. Twice:
    /// stop them and exit 1.
    ///
    /// Timings are keys of stateous.yaml: heartbeat (30s), idle (1s, after an
    /// empty claim), grace (10s, SIGTERM to SIGKILL), cancel_wait (5s),
    /// request_timeout (30s), backoff ([1s, 2s, 4s, 8s, 16s, 30s]); each also from
    /// STATEOUS_SUPERVISOR_HEARTBEAT, _IDLE, _GRACE, _CANCEL_WAIT, _REQUEST_TIMEOUT
    /// and _BACKOFF (e.g. `1s,2s,4s`), which win. The heartbeat comes at least
    /// three times a lease when the control plane grants a shorter lease; each
    /// backoff wait moves by up to 20% at random.
    ///
    /// A routine's output goes to this log and to .stateous/logs/ (the newest 100
    /// files kept): at most 8 KiB of each line and 1 MiB of each attempt are kept,
    /// and a failure quotes the end of each of the last 5 lines of stderr (300
    /// characters).
    Supervise {
        /// The supervisor's folder.
        folder: PathBuf,
        // --url wins over `url` of stateous.yaml, which wins over STATEOUS_URL
        // (the flag's help says so).
        #[command(flatten)]
        connect: client_args::ConnectArgs,
        /// Send a span for each run of a routine (OpenTelemetry, OTLP over HTTP as
        /// protobuf) to the collector at this base URL, e.g. http://127.0.0.1:4318;
        /// without it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
        /// OTEL_EXPORTER_OTLP_ENDPOINT turn them on (docs/reference/traces.md).
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
        /// The log's format on stderr: text (the lines as they are) or json (one
        /// object per line, with task, token and trace_id for a task's lines).
        #[arg(long, value_name = "FORMAT", env = "STATEOUS_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
    },
    #[command(subcommand, about = ctx_args::ABOUT, long_about = ctx_args::LONG_ABOUT)]
    Ctx(ctx_args::CtxCommand),
    /// Act on one token, or on every token a filter matches
    ///
    /// Start, fire, show, pause, resume, cancel; list, why, retry; and, with
    /// --where, act on every token a filter matches.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Token(token_args::TokenArgs),
    /// Move the time of a daemon started with `serve --dev-clock`
    ///
    /// `advance 10m` fires the timers, timeouts and lease ends due inside it, in
    /// due order; `freeze` stops the clock, `thaw` lets it run, `show` says where
    /// it stands.
    Clock(token_args::ClockArgs),
    /// Make, list and revoke the control plane's access keys
    ///
    /// Over the daemon's Unix socket by default, where its own user acts as
    /// admin (the first key is made there); over http(s)://HOST:PORT with an
    /// admin key (--access-key-file or STATEOUS_ACCESS_KEY). `add` prints the
    /// secret once, alone on stdout.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Access(access_args::AccessCommandArgs),
    /// Schedules: start tokens on a clock, once per occurrence
    ///
    /// A schedule starts a token at each occurrence of a cron expression in an
    /// IANA time zone, or of an interval, once per occurrence through restarts
    /// (docs/schedules.md).
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Schedule(schedule_args::ScheduleArgs),
    /// Signed webhooks out when a token fails, waits or is done
    ///
    /// A subscription POSTs a notification (Standard Webhooks signatures) for
    /// each ledger entry it is about, or for each visit that stayed too long in
    /// a state; written in the transaction of the entry, sent after the commit,
    /// retried until a 2xx (docs/notifications.md). Admin key or the socket.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Notify(notify_args::NotifyArgs),
    /// Webhooks in: check a hooks file, sign a body, measure a hook
    ///
    /// The hooks file is what `serve --hooks FILE` serves at POST /hooks/NAME.
    #[command(subcommand)]
    Hooks(hooks_args::HooksCommand),
    /// See it work: a bundled example in the terminal UI
    ///
    /// A daemon, a supervisor and a few tokens of a bundled example, in the
    /// terminal UI (without a terminal: their histories).
    Demo,
    /// Watch and steer tokens in a terminal UI.
    Tui {
        #[command(flatten)]
        connect: client_args::ConnectArgs,
        /// Watch only: no key pauses, resumes, cancels, fires or starts. Also
        /// STATEOUS_READ_ONLY=1. NO_COLOR (set, not empty) draws without colour.
        #[arg(
            long,
            env = "STATEOUS_READ_ONLY",
            value_parser = clap::builder::BoolishValueParser::new()
        )]
        read_only: bool,
        /// Start on this filter of the filter language (as typed after `/`), e.g.
        /// "state == 'review' and moved > 600".
        #[arg(long = "where", value_name = "EXPR")]
        filter: Option<String>,
    },
    /// Set, list and remove the workflows' default budgets
    ///
    /// A budget is the most a token (with its children) may use of what its
    /// routines report (`stateous ctx usage cost_usd=0.12`); crossing it pauses the
    /// token and stops its routine. A token's own budget (`token start --budget`,
    /// `token budget`) wins over its workflow's default.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Budget(budget_args::BudgetArgs),
    /// Set, list and remove limits on claims
    ///
    /// A limit is a pool of slots over some states: at most MAX claimed attempts
    /// at once (in each key of --per), optionally at most N claims per second,
    /// minute or hour. A task that cannot get a slot stays queued; supervisors
    /// are simply given other tasks.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Limit(limit_args::LimitArgs),
    /// Measure a control plane: tokens/s and request latency
    ///
    /// Run tokens of the `orders` starter through it as many supervisors without
    /// routines, then print tokens/s and request latency.
    Bench(token_args::BenchArgs),
    /// Measure a supervisor: program routines per second
    ///
    /// Run short program routines (a shell script that calls `stateous ctx emit`)
    /// through a daemon and a supervisor of its own, then print routines per
    /// second.
    BenchRoutines {
        /// How many routines to run (one token each).
        #[arg(long, default_value_t = 1000)]
        routines: usize,
        /// How many run at once (the supervisor's `tasks`).
        #[arg(long, default_value_t = 64)]
        tasks: usize,
        /// Give up, with exit code 1, after this many seconds.
        #[arg(long, default_value_t = 300)]
        max_seconds: u64,
    },
}

#[derive(Subcommand)]
enum Init {
    /// Write the starter workflow NAME/flow.yaml, and compile it to NAME/build/NAME.json.
    Workflow {
        /// The workflow's name; also the name of its folder.
        name: String,
    },
    /// Write a supervisor's folder: contract.json, a stub per state, stateous.yaml.
    Supervisor {
        /// The workflow: a control plane's URL, a graph file or a flow.yaml.
        source: String,
        /// The supervisor's folder; made if missing.
        folder: PathBuf,
        #[command(flatten)]
        tls: client_args::ClientTlsArgs,
    },
}

/// An exit code from a command that returns one as a number.
/// Run `$module::run` of a command on one runtime, writing its lines to standard
/// output, and end as it ends (`commands::execute`).
macro_rules! to_stdout {
    ($($module:ident)::+, $command:expr) => {{
        let command = $command;
        commands::execute(async move {
            let mut out = std::io::stdout().lock();
            $($module)::+::run(&command, &mut out).await
        })
    }};
}

/// The command that `args` stand for, or its refusal printed and exit 1.
fn made<A, C: TryFrom<A, Error = String>>(args: A) -> C {
    C::try_from(args).unwrap_or_else(|e| exit_with(e))
}

fn code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// `stateous access ...` as the command runs it.
fn access_command(args: access_args::AccessCommandArgs) -> commands::access::AccessCommand {
    use access_args::AccessAction as Given;
    use commands::access::AccessAction as Action;
    let action = match args.action {
        Given::Add {
            name,
            role,
            supervisor,
            events,
            states,
            filter,
            yes,
        } => Action::Add {
            key: stateous_shared::access::NewKey {
                name,
                role,
                supervisor,
                scope: (!events.is_empty()).then_some(stateous_shared::access::Scope {
                    events,
                    states,
                    filter,
                }),
            },
            yes,
        },
        Given::List { json } => Action::List { json },
        // A name no key can have is said so before a request whose path would
        // reach no route (`a/b`).
        Given::Revoke { name }
            if !name.is_empty() && !stateous_shared::access::is_key_name(&name) =>
        {
            exit_with(stateous_shared::access::no_such_key(&name))
        }
        Given::Revoke { name } => Action::Revoke(name),
    };
    commands::access::AccessCommand {
        connection: args.connect.connection().unwrap_or_else(|e| exit_with(e)),
        action,
    }
}

fn main() -> ExitCode {
    // A shell's TAB (`stateous completions SHELL`): answer it and exit.
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(manual::COMPLETE_VAR)
        .bin("stateous")
        .complete();
    // The helper starts once per call of a routine: it parses its own commands alone.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|first| first == "ctx")
    {
        return code(ctx_args::parse_and_run());
    }
    let cli: Cli = cli_errors::parse_or_exit();
    match cli.command {
        Command::Version => {
            use std::io::Write;
            let written = writeln!(std::io::stdout(), "stateous {VERSION}");
            code(cli_errors::output_written(written))
        }
        Command::Completions { shell } => {
            manual::completions(shell).unwrap_or_else(|e| exit_with(e));
            ExitCode::SUCCESS
        }
        Command::Man { dir } => {
            manual::man(Cli::command(), dir.as_deref())
                .unwrap_or_else(|e| exit_with(format!("{e:#}")));
            ExitCode::SUCCESS
        }
        Command::Compile { flow, out } => {
            stateous_shared::compiler::compile_command(&flow, out.as_deref())
                .unwrap_or_else(|e| exit_with(e));
            ExitCode::SUCCESS
        }
        Command::Init(Init::Workflow { name }) => {
            stateous_shared::compiler::init_workflow(&name).unwrap_or_else(|e| exit_with(e));
            ExitCode::SUCCESS
        }
        Command::Init(Init::Supervisor {
            source,
            folder,
            tls,
        }) => code(exit_code(
            stateous_supervisor::init::init_command(&source, &folder, &tls.options()).map(|()| 0),
        )),
        Command::Serve(flags) => code(serve_args::run(*flags)),
        Command::Backup(flags) => code(backup_args::run(flags)),
        Command::Supervise {
            folder,
            connect,
            otlp_endpoint,
            log_format,
        } => {
            logging::to_stderr(&log_format);
            let connection = connect.connection().unwrap_or_else(|e| exit_with(e));
            code(exit_code(stateous_supervisor::command::supervise_command(
                &folder,
                connection,
                otlp_endpoint.as_deref(),
            )))
        }
        Command::Ctx(command) => code(ctx_args::run(command)),
        Command::BenchRoutines {
            routines,
            tasks,
            max_seconds,
        } => {
            let options = bench_routines::Options {
                routines,
                tasks,
                max_time: std::time::Duration::from_secs(max_seconds),
            };
            bench_routines::run(&options).unwrap_or_else(|e| exit_with(format!("{e:#}")));
            ExitCode::SUCCESS
        }
        Command::Bench(args) => {
            let options = bench::BenchOptions {
                connection: args.connect.connection().unwrap_or_else(|e| exit_with(e)),
                tokens: args.tokens,
                clients: args.clients,
                max_time: std::time::Duration::from_secs(args.max_seconds),
                notify: args.notify,
            };
            to_stdout!(bench, options)
        }
        Command::Hooks(command) => code(hooks_args::run(command)),
        Command::Demo => {
            demo::run().unwrap_or_else(|e| exit_with(format!("{e:#}")));
            ExitCode::SUCCESS
        }
        Command::Tui {
            connect,
            read_only,
            filter,
        } => {
            let options = stateous_tui::Options {
                connection: connect.connection().unwrap_or_else(|e| exit_with(e)),
                read_only,
                color: stateous_tui::color_wanted(),
                filter,
            };
            stateous_tui::run(options).unwrap_or_else(|e| exit_with(e));
            ExitCode::SUCCESS
        }
        Command::Clock(args) => to_stdout!(commands::clock, made(args)),
        Command::Access(args) => to_stdout!(commands::access, access_command(args)),
        Command::Notify(args) => to_stdout!(commands::notify, made(args)),
        Command::Schedule(args) => to_stdout!(commands::schedule, made(args)),
        Command::Token(args) => to_stdout!(token, made(args)),
        Command::Budget(args) => to_stdout!(commands::budget, made(args)),
        Command::Limit(args) => to_stdout!(commands::limit, made(args)),
    }
}
