//! Token priorities (`docs/limits.md`, "Priorities"): an integer per token, 0 by
//! default, given at start or changed later; claims take the tasks of higher
//! priorities first (`engine/claim.rs`). A change goes on the journal (subject
//! `priority`, named by the token) with the access key that made it.

use serde_json::json;
use stateous_shared::refusal::Code;
use stateous_shared::wire::Object;

use super::{lock, refuse, Step};
use crate::store::Tx;

/// The journal's subject of priority changes.
pub const JOURNAL_SUBJECT: &str = "priority";

/// The lowest and the highest priority.
pub const PRIORITIES: std::ops::RangeInclusive<i64> = -1_000_000..=1_000_000;

/// A priority from a JSON value: a whole number in [`PRIORITIES`], or 422
/// `invalid_argument`.
pub fn priority_of(value: &serde_json::Value) -> Step<i64> {
    match value.as_i64() {
        Some(priority) if PRIORITIES.contains(&priority) => Ok(priority),
        _ => refuse(
            Code::InvalidArgument,
            format!("a priority is a whole number from -1000000 to 1000000, not {value}"),
        ),
    }
}

/// Keep `priority` as the token's, on the journal.
pub fn keep(tx: &dyn Tx, token: &str, priority: i64) -> Step<()> {
    tx.set_priority(token, priority)?;
    let data = json!({ "priority": priority });
    tx.journal_append(
        JOURNAL_SUBJECT,
        token,
        "set",
        data.as_object().unwrap_or(&Object::new()),
    )?;
    Ok(())
}

/// Change a live token's priority; its queued tasks are claimed in their new
/// turn from the next claim. 404 `token_not_found`, 409 `token_not_active` for an
/// ended token.
pub fn set_token_priority(tx: &dyn Tx, token: &str, priority: i64) -> Step<serde_json::Value> {
    let row = lock(tx, token)?;
    if row.status.ended() {
        return Err(super::not_now(&row, "only a live token's priority can change").into());
    }
    keep(tx, &row.token, priority)?;
    Ok(json!({ "token": row.token, "priority": priority }))
}
