//! Heartbeat: a supervisor renews the leases of the tasks it still runs, naming
//! the attempt of each when it knows it (an addition to the reference's body,
//! which stays valid and keeps its meaning).

use std::collections::{BTreeMap, BTreeSet};

use super::lease::end_if_over;
use super::{Rules, Step};
use crate::store::{TaskRow, Tx};
use crate::validated::HeartbeatInput;

/// Renew the leases of the tasks `supervisor` still holds; answer the others,
/// sorted, as lost. Writes no ledger entry, but for a lease found over: that one
/// ends here as the clock would end it.
///
/// `attempts` maps a task id to the attempt the supervisor runs. A task named there
/// is renewed only while its current attempt is that one: a supervisor that stalled
/// past its lease while another process of the same name took the next attempt
/// learns that its own attempt is over, and does not keep the new one's lease
/// alive. Tasks not named there are judged by holder and lease alone, as the
/// reference judges them; `attempts` entries for tasks not in `tasks` are ignored.
/// The attempts are read where no claim or lease end can change them before the
/// renewal commits (see [`held_tasks`]).
pub fn heartbeat(rules: &Rules, tx: &dyn Tx, input: &HeartbeatInput) -> Step<Vec<i64>> {
    let (supervisor, attempts) = (input.supervisor.as_str(), &input.attempts);
    let asked: BTreeSet<i64> = input.tasks.iter().copied().collect();
    let ids: Vec<i64> = asked.iter().copied().collect();
    let mut current = held_tasks(tx, &ids)?;
    // A lease is judged now: one that is over ends here, with the rows the clock
    // would write, and its task is answered lost.
    for task in current.values_mut() {
        if task.claimed_by.as_deref() == Some(supervisor) {
            end_if_over(rules, tx, task)?;
        }
    }
    let renewable: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| match attempts.get(id) {
            None => true,
            Some(attempt) => current.get(id).map(|t| t.attempt) == Some(*attempt),
        })
        .collect();
    let until = tx.now().saturating_add(rules.lease);
    let renewed: BTreeSet<i64> = tx
        .renew_leases(supervisor, &renewable, until)?
        .into_iter()
        .collect();
    Ok(asked.difference(&renewed).copied().collect())
}

/// The tasks `ids` that exist, read under their families' locks, so that no
/// claim, report or lease end moves a task between this read and the renewal.
fn held_tasks(tx: &dyn Tx, ids: &[i64]) -> Step<BTreeMap<i64, TaskRow>> {
    let rows = tx.lock_tasks(ids)?;
    Ok(rows.into_iter().map(|task| (task.id, task)).collect())
}
