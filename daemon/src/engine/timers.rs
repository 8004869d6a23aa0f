//! Timer fires (`docs/inside/workflows.md`, "Timer fire"): the clock finds the due
//! timers of active tokens; each fires in its own savepoint.

use serde_json::json;

use super::route::{fail, route};
use super::{append, existing, py, Rules, Step};
use crate::store::{EntryKind, TimerKind, TimerStatus, TokenStatus, Tx};

/// The pending timers of active tokens that are due, in the order of their time.
pub fn due(tx: &dyn Tx) -> Step<Vec<i64>> {
    Ok(tx.due_timers()?)
}

/// Fire one timer as its event, if it still applies. A timeout that cannot move
/// the token fails it; a routine's timer records the refusal. True when it fired.
pub fn fire_timer(rules: &Rules, tx: &dyn Tx, timer_id: i64) -> Step<bool> {
    // The clock never waits for a token that another request holds: the timer
    // fires at a later tick.
    let Some(mut timer) = tx.lock_timer(timer_id)? else {
        return Ok(false);
    };
    if timer.status != TimerStatus::Pending || timer.due_at > tx.now() {
        return Ok(false); // cancelled, or moved later by a resume, meanwhile
    }
    let mut row = existing(tx, &timer.token)?;
    if row.status != TokenStatus::Active || row.state != timer.state || row.visit != timer.visit {
        return Ok(false);
    }
    timer.status = TimerStatus::Fired;
    tx.update_timer(&timer)?;
    append(
        tx,
        &row.token,
        EntryKind::TimerFired,
        None,
        json!({"event": timer.event}),
    )?;
    let payload = timer.payload.as_ref();
    if let Some(refusal) = route(rules, tx, &mut row, &timer.event, payload, super::Via::NONE)? {
        if timer.kind == TimerKind::Timeout {
            let reason = format!("{} timed out: {refusal}", py(&row.state));
            fail(rules, tx, &mut row, &reason)?;
        } else {
            let data = json!({"event": timer.event, "reason": refusal});
            append(tx, &row.token, EntryKind::EventRejected, None, data)?;
        }
    }
    Ok(true)
}
