//! Heartbeat (reference `docs/inside/workflows.md`, "Heartbeat"), with the attempts
//! our supervisor names (an addition: the reference's body stays valid and keeps
//! its meaning).

use std::collections::{BTreeMap, BTreeSet};

use super::claim::check_supervisor;
use super::{Rules, Step};
use crate::store::Tx;

/// Renew the leases of the tasks `supervisor` still holds; answer the others,
/// sorted, as lost. Writes no ledger entry.
///
/// `attempts` maps a task id to the attempt the supervisor runs. A task named there
/// is renewed only while its current attempt is that one: a supervisor that stalled
/// past its lease while another process of the same name took the next attempt
/// learns that its own attempt is over, and does not keep the new one's lease
/// alive. Tasks not named there are judged by holder and lease alone, as the
/// reference judges them; `attempts` entries for tasks not in `tasks` are ignored.
/// The check and the renewal share the transaction, so no claim comes between them.
pub fn heartbeat(
    rules: &Rules,
    tx: &dyn Tx,
    supervisor: &str,
    tasks: &[i64],
    attempts: &BTreeMap<i64, i64>,
) -> Step<Vec<i64>> {
    check_supervisor(supervisor)?;
    let asked: BTreeSet<i64> = tasks.iter().copied().collect();
    let mut ids = Vec::with_capacity(asked.len());
    for &id in &asked {
        let current = match attempts.get(&id) {
            None => true,
            Some(&attempt) => tx.task(id)?.is_some_and(|task| task.attempt == attempt),
        };
        if current {
            ids.push(id);
        }
    }
    let until = tx.now().saturating_add(rules.lease);
    let renewed: BTreeSet<i64> = tx
        .renew_leases(supervisor, &ids, until)?
        .into_iter()
        .collect();
    Ok(asked.difference(&renewed).copied().collect())
}
