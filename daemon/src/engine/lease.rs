//! Lease expiry (`docs/inside/workflows.md`, "Lease end"): the clock finds the claimed
//! tasks whose leases ended; each ends in its own savepoint.

use super::route::task_failed;
use super::{existing, Rules, Step};
use crate::store::{TaskRow, TaskStatus, Tx};

/// The claimed tasks whose leases ended, by id.
pub fn expired(tx: &dyn Tx) -> Step<Vec<i64>> {
    Ok(tx.expired_leases()?)
}

/// End one lease, if it is still over now, as a failed attempt with the reason
/// `<supervisor> stopped answering: no heartbeat for <lease>`. True when it ended.
pub fn end_lease(rules: &Rules, tx: &dyn Tx, task_id: i64) -> Step<bool> {
    // The clock never waits for a token that another request holds: the lease
    // ends at a later tick.
    let Some(mut task) = tx.lock_task(task_id, false)? else {
        return Ok(false);
    };
    end_if_over(rules, tx, &mut task)
}

/// End the lease of `task` (read under its family's lock) if it is over now: the
/// attempt fails with the reason `<supervisor> stopped answering: no heartbeat for
/// <lease>`, as the clock ends it. `task` is then the task as it is after. True when
/// it ended. The clock calls it at its tick, and every request about the task
/// (report, note, memory write, heartbeat) before it judges the task.
pub fn end_if_over(rules: &Rules, tx: &dyn Tx, task: &mut TaskRow) -> Step<bool> {
    let over = task.status == TaskStatus::Claimed
        && task.lease_until.is_some_and(|until| until < tx.now());
    if !over || !tx.end_lease(task.id)? {
        return Ok(false); // it finished, or a heartbeat renewed it, meanwhile
    }
    let mut row = existing(tx, &task.token)?;
    let who = task.claimed_by.clone().unwrap_or_default();
    let error = format!(
        "{who} stopped answering: no heartbeat for {}",
        rules.lease_words
    );
    task_failed(rules, tx, &mut row, task, &error)?;
    Ok(true)
}

/// At the start of serving: give every claimed task a whole lease from `now`.
///
/// While no control plane served the database, no supervisor could heartbeat or
/// report; a lease that ran out meanwhile says nothing about its supervisor. So a
/// restart (a deploy, a crash) gives each held task one more lease, in which its
/// supervisor's heartbeat renews it or its outbox delivers the report. This is
/// ours: the reference ends such leases on its first tick.
pub fn grace_after_restart(rules: &Rules, tx: &dyn Tx) -> Step<usize> {
    give_back(tx, tx.now().saturating_add(rules.lease))
}

/// The writes of a control plane's open after its checks (a standby's takeover
/// too), in one transaction: the limits with `per` whose pool has no row of
/// `task_keys` get them (`claim_limits::key_pools`), then the leases' grace
/// ([`grace_after_restart`]); how many leases moved.
pub fn after_restart(rules: &Rules, tx: &dyn Tx) -> Step<usize> {
    super::claim_limits::key_pools(tx)?;
    grace_after_restart(rules, tx)
}

/// After the control plane itself did not run for a while (`clock::Stalls`): every
/// claimed lease runs at least until `until`, so that the time in which no
/// supervisor could heartbeat ends no lease. How many leases moved. A write gives
/// it before it judges any lease; giving it twice changes nothing more.
pub fn give_back(tx: &dyn Tx, until: i64) -> Step<usize> {
    Ok(tx.extend_all_leases(until)?)
}
