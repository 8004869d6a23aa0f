//! A memory write: one key of the routine's memory of the task's token and state.

use serde_json::{json, Value};
use stateous_shared::refusal::Code;

use super::report::worked_task;
use super::{append, refuse, Rules, Step};
use crate::store::Tx;

/// The longest memory key, in characters.
pub const MAX_MEMORY_KEY: usize = 128;

/// Save (or with null, delete) one key at once. The ledger records the key,
/// never the value.
pub fn set_memory(
    rules: &Rules,
    tx: &dyn Tx,
    task: i64,
    key: &str,
    value: &Value,
    attempt: Option<i64>,
) -> Step<()> {
    let length = key.chars().count();
    if length == 0 || length > MAX_MEMORY_KEY {
        return refuse(
            Code::InvalidPayload,
            format!("a memory key is 1 to {MAX_MEMORY_KEY} characters"),
        );
    }
    if key.contains('\0') {
        return refuse(
            Code::InvalidPayload,
            "a memory key has no NUL character (\\u0000)",
        );
    }
    let held = worked_task(rules, tx, task, None, false, attempt)?;
    let data = json!({"state": held.state, "memory_key": key});
    if value.is_null() {
        if tx.forget(&held.token, &held.state, key)? {
            append(tx, &held.token, "memory_deleted", None, data)?;
        }
        return Ok(());
    }
    tx.set_memory(&held.token, &held.state, key, value)?;
    append(tx, &held.token, "memory_set", None, data)
}
