//! The command line of `stateous notify ...` (`docs/reference/cli.md`, "notify";
//! `docs/notifications.md`): the control plane's URL, then what to do with its
//! subscriptions.

use clap::Subcommand;

use crate::client_args::{list_item, CommandArgs};
use crate::commands::notify::{NotifyAction as Action, NotifyCommand};
use stateous_shared::notify::NewSubscription;

/// `stateous notify ...`.
pub type NotifyArgs = CommandArgs<NotifyAction>;

/// What to do with the subscriptions.
#[derive(Subcommand)]
pub enum NotifyAction {
    /// Add a subscription: POST a signed notification to URL for each ledger
    /// entry it is about, or for each visit that stayed too long in a state
    ///
    /// The signing secret (whsec_...) is printed once, alone on stdout.
    Add {
        /// The subscription's name: 1 to 64 of A-Z a-z 0-9 . _ -.
        name: String,
        /// Where notifications go: an http:// or https:// URL.
        #[arg(value_name = "URL")]
        target: String,
        /// The ledger entry kinds it is about, comma-separated (started,
        /// entered, completed, failed, cancelled, paused, task_failed,
        /// task_retrying, budget_exceeded, ...); completed,failed by default.
        #[arg(long, value_delimiter = ',', value_parser = list_item)]
        kinds: Vec<String>,
        /// Only entries of tokens in these states (for entered: the state
        /// entered), comma-separated.
        #[arg(long, value_delimiter = ',', value_parser = list_item)]
        states: Vec<String>,
        /// Only tokens of this workflow.
        #[arg(long)]
        workflow: Option<String>,
        /// Only tokens that match this filter (as token list --where).
        #[arg(long = "where", value_name = "FILTER")]
        filter: Option<String>,
        /// json (the entry and the token) or slack ({"text": ...}).
        #[arg(long, default_value = "json")]
        format: String,
        /// One notification for each visit of a token that stayed in its state
        /// longer than this (e.g. 2h; at least 1s): the kind no_move.
        // A value may start with '-' (allow_hyphen_values), so that `-1s` gets
        // the control plane's sentence, not clap's hint to write `-- -1s`.
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
        no_move_for: Option<String>,
    },
    /// List the subscriptions with their pending, retrying, delivered and dead counts
    List,
    /// Show one subscription and its latest attempts (status and latency)
    Show {
        /// The subscription's name.
        name: String,
    },
    /// Pause a subscription: it writes and sends no notification until it resumes
    Pause {
        /// The subscription's name.
        name: String,
    },
    /// Resume a paused subscription
    Resume {
        /// The subscription's name.
        name: String,
    },
    /// Remove a subscription and its notifications
    Remove {
        /// The subscription's name.
        name: String,
    },
    /// Send a test notification, as the others are sent
    Test {
        /// The subscription's name.
        name: String,
    },
    /// A new signing secret, printed once; the last one signs too until the next rotation
    Rotate {
        /// The subscription's name.
        name: String,
    },
    /// List the dead notifications (given up after --notify-dead-after)
    Failed,
    /// Send a subscription's dead notifications again, with their webhook-id
    Redeliver {
        /// The subscription's name.
        name: String,
        /// Only this notification.
        #[arg(long)]
        id: Option<i64>,
    },
}

impl TryFrom<NotifyArgs> for NotifyCommand {
    type Error = String;

    fn try_from(args: NotifyArgs) -> Result<Self, String> {
        let action = match args.action {
            NotifyAction::Add {
                name,
                target,
                kinds,
                states,
                workflow,
                filter,
                format,
                no_move_for,
            } => Action::Add(Box::new(NewSubscription {
                name,
                url: target,
                kinds: named_kinds(kinds)?,
                states,
                workflow,
                filter,
                format: Some(format),
                no_move_for,
            })),
            NotifyAction::List => Action::List,
            NotifyAction::Show { name } => Action::Show(named(name)?),
            NotifyAction::Pause { name } => Action::Pause(named(name)?),
            NotifyAction::Resume { name } => Action::Resume(named(name)?),
            NotifyAction::Remove { name } => Action::Remove(named(name)?),
            NotifyAction::Test { name } => Action::Test(named(name)?),
            NotifyAction::Rotate { name } => Action::Rotate(named(name)?),
            NotifyAction::Failed => Action::Failed,
            NotifyAction::Redeliver { name, id } => Action::Redeliver(named(name)?, id),
        };
        Ok(NotifyCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}

/// `name`, when a subscription can have it ([`crate::client_args::named`]).
fn named(name: String) -> Result<String, String> {
    crate::client_args::named("subscription", name)
}

/// The kinds `--kinds` names, without empty items; given, it names one at least
/// (`--kinds ''` is refused as `kinds: []` is).
fn named_kinds(kinds: Vec<String>) -> Result<Vec<String>, String> {
    let given = !kinds.is_empty();
    let named: Vec<String> = kinds.into_iter().filter(|k| !k.is_empty()).collect();
    if given && named.is_empty() {
        return Err(stateous_shared::notify::NO_KIND.to_string());
    }
    Ok(named)
}
