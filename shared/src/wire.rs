//! What crosses the network between the control plane and its clients, as JSON.
//!
//! The shapes are the reference's, and are listed in `docs/reference/http.md`. Optional fields that
//! are `None` are left out of the JSON, as the reference leaves them out.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How often the daemon's `GET /watch` stream sends a comment line when it has
/// nothing else to send. A reader that hears nothing for this long plus its
/// request timeout takes the stream as dead (a control plane that hangs with its
/// connection open, or a peer gone from the network) and opens it again.
pub const WATCH_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The header of `GET /tokens` (ours) that carries how many tokens match in all;
/// the body stays the reference's list of one page.
pub const TOTAL_COUNT: &str = "x-total-count";

/// Every status a token can have, as the API writes it (`docs/inside/data.md`, the
/// `tokens` table), in the TUI's cycling order.
pub const TOKEN_STATUSES: [&str; 5] = ["active", "paused", "completed", "failed", "cancelled"];

/// A JSON object, as contexts, payloads and memories are.
pub type Object = Map<String, Value>;

/// A token as the API answers it (`GET /tokens/{id}` and most write routes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenView {
    /// The token's id.
    pub token: String,
    /// Its state; `__start__` is START. A token that ended keeps its last state.
    pub state: String,
    /// `active`, `paused`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// How many times the token entered this state: 1 on the first visit.
    pub visit: i64,
    /// The token's context.
    pub context: Object,
    /// When the token entered this state: ISO 8601 in UTC with `Z`.
    pub entered_at: String,
    /// Only on a child token: the token whose parallel state started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The answer to a fired event that repeats an idempotency key:
/// `{"duplicate": true, "token": {...}}`, the token as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Duplicate {
    /// Always true.
    pub duplicate: bool,
    /// The token as it is now.
    pub token: TokenView,
}

/// One entry of a token's history (`GET /tokens/{id}/history`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The entry's number in the token's ledger, from 1.
    pub seq: i64,
    /// When it was written: ISO 8601 in UTC with `Z`.
    pub at: String,
    /// What happened: `entered`, `task_claimed`, `timer_fired`, ...
    pub kind: String,
    /// The facts of that kind (`docs/inside/workflows.md`).
    pub data: Object,
    /// Ours: the name of the access key whose request wrote the entry; left
    /// out for an entry written without a key (the reference's clients ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// The event that moved a token into a state, with its payload if it had one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The event's name; `__started__` for a token's first state.
    pub name: String,
    /// Its payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
}

/// A claimed task: "do state S for token T", with all that the routine may read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// The task's id.
    pub task: i64,
    /// The token's id.
    pub token: String,
    /// The state; a child workflow's state is `<workflow>/<state>`.
    pub state: String,
    /// The token's visit of the state.
    pub visit: i64,
    /// The attempt, from 1.
    pub attempt: i64,
    /// The token's context.
    pub context: Object,
    /// The routine's memory for this token and state.
    pub memory: Object,
    /// The event that moved the token into the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entered_by: Option<EventRecord>,
    /// Ours: the W3C `traceparent` of the attempt's span, which the routine's
    /// spans are children of (`docs/reference/traces.md`); left out by a control
    /// plane that keeps no traces (the reference's clients ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// A timer that a routine sets: the clock fires `event` on the token `after` from
/// now, if the token is still in the state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// The event to fire.
    pub event: String,
    /// Its payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
    /// A duration: `30s`, `10m`, `6h`, `1d`.
    pub after: String,
}

/// What a supervisor reports for a task (`POST /tasks/{id}/report`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// `event`, `waiting` or `failed`.
    pub kind: String,
    /// The event, when `kind` is `event`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The event's payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
    /// Why the task failed, when `kind` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The routine's writes to the context.
    #[serde(default)]
    pub context: Object,
    /// The timers the routine set.
    #[serde(default)]
    pub schedules: Vec<Schedule>,
    /// The attempt the report is for; `None` means the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    /// The supervisor that claimed the task; none for a report from outside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
}

/// The answer of `GET /health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// The served workflow's name.
    pub workflow: String,
    /// The graph's checksum, `sha256:...`.
    pub checksum: String,
    /// Ours: where the dev clock stands, when the daemon runs one
    /// (`serve --dev-clock`); left out otherwise, so the reference's clients see
    /// the reference's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_clock: Option<crate::watch::DevClock>,
}

/// The answer of `POST /tasks/heartbeat`: the tasks the supervisor no longer holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lost {
    /// Task ids.
    pub lost: Vec<i64>,
}
