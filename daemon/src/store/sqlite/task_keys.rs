//! The SQL of `task_keys` (`store/task_keys.rs`).

use rusqlite::params;

use super::claim_limits::{task_now, TASKS_NOW};
use super::priorities::candidate;
use super::SqliteTx;
use crate::store::claim_limits::ClaimedTask;
use crate::store::priorities::Candidate;
use crate::store::task_keys::{HeadsAsked, TaskKey, TaskKeys};
use crate::store::StoreResult;

/// The heads of the keys of one pool (`TaskKeys::key_heads`): the keys are walked
/// one index probe each (a recursive step to the next key above the last), so a
/// key with many rows costs one probe; the full keys are passed over after the
/// walk, and each open key's first queued task is one more probe of
/// the table's key. `{order}` is the order of a key's tasks.
const HEADS: &str = "
WITH RECURSIVE keys(key, n) AS (
    SELECT (SELECT min(key) FROM task_keys WHERE pool = ?1), 0
    UNION ALL
    SELECT (SELECT min(key) FROM task_keys WHERE pool = ?1 AND key > keys.key), n + 1
    FROM keys WHERE keys.key IS NOT NULL AND n < ?3 + ?5
),
open AS (
    SELECT keys.key FROM keys LEFT JOIN key_turns kt ON kt.pool = ?1 AND kt.key = keys.key
    WHERE keys.key IS NOT NULL AND keys.key NOT IN (SELECT value FROM json_each(?2))
    ORDER BY coalesce(kt.last_at, 0), keys.key LIMIT ?3
),
heads AS (
    SELECT (SELECT tk.task FROM task_keys tk JOIN tasks t ON t.id = tk.task
                JOIN tokens k ON k.token = t.token
            WHERE tk.pool = ?1 AND tk.key = open.key AND t.status = 'queued'
              AND k.status = 'active' AND t.state IN (SELECT value FROM json_each(?4))
            ORDER BY {order} LIMIT 1) AS task
    FROM open
)
SELECT t.id, t.token, t.state, k.workflow, k.context, coalesce(p.priority, 0)
FROM heads JOIN tasks t ON t.id = heads.task JOIN tokens k ON k.token = t.token
LEFT JOIN priorities p ON p.token = t.token";

impl TaskKeys for SqliteTx<'_> {
    fn put_task_keys(&self, rows: &[TaskKey]) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO task_keys (pool, key, task) VALUES (?1, ?2, ?3)
             ON CONFLICT (pool, key, task) DO NOTHING",
        )?;
        for row in rows {
            statement.execute(params![row.pool, row.key, row.task])?;
        }
        Ok(())
    }

    fn drop_task_keys(&self, task: i64) -> StoreResult<()> {
        self.prepare("DELETE FROM task_keys WHERE task = ?1")?
            .execute([task])?;
        Ok(())
    }

    fn clear_task_keys(&self, pool: &str) -> StoreResult<()> {
        self.prepare("DELETE FROM task_keys WHERE pool = ?1")?
            .execute([pool])?;
        Ok(())
    }

    fn has_task_keys(&self, pool: &str) -> StoreResult<bool> {
        let found: bool = self
            .prepare("SELECT EXISTS (SELECT 1 FROM task_keys WHERE pool = ?1)")?
            .query_row([pool], |row| row.get(0))?;
        Ok(found)
    }

    fn queued_now(&self, states: &[String]) -> StoreResult<Vec<ClaimedTask>> {
        let mut statement = self.prepare(&format!(
            "{TASKS_NOW} WHERE t.status = 'queued'
                 AND t.state IN (SELECT value FROM json_each(?1)) ORDER BY t.id"
        ))?;
        let names = serde_json::Value::from(states.to_vec()).to_string();
        let rows = statement.query_map([names], task_now)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn key_heads(&self, asked: &HeadsAsked<'_>) -> StoreResult<Vec<Candidate>> {
        let order = if asked.prioritized {
            "coalesce((SELECT priority FROM priorities WHERE token = t.token), 0) DESC, tk.task"
        } else {
            "tk.task"
        };
        let mut statement = self.prepare(&HEADS.replace("{order}", order))?;
        let full = serde_json::Value::from(asked.full.to_vec()).to_string();
        let states = serde_json::Value::from(asked.states.to_vec()).to_string();
        let rows = statement.query_map(
            params![
                asked.pool,
                full,
                asked.keys,
                states,
                asked.full.len() as i64
            ],
            candidate,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
