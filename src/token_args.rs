//! The command line of `stateous token ...` and `stateous bench`.

use crate::client_args::{list_item, CommandArgs, ConnectArgs};
use crate::commands::token;
use clap::{Args, Subcommand};
use stateous_client::Steer;
use stateous_shared::bulk::BulkAction;

/// `stateous bench`: its options.
#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// How many tokens to run through `orders`.
    #[arg(long, default_value_t = 10_000)]
    pub tokens: usize,
    /// How many clients send requests at once.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Give up, with exit code 1, after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub max_seconds: u64,
    /// Run six passes: without subscriptions, with one matching every entry
    /// to a receiver in this process, without again, with one to a receiver
    /// that never answers, with one to an address that refuses connections,
    /// and without a third time; print each pass with a subscription beside
    /// the passes without around it, and the notifications delivered per
    /// second (needs an admin key or the socket).
    #[arg(long)]
    pub notify: bool,
}

/// `stateous clock ...`: the daemon's URL, then what to do with its dev clock.
#[derive(Args)]
pub struct ClockArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
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

impl TryFrom<ClockArgs> for crate::commands::clock::ClockCommand {
    type Error = String;

    fn try_from(args: ClockArgs) -> Result<Self, String> {
        use crate::commands::clock::ClockAction as Action;
        let action = match args.action {
            ClockAction::Advance { duration } => Action::Advance(duration),
            ClockAction::Freeze => Action::Freeze,
            ClockAction::Thaw => Action::Thaw,
            ClockAction::Show => Action::Show,
        };
        Ok(crate::commands::clock::ClockCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}

/// `stateous token ...`: the options every token command takes, then the command.
pub type TokenArgs = CommandArgs<TokenCommand>;

/// The flags that turn a steering command into a bulk action.
#[derive(Args, Default)]
pub struct BulkFlags {
    /// Act on every token this filter matches (the filter language: see `stateous
    /// token list --help`), after a preview and a question. Without it, give an ID.
    #[arg(long = "where", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Why: written into each token's history. Needed with --where.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// With --where: go ahead without asking to type the count. Without a terminal
    /// and without --yes, a bulk action is refused.
    #[arg(long)]
    pub yes: bool,
    /// With --where: only show how many tokens match and what it would do to each
    /// (with --jsonl, each as a line of JSON); nothing changes.
    #[arg(long)]
    pub dry_run: bool,
    /// With --where: print each token's outcome as a line of JSON, as it comes.
    #[arg(long)]
    pub jsonl: bool,
    /// With --where: take in the ended tokens the filter matches too (each is
    /// refused and counted). Without it pause, resume, cancel, fire and migrate
    /// leave them out, unless the filter names a status (`status == 'completed'`).
    #[arg(long)]
    pub include_ended: bool,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Start a token. Starting one that exists shows it.
    Start {
        /// The token's id, e.g. TICKET-1.
        #[arg(value_name = "ID")]
        id: String,
        /// The token's context: a JSON object, or @FILE to read it from a file, or -
        /// to read it from standard input.
        #[arg(value_name = "CONTEXT_JSON")]
        context: Option<String>,
        /// The token's own budget, NAME=NUMBER (repeat it, or separate with commas):
        /// a usage report that takes it over pauses the token and stops its routine,
        /// e.g. --budget cost_usd=5. Without it, the workflow's default applies.
        #[arg(long, value_name = "NAME=NUMBER", value_delimiter = ',', value_parser = list_item)]
        budget: Vec<String>,
        /// The token's priority (default 0): claims take the tasks of higher
        /// priorities first, then the oldest.
        #[arg(long, value_name = "N", allow_hyphen_values = true)]
        priority: Option<i64>,
    },
    /// Fire an event on a token; with --where, on every token the filter matches
    /// (then the arguments are EVENT [PAYLOAD_JSON], and each token's idempotency
    /// key is derived from --key, the event, the payload and its id, so the same
    /// bulk fire applies once).
    Fire {
        /// The token's id (with --where: the event).
        #[arg(value_name = "ID", add = ids())]
        id: String,
        /// The event's name (with --where: the payload).
        #[arg(value_name = "EVENT")]
        event: Option<String>,
        /// The event's payload: a JSON object, or @FILE to read it from a file, or -
        /// to read it from standard input.
        #[arg(value_name = "PAYLOAD_JSON")]
        payload: Option<String>,
        /// An idempotency key: the same key fires once.
        #[arg(long)]
        key: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Show a token, its children and its history; with no ID, list the tokens;
    /// with --graph, draw the workflow.
    Show {
        /// A token; leave it out to list the tokens.
        #[arg(value_name = "ID", add = ids())]
        id: Option<String>,
        /// Draw the workflow as a Mermaid diagram.
        #[arg(long)]
        graph: bool,
        /// After the history, print each new entry as it happens, until the token
        /// ends.
        #[arg(long)]
        follow: bool,
    },
    /// List the tokens a filter matches, the most recently moved first. A filter
    /// is a guard over the token: token, state, status, visit, workflow, parent,
    /// moved (seconds since its last move), graph (the checksum of the graph it
    /// runs on; a prefix matches) and ctx['key'] (deeper: ctx['a']['b']),
    /// with == != < <= > >= in, not in, and, or, not; e.g.
    /// "state == 'review' and moved > 600 and ctx['customer'] == 'ACME'".
    List {
        /// Only the tokens this filter matches.
        #[arg(long = "where", value_name = "EXPR")]
        filter: Option<String>,
        /// Only tokens with this status: active, paused, completed, failed, cancelled.
        #[arg(long)]
        status: Option<String>,
        /// Only tokens in this state.
        #[arg(long, add = states())]
        state: Option<String>,
        /// At most this many tokens: 1 to 1000 (default 100).
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<String>,
        /// Skip this many matching tokens first.
        #[arg(long, allow_negative_numbers = true)]
        offset: Option<String>,
        /// One token per line, as JSON.
        #[arg(long)]
        jsonl: bool,
    },
    /// Say why a token is where it is: how long it has been there, its transitions
    /// and their guards on its context, its timers, its task and lease, the
    /// supervisors that serve its state, held events, the entry that failed it,
    /// and a parallel state's children.
    Why {
        /// The token's id.
        #[arg(value_name = "ID", add = ids())]
        id: String,
    },
    /// Retry a failed token: it enters again the state where it failed (or
    /// --state) as a new visit with fresh retries, keeping its context. A child of
    /// a parallel state is retried through its top token, whose retry starts new
    /// children.
    Retry {
        /// The token's id (leave it out with --where).
        #[arg(value_name = "ID", add = ids())]
        id: Option<String>,
        /// The state to enter instead.
        #[arg(long, add = states())]
        state: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Pause a token: its events are held, its tasks wait, its timers stand still.
    Pause {
        /// The token's id (leave it out with --where).
        #[arg(value_name = "ID", add = ids())]
        id: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Resume a paused token: the held events apply in order.
    Resume {
        /// The token's id (leave it out with --where).
        #[arg(value_name = "ID", add = ids())]
        id: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Move the tokens a filter matches, each with its children, to the served
    /// graph (or with --undo back to the graph each was migrated from), after a
    /// preview of each token's resulting state, task and timer. A token whose
    /// state the served graph lacks (map it with --map OLD=NEW) or whose context
    /// its schema refuses is refused and left as it is; the others move.
    Migrate {
        /// A state's new name in the served graph, as OLD=NEW; give it once per state.
        #[arg(long, value_name = "OLD=NEW")]
        map: Vec<String>,
        /// Move each token back to the graph its last migration moved it from.
        #[arg(long)]
        undo: bool,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Cancel a token for good.
    Cancel {
        /// The token's id (leave it out with --where).
        #[arg(value_name = "ID", add = ids())]
        id: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
    /// Delete the ended tokens a filter matches, each with its children, history,
    /// tasks, timers, memory and idempotency keys, after a preview and a question
    /// (as the other steering commands with --where). A live token is refused. A
    /// pruned token's id can be started again, as a new token.
    Prune {
        /// Which tokens (the filter language of `stateous token list`).
        #[arg(long = "where", value_name = "EXPR")]
        filter: String,
        /// Why: written to the control plane's log (a pruned token keeps no
        /// history to write it into).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// Go ahead without asking to type the count. Without a terminal and
        /// without --yes, the prune is refused.
        #[arg(long)]
        yes: bool,
        /// Only show how many tokens match and what it would do to a few.
        #[arg(long)]
        dry_run: bool,
        /// Print each token's outcome as a line of JSON, as it comes.
        #[arg(long)]
        jsonl: bool,
        /// First write each token's history into a new gzipped JSON-lines file in
        /// this folder of the control plane's machine (the same machine over a
        /// Unix socket), synced before its rows are deleted.
        #[arg(long, value_name = "DIR")]
        archive: Option<std::path::PathBuf>,
    },
    /// Change a token's budget: each NAME=NUMBER sets the most its family may use
    /// of NAME, NAME=none removes it; the other names stay. It does not resume a
    /// token paused over its budget: resume it then.
    Budget {
        /// The token's id (a top token: its budget covers its children).
        #[arg(value_name = "ID", add = ids())]
        id: String,
        /// NAME=NUMBER or NAME=none, one or more, e.g. cost_usd=8.
        #[arg(required = true, value_name = "NAME=NUMBER")]
        amounts: Vec<String>,
    },
    /// Change a token's priority: claims take the tasks of higher priorities
    /// first (`docs/limits.md`). With --where, `token priority N --where EXPR`
    /// sets N on every live token the filter matches, after a preview.
    Priority {
        /// The token's id (with --where: the priority).
        #[arg(value_name = "ID", add = ids(), allow_hyphen_values = true)]
        id: String,
        /// The new priority, a whole number from -1000000 to 1000000 (0 is the
        /// default).
        #[arg(value_name = "N", allow_hyphen_values = true)]
        priority: Option<String>,
        #[command(flatten)]
        bulk: BulkFlags,
    },
}

/// A priority as the command line gives it: a whole number (its range is the
/// control plane's check, with its sentence).
fn whole_priority(text: &str) -> Result<i64, String> {
    text.parse()
        .map_err(|_| format!("a priority is a whole number from -1000000 to 1000000, not {text:?}"))
}

/// Token ids, completed from the daemon (`completing.rs`).
fn ids() -> clap_complete::engine::ArgValueCandidates {
    clap_complete::engine::ArgValueCandidates::new(crate::completing::token_ids)
}

/// State names, completed from the daemon's graph.
fn states() -> clap_complete::engine::ArgValueCandidates {
    clap_complete::engine::ArgValueCandidates::new(crate::completing::state_names)
}

/// The one token of a steering command, or its bulk options; one sentence when
/// the command line gives both, neither, or bulk flags without --where.
fn one_or_many(
    action: BulkAction,
    id: Option<String>,
    flags: BulkFlags,
) -> Result<Result<String, token::BulkOptions>, String> {
    let verb = action.as_str();
    match (id, flags.filter) {
        (Some(_), Some(_)) => Err(format!("give a token ID or --where, not both, to {verb}")),
        (None, None) => Err(format!(
            "give the ID of the token to {verb}, or --where EXPR"
        )),
        (Some(id), None) => {
            let retry_reason = action == BulkAction::Retry && flags.reason.is_some();
            if (flags.reason.is_some() && !retry_reason)
                || flags.yes
                || flags.dry_run
                || flags.jsonl
                || flags.include_ended
            {
                return Err(format!(
                    "--reason, --yes, --dry-run, --jsonl and --include-ended go with --where, to {verb} \
                     many tokens"
                ));
            }
            Ok(Ok(id))
        }
        (None, Some(filter)) => Ok(Err(token::BulkOptions {
            reason: flags.reason,
            yes: flags.yes,
            dry_run: flags.dry_run,
            jsonl: flags.jsonl,
            include_ended: flags.include_ended,
            ..token::BulkOptions::new(action, filter)
        })),
    }
}

/// `token migrate --map OLD=NEW ...`: each pair once.
fn state_map(pairs: &[String]) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut map = std::collections::BTreeMap::new();
    for pair in pairs {
        let (old, new) = pair
            .split_once('=')
            .filter(|(old, new)| !old.is_empty() && !new.is_empty())
            .ok_or_else(|| format!("--map takes OLD=NEW, two state names, not '{pair}'"))?;
        if map.insert(old.to_string(), new.to_string()).is_some() {
            return Err(format!("--map names the state '{old}' twice"));
        }
    }
    Ok(map)
}

/// `token prune --archive`: the folder as an absolute path, which the control
/// plane is sent (a relative one is read from the current folder).
fn archive_path(dir: std::path::PathBuf) -> Result<String, String> {
    let dir = std::path::absolute(&dir).map_err(|e| format!("--archive {}: {e}", dir.display()))?;
    dir.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("--archive {} is not UTF-8 text", dir.display()))
}

/// `token list --limit`: 1 to 1000, as `GET /tokens` takes it. Read here rather
/// than by clap, whose sentence for `-1` was "unexpected argument '-1' found".
fn listing_limit(text: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .ok()
        .filter(|limit| (1..=1000).contains(limit))
        .ok_or_else(|| format!("--limit must be a whole number from 1 to 1000, not '{text}'"))
}

/// `token list --offset`: 0 or more.
fn listing_offset(text: &str) -> Result<u64, String> {
    text.parse::<u64>()
        .map_err(|_| format!("--offset must be a whole number, 0 or more, not '{text}'"))
}

impl TryFrom<TokenArgs> for token::TokenCommand {
    type Error = String;

    fn try_from(args: TokenArgs) -> Result<token::TokenCommand, String> {
        use token::TokenAction as A;
        let steer = |id: Option<String>, bulk: BulkFlags, action: Steer, what: BulkAction| {
            Ok::<_, String>(match one_or_many(what, id, bulk)? {
                Ok(id) => A::Steer { id, action },
                Err(options) => A::Bulk(options),
            })
        };
        let action = match args.action {
            TokenCommand::Start {
                id,
                context,
                budget,
                priority,
            } => A::Start {
                id,
                context,
                budget,
                priority,
            },
            TokenCommand::Budget { id, amounts } => A::Budget { id, amounts },
            TokenCommand::Priority { id, priority, bulk } => {
                let bulk_first = bulk.filter.is_some();
                match one_or_many(
                    BulkAction::Priority,
                    (!bulk_first).then(|| id.clone()),
                    bulk,
                )? {
                    Ok(id) => A::Priority {
                        id,
                        priority: whole_priority(
                            &priority.ok_or("give the priority N, a whole number")?,
                        )?,
                    },
                    Err(options) if priority.is_none() => A::Bulk(token::BulkOptions {
                        priority: Some(whole_priority(&id)?),
                        ..options
                    }),
                    Err(_) => return Err("with --where, priority takes N: no ID".into()),
                }
            }
            TokenCommand::Fire {
                id,
                event,
                payload,
                key,
                bulk,
            } => {
                let event_first = bulk.filter.is_some();
                match one_or_many(BulkAction::Fire, (!event_first).then(|| id.clone()), bulk)? {
                    Ok(id) => A::Fire {
                        id,
                        event: event.ok_or("give the EVENT to fire")?,
                        payload,
                        key,
                    },
                    Err(options) if payload.is_none() => A::Bulk(token::BulkOptions {
                        event: Some(id),
                        payload: event,
                        key,
                        ..options
                    }),
                    Err(_) => {
                        return Err("with --where, fire takes EVENT [PAYLOAD_JSON]: no ID".into())
                    }
                }
            }
            TokenCommand::Show { id, graph, follow } => A::Show { id, graph, follow },
            TokenCommand::List {
                filter,
                status,
                state,
                limit,
                offset,
                jsonl,
            } => A::List(token::ListOptions {
                filter,
                status,
                state,
                limit: limit.map(|text| listing_limit(&text)).transpose()?,
                offset: offset.map(|text| listing_offset(&text)).transpose()?,
                jsonl,
            }),
            TokenCommand::Why { id } => A::Why { id },
            TokenCommand::Retry { id, state, bulk } => {
                let reason = bulk.reason.clone();
                match one_or_many(BulkAction::Retry, id, bulk)? {
                    Ok(id) => A::Retry { id, state, reason },
                    Err(options) => A::Bulk(token::BulkOptions { state, ..options }),
                }
            }
            TokenCommand::Migrate { map, undo, bulk } => {
                let options = match one_or_many(BulkAction::Migrate, None, bulk)? {
                    Err(options) => options,
                    Ok(_) => return Err("give --where EXPR: the tokens to migrate".into()),
                };
                A::Bulk(token::BulkOptions {
                    map: state_map(&map)?,
                    undo,
                    ..options
                })
            }
            TokenCommand::Pause { id, bulk } => steer(id, bulk, Steer::Pause, BulkAction::Pause)?,
            TokenCommand::Resume { id, bulk } => {
                steer(id, bulk, Steer::Resume, BulkAction::Resume)?
            }
            TokenCommand::Cancel { id, bulk } => {
                steer(id, bulk, Steer::Cancel, BulkAction::Cancel)?
            }
            TokenCommand::Prune {
                filter,
                reason,
                yes,
                dry_run,
                jsonl,
                archive,
            } => A::Bulk(token::BulkOptions {
                reason,
                yes,
                dry_run,
                jsonl,
                archive: archive.map(archive_path).transpose()?,
                ..token::BulkOptions::new(BulkAction::Prune, filter)
            }),
        };
        Ok(token::TokenCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}
