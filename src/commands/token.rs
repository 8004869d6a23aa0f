//! `stateous token start|fire|show|pause|resume|cancel`: steer and read tokens over the
//! HTTP API, printing the reference's lines (`docs/reference/cli.md`,
//! `docs/how-to/steer-tokens.md`) or, with `--json`, the daemon's answers. Ours:
//! `list`, `why`, `retry`, and each steering command over every token a filter matches
//! (`--where`, [`bulk`]).

use std::io::Write;

use serde_json::json;

use super::{json_object, line, pretty, CommandError};
use stateous_client::{Call, Client, ClientError, Steer, TokenQuery, TransportError};
use stateous_shared::history::{entry_line, token_line};
use stateous_shared::wire::{HistoryEntry, Object, TokenView};

mod budget;
mod bulk;
mod follow;
mod operate;

pub use bulk::{BulkOptions, Console, Terminal};
pub use operate::ListOptions;

/// The most children `show ID` lists: the largest page of `GET /tokens`.
pub const MOST_CHILDREN: u32 = 1000;

/// One `stateous token ...` command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCommand {
    /// `--url`, the access key and the TLS flags: how to reach the daemon.
    pub connection: stateous_client::Connection,
    /// `--json`: print the daemon's JSON answer instead of the lines.
    pub json: bool,
    /// What to do.
    pub action: TokenAction,
}

/// The sub-command and its arguments, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenAction {
    /// `start ID [CONTEXT_JSON]`.
    Start {
        /// The token's id.
        id: String,
        /// The context, a JSON object; none is `{}`.
        context: Option<String>,
        /// Ours: `--budget NAME=NUMBER`, the token's own budget; none: the
        /// workflow's default.
        budget: Vec<String>,
        /// Ours: `--priority N` (`docs/limits.md`).
        priority: Option<i64>,
    },
    /// `fire ID EVENT [PAYLOAD_JSON] [--key KEY]`.
    Fire {
        /// The token's id.
        id: String,
        /// The event's name.
        event: String,
        /// The payload, a JSON object.
        payload: Option<String>,
        /// An idempotency key.
        key: Option<String>,
    },
    /// `show [ID] [--graph] [--follow]`: a token, its children and history; or
    /// the list.
    Show {
        /// The token; none lists the tokens.
        id: Option<String>,
        /// `--graph`: draw the served workflow instead.
        graph: bool,
        /// `--follow`: after the history, print each new entry as it commits, until the
        /// token ends.
        follow: bool,
    },
    /// `pause ID`, `resume ID` or `cancel ID`.
    Steer {
        /// The token's id.
        id: String,
        /// Which of the three.
        action: Steer,
    },
    /// `list [--where EXPR] [--status S] [--state S] [--limit N] [--offset N]`.
    List(ListOptions),
    /// `why ID`: why the token is where it is.
    Why {
        /// The token's id.
        id: String,
    },
    /// `retry ID [--state STATE] [--reason TEXT]`.
    Retry {
        /// The token's id.
        id: String,
        /// The state to enter; none is the state where it failed.
        state: Option<String>,
        /// Why, for its history.
        reason: Option<String>,
    },
    /// `pause|resume|cancel|fire|retry --where EXPR --reason TEXT`.
    Bulk(BulkOptions),
    /// `budget ID NAME=NUMBER...` (ours): change a token's budget.
    Budget {
        /// The token's id.
        id: String,
        /// `NAME=NUMBER` or `NAME=none`.
        amounts: Vec<String>,
    },
    /// `priority ID N` (ours): change a token's priority.
    Priority {
        /// The token's id.
        id: String,
        /// The new priority.
        priority: i64,
    },
}

pub use stateous_shared::limits::{is_token_id, TOKEN_ID_RULE};

/// An id with a `/` that goes in a path is refused here with the daemon's
/// sentence: sent, the path would end in a `/` or name another route, and the
/// answer would be a redirect or another route's, not a refusal. Other ids go to
/// the daemon, which answers `token_not_found` for a lookup; `start` sends its id
/// in the body, and the daemon refuses a bad one with the same sentence, as the
/// reference's client shows it.
fn check_id(action: &TokenAction) -> Result<(), CommandError> {
    let id = match action {
        TokenAction::Fire { id, .. }
        | TokenAction::Steer { id, .. }
        | TokenAction::Why { id }
        | TokenAction::Retry { id, .. }
        | TokenAction::Budget { id, .. }
        | TokenAction::Priority { id, .. }
        | TokenAction::Show { id: Some(id), .. } => id,
        TokenAction::Start { .. }
        | TokenAction::Show { id: None, .. }
        | TokenAction::List(_)
        | TokenAction::Bulk(_) => return Ok(()),
    };
    if id.contains('/') && !is_token_id(id) {
        return Err(CommandError::Usage(TOKEN_ID_RULE.to_string()));
    }
    Ok(())
}

/// Run `command`, writing its output to `out`; a bulk action asks its question and
/// shows its progress on the terminal.
pub async fn run(command: &TokenCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    run_with(command, out, &mut Terminal).await
}

/// Run `command`, writing its output to `out`, asking and telling through
/// `console` (tests pass a scripted one).
pub async fn run_with(
    command: &TokenCommand,
    out: &mut dyn Write,
    console: &mut dyn Console,
) -> Result<(), CommandError> {
    check_id(&command.action)?;
    if let TokenAction::Show { id, graph, follow } = &command.action {
        if id.is_some() && *graph {
            return Err(CommandError::Usage(
                "give a token ID or --graph, not both".into(),
            ));
        }
        if *follow && (id.is_none() || command.json) {
            return Err(CommandError::Usage(
                "--follow follows one token: give its ID, without --json".into(),
            ));
        }
    }
    let client = command
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, false)?;
    // The commands of ours name a refusal's code; the reference's print its line.
    let ours = match &command.action {
        TokenAction::List(options) => {
            Some(operate::list(&client, options, command.json, out, console).await)
        }
        TokenAction::Why { id } => Some(operate::why(&client, id, command.json, out).await),
        TokenAction::Retry { id, state, reason } => {
            let (state, reason) = (state.as_deref(), reason.as_deref());
            Some(operate::retry(&client, id, state, reason, command.json, out).await)
        }
        TokenAction::Bulk(options) => {
            Some(bulk::run(&client, options, command.json, out, console).await)
        }
        TokenAction::Budget { id, amounts } => {
            Some(budget::set(&client, id, amounts, command.json, out).await)
        }
        TokenAction::Priority { id, priority } => {
            Some(set_priority(&client, id, *priority, command.json, out).await)
        }
        _ => None,
    };
    if let Some(done) = ours {
        return done.map_err(CommandError::with_code);
    }
    let done = if command.json {
        print_json(&client, &command.action, out).await
    } else {
        reference_command(&client, &command.action, out).await
    };
    done.map_err(|error| unanswered(&command.action, error))
}

/// Change the token's priority and print `ID: priority N` (`--json`: the answer).
async fn set_priority(
    client: &Client,
    id: &str,
    priority: i64,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let answer = client.token_priority(id, priority).await?;
    if json {
        return line(out, &pretty(&answer)?);
    }
    line(out, &format!("{id}: priority {priority}"))
}

/// What a change that got no answer (a timeout, a broken connection) may have
/// done, and whether sending it again is safe: the error's sentence with that
/// added. Other errors, and reads, are left as they are.
fn unanswered(action: &TokenAction, error: CommandError) -> CommandError {
    let CommandError::Client(ClientError::Unreachable { source, .. }) = &error else {
        return error;
    };
    if matches!(
        source,
        TransportError::Connect(_) | TransportError::BadUrl(_)
    ) {
        return error;
    }
    let then = match action {
        TokenAction::Start { .. } => {
            "so the token may have been started; the same command again is safe (an id \
             starts one token)"
                .to_string()
        }
        TokenAction::Fire { key: Some(_), .. } => {
            "so the event may have been applied; the same command again is safe (its --key \
             answers duplicate if it was)"
                .to_string()
        }
        TokenAction::Fire { id, key: None, .. } => format!(
            "so the event may have been applied; look with `stateous token show {id}` before \
             firing it again (without --key a second fire is applied again)"
        ),
        TokenAction::Steer { action, .. } => format!(
            "so the {} may have been applied; the same command again is safe (it is refused \
             if the first was applied)",
            action.as_str()
        ),
        TokenAction::Show { .. }
        | TokenAction::List(_)
        | TokenAction::Why { .. }
        | TokenAction::Retry { .. }
        | TokenAction::Budget { .. }
        | TokenAction::Priority { .. }
        | TokenAction::Bulk(_) => return error,
    };
    CommandError::Unanswered {
        sentence: error.to_string(),
        then,
    }
}

/// The reference's commands (`start`, `fire`, `show`, `pause`, `resume`,
/// `cancel`), printing its lines.
async fn reference_command(
    client: &Client,
    action: &TokenAction,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    match action {
        TokenAction::Start {
            id,
            context,
            budget,
            priority,
        } => {
            let (context, budget) = start_fields(context, budget)?;
            let started = client
                .start_with(id, &context, budget.as_ref(), *priority)
                .await?;
            line(out, &token_line(&started))
        }
        TokenAction::Fire {
            id,
            event,
            payload,
            key,
        } => {
            let payload = parsed(payload.as_deref(), "PAYLOAD_JSON")?;
            let fired = client
                .fire(id, event, payload.as_ref(), key.as_deref())
                .await?;
            let shown = token_line(&fired.token);
            line(
                out,
                &if fired.duplicate {
                    format!("duplicate: {shown}")
                } else if fired.token.status == "paused" {
                    // A paused token holds the events it is sent, in order.
                    format!("{shown} (held: it applies when the token is resumed)")
                } else {
                    shown
                },
            )
        }
        TokenAction::Show { graph: true, .. } => {
            let document = client.workflow().await?;
            write!(out, "{}", draw_graph(&document))?;
            Ok(())
        }
        TokenAction::Show { id: None, .. } => list(client, out).await,
        TokenAction::Show {
            id: Some(id),
            follow: true,
            ..
        } => follow::show_and_follow(client, id, out).await,
        TokenAction::Show { id: Some(id), .. } => show(client, id, out).await,
        TokenAction::Steer { id, action } => {
            let token = match action {
                Steer::Pause => client.pause(id).await?,
                Steer::Resume => client.resume(id).await?,
                Steer::Cancel => client.cancel(id).await?,
            };
            line(out, &token_line(&token))
        }
        // Answered above, before the reference's commands.
        TokenAction::List(_) | TokenAction::Why { .. } | TokenAction::Retry { .. } => Ok(()),
        TokenAction::Bulk(_) | TokenAction::Budget { .. } | TokenAction::Priority { .. } => Ok(()),
    }
}

/// The workflow as a Mermaid state diagram, for `show --graph`: the compiler's
/// drawing of the graph file that `GET /workflow` answered, no state lit.
fn draw_graph(document: &Object) -> String {
    stateous_shared::compiler::mermaid(&serde_json::Value::Object(document.clone()), None, false)
}

/// The tokens, most recently moved first, one line each; `no tokens` when none.
async fn list(client: &Client, out: &mut dyn Write) -> Result<(), CommandError> {
    let (tokens, total) = client.list(&TokenQuery::default()).await?;
    for token in &tokens {
        line(out, &token_line(token))?;
    }
    if tokens.is_empty() {
        line(out, "no tokens")?;
    }
    // The lines are the reference's; that the page stopped short of every token is
    // said beside them, where a script reading stdout does not take it for a token.
    let shown = tokens.len() as u64;
    if let Some(total) = total.filter(|total| *total > shown) {
        eprintln!(
            "the {shown} most recently moved of {total} tokens; `stateous token list \
             --offset {shown}` shows the next ones"
        );
    }
    Ok(())
}

/// The token's line, its children's lines, then its history.
async fn show(client: &Client, id: &str, out: &mut dyn Write) -> Result<(), CommandError> {
    let token = client.token(id).await?;
    let children = client.tokens(&children_of(id)).await?;
    let history = client.history(id).await?;
    let detail = detail_of(client, id).await;
    print_show(&token, &detail, &children, &history, out)
}

/// `GET /tokens/{id}/detail` (ours); `Null` from a control plane without that
/// route (the reference's).
async fn detail_of(client: &Client, id: &str) -> serde_json::Value {
    match client.json(&Call::detail(id)).await {
        Ok((200, detail)) => detail,
        _ => serde_json::Value::Null,
    }
}

/// The short checksum of the graph the token runs on when it is not the served
/// one (the detail's); `None` too from a control plane without the detail's
/// route (the reference's), which knows one graph only.
fn old_graph(detail: &serde_json::Value) -> Option<&str> {
    let served = detail["graph_served"].as_bool().unwrap_or(true);
    if served {
        return None;
    }
    detail["graph"].as_str()
}

/// The lines of `show ID`.
fn print_show(
    token: &TokenView,
    detail: &serde_json::Value,
    children: &[TokenView],
    history: &[HistoryEntry],
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    line(out, &token_line(token))?;
    if let Some(graph) = old_graph(detail) {
        line(
            out,
            &format!("  runs on graph {graph}, not the served one (token migrate moves it)"),
        )?;
    }
    // Ours: its priority when not the default, what it used and its budget.
    if let Some(priority) = detail["priority"].as_i64().filter(|p| *p != 0) {
        line(out, &format!("  priority {priority}"))?;
    }
    for shown in budget::lines_of(detail) {
        line(out, &format!("  {shown}"))?;
    }
    for child in children {
        line(out, &format!("  child {}", token_line(child)))?;
    }
    if children.len() == MOST_CHILDREN as usize {
        line(
            out,
            &format!(
                "  (only the {MOST_CHILDREN} most recently moved children are shown; \
                 there can be more)"
            ),
        )?;
    }
    for entry in history {
        line(out, &entry_line(entry))?;
    }
    Ok(())
}

fn children_of(id: &str) -> TokenQuery {
    TokenQuery {
        parent: Some(id.to_string()),
        limit: Some(MOST_CHILDREN),
        ..TokenQuery::default()
    }
}

/// `--json`: the daemon's answer, pretty-printed. `show ID` prints one object
/// `{"token", "children", "history"}` of its three answers.
async fn print_json(
    client: &Client,
    action: &TokenAction,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let answer = match action {
        TokenAction::Start {
            id,
            context,
            budget,
            priority,
        } => {
            let (context, budget) = start_fields(context, budget)?;
            let call = Call::start_with(id, &context, budget.as_ref(), *priority);
            client.json(&call).await?.1
        }
        TokenAction::Fire {
            id,
            event,
            payload,
            key,
        } => {
            let payload = parsed(payload.as_deref(), "PAYLOAD_JSON")?;
            let call = Call::fire(id, event, payload.as_ref(), key.as_deref());
            client.json(&call).await?.1
        }
        TokenAction::Show { graph: true, .. } => client.json(&Call::workflow()).await?.1,
        TokenAction::Show { id: None, .. } => {
            client.json(&Call::tokens(&TokenQuery::default())).await?.1
        }
        TokenAction::Show { id: Some(id), .. } => {
            let token = client.json(&Call::token(id)).await?.1;
            let children = client.json(&Call::tokens(&children_of(id))).await?.1;
            let history = client.json(&Call::history(id)).await?.1;
            let mut shown = json!({"token": token, "children": children, "history": history});
            // Ours: its usage and budget, from the detail, when it has either.
            let detail = detail_of(client, id).await;
            for ours in ["budget", "priority"] {
                if let Some(value) = detail.get(ours) {
                    shown[ours] = value.clone();
                }
            }
            shown
        }
        TokenAction::Steer { id, action } => client.json(&Call::steer(id, *action)).await?.1,
        // Answered in `run_with`, before the reference's commands.
        TokenAction::List(_)
        | TokenAction::Why { .. }
        | TokenAction::Retry { .. }
        | TokenAction::Budget { .. }
        | TokenAction::Priority { .. }
        | TokenAction::Bulk(_) => serde_json::Value::Null,
    };
    line(out, &pretty(&answer)?)
}

/// `token start`'s context and budget, read from their arguments.
fn start_fields(
    context: &Option<String>,
    budget: &[String],
) -> Result<(Object, Option<Object>), CommandError> {
    let context = parsed(context.as_deref(), "CONTEXT_JSON")?.unwrap_or_default();
    Ok((context, budget::given(budget)?))
}

fn parsed(text: Option<&str>, name: &str) -> Result<Option<Object>, CommandError> {
    text.map(|text| json_object(text, name)).transpose()
}

#[cfg(test)]
mod operate_tests;
#[cfg(test)]
mod tests;
