//! The SQL of `claims`: each supervisor's last claim with a request id.

use super::{get, PgTx};
use crate::store::{ClaimRow, Claims, StoreResult};

impl Claims for PgTx<'_> {
    fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
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
        // Written with the transaction's other writes (`pending.rs`).
        self.pending.borrow_mut().claim(row);
        Ok(())
    }
}
