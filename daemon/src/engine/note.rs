//! A note: one line of progress in the token's history.

use serde_json::json;
use stateous_shared::refusal::Code;

use super::report::worked_task;
use super::{append, refuse, Rules, Step};
use crate::store::Tx;

/// The longest note, after trimming.
pub const MAX_NOTE: usize = 500;

/// A note as the engine takes it.
#[derive(Debug, Clone, Copy)]
pub struct Note<'a> {
    /// The task it is about.
    pub task: i64,
    /// Its text (trimmed here).
    pub text: &'a str,
    /// The attempt it is for, when named.
    pub attempt: Option<i64>,
    /// Its idempotency key, when given: a key already on the token's ledger
    /// writes nothing (the same note sent again after its answer was lost).
    pub key: Option<&'a str>,
}

/// Record a note for a task that someone works on (on `attempt`, when given),
/// once per key.
pub fn note(rules: &Rules, tx: &dyn Tx, note: &Note<'_>) -> Step<()> {
    let (task, attempt) = (note.task, note.attempt);
    let line = note.text.trim();
    let length = line.chars().count();
    if length == 0 || length > MAX_NOTE {
        return refuse(
            Code::InvalidPayload,
            format!("a note needs a 'text' of 1 to {MAX_NOTE} characters"),
        );
    }
    let held = worked_task(rules, tx, task, None, false, attempt)?;
    if let Some(key) = note.key {
        if tx.has_key(&held.token, key)? {
            return Ok(());
        }
    }
    append(
        tx,
        &held.token,
        "note",
        note.key,
        json!({"task": held.id, "text": line}),
    )
}
