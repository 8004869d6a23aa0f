//! The serving record: the `control_plane` row says which control plane holds the
//! database, since when, and under which epoch. Who may hold the database is the
//! backend's lock (`store/sqlite/hold.rs`, `store/postgres/hold.rs`); the record
//! says it to people and fences commits (each commit checks the epoch).

use chrono::Timelike;
use stateous_shared::time::from_micros;

use super::{ControlPlaneRow, StoreResult, Tx};

/// The sentence a second `serve` prints: who holds the database, and since when.
pub fn held_sentence(row: &ControlPlaneRow) -> String {
    match (&row.serving, row.since) {
        (Some(who), Some(since)) => {
            let seen = from_micros(since);
            format!(
                "another control plane serves this database ({who}, last seen at \
                 {:02}:{:02}:{:02} UTC); stop it first",
                seen.hour(),
                seen.minute(),
                seen.second()
            )
        }
        _ => "another control plane serves this database; stop it first".to_string(),
    }
}

/// Record that `holder` serves the database from now, and move the epoch on; the
/// new epoch. The caller holds the backend's lock (a file lock, or a Postgres
/// advisory lock), so no other control plane serves meanwhile.
pub fn take_hold(tx: &dyn Tx, holder: &str) -> StoreResult<i64> {
    tx.set_serving(Some(holder), Some(tx.now()))?;
    tx.next_epoch()
}

/// Check that the record still names this control plane and its epoch, and renew
/// `since` when it is older than `renew_every` microseconds. False: another control
/// plane took the database, and this one must stop.
pub fn keep_hold(tx: &dyn Tx, holder: &str, epoch: i64, renew_every: i64) -> StoreResult<bool> {
    let row = tx.control_plane()?;
    if row.serving.as_deref() != Some(holder) || row.epoch != epoch {
        return Ok(false);
    }
    let now = tx.now();
    if row.since.is_none_or(|since| now - since >= renew_every) {
        tx.set_serving(Some(holder), Some(now))?;
    }
    Ok(true)
}

/// Give up the hold, if `holder` has it.
pub fn release(tx: &dyn Tx, holder: &str) -> StoreResult<()> {
    if tx.control_plane()?.serving.as_deref() == Some(holder) {
        tx.set_serving(None, None)?;
    }
    Ok(())
}
