//! A note: one line of progress in the token's history.

use serde_json::json;

use super::report::worked_task;
use super::{append, Rules, Step};
use crate::store::{EntryKind, Tx};
use crate::validated::{Key, NoteInput};

/// Record a note for a task that someone works on (on `attempt`, when given),
/// once per key.
pub fn note(rules: &Rules, tx: &dyn Tx, note: &NoteInput) -> Step<()> {
    let held = worked_task(rules, tx, note.task, None, false, note.attempt)?;
    let key = note.key.as_ref().map(Key::as_str);
    if let Some(key) = key {
        if tx.has_key(&held.token, key)? {
            return Ok(());
        }
    }
    append(
        tx,
        &held.token,
        EntryKind::Note,
        key,
        json!({"task": held.id, "text": note.text.as_str()}),
    )
}
