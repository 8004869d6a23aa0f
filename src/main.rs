//! The `stateous` command: parses the command line and calls the crates.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use stateous_shared::client::Steer;
use stateous_shared::commands::{self, bench, token};

/// Stateous: a durable state-machine engine.
#[derive(Parser)]
#[command(name = "stateous", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Act on tokens: start, fire, show, pause, resume, cancel.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Token(TokenArgs),
    /// Measure a control plane: run tokens of the `orders` starter through it as
    /// many supervisors without routines, then print tokens/s and request latency.
    Bench(BenchArgs),
}

/// `stateous bench`: its options (SPEC section 5).
#[derive(Args)]
struct BenchArgs {
    /// The control plane's URL (it must serve the `orders` starter). Default:
    /// STATEOUS_URL, else the default socket, else http://127.0.0.1:8080.
    #[arg(long)]
    url: Option<String>,
    /// How many tokens to run through `orders`.
    #[arg(long, default_value_t = 10_000)]
    tokens: usize,
    /// How many clients send requests at once.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Give up, with exit code 1, after this many seconds.
    #[arg(long, default_value_t = 600)]
    max_seconds: u64,
}

/// `stateous token ...`: the options every token command takes, then the command.
#[derive(Args)]
struct TokenArgs {
    /// The control plane's URL: http://HOST:PORT or unix:///PATH. Default:
    /// STATEOUS_URL, else the default socket when a daemon listens there, else
    /// http://127.0.0.1:8080.
    #[arg(long, global = true)]
    url: Option<String>,
    /// Print the control plane's JSON answer instead of the lines.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    action: TokenCommand,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Start a token. Starting one that exists shows it.
    Start {
        /// The token's id, e.g. TICKET-1.
        #[arg(value_name = "ID")]
        id: String,
        /// The token's context: a JSON object.
        #[arg(value_name = "CONTEXT_JSON")]
        context: Option<String>,
    },
    /// Fire an event on a token.
    Fire {
        /// The token's id.
        #[arg(value_name = "ID")]
        id: String,
        /// The event's name.
        #[arg(value_name = "EVENT")]
        event: String,
        /// The event's payload: a JSON object.
        #[arg(value_name = "PAYLOAD_JSON")]
        payload: Option<String>,
        /// An idempotency key: the same key fires once.
        #[arg(long)]
        key: Option<String>,
    },
    /// Show a token, its children and its history; with no ID, list the tokens;
    /// with --graph, draw the workflow.
    Show {
        /// A token; leave it out to list the tokens.
        #[arg(value_name = "ID")]
        id: Option<String>,
        /// Draw the workflow as a Mermaid diagram.
        #[arg(long)]
        graph: bool,
        /// After the history, print each new entry as it happens, until the token
        /// ends.
        #[arg(long)]
        follow: bool,
    },
    /// Pause a token: its events are held, its tasks wait, its timers stand still.
    Pause {
        /// The token's id.
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Resume a paused token: the held events apply in order.
    Resume {
        /// The token's id.
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Cancel a token for good.
    Cancel {
        /// The token's id.
        #[arg(value_name = "ID")]
        id: String,
    },
}

impl From<TokenArgs> for token::TokenCommand {
    fn from(args: TokenArgs) -> token::TokenCommand {
        use token::TokenAction as A;
        let steer = |id, action| A::Steer { id, action };
        let action = match args.action {
            TokenCommand::Start { id, context } => A::Start { id, context },
            TokenCommand::Fire {
                id,
                event,
                payload,
                key,
            } => A::Fire {
                id,
                event,
                payload,
                key,
            },
            TokenCommand::Show { id, graph, follow } => A::Show { id, graph, follow },
            TokenCommand::Pause { id } => steer(id, Steer::Pause),
            TokenCommand::Resume { id } => steer(id, Steer::Resume),
            TokenCommand::Cancel { id } => steer(id, Steer::Cancel),
        };
        token::TokenCommand {
            url: args.url,
            json: args.json,
            action,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("stateous {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Command::Bench(args) => {
            let options = bench::BenchOptions {
                url: args.url,
                tokens: args.tokens,
                clients: args.clients,
                max_time: std::time::Duration::from_secs(args.max_seconds),
            };
            commands::execute(async move {
                let mut out = std::io::stdout().lock();
                bench::run(&options, &mut out).await
            })
        }
        Command::Token(args) => {
            let command = token::TokenCommand::from(args);
            commands::execute(async move {
                let mut out = std::io::stdout().lock();
                token::run(&command, &mut out).await
            })
        }
    }
}
