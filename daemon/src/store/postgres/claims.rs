//! The SQL of `claims`: each supervisor's last claim with a request id; and what
//! this control plane committed of those rows.

use std::sync::Mutex;

use foldhash::HashMap as FastMap;

use super::{get, PgTx};
use crate::store::{ClaimRow, Claims, StoreResult};

/// How many supervisors' rows [`KnownClaims`] keeps before it starts afresh.
const MOST_KNOWN: usize = 10_000;

/// The rows of `claims` this control plane committed, by supervisor. Every claim
/// with a request id reads its supervisor's row first (a round trip of its own);
/// this control plane is the one writer of the table, so what it committed is what
/// the table holds. Read only while no transaction of its own runs beside the
/// writer's batch (one may have committed a row it has not published yet).
#[derive(Debug, Default)]
pub struct KnownClaims {
    committed: Mutex<FastMap<String, ClaimRow>>,
}

impl KnownClaims {
    fn with<R>(&self, work: impl FnOnce(&mut FastMap<String, ClaimRow>) -> R) -> R {
        let mut committed = match self.committed.lock() {
            Ok(committed) => committed,
            Err(poisoned) => {
                let mut committed = poisoned.into_inner();
                committed.clear();
                committed
            }
        };
        work(&mut committed)
    }

    /// A transaction committed these rows.
    pub fn publish(&self, rows: FastMap<String, ClaimRow>) {
        if rows.is_empty() {
            return;
        }
        self.with(|committed| {
            if committed.len() + rows.len() > MOST_KNOWN {
                committed.clear();
            }
            committed.extend(rows);
        });
    }

    /// Forget every row (a commit whose outcome is unknown).
    pub fn clear(&self) {
        self.with(FastMap::clear);
    }

    fn get(&self, supervisor: &str) -> Option<ClaimRow> {
        self.with(|committed| committed.get(supervisor).cloned())
    }
}

impl Claims for PgTx<'_> {
    fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
        let written = self
            .claims
            .borrow()
            .get(supervisor)
            .cloned()
            .or_else(|| self.kept_claims.borrow().get(supervisor).cloned());
        if written.is_some() {
            return Ok(written);
        }
        if let Some(known) = self.known_claims.and_then(|(known, beside)| {
            beside
                .running()
                .eq(&0)
                .then(|| known.get(supervisor))
                .flatten()
        }) {
            return Ok(Some(known));
        }
        // Locked before any token's lock (a claim reads it first), so that two
        // claims of one supervisor take turns and never wait in a circle.
        let found = self.query_opt(
            "SELECT supervisor, request, task_id, attempt FROM claims WHERE supervisor = $1
             FOR UPDATE",
            &[&supervisor],
        )?;
        found
            .map(|row| {
                Ok(ClaimRow {
                    supervisor: get(&row, 0)?,
                    request: get(&row, 1)?,
                    task_id: get(&row, 2)?,
                    attempt: get(&row, 3)?,
                })
            })
            .transpose()
    }

    fn remember_claim(&self, row: &ClaimRow) -> StoreResult<()> {
        self.claims
            .borrow_mut()
            .insert(row.supervisor.clone(), row.clone());
        // Written with the transaction's other writes (`pending.rs`).
        self.pending.borrow_mut().claim(row);
        Ok(())
    }
}
