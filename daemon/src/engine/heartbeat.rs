//! Heartbeat (reference `docs/inside/workflows.md`, "Heartbeat").

use std::collections::BTreeSet;

use super::claim::check_supervisor;
use super::{Rules, Step};
use crate::store::Tx;

/// Renew the leases of the tasks `supervisor` still holds; answer the others,
/// sorted, as lost. Writes no ledger entry.
pub fn heartbeat(rules: &Rules, tx: &dyn Tx, supervisor: &str, tasks: &[i64]) -> Step<Vec<i64>> {
    check_supervisor(supervisor)?;
    let asked: BTreeSet<i64> = tasks.iter().copied().collect();
    let ids: Vec<i64> = asked.iter().copied().collect();
    let until = tx.now().saturating_add(rules.lease);
    let renewed: BTreeSet<i64> = tx
        .renew_leases(supervisor, &ids, until)?
        .into_iter()
        .collect();
    Ok(asked.difference(&renewed).copied().collect())
}
