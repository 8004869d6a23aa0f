//! `stateous token list`, `why` and `retry`: the filter language on the command line,
//! the facts that say why a token is where it is, and the retry of a failed token. Data
//! goes to `out`; the count of a listing that shows only a page goes to the console
//! (stderr).

use std::io::Write;

use serde_json::json;

use super::bulk::Console;
use crate::commands::{line, pretty, CommandError};
use stateous_client::{Client, TokenQuery};
use stateous_shared::bulk::{operator_name, RetryRequest};
use stateous_shared::durations::span;
use stateous_shared::history::{named, token_line};
use stateous_shared::why::Why;

/// The options of `stateous token list`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `--where`: the filter.
    pub filter: Option<String>,
    /// `--status`.
    pub status: Option<String>,
    /// `--state`.
    pub state: Option<String>,
    /// `--limit`: 1 to 1000 (the daemon's default, 100, when none).
    pub limit: Option<u32>,
    /// `--offset`: skip this many matches first.
    pub offset: Option<u64>,
    /// `--jsonl`: one token per line, as JSON.
    pub jsonl: bool,
}

/// The matching tokens, one line each; `--json` prints `{"total", "tokens"}`.
pub(super) async fn list(
    client: &Client,
    options: &ListOptions,
    json: bool,
    out: &mut dyn Write,
    console: &mut dyn Console,
) -> Result<(), CommandError> {
    if json && options.jsonl {
        return Err(CommandError::Usage(
            "give --json or --jsonl, not both".into(),
        ));
    }
    let query = TokenQuery {
        status: options.status.clone(),
        parent: None,
        limit: options.limit,
        filter: options.filter.clone(),
        state: options.state.clone(),
        offset: options.offset,
    };
    let (tokens, total) = client.list(&query).await?;
    if json {
        let answer = json!({"total": total, "tokens": tokens});
        return line(out, &pretty(&answer)?);
    }
    for token in &tokens {
        if options.jsonl {
            line(out, &serde_json::to_string(token).unwrap_or_default())?;
        } else {
            line(out, &token_line(token))?;
        }
    }
    let offset = options.offset.unwrap_or(0);
    let shown = tokens.len() as u64 + offset;
    match total {
        // Said beside the data, not in it: a script reads stdout as token lines.
        Some(0) => console.note("no token matches"),
        // A page past the last match: say how many there are, not a range that
        // runs backwards ("tokens 30001 to 30000 of 20000").
        Some(total) if tokens.is_empty() && offset > 0 => {
            let matching = if total == 1 {
                "1 token matches".to_string()
            } else {
                format!("{total} tokens match")
            };
            console.note(&format!(
                "no token after the first {offset}: {matching}; a smaller --offset shows them"
            ));
        }
        Some(total) if total > shown || offset > 0 => {
            let first = offset + 1;
            console.note(&format!(
                "tokens {first} to {shown} of {total}; --limit and --offset show others"
            ));
        }
        _ => {}
    }
    Ok(())
}

/// `retry ID`: the token's line once it is in its state again.
pub(super) async fn retry(
    client: &Client,
    id: &str,
    state: Option<&str>,
    reason: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let request = RetryRequest {
        state: state.map(str::to_string),
        reason: reason.map(str::to_string),
        by: Some(operator_name()),
    };
    if json {
        let answer = client
            .json(&stateous_client::Call::retry(id, &request))
            .await?
            .1;
        return line(out, &pretty(&answer)?);
    }
    line(out, &token_line(&client.retry(id, &request).await?))
}

/// `why ID`: the reasons first, then each fact.
pub(super) async fn why(
    client: &Client,
    id: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    if json {
        let answer = client.json(&stateous_client::Call::why(id)).await?.1;
        return line(out, &pretty(&answer)?);
    }
    for text in why_lines(&client.why(id).await?) {
        line(out, &text)?;
    }
    Ok(())
}

/// The lines of `why`, for the command line and the TUI's token pane.
pub fn why_lines(why: &Why) -> Vec<String> {
    let token = &why.token;
    let mut lines = vec![format!(
        "{}, for {}",
        token_line(token),
        span(why.moved as f64)
    )];
    lines.push("why:".into());
    lines.extend(why.reasons.iter().map(|r| format!("  - {r}")));
    if !why.transitions.is_empty() {
        lines.push(format!("transitions from {}:", named(&token.state)));
    }
    for t in &why.transitions {
        let to = named(&t.to);
        let guard = match (&t.guard, t.holds) {
            (Some(guard), Some(holds)) => format!("  when {guard}: {holds}"),
            (Some(guard), None) => format!("  when {guard}: decided by the event's payload"),
            (None, _) if t.otherwise => "  otherwise".to_string(),
            (None, _) => String::new(),
        };
        lines.push(format!("  {} -> {to}{guard}", t.event));
    }
    if let Some(timeout) = &why.timeout {
        lines.push(format!("timeout of {}: {timeout}", named(&token.state)));
    }
    for timer in &why.timers {
        let left = if timer.frozen {
            format!("{} left, frozen while paused", span(timer.left))
        } else {
            format!("in {}", span(timer.left))
        };
        let what = if timer.kind == "timeout" {
            "timeout".to_string()
        } else {
            format!("timer {}", timer.event)
        };
        lines.push(format!("{what}: due {} ({left})", timer.due_at));
    }
    if let Some(task) = &why.task {
        let mut text = format!(
            "task {} ({}): {}, attempt {}, {}",
            task.task,
            task.state,
            task.status,
            task.attempt,
            stateous_shared::why::retries_left(task.retries_left)
        );
        if let Some(holder) = &task.holder {
            text.push_str(&format!(", held by {holder}"));
        }
        if let Some(left) = task.lease_left {
            text.push_str(&format!(", lease left {}", span(left)));
        }
        if let Some(renewed) = task.lease_renewed {
            text.push_str(&format!(", renewed {} ago", span(renewed)));
        }
        if let (Some(holder), Some(heard)) = (&task.holder, task.holder_heard) {
            text.push_str(&format!(", {holder} heard {} ago", span(heard)));
        }
        lines.push(text);
    }
    // Ours: what it used and its budget.
    if let Some(view) = &why.budget {
        lines.extend(super::budget::lines(view));
    }
    for supervisor in &why.supervisors {
        let quiet = if supervisor.recent { "" } else { ", quiet" };
        lines.push(format!(
            "supervisor {} serves it: heard from {} ago{quiet}",
            supervisor.name,
            span(supervisor.heard)
        ));
    }
    for stopped in &why.stopped {
        lines.push(format!(
            "supervisor {} served it: stopped at {} ({} ago)",
            stopped.name,
            stopped.stopped_at,
            span(stopped.ago)
        ));
    }
    for held in &why.held {
        lines.push(format!("held: {}", held.event));
    }
    if let Some(entry) = &why.rejected {
        lines.push(format!(
            "refused: {}",
            stateous_shared::history::entry_line(entry)
        ));
    }
    if let Some(entry) = &why.failure {
        lines.push(format!(
            "failed: {}",
            stateous_shared::history::entry_line(entry)
        ));
    }
    if let Some(join) = &why.join {
        lines.push(format!(
            "join {}: {} of {} children ended",
            join.join, join.ended, join.children
        ));
    }
    for child in &why.children {
        lines.push(format!(
            "  child {} ({}): {}, {}",
            child.token,
            child.workflow,
            named(&child.state),
            child.status
        ));
    }
    lines
}
