//! The SQL of `tasks`: the queue, claims and leases.

use postgres::Row;

use super::{closed, get, PgTx};
use crate::store::{StoreResult, TaskRow, Tasks};

const SELECT: &str = "SELECT id, token, state, visit, status, attempt, claimed_by, lease_until,
                             queued_at FROM tasks";

fn read(row: &Row) -> StoreResult<TaskRow> {
    Ok(TaskRow {
        id: get(row, 0)?,
        token: get(row, 1)?,
        state: get(row, 2)?,
        visit: get(row, 3)?,
        status: closed(row, 4)?,
        attempt: get(row, 5)?,
        claimed_by: get(row, 6)?,
        lease_until: get(row, 7)?,
        queued_at: get(row, 8)?,
    })
}

/// `(workflow, state)` pairs as two arrays (`''` for the main workflow).
fn pairs(states: &[(Option<String>, String)]) -> (Vec<String>, Vec<String>) {
    let workflows = states
        .iter()
        .map(|(workflow, _)| workflow.clone().unwrap_or_default())
        .collect();
    let names = states.iter().map(|(_, state)| state.clone()).collect();
    (workflows, names)
}

impl Tasks for PgTx<'_> {
    fn queue_task(&self, token: &str, state: &str, visit: i64) -> StoreResult<i64> {
        let row = self.query_one(
            "INSERT INTO tasks (token, state, visit, status, attempt, queued_at)
             VALUES ($1, $2, $3, 'queued', 0, $4) RETURNING id",
            &[&token, &state, &visit, &self.now],
        )?;
        get(&row, 0)
    }

    fn task(&self, id: i64) -> StoreResult<Option<TaskRow>> {
        let found = self.query_opt(&format!("{SELECT} WHERE id = $1"), &[&id])?;
        found.as_ref().map(read).transpose()
    }

    fn update_task(&self, row: &TaskRow) -> StoreResult<()> {
        self.execute(
            "UPDATE tasks SET status = $2, attempt = $3, claimed_by = $4, lease_until = $5
             WHERE id = $1",
            &[
                &row.id,
                &row.status.as_str(),
                &row.attempt,
                &row.claimed_by,
                &row.lease_until,
            ],
        )?;
        Ok(())
    }

    fn open_tasks(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let rows = self.query(
            &format!(
                "{SELECT} WHERE token = $1 AND status IN ('queued', 'claimed', 'waiting')
                 ORDER BY id"
            ),
            &[&token],
        )?;
        rows.iter().map(read).collect()
    }

    fn tasks_of(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let rows = self.query(&format!("{SELECT} WHERE token = $1 ORDER BY id"), &[&token])?;
        rows.iter().map(read).collect()
    }

    fn lock_queued(&self, states: &[(Option<String>, String)]) -> StoreResult<Option<i64>> {
        // One round trip for the common case: the first candidate whose top token
        // no other transaction holds is locked as it is found. The task's row is
        // read again under the lock by the caller (another claim may have taken
        // it just before).
        // Top tokens are of the main workflow: only its states can match. The
        // queue is walked in id order (index `tasks_queued`) and each candidate's
        // token row tried as it comes, so the statement stops at the first.
        let names: Vec<&str> = states
            .iter()
            .filter(|(workflow, _)| workflow.is_none())
            .map(|(_, state)| state.as_str())
            .collect();
        if names.is_empty() {
            return Ok(None);
        }
        let found = self.query_opt(
            "SELECT t.id, t.token FROM tasks t JOIN tokens k ON k.token = t.token
             WHERE t.status = 'queued' AND t.state = ANY($1)
               AND k.parent IS NULL AND k.status = 'active'
             ORDER BY t.id LIMIT 1 FOR UPDATE OF k SKIP LOCKED",
            &[&names],
        )?;
        let Some(row) = found else {
            return Ok(None);
        };
        self.locked.borrow_mut().insert(get(&row, 1)?);
        Ok(Some(get(&row, 0)?))
    }

    fn queued_tasks(
        &self,
        states: &[(Option<String>, String)],
        limit: i64,
    ) -> StoreResult<Vec<i64>> {
        // One statement over all states (SQLite runs one per state): the pairs go
        // as two arrays.
        let (workflows, names) = pairs(states);
        let rows = self.query(
            "SELECT t.id FROM tasks t JOIN tokens k ON k.token = t.token
             JOIN unnest($1::text[], $2::text[]) AS s(workflow, state)
               ON s.state = t.state AND s.workflow = coalesce(k.workflow, '')
             WHERE t.status = 'queued' AND k.status = 'active'
             ORDER BY t.id LIMIT $3",
            &[&workflows, &names, &limit],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn renew_leases(&self, supervisor: &str, ids: &[i64], until: i64) -> StoreResult<Vec<i64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.query(
            "UPDATE tasks SET lease_until = $3
             WHERE id = ANY($1) AND claimed_by = $2 AND status = 'claimed'
               AND (lease_until IS NULL OR lease_until >= $4)
             RETURNING id",
            &[&ids, &supervisor, &until, &self.now],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn end_lease(&self, id: i64) -> StoreResult<bool> {
        let changed = self.execute(
            "UPDATE tasks SET lease_until = NULL
             WHERE id = $1 AND status = 'claimed'
               AND lease_until IS NOT NULL AND lease_until < $2",
            &[&id, &self.now],
        )?;
        Ok(changed == 1)
    }

    fn expired_leases(&self) -> StoreResult<Vec<i64>> {
        let rows = self.query(
            "SELECT id FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < $1
             ORDER BY id",
            &[&self.now],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn extend_all_leases(&self, until: i64) -> StoreResult<usize> {
        let changed = self.execute(
            "UPDATE tasks SET lease_until = $1
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < $1",
            &[&until],
        )?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    fn next_lease_end_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let row = self.query_one(
            "SELECT min(lease_until) + 1 FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until >= $1",
            &[&after],
        )?;
        get(&row, 0)
    }
}
