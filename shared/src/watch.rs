//! The wire shapes of the API's additions for watching (`docs/reference/http.md`): the
//! token detail, the supervisors, and the entries of the live stream. None of
//! them is the reference's; the reference's clients never ask for them.

use serde::{Deserialize, Serialize};

use crate::wire::{Object, TokenView};

/// `GET /tokens/{id}/detail`: a token with its tasks, timers and held events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenDetail {
    /// The token, as `GET /tokens/{id}` answers it.
    pub token: TokenView,
    /// Its tasks that are not over (queued, claimed, waiting), oldest first.
    #[serde(default)]
    pub tasks: Vec<TaskView>,
    /// Its pending timers, soonest first.
    #[serde(default)]
    pub timers: Vec<TimerView>,
    /// The events held while it is paused, in the order they arrived.
    #[serde(default)]
    pub held: Vec<HeldEvent>,
    /// The graph the token runs on, as a short checksum ([`short_checksum`]);
    /// `None` when its row names none (it runs on the served graph).
    #[serde(default)]
    pub graph: Option<String>,
    /// Whether that graph is the served one (or of its structure).
    #[serde(default = "yes")]
    pub graph_served: bool,
    /// Ours: what its routines used and its budget, when it reported usage or has
    /// a budget (`docs/concepts/budgets.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Box<crate::usage::TokenBudget>>,
    /// Ours: its priority (`docs/limits.md`, "Priorities"); left out at 0, the
    /// default.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

/// A checksum cut to what people read and type: `sha256:` and 12 hex digits. A
/// filter's `graph == '...'` takes any prefix of the whole checksum.
pub fn short_checksum(checksum: &str) -> String {
    checksum.chars().take("sha256:".len() + 12).collect()
}

/// One graph a control plane served, as `GET /graphs` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphView {
    /// `sha256:` + hex of the graph's canonical document.
    pub checksum: String,
    /// Its main workflow's name.
    pub workflow: String,
    /// Whether it is the graph served now (or of its structure: a change of
    /// timeouts or retries alone serves its tokens by the served graph's).
    pub served: bool,
    /// When a control plane first served it (ISO, `Z`).
    pub first_served: String,
    /// When a control plane last started serving it (ISO, `Z`).
    pub last_served: String,
    /// How many tokens (children included) run on it, by status; a status with
    /// none is left out.
    pub tokens: std::collections::BTreeMap<String, i64>,
}

/// The answer of `GET /graphs`: every graph kept, the first served first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphList {
    /// The graphs.
    pub graphs: Vec<GraphView>,
}

/// One task of a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskView {
    /// The task's id.
    pub task: i64,
    /// Its state (a child workflow's is `<workflow>/<state>`).
    pub state: String,
    /// `queued`, `claimed`, `waiting`, ...
    pub status: String,
    /// The attempt, from 1.
    pub attempt: i64,
    /// The supervisor that holds it, if claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// When its lease ends, ISO 8601 in UTC, if claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
    /// Seconds of lease left when the answer was made; 0 once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_left: Option<f64>,
}

/// One pending timer of a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerView {
    /// The event it fires.
    pub event: String,
    /// When it is due, ISO 8601 in UTC.
    pub due_at: String,
}

/// One event held while its token is paused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldEvent {
    /// The event.
    pub event: String,
    /// Its payload, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
    /// When it arrived, ISO 8601 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// One supervisor, as `GET /supervisors` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupervisorView {
    /// Its name.
    pub name: String,
    /// The states it claims for.
    #[serde(default)]
    pub states: Vec<String>,
    /// How many tasks it holds now.
    #[serde(default)]
    pub running: i64,
    /// Its outbox depth, as its last claim or heartbeat reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<u64>,
    /// When it was last heard from, ISO 8601 in UTC.
    pub last_seen: String,
}

/// A supervisor that said it stopped (`POST /supervisors/{name}/stop`) and has
/// not been heard from since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedSupervisor {
    /// Its name.
    pub name: String,
    /// The states it claimed for before it stopped.
    #[serde(default)]
    pub states: Vec<String>,
    /// When it said it stopped, ISO 8601 in UTC.
    pub stopped_at: String,
}

/// `GET /supervisors`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SupervisorList {
    /// The supervisors seen, by name, less those that said they stopped.
    pub supervisors: Vec<SupervisorView>,
    /// Those that said they stopped, by name (the most recent few): absent from
    /// a control plane that does not keep them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<StoppedSupervisor>,
}

/// One event of `GET /watch`: a ledger entry after its commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchEntry {
    /// The entry's global id: increasing across all tokens; the SSE `id`.
    pub id: i64,
    /// The token it belongs to.
    pub token: String,
    /// Its number in the token's ledger, from 1.
    pub seq: i64,
    /// When it was written, ISO 8601 in UTC.
    pub at: String,
    /// The ledger kind.
    pub kind: String,
    /// The kind's facts.
    pub data: Object,
    /// Ours: the access key whose request wrote it; left out without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// The dev clock of `serve --dev-clock`: in `GET /health`, and
/// the answer of `POST /clock/advance`, `/clock/freeze` and `/clock/thaw`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevClock {
    /// The daemon's `now`: ISO 8601 in UTC.
    pub now: String,
    /// How far ahead of the wall clock it is, in seconds (negative after a long
    /// freeze).
    pub ahead: f64,
    /// Whether it stands still (`stateous clock freeze`).
    pub frozen: bool,
    /// An advance: how many due moments it ticked on its way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
}

impl DevClock {
    /// `dev clock +10m`, or `dev clock +1h30m, frozen`: how the TUI's header and
    /// `stateous clock` say it.
    pub fn label(&self) -> String {
        let frozen = if self.frozen { ", frozen" } else { "" };
        format!(
            "dev clock {}{frozen}",
            crate::durations::signed_span(self.ahead)
        )
    }
}

/// One state's tokens by status, as `GET /states` answers (the TUI's state graph).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCount {
    /// The child workflow the state belongs to; `None` for the main workflow.
    #[serde(default)]
    pub workflow: Option<String>,
    /// The state (`__start__` for a token before its first entry).
    pub state: String,
    /// How many tokens are in the state with each status (`active`, `paused`,
    /// `completed`, `failed`, `cancelled`); a status with none is left out. A
    /// token that ended counts in its last state.
    pub tokens: std::collections::BTreeMap<String, i64>,
}

/// The answer of `GET /states`: every state that holds a token, main workflow
/// first, then by workflow and state name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateList {
    /// The states.
    pub states: Vec<StateCount>,
}

#[cfg(test)]
mod dev_clock_tests {
    use super::*;

    #[test]
    fn the_dev_clock_says_how_far_ahead_it_is_in_whole_units() {
        let clock = |ahead, frozen| DevClock {
            now: "2026-01-01T00:00:00Z".into(),
            ahead,
            frozen,
            steps: None,
        };
        assert_eq!(clock(600.2, false).label(), "dev clock +10m");
        assert_eq!(clock(3605.0, true).label(), "dev clock +1h5s, frozen");
        assert_eq!(clock(90_000.0, false).label(), "dev clock +1d1h");
        assert_eq!(clock(0.3, false).label(), "dev clock +0s");
        assert_eq!(clock(-30.0, true).label(), "dev clock -30s, frozen");
    }
}
