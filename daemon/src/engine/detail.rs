//! What an operator sees of one token beyond its row: its tasks (status, attempt,
//! holder, lease), its pending timers and the events it holds while paused
//! (SPEC section 3.3, for the TUI). A read; it changes nothing.

use serde::{Deserialize, Serialize};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::{Object, TokenView};

use super::pause::held_events;
use super::{existing, view, Step};
use crate::store::{TokenStatus, Tx};

/// One task of a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskView {
    /// The task's id.
    pub task: i64,
    /// The state.
    pub state: String,
    /// The token's visit of the state.
    pub visit: i64,
    /// `queued`, `claimed`, `waiting`, `done`, `failed` or `cancelled`.
    pub status: String,
    /// How many times it was claimed.
    pub attempt: i64,
    /// The supervisor that claimed it last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// While claimed: when the lease ends (ISO 8601, `Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
    /// When it was queued.
    pub queued_at: String,
}

/// One pending timer of a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerView {
    /// The event it fires.
    pub event: String,
    /// `timeout` or `timer`.
    pub kind: String,
    /// When it fires; a paused token's timers move later on resume.
    pub due_at: String,
    /// The state it was set in.
    pub state: String,
}

/// One event a paused token holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldView {
    /// The event.
    pub event: String,
    /// Its payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
    /// Its place in the order of arrival.
    pub arrival: i64,
    /// The task it came from; none for an event from outside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<i64>,
    /// When it arrived.
    pub at: String,
}

/// A token with its tasks, pending timers and held events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenDetail {
    /// The token.
    pub token: TokenView,
    /// Its tasks, oldest first.
    pub tasks: Vec<TaskView>,
    /// Its pending timers, by id.
    pub timers: Vec<TimerView>,
    /// What it holds while paused, in the order of arrival.
    pub held: Vec<HeldView>,
}

fn at(micros: i64) -> String {
    iso(from_micros(micros))
}

/// The detail of one token, or 404 `token_not_found`.
pub fn detail(tx: &dyn Tx, token: &str) -> Step<TokenDetail> {
    let row = existing(tx, token)?;
    let tasks = tx
        .tasks_of(token)?
        .into_iter()
        .map(|t| TaskView {
            task: t.id,
            state: t.state,
            visit: t.visit,
            status: t.status.as_str().to_string(),
            attempt: t.attempt,
            claimed_by: t.claimed_by,
            lease_until: t.lease_until.map(at),
            queued_at: at(t.queued_at),
        })
        .collect();
    let timers = tx
        .pending_timers(token)?
        .into_iter()
        .map(|t| TimerView {
            event: t.event,
            kind: t.kind.as_str().to_string(),
            due_at: at(t.due_at),
            state: t.state,
        })
        .collect();
    let held = if row.status == TokenStatus::Paused {
        let entries = tx.entries(token)?;
        let mut held: Vec<HeldView> = held_events(&entries)
            .into_iter()
            .map(|h| HeldView {
                task: entries
                    .iter()
                    .find(|e| e.seq == h.seq)
                    .and_then(|e| e.data.get("task"))
                    .and_then(serde_json::Value::as_i64),
                event: h.event,
                payload: h.payload,
                arrival: h.arrival,
                at: at(h.at),
            })
            .collect();
        held.sort_by_key(|h| h.arrival);
        held
    } else {
        Vec::new()
    };
    Ok(TokenDetail {
        token: view(&row),
        tasks,
        timers,
        held,
    })
}
