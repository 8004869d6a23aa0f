//! A note: one line of progress in the token's history.

use serde_json::json;
use stateous_shared::refusal::Code;

use super::report::worked_task;
use super::{append, refuse, Rules, Step};
use crate::store::Tx;

/// The longest note, after trimming.
pub const MAX_NOTE: usize = 500;

/// Record a note for a task that someone works on (on `attempt`, when given).
pub fn note(rules: &Rules, tx: &dyn Tx, task: i64, text: &str, attempt: Option<i64>) -> Step<()> {
    let line = text.trim();
    let length = line.chars().count();
    if length == 0 || length > MAX_NOTE {
        return refuse(
            Code::InvalidPayload,
            format!("a note needs a 'text' of 1 to {MAX_NOTE} characters"),
        );
    }
    let held = worked_task(rules, tx, task, None, false, attempt)?;
    append(
        tx,
        &held.token,
        "note",
        None,
        json!({"task": held.id, "text": line}),
    )
}
