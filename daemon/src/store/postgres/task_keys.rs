//! The SQL of `task_keys` (`store/task_keys.rs`), as SQLite's
//! (`store/sqlite/task_keys.rs`), but that a queued task's rows wait with the
//! transaction's other writes for the flush ([`FLUSH_TASK_KEYS`]), so that a start
//! makes no round trip more; a row's delete is sent at once (a claim of a keyed
//! pool makes one round trip more).

use super::claim_limits::{task_now, TASKS_NOW};
use super::columns::Columns;
use super::priorities::candidate;
use super::{get, PgTx};
use crate::store::claim_limits::ClaimedTask;
use crate::store::priorities::Candidate;
use crate::store::task_keys::{HeadsAsked, TaskKey, TaskKeys};
use crate::store::StoreResult;

/// The flush's part of the rows written (`pending.rs`): pool, key, task, as
/// [`flush_columns`] packs them. A row that is there already stays.
pub(super) const FLUSH_TASK_KEYS: &str = "tk AS (INSERT INTO task_keys (pool, key, task)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
       ON CONFLICT (pool, key, task) DO NOTHING)";

/// Rows as the columns of [`FLUSH_TASK_KEYS`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r TaskKey>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.pool.clone())
            .put(row.key.clone())
            .put(row.task);
    })
}

/// The heads of the keys of one pool, as SQLite's `HEADS`: one index probe per
/// key walked, the full keys passed over after the walk, one probe per open key
/// for its first queued task. `{order}` is the order of a key's tasks. Each key's
/// rows are read first and each task looked up from them (the lateral subquery,
/// which `OFFSET 0` keeps from being merged): joined plainly, the generic plan
/// read the queue in id order from `tasks` instead, every task of a full key.
const HEADS: &str = "
WITH RECURSIVE keys(key, n) AS (
    SELECT (SELECT min(key) FROM task_keys WHERE pool = $1), 0
    UNION ALL
    SELECT (SELECT min(key) FROM task_keys WHERE pool = $1 AND key > keys.key), n + 1
    FROM keys WHERE keys.key IS NOT NULL AND n < $3::bigint + $5::bigint
),
open AS (
    SELECT keys.key FROM keys LEFT JOIN key_turns kt ON kt.pool = $1 AND kt.key = keys.key
    WHERE keys.key IS NOT NULL AND keys.key <> ALL($2::text[])
    ORDER BY coalesce(kt.last_at, 0), keys.key LIMIT $3::bigint
),
heads AS (
    SELECT (SELECT tk.task FROM task_keys tk
            CROSS JOIN LATERAL (
                SELECT t.token FROM tasks t JOIN tokens k ON k.token = t.token
                WHERE t.id = tk.task AND t.status = 'queued' AND k.status = 'active'
                  AND t.state = ANY($4::text[]) OFFSET 0) t
            WHERE tk.pool = $1 AND tk.key = open.key
            ORDER BY {order} LIMIT 1) AS task
    FROM open
)
SELECT t.id, t.token, t.state, k.workflow, k.context, coalesce(p.priority, 0)
FROM heads JOIN tasks t ON t.id = heads.task JOIN tokens k ON k.token = t.token
LEFT JOIN priorities p ON p.token = t.token";

impl TaskKeys for PgTx<'_> {
    fn put_task_keys(&self, rows: &[TaskKey]) -> StoreResult<()> {
        let mut pending = self.pending.borrow_mut();
        for row in rows {
            pending
                .task_keys
                .insert((row.pool.clone(), row.task), row.clone());
        }
        Ok(())
    }

    fn drop_task_keys(&self, task: i64) -> StoreResult<()> {
        // A row of the task that waits is sent first (`execute` flushes).
        self.execute("DELETE FROM task_keys WHERE task = $1", &[&task])?;
        Ok(())
    }

    fn clear_task_keys(&self, pool: &str) -> StoreResult<()> {
        self.pending
            .borrow_mut()
            .task_keys
            .retain(|(row_pool, _), _| row_pool != pool);
        self.execute("DELETE FROM task_keys WHERE pool = $1", &[&pool])?;
        Ok(())
    }

    fn has_task_keys(&self, pool: &str) -> StoreResult<bool> {
        let row = self.query_one(
            "SELECT EXISTS (SELECT 1 FROM task_keys WHERE pool = $1)",
            &[&pool],
        )?;
        get(&row, 0)
    }

    fn queued_now(&self, states: &[String]) -> StoreResult<Vec<ClaimedTask>> {
        let rows = self.query(
            &format!(
                "{TASKS_NOW} WHERE t.status = 'queued' AND t.state = ANY($1::text[])
                 ORDER BY t.id"
            ),
            &[&states],
        )?;
        rows.iter().map(task_now).collect()
    }

    fn key_heads(&self, asked: &HeadsAsked<'_>) -> StoreResult<Vec<Candidate>> {
        let order = if asked.prioritized {
            "coalesce((SELECT priority FROM priorities WHERE token = t.token), 0) DESC, tk.task"
        } else {
            "tk.task"
        };
        let full_count = asked.full.len() as i64;
        let rows = self.query(
            &HEADS.replace("{order}", order),
            &[
                &asked.pool,
                &asked.full,
                &asked.keys,
                &asked.states,
                &full_count,
            ],
        )?;
        rows.iter().map(candidate).collect()
    }
}
