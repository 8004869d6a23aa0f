//! The SQL of `limits` and `slots` (`store/claim_limits.rs`): a slot counts only
//! while its task is claimed with the slot's attempt; a pool without `per` counts
//! the attempts claimed of its states, with no rows.

use rusqlite::{params, Row};

use super::SqliteTx;
use crate::store::claim_limits::{
    running_counts, running_slots, states_of, states_text, written_as_row, ClaimedTask, HeldSlot,
    LimitRow, Limits, Running, SlotRow, RUNNING,
};
use crate::store::StoreResult;

const COLUMNS: &str = "name, states, max, per, rate_count, rate_period, bucket, bucket_at, set_at";

fn read(row: &Row<'_>) -> rusqlite::Result<(LimitRow, String)> {
    let states: String = row.get(1)?;
    Ok((
        LimitRow {
            name: row.get(0)?,
            states: Vec::new(),
            max: row.get(2)?,
            per: row.get(3)?,
            rate_count: row.get(4)?,
            rate_period: row.get(5)?,
            bucket: row.get(6)?,
            bucket_at: row.get(7)?,
            set_at: row.get(8)?,
        },
        states,
    ))
}

/// Tasks with their tokens' workflow and context, as [`task_now`] reads them.
pub(super) const TASKS_NOW: &str = "SELECT t.id, t.attempt, t.state, k.workflow, k.context
     FROM tasks t JOIN tokens k ON k.token = t.token";

/// A row of [`TASKS_NOW`].
pub(super) fn task_now(row: &Row<'_>) -> rusqlite::Result<ClaimedTask> {
    Ok(ClaimedTask {
        task: row.get(0)?,
        attempt: row.get(1)?,
        state: row.get(2)?,
        workflow: row.get(3)?,
        context: row.get(4)?,
    })
}

const HELD: &str = "SELECT s.task, s.attempt, s.pool, s.key, t.claimed_by
     FROM slots s JOIN tasks t ON t.id = s.task
     WHERE s.pool = ?1 AND t.status = 'claimed' AND t.attempt = s.attempt
     ORDER BY s.task";

impl SqliteTx<'_> {
    /// The attempts claimed now ([`RUNNING`]), read only for a limit without
    /// `per` (`None` for one with it: its slots are rows).
    fn running(&self, limit: &LimitRow) -> StoreResult<Option<Vec<Running>>> {
        if limit.per.is_some() {
            return Ok(None);
        }
        let mut statement = self.prepare(RUNNING)?;
        let rows = statement.query_map([], |row| {
            Ok(Running {
                task: row.get(0)?,
                attempt: row.get(1)?,
                state: row.get(2)?,
                workflow: row.get(3)?,
                holder: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
            })
        })?;
        Ok(Some(rows.collect::<Result<Vec<_>, _>>()?))
    }
}

impl Limits for SqliteTx<'_> {
    fn limits(&self) -> StoreResult<Vec<LimitRow>> {
        let mut statement = self.prepare(&format!("SELECT {COLUMNS} FROM limits ORDER BY name"))?;
        let rows = statement.query_map([], read)?;
        let mut found = Vec::new();
        for row in rows {
            let (mut limit, states) = row?;
            limit.states = states_of(&states)?;
            found.push(limit);
        }
        Ok(found)
    }

    fn put_limit(&self, row: &LimitRow) -> StoreResult<()> {
        crate::store::claim_switch::turn_on(self, crate::store::claim_switch::ClaimFact::Limits);
        if row.per.is_some() {
            crate::store::claim_switch::turn_on(self, crate::store::claim_switch::ClaimFact::Keys);
        }
        self.prepare(&format!(
            "INSERT INTO limits ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (name) DO UPDATE SET states = excluded.states, max = excluded.max,
                 per = excluded.per, rate_count = excluded.rate_count,
                 rate_period = excluded.rate_period, bucket = excluded.bucket,
                 bucket_at = excluded.bucket_at, set_at = excluded.set_at"
        ))?
        .execute(params![
            row.name,
            states_text(&row.states),
            row.max,
            row.per,
            row.rate_count,
            row.rate_period,
            row.bucket,
            row.bucket_at,
            row.set_at
        ])?;
        Ok(())
    }

    fn remove_limit(&self, name: &str) -> StoreResult<bool> {
        self.prepare("DELETE FROM slots WHERE pool = ?1")?
            .execute([name])?;
        self.prepare("DELETE FROM key_turns WHERE pool = ?1")?
            .execute([name])?;
        self.prepare("DELETE FROM task_keys WHERE pool = ?1")?
            .execute([name])?;
        let gone = self
            .prepare("DELETE FROM limits WHERE name = ?1")?
            .execute([name])?;
        Ok(gone > 0)
    }

    fn lock_slots(&self) -> StoreResult<()> {
        // The one writer holds every row.
        Ok(())
    }

    fn set_bucket(&self, name: &str, bucket: f64, at: i64) -> StoreResult<()> {
        self.prepare("UPDATE limits SET bucket = ?2, bucket_at = ?3 WHERE name = ?1")?
            .execute(params![name, bucket, at])?;
        Ok(())
    }

    fn held_slots(&self, limit: &LimitRow) -> StoreResult<Vec<HeldSlot>> {
        if let Some(running) = self.running(limit)? {
            return Ok(running_slots(limit, &running).unwrap_or_default());
        }
        let mut statement = self.prepare(HELD)?;
        let rows = statement.query_map([&limit.name], |row| {
            Ok(HeldSlot {
                slot: SlotRow {
                    task: row.get(0)?,
                    attempt: row.get(1)?,
                    pool: row.get(2)?,
                    key: row.get(3)?,
                },
                holder: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn slot_counts(&self, limit: &LimitRow) -> StoreResult<Vec<(String, i64)>> {
        if let Some(running) = self.running(limit)? {
            return Ok(running_counts(limit, &running).unwrap_or_default());
        }
        let mut statement = self.prepare(
            "SELECT s.key, count(*) FROM slots s JOIN tasks t ON t.id = s.task
             WHERE s.pool = ?1 AND t.status = 'claimed' AND t.attempt = s.attempt
             GROUP BY s.key",
        )?;
        let rows = statement.query_map([&limit.name], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn take_slot(&self, slot: &SlotRow) -> StoreResult<()> {
        if !written_as_row(slot) {
            return Ok(());
        }
        self.prepare(
            "INSERT INTO slots (task, pool, attempt, key) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (task, pool) DO UPDATE SET attempt = excluded.attempt,
                 key = excluded.key",
        )?
        .execute(params![slot.task, slot.pool, slot.attempt, slot.key])?;
        Ok(())
    }

    fn sweep_slots(&self, pool: &str) -> StoreResult<u64> {
        let gone = self
            .prepare(
                "DELETE FROM slots WHERE pool = ?1 AND NOT EXISTS (
                     SELECT 1 FROM tasks t WHERE t.id = slots.task
                         AND t.status = 'claimed' AND t.attempt = slots.attempt)",
            )?
            .execute([pool])?;
        Ok(gone as u64)
    }

    fn key_turns(&self, pool: &str) -> StoreResult<Vec<(String, i64)>> {
        let mut statement = self.prepare("SELECT key, last_at FROM key_turns WHERE pool = ?1")?;
        let rows = statement.query_map([pool], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn take_turn(&self, pool: &str, key: &str, at: i64) -> StoreResult<()> {
        self.prepare(
            "INSERT INTO key_turns (pool, key, last_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (pool, key) DO UPDATE SET last_at = excluded.last_at",
        )?
        .execute(params![pool, key, at])?;
        Ok(())
    }

    fn claimed_now(&self) -> StoreResult<Vec<ClaimedTask>> {
        let mut statement = self.prepare(&format!(
            "{TASKS_NOW} WHERE t.status = 'claimed' ORDER BY t.id"
        ))?;
        let rows = statement.query_map([], task_now)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn clear_slots(&self, pool: &str) -> StoreResult<()> {
        self.prepare("DELETE FROM slots WHERE pool = ?1")?
            .execute([pool])?;
        Ok(())
    }
}
