//! The wire shapes of the API's additions for watching (SPEC section 3.3): the
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

/// `GET /supervisors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupervisorList {
    /// The supervisors seen, by name.
    pub supervisors: Vec<SupervisorView>,
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
}
