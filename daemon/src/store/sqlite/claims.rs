//! The SQL of `claims`: each supervisor's last claim with a request id.

use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::{ClaimRow, Claims, StoreResult};

impl Claims for SqliteTx<'_> {
    fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
        let mut statement = self.prepare(
            "SELECT supervisor, request, task_id, attempt FROM claims WHERE supervisor = ?1",
        )?;
        let found = statement
            .query_row([supervisor], |row| {
                Ok(ClaimRow {
                    supervisor: row.get(0)?,
                    request: row.get(1)?,
                    task_id: row.get(2)?,
                    attempt: row.get(3)?,
                })
            })
            .optional()?;
        Ok(found)
    }

    fn remember_claim(&self, row: &ClaimRow) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO claims (supervisor, request, task_id, attempt) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
                 task_id = excluded.task_id, attempt = excluded.attempt",
        )?;
        statement.execute(params![
            row.supervisor,
            row.request,
            row.task_id,
            row.attempt
        ])?;
        Ok(())
    }
}
