//! The SQL of the counts over whole tables (`GET /metrics`, `GET /supervisors`).

use super::{closed, SqliteTx};
use crate::store::{Counts, StoreResult, TaskStatus, TimerStatus, TokenCount};

impl Counts for SqliteTx<'_> {
    fn token_counts(&self) -> StoreResult<Vec<TokenCount>> {
        let mut statement = self.prepare(
            "SELECT workflow, state, status, count(*) FROM tokens
             GROUP BY workflow, state, status ORDER BY workflow, state, status",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, closed(row.get(2)?)?, row.get(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn task_counts(&self) -> StoreResult<Vec<(String, TaskStatus, i64)>> {
        let mut statement = self.prepare(
            "SELECT state, status, count(*) FROM tasks
             GROUP BY state, status ORDER BY state, status",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((row.get(0)?, closed(row.get(1)?)?, row.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn timer_counts(&self) -> StoreResult<Vec<(TimerStatus, i64)>> {
        let mut statement =
            self.prepare("SELECT status, count(*) FROM timers GROUP BY status ORDER BY status")?;
        let rows = statement.query_map([], |row| Ok((closed(row.get(0)?)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn running_by_supervisor(&self) -> StoreResult<Vec<(String, i64)>> {
        let mut statement = self.prepare(
            "SELECT claimed_by, count(*) FROM tasks WHERE status = 'claimed'
             GROUP BY claimed_by ORDER BY claimed_by",
        )?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn entry_kinds(&self, after: i64, upto: i64) -> StoreResult<Vec<(String, i64)>> {
        let mut statement = self.prepare(
            "SELECT kind, count(*) FROM ledger WHERE id > ?1 AND id <= ?2
             GROUP BY kind ORDER BY kind",
        )?;
        let rows = statement.query_map([after, upto], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
