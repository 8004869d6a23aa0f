//! The SQL of `tasks`: the queue, claims and leases.

use rusqlite::{params, OptionalExtension, Row};
use serde_json::Value;

use super::SqliteTx;
use crate::store::{Head, StoreResult, TaskReads, TaskRow, Tasks};

const COLUMNS: &str =
    "id, token, state, visit, status, attempt, claimed_by, lease_until, queued_at";

fn read(row: &Row<'_>) -> rusqlite::Result<TaskRow> {
    TaskRow::read(row)
}

fn ids(values: &[i64]) -> String {
    Value::from(values.to_vec()).to_string()
}

impl Tasks for SqliteTx<'_> {
    fn queue_task(&self, token: &str, state: &str, visit: i64) -> StoreResult<i64> {
        // No RETURNING: SQLite buffers its rows in a temporary table.
        let mut statement = self.prepare(
            "INSERT INTO tasks (token, state, visit, status, attempt, queued_at)
             VALUES (?1, ?2, ?3, 'queued', 0, ?4)",
        )?;
        statement.execute(params![token, state, visit, self.now()])?;
        Ok(self.conn.last_insert_rowid())
    }

    fn task(&self, id: i64) -> StoreResult<Option<TaskRow>> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1");
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([id], read).optional()?)
    }

    fn update_task(&self, row: &TaskRow) -> StoreResult<()> {
        let mut statement = self.prepare(
            "UPDATE tasks SET status = ?2, attempt = ?3, claimed_by = ?4, lease_until = ?5
             WHERE id = ?1",
        )?;
        statement.execute(params![
            row.id,
            row.status.as_str(),
            row.attempt,
            row.claimed_by,
            row.lease_until
        ])?;
        Ok(())
    }

    fn open_tasks(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks
             WHERE token = ?1 AND status IN ('queued', 'claimed', 'waiting') ORDER BY id"
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map([token], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn lock_queued(&self, states: &[(Option<String>, String)]) -> StoreResult<Head> {
        // The one writer holds every family: the oldest candidate is free, and
        // the search covers child tokens' tasks too, so none found is none.
        Ok(match self.queued_tasks(states, 1)?.first() {
            Some(&id) => Head::Task(id),
            None => Head::Empty,
        })
    }

    fn renew_leases(&self, supervisor: &str, ids_: &[i64], until: i64) -> StoreResult<Vec<i64>> {
        if ids_.is_empty() {
            return Ok(Vec::new());
        }
        let mut statement = self.prepare(
            "UPDATE tasks SET lease_until = ?3
             WHERE id IN (SELECT value FROM json_each(?1))
               AND claimed_by = ?2 AND status = 'claimed'
               AND (lease_until IS NULL OR lease_until >= ?4)
             RETURNING id",
        )?;
        let rows = statement
            .query_map(params![ids(ids_), supervisor, until, self.now()], |row| {
                row.get(0)
            })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn end_lease(&self, id: i64) -> StoreResult<bool> {
        let mut statement = self.prepare(
            "UPDATE tasks SET lease_until = NULL
             WHERE id = ?1 AND status = 'claimed'
               AND lease_until IS NOT NULL AND lease_until < ?2",
        )?;
        Ok(statement.execute(params![id, self.now()])? == 1)
    }

    fn extend_all_leases(&self, until: i64) -> StoreResult<usize> {
        let mut statement = self.prepare(
            "UPDATE tasks SET lease_until = ?1
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < ?1",
        )?;
        Ok(statement.execute([until])?)
    }
}

impl TaskReads for SqliteTx<'_> {
    fn tasks_of(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE token = ?1 ORDER BY id");
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map([token], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn queued_tasks(
        &self,
        states: &[(Option<String>, String)],
        limit: i64,
    ) -> StoreResult<Vec<i64>> {
        // One query per state, each walking `tasks_queue` in id order and stopping
        // at `limit`, then merged: one query over all states would sort every
        // queued task of those states on each claim. The limit is part of the SQL
        // text, not a bound parameter: SQLite re-prepares a statement on every run
        // whose LIMIT is a parameter (it may steer the plan).
        let sql = format!(
            "SELECT t.id FROM tasks t JOIN tokens k ON k.token = t.token
             WHERE t.status = 'queued' AND t.state = ?1
               AND coalesce(k.workflow, '') = ?2 AND k.status = 'active'
             ORDER BY t.id LIMIT {}",
            limit.max(0)
        );
        let mut statement = self.prepare(&sql)?;
        let mut found = Vec::new();
        for (workflow, state) in states {
            let workflow = workflow.as_deref().unwrap_or("");
            let rows = statement.query_map(params![state, workflow], |row| row.get(0))?;
            for id in rows {
                found.push(id?);
            }
        }
        found.sort_unstable();
        found.dedup();
        found.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(found)
    }

    fn expired_leases(&self) -> StoreResult<Vec<i64>> {
        let mut statement = self.prepare(
            "SELECT id FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < ?1
             ORDER BY id",
        )?;
        let rows = statement.query_map([self.now()], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn next_lease_end_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let mut statement = self.prepare(
            "SELECT min(lease_until) + 1 FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until >= ?1",
        )?;
        Ok(statement.query_row([after], |row| row.get(0))?)
    }
}
