//! A memory write: one key of the routine's memory of the task's token and state.

use serde_json::json;

use super::report::worked_task;
use super::{append, Rules, Step};
use crate::store::{EntryKind, Tx};
use crate::validated::MemoryInput;

/// Save (or with null, delete) one key at once. The ledger records the key,
/// never the value.
pub fn set_memory(rules: &Rules, tx: &dyn Tx, input: &MemoryInput) -> Step<()> {
    let (key, value) = (input.key.as_str(), &input.value);
    let held = worked_task(rules, tx, input.task, None, false, input.attempt)?;
    let data = json!({"state": held.state, "memory_key": key});
    if value.is_null() {
        if tx.forget(&held.token, &held.state, key)? {
            append(tx, &held.token, EntryKind::MemoryDeleted, None, data)?;
        }
        return Ok(());
    }
    tx.set_memory(&held.token, &held.state, key, value)?;
    append(tx, &held.token, EntryKind::MemorySet, None, data)
}
