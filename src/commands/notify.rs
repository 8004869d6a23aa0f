//! `stateous notify add|list|show|pause|resume|remove|test|rotate|failed|redeliver`:
//! the control plane's subscriptions (`docs/notifications.md`), over `/notify`.

use std::io::Write;

use super::{print_list, CommandError};
use stateous_client::ClientError;
use stateous_shared::notify::{NewSubscription, NotificationView, SubscriptionView};

/// One `stateous notify ...` command line.
#[derive(Debug, Clone)]
pub struct NotifyCommand {
    /// `--url`, the access key and the TLS flags.
    pub connection: stateous_client::Connection,
    /// `--json`: print the control plane's answer.
    pub json: bool,
    /// What to do.
    pub action: NotifyAction,
}

/// The sub-command.
#[derive(Debug, Clone)]
pub enum NotifyAction {
    /// `add NAME URL ...`.
    Add(Box<NewSubscription>),
    /// `list`.
    List,
    /// `show NAME`.
    Show(String),
    /// `pause NAME`.
    Pause(String),
    /// `resume NAME`.
    Resume(String),
    /// `remove NAME`.
    Remove(String),
    /// `test NAME`.
    Test(String),
    /// `rotate NAME`.
    Rotate(String),
    /// `failed`.
    Failed,
    /// `redeliver NAME [--id N]`.
    Redeliver(String, Option<i64>),
}

/// `--json`: the answer on one line (`null` for one serde_json cannot write).
fn print_json(out: &mut dyn Write, answer: &impl serde::Serialize) -> Result<(), CommandError> {
    let value = serde_json::to_value(answer).unwrap_or_default();
    writeln!(out, "{value}")?;
    Ok(())
}

/// Run `command`, writing the lines (or the JSON answer) to `out`.
pub async fn run(command: &NotifyCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let client = command
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, false)?;
    let refused = |error: ClientError| CommandError::Client(error).with_code();
    let json = command.json;
    match &command.action {
        NotifyAction::Add(body) => {
            let added = client.add_subscription(body).await.map_err(refused)?;
            if json {
                return print_json(out, &added);
            }
            eprintln!(
                "added the subscription {}; its signing secret, shown only now:",
                added.subscription.name
            );
            writeln!(out, "{}", added.secret)?;
        }
        NotifyAction::Rotate(name) => {
            let added = client.rotate_subscription(name).await.map_err(refused)?;
            if json {
                return print_json(out, &added);
            }
            eprintln!("a new signing secret for {name}, shown only now (the last one signs too until the next rotation):");
            writeln!(out, "{}", added.secret)?;
        }
        NotifyAction::List => {
            let list = client.subscriptions().await.map_err(refused)?;
            if json {
                return print_json(out, &list);
            }
            let none = "no subscription: add one with stateous notify add NAME URL";
            print_list(out, &list.subscriptions, none, |view| [line(view)])?;
        }
        NotifyAction::Show(name) => {
            let detail = client.subscription(name).await.map_err(refused)?;
            if json {
                return print_json(out, &detail);
            }
            writeln!(out, "{}", line(&detail.subscription))?;
            let view = &detail.subscription;
            if let Some(unreachable) = &view.unreachable {
                writeln!(out, "  {}", unreachable.sentence())?;
            }
            writeln!(out, "  kinds: {}", view.kinds.join(", "))?;
            if !view.states.is_empty() {
                writeln!(out, "  states: {}", view.states.join(", "))?;
            }
            if let Some(workflow) = &view.workflow {
                writeln!(out, "  workflow: {workflow}")?;
            }
            if let Some(filter) = &view.filter {
                writeln!(out, "  where: {filter}")?;
            }
            if let Some(seconds) = view.no_move_seconds {
                writeln!(
                    out,
                    "  no move for: {}",
                    stateous_shared::durations::span(seconds)
                )?;
            }
            for attempt in &detail.attempts {
                writeln!(
                    out,
                    "  {}  #{} attempt {}  {}  {:.1} ms{}",
                    attempt.at,
                    attempt.notification,
                    attempt.attempt,
                    attempt.status.map_or("-".to_string(), |s| s.to_string()),
                    attempt.latency_ms,
                    attempt
                        .reason
                        .as_ref()
                        .map_or(String::new(), |r| format!("  {r}"))
                )?;
            }
        }
        NotifyAction::Pause(name) | NotifyAction::Resume(name) => {
            let pause = matches!(command.action, NotifyAction::Pause(_));
            let view = client
                .pause_subscription(name, pause)
                .await
                .map_err(refused)?;
            if json {
                return print_json(out, &view);
            }
            writeln!(out, "{}", line(&view))?;
        }
        NotifyAction::Remove(name) => {
            client.remove_subscription(name).await.map_err(refused)?;
            eprintln!("removed the subscription {name} and its notifications");
        }
        NotifyAction::Test(name) => {
            let queued = client.test_subscription(name).await.map_err(refused)?;
            if json {
                return print_json(out, &queued);
            }
            writeln!(out, "queued a test notification for {name}")?;
        }
        NotifyAction::Failed => {
            let failed = client.failed_notifications().await.map_err(refused)?;
            if json {
                return print_json(out, &failed);
            }
            print_list(out, &failed.failed, "no dead notification", |row| {
                [failed_line(row)]
            })?;
        }
        NotifyAction::Redeliver(name, id) => {
            let queued = client.redeliver(name, *id).await.map_err(refused)?;
            if json {
                return print_json(out, &queued);
            }
            writeln!(
                out,
                "queued {} dead notification(s) of {name} again",
                queued.queued
            )?;
        }
    }
    Ok(())
}

/// A subscription's line: name, status, URL and counts, and `receiver
/// unreachable` while its queue waits for a receiver it could not reach
/// (`show` says since when, why and the next try).
pub fn line(view: &SubscriptionView) -> String {
    let c = &view.counts;
    let waits = if view.unreachable.is_some() {
        "  receiver unreachable"
    } else {
        ""
    };
    format!(
        "{}  {}  {}  {}  pending {}, retrying {}, delivered {}, dead {}{waits}",
        view.name, view.status, view.format, view.url, c.pending, c.retrying, c.delivered, c.dead
    )
}

/// A dead notification's line.
pub fn failed_line(row: &NotificationView) -> String {
    format!(
        "{}  #{}  {}  {}  {} attempt{}  {}",
        row.subscription,
        row.id,
        row.kind,
        row.token,
        row.attempts,
        if row.attempts == 1 { "" } else { "s" },
        row.last_error.as_deref().unwrap_or("")
    )
}
