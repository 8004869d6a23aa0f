//! How a token and its history read as lines of text: `TICKET-1: coding (visit 2),
//! active` and `12:00:01  #5  build-box-1 took task 1 (attempt 1)`.
//!
//! The lines are the reference's, word for word (`stateous token show`, see
//! `docs/how-to/steer-tokens.md`): the `token` commands, `--follow` and the TUI all
//! print them. Times are shown in local time. A missing fact reads as `?`, and a
//! kind this version does not know is shown as its name and its data, so a newer
//! daemon never breaks an older client.

use chrono::{DateTime, Local, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use serde_json::Value;

use crate::pyrepr::{dumps, str_json, Layout};
use crate::wire::{HistoryEntry, Object, TokenView};

/// The longest rendering of a payload or unknown data before it is cut with `...`.
const SHORT: usize = 80;

/// `T-1: coding, active`; ` (visit N)` after the state from the second visit on;
/// START and END for Stateous's own states.
pub fn token_line(token: &TokenView) -> String {
    let visit = if token.visit > 1 {
        format!(" (visit {})", token.visit)
    } else {
        String::new()
    };
    format!(
        "{}: {}{visit}, {}",
        token.token,
        named(&token.state),
        token.status
    )
}

/// `HH:MM:SS  #SEQ  WHAT`, with the time in the local time zone, and `  (by key
/// NAME)` for an entry written by a request with an access key.
pub fn entry_line(entry: &HistoryEntry) -> String {
    entry_line_in(entry, &Local)
}

/// As [`entry_line`], in the time zone `zone` (tests use a fixed offset).
pub fn entry_line_in<Z: TimeZone>(entry: &HistoryEntry, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    let line = format!(
        "{}  #{}  {}",
        local(&entry.at, "%H:%M:%S", zone),
        entry.seq,
        what(&entry.kind, &entry.data, zone)
    );
    // Ours: the key that made the change; the reference's lines have none.
    match &entry.by {
        Some(by) => format!("{line}  (by key {by})"),
        None => line,
    }
}

/// What one ledger entry says, after the time and the number.
pub fn what<Z: TimeZone>(kind: &str, data: &Object, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    let get = |key: &str| data.get(key).map_or_else(|| "?".to_string(), str_json);
    match kind {
        "started" if data.contains_key("parent") => format!("started by {}", get("parent")),
        "started" => "started".to_string(),
        "branch_started" => format!("started the child {}", get("token")),
        "entered" => format!("entered {}{}", named(&get("state")), visit_note(data)),
        "task_queued" => format!("task {} queued for {}", get("task"), get("state")),
        "task_claimed" => format!(
            "{} took task {} (attempt {})",
            get("supervisor"),
            get("task"),
            get("attempt")
        ),
        "task_done" => format!("task {} done", get("task")),
        "task_failed" => format!("task {} failed: {}", get("task"), get("error")),
        "task_retrying" => format!(
            "task {} is tried again (attempt {})",
            get("task"),
            get("attempt")
        ),
        "task_cancelled" => format!("task {} cancelled", get("task")),
        "task_waiting" => format!("task {} waits: the work goes on outside", get("task")),
        "event_accepted" => format!(
            "{} in {}{}{}",
            get("event"),
            named(&get("state")),
            payload_note(data.get("payload")),
            hook_note(data)
        ),
        "event_rejected" => format!("{} refused: {}", get("event"), get("reason")),
        "timer_set" => format!(
            "timer set: {} at {}",
            get("event"),
            local(&get("due_at"), "%Y-%m-%d %H:%M:%S", zone)
        ),
        "timer_fired" => format!("timer fired: {}", get("event")),
        "note" => get("text"),
        "memory_set" => format!("memory set: {} (in {})", get("memory_key"), get("state")),
        "memory_deleted" => format!(
            "memory deleted: {} (in {})",
            get("memory_key"),
            get("state")
        ),
        "context_changed" => format!("context changed: {}", keys_note(data.get("keys"))),
        "cancelled" if data.contains_key("reason") => format!("cancelled: {}", get("reason")),
        "paused" | "resumed" | "completed" | "cancelled" => kind.to_string(),
        "event_deferred" => format!("{} held while paused{}", get("event"), hook_note(data)),
        "event_replayed" => format!("{} applied on resume", get("event")),
        "event_dropped" => format!("{} dropped on resume: {}", get("event"), get("reason")),
        "failed" => format!("failed: {}", get("reason")),
        "retried" => format!(
            "retried by {} in {}{}",
            get("by"),
            named(&get("state")),
            reason_note(data)
        ),
        "migrated" => {
            let graph = |key: &str| crate::watch::short_checksum(&get(key));
            let undo = if data.contains_key("undo") {
                " back"
            } else {
                ""
            };
            format!(
                "migrated{undo} by {} from graph {} ({}) to graph {} ({}){}",
                get("by"),
                graph("from"),
                named(&get("state_from")),
                graph("to"),
                named(&get("state_to")),
                reason_note(data)
            )
        }
        "operator" => {
            let asked = match data.get("action").and_then(Value::as_str) {
                Some("fire") => format!("fire {}", get("event")),
                Some("priority") => match data.get("priority") {
                    Some(priority) => format!("set its priority to {priority}"),
                    None => "change its priority".to_string(),
                },
                Some(action) => format!("{action} it"),
                None => "?".to_string(),
            };
            format!("{} asked to {asked}{}", get("by"), reason_note(data))
        }
        // Ours: usage and budgets (`docs/concepts/budgets.md`).
        "usage_reported" | "budget_exceeded" | "budget_set" => budget_line(kind, data),
        _ => format!("{kind} {}", short(&Value::Object(data.clone()))),
    }
}

/// The lines of the usage and budget entries (ours): `task 7 (attempt 2) reported
/// usage: cost_usd 0.12`, `over budget: cost_usd 5.12 of 5; task 7 (attempt 2)
/// stopped, not counted as a retry`, `budget set: cost_usd 8`.
fn budget_line(kind: &str, data: &Object) -> String {
    let get = |key: &str| data.get(key).map_or_else(|| "?".to_string(), str_json);
    let amounts = |key: &str| match data.get(key).and_then(Value::as_object) {
        Some(object) if !object.is_empty() => object
            .iter()
            .map(|(name, amount)| format!("{name} {}", str_json(amount)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(_) => "none".to_string(),
        None => "?".to_string(),
    };
    match kind {
        "usage_reported" => format!(
            "task {} (attempt {}) reported usage: {}",
            get("task"),
            get("attempt"),
            amounts("usage")
        ),
        "budget_set" => format!("budget set: {}", amounts("budget")),
        _ => {
            let stopped: Vec<String> = data
                .get("stopped")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .map(|one| {
                            let part =
                                |key: &str| one.get(key).map_or_else(|| "?".to_string(), str_json);
                            format!(
                                "; task {} (attempt {}) stopped, not counted as a retry",
                                part("task"),
                                part("attempt")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{}{}", get("reason"), stopped.concat())
        }
    }
}

/// `: REASON` for an entry of ours (`retried`, `operator`) that gives one.
fn reason_note(data: &Object) -> String {
    match data.get("reason") {
        Some(reason) => format!(": {}", str_json(reason)),
        None => String::new(),
    }
}

/// ` (via hook NAME, delivery ID)` for an event that came through a hook (ours:
/// the entry's `hook`, `docs/inside/data.md`), else nothing.
fn hook_note(data: &Object) -> String {
    match data.get("hook") {
        Some(hook) => {
            let part = |key: &str| hook.get(key).map_or_else(|| "?".to_string(), str_json);
            format!(
                " (via hook {}, delivery {})",
                part("name"),
                part("delivery")
            )
        }
        None => String::new(),
    }
}

/// A state as a person reads it: `__start__` as START, `__end__` as END.
pub fn named(state: &str) -> &str {
    match state {
        "__start__" => "START",
        "__end__" => "END",
        other => other,
    }
}

/// ` (visit N)` when the entry's `visit` is a whole number above 1.
fn visit_note(data: &Object) -> String {
    match data.get("visit").and_then(Value::as_i64) {
        Some(visit) if visit > 1 => format!(" (visit {visit})"),
        _ => String::new(),
    }
}

/// `: {"passed": 3}` for a payload that is not empty, else nothing (the
/// reference leaves out what Python counts as false: null, `{}`, `[]`, `""`, 0).
fn payload_note(payload: Option<&Value>) -> String {
    let empty = match payload {
        None | Some(Value::Null) => true,
        Some(Value::Bool(flag)) => !flag,
        Some(Value::Number(number)) => number.as_f64() == Some(0.0),
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(fields)) => fields.is_empty(),
    };
    match payload {
        Some(value) if !empty => format!(": {}", short(value)),
        _ => String::new(),
    }
}

/// The changed keys, comma-separated; `?` when `keys` is not a list.
fn keys_note(keys: Option<&Value>) -> String {
    match keys {
        Some(Value::Array(names)) => names.iter().map(str_json).collect::<Vec<_>>().join(", "),
        _ => "?".to_string(),
    }
}

/// `value` as JSON the way the reference prints it (`, ` and `: ` between items,
/// non-ASCII escaped), cut to 80 characters with `...`.
pub fn short(value: &Value) -> String {
    let text = dumps(value, Layout::Spaced);
    if text.chars().count() <= SHORT {
        return text;
    }
    let kept: String = text.chars().take(SHORT - 3).collect();
    format!("{kept}...")
}

/// An ISO 8601 time in `zone`, in the strftime `form`; the text unchanged when it
/// is not a time. A time without an offset is taken as already local, as Python's
/// `astimezone` takes a naive time.
fn local<Z: TimeZone>(at: &str, form: &str, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    if let Ok(moment) = DateTime::parse_from_rfc3339(&at.replace(' ', "T")) {
        return moment.with_timezone(zone).format(form).to_string();
    }
    let naive = NaiveDateTime::parse_from_str(at, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S%.f"))
        .or_else(|_| NaiveDateTime::parse_from_str(at, "%Y-%m-%dT%H:%M"))
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(at, "%Y-%m-%d")
                .ok()
                .and_then(|day| day.and_hms_opt(0, 0, 0))
        });
    match naive.map(|naive| zone.from_local_datetime(&naive)) {
        Some(LocalResult::Single(moment)) | Some(LocalResult::Ambiguous(moment, _)) => {
            moment.format(form).to_string()
        }
        _ => at.to_string(),
    }
}

#[cfg(test)]
mod tests;
