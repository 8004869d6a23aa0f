//! The SQL of the counts over whole tables (`GET /metrics`, `GET /supervisors`).

use super::{closed, get, PgTx};
use crate::store::{Counts, StoreResult, TaskStatus, TimerStatus, TokenCount};

impl Counts for PgTx<'_> {
    fn token_counts(&self) -> StoreResult<Vec<TokenCount>> {
        let rows = self.query(
            "SELECT workflow, state, status, count(*) FROM tokens
             GROUP BY workflow, state, status ORDER BY workflow NULLS FIRST, state, status",
            &[],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?, closed(row, 2)?, get(row, 3)?)))
            .collect()
    }

    fn task_counts(&self) -> StoreResult<Vec<(String, TaskStatus, i64)>> {
        let rows = self.query(
            "SELECT state, status, count(*) FROM tasks GROUP BY state, status
             ORDER BY state, status",
            &[],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, closed(row, 1)?, get(row, 2)?)))
            .collect()
    }

    fn timer_counts(&self) -> StoreResult<Vec<(TimerStatus, i64)>> {
        let rows = self.query(
            "SELECT status, count(*) FROM timers GROUP BY status ORDER BY status",
            &[],
        )?;
        rows.iter()
            .map(|row| Ok((closed(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn running_by_supervisor(&self) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT claimed_by, count(*) FROM tasks WHERE status = 'claimed'
             GROUP BY claimed_by ORDER BY claimed_by",
            &[],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn entry_kinds(&self, after: i64, upto: i64) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT kind, count(*) FROM ledger WHERE id > $1 AND id <= $2
             GROUP BY kind ORDER BY kind",
            &[&after, &upto],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }
}
