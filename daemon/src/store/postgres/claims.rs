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
        self.execute(
            "INSERT INTO claims (supervisor, request, task_id, attempt) VALUES ($1, $2, $3, $4)
             ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
                 task_id = excluded.task_id, attempt = excluded.attempt",
            &[&row.supervisor, &row.request, &row.task_id, &row.attempt],
        )?;
        Ok(())
    }
}
