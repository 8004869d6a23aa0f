//! The command line of `stateous token ...` and `stateous bench`.

use clap::{Args, Subcommand};
use stateous_shared::client::Steer;
use stateous_shared::commands::token;

/// `stateous bench`: its options (SPEC section 5).
#[derive(Args)]
pub struct BenchArgs {
    /// The control plane's URL (it must serve the `orders` starter). Default:
    /// STATEOUS_URL, else the default socket, else http://127.0.0.1:8080.
    #[arg(long)]
    pub url: Option<String>,
    /// How many tokens to run through `orders`.
    #[arg(long, default_value_t = 10_000)]
    pub tokens: usize,
    /// How many clients send requests at once.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Give up, with exit code 1, after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub max_seconds: u64,
}

/// `stateous clock ...`: the daemon's URL, then what to do with its dev clock.
#[derive(Args)]
pub struct ClockArgs {
    /// The control plane's URL: http://HOST:PORT or unix:///PATH. Default:
    /// STATEOUS_URL, else the default socket when a daemon listens there, else
    /// http://127.0.0.1:8080.
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// Print the control plane's JSON answer instead of the line.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub action: ClockAction,
}

/// What to do with the dev clock.
#[derive(Subcommand)]
pub enum ClockAction {
    /// Move the clock forward by DURATION (30s, 10m, 2h, 1d); what falls due
    /// inside it happens in due order, each once.
    Advance {
        /// How far: 30s, 10m, 2h or 1d.
        duration: String,
    },
    /// Stop the clock where it stands.
    Freeze,
    /// Let a frozen clock run again from where it stood.
    Thaw,
    /// Print how far ahead the clock is, and its time.
    Show,
}

impl From<ClockArgs> for stateous_shared::commands::clock::ClockCommand {
    fn from(args: ClockArgs) -> Self {
        use stateous_shared::commands::clock::ClockAction as Action;
        let action = match args.action {
            ClockAction::Advance { duration } => Action::Advance(duration),
            ClockAction::Freeze => Action::Freeze,
            ClockAction::Thaw => Action::Thaw,
            ClockAction::Show => Action::Show,
        };
        stateous_shared::commands::clock::ClockCommand {
            url: args.url,
            json: args.json,
            action,
        }
    }
}

/// `stateous token ...`: the options every token command takes, then the command.
#[derive(Args)]
pub struct TokenArgs {
    /// The control plane's URL: http://HOST:PORT or unix:///PATH. Default:
    /// STATEOUS_URL, else the default socket when a daemon listens there, else
    /// http://127.0.0.1:8080.
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// Print the control plane's JSON answer instead of the lines.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub action: TokenCommand,
}

#[derive(Subcommand)]
pub enum TokenCommand {
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
