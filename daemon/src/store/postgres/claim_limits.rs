//! The SQL of `limits` and `slots`, as SQLite's (`store/sqlite/claim_limits.rs`),
//! but that claims which count and take slots hold a transaction-scoped advisory
//! lock first: here transactions of this process run side by side (a request that
//! runs alone beside the writer's batch), and a standby that takes over meets the
//! same lock.

use postgres::Row;

use super::{get, PgTx};
use crate::store::claim_limits::{
    states_of, states_text, ClaimedTask, HeldSlot, LimitRow, Limits, SlotRow,
};
use crate::store::StoreResult;

/// The advisory lock of the slots.
pub const SLOTS_LOCK: &str = "hashtextextended('@stateous/slots', 0)";

const COLUMNS: &str = "name, states, max, per, rate_count, rate_period, bucket, bucket_at, set_at";

fn read(row: &Row) -> StoreResult<LimitRow> {
    let states: String = get(row, 1)?;
    Ok(LimitRow {
        name: get(row, 0)?,
        states: states_of(&states)?,
        max: get(row, 2)?,
        per: get(row, 3)?,
        rate_count: get(row, 4)?,
        rate_period: get(row, 5)?,
        bucket: get(row, 6)?,
        bucket_at: get(row, 7)?,
        set_at: get(row, 8)?,
    })
}

impl Limits for PgTx<'_> {
    fn limits(&self) -> StoreResult<Vec<LimitRow>> {
        let rows = self.query(&format!("SELECT {COLUMNS} FROM limits ORDER BY name"), &[])?;
        rows.iter().map(read).collect()
    }

    fn put_limit(&self, row: &LimitRow) -> StoreResult<()> {
        crate::store::retry_policies::claim_facts_apply();
        self.execute(
            &format!(
                "INSERT INTO limits ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (name) DO UPDATE SET states = excluded.states,
                     max = excluded.max, per = excluded.per,
                     rate_count = excluded.rate_count, rate_period = excluded.rate_period,
                     bucket = excluded.bucket, bucket_at = excluded.bucket_at,
                     set_at = excluded.set_at"
            ),
            &[
                &row.name,
                &states_text(&row.states),
                &row.max,
                &row.per,
                &row.rate_count,
                &row.rate_period,
                &row.bucket,
                &row.bucket_at,
                &row.set_at,
            ],
        )?;
        Ok(())
    }

    fn remove_limit(&self, name: &str) -> StoreResult<bool> {
        self.execute("DELETE FROM slots WHERE pool = $1", &[&name])?;
        self.execute("DELETE FROM key_turns WHERE pool = $1", &[&name])?;
        Ok(self.execute("DELETE FROM limits WHERE name = $1", &[&name])? > 0)
    }

    fn lock_slots(&self) -> StoreResult<()> {
        self.query(&format!("SELECT pg_advisory_xact_lock({SLOTS_LOCK})"), &[])?;
        Ok(())
    }

    fn set_bucket(&self, name: &str, bucket: f64, at: i64) -> StoreResult<()> {
        self.execute(
            "UPDATE limits SET bucket = $2, bucket_at = $3 WHERE name = $1",
            &[&name, &bucket, &at],
        )?;
        Ok(())
    }

    fn held_slots(&self, pool: &str) -> StoreResult<Vec<HeldSlot>> {
        let rows = self.query(
            "SELECT s.task, s.attempt, s.pool, s.key, t.claimed_by
             FROM slots s JOIN tasks t ON t.id = s.task
             WHERE s.pool = $1 AND t.status = 'claimed' AND t.attempt = s.attempt
             ORDER BY s.task",
            &[&pool],
        )?;
        rows.iter()
            .map(|row| {
                Ok(HeldSlot {
                    slot: SlotRow {
                        task: get(row, 0)?,
                        attempt: get(row, 1)?,
                        pool: get(row, 2)?,
                        key: get(row, 3)?,
                    },
                    holder: get::<Option<String>>(row, 4)?.unwrap_or_default(),
                })
            })
            .collect()
    }

    fn slot_counts(&self, pool: &str) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT s.key, count(*) FROM slots s JOIN tasks t ON t.id = s.task
             WHERE s.pool = $1 AND t.status = 'claimed' AND t.attempt = s.attempt
             GROUP BY s.key",
            &[&pool],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn take_slot(&self, slot: &SlotRow) -> StoreResult<()> {
        self.execute(
            "INSERT INTO slots (task, pool, attempt, key) VALUES ($1, $2, $3, $4)
             ON CONFLICT (task, pool) DO UPDATE SET attempt = excluded.attempt,
                 key = excluded.key",
            &[&slot.task, &slot.pool, &slot.attempt, &slot.key],
        )?;
        Ok(())
    }

    fn sweep_slots(&self, pool: &str) -> StoreResult<u64> {
        self.execute(
            "DELETE FROM slots WHERE pool = $1 AND NOT EXISTS (
                 SELECT 1 FROM tasks t WHERE t.id = slots.task
                     AND t.status = 'claimed' AND t.attempt = slots.attempt)",
            &[&pool],
        )
    }

    fn key_turns(&self, pool: &str) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT key, last_at FROM key_turns WHERE pool = $1",
            &[&pool],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn take_turn(&self, pool: &str, key: &str, at: i64) -> StoreResult<()> {
        self.execute(
            "INSERT INTO key_turns (pool, key, last_at) VALUES ($1, $2, $3)
             ON CONFLICT (pool, key) DO UPDATE SET last_at = excluded.last_at",
            &[&pool, &key, &at],
        )?;
        Ok(())
    }

    fn claimed_now(&self) -> StoreResult<Vec<ClaimedTask>> {
        let rows = self.query(
            "SELECT t.id, t.attempt, t.state, k.workflow, k.context
             FROM tasks t JOIN tokens k ON k.token = t.token
             WHERE t.status = 'claimed' ORDER BY t.id",
            &[],
        )?;
        rows.iter()
            .map(|row| {
                Ok(ClaimedTask {
                    task: get(row, 0)?,
                    attempt: get(row, 1)?,
                    state: get(row, 2)?,
                    workflow: get(row, 3)?,
                    context: get(row, 4)?,
                })
            })
            .collect()
    }

    fn clear_slots(&self, pool: &str) -> StoreResult<()> {
        self.execute("DELETE FROM slots WHERE pool = $1", &[&pool])?;
        Ok(())
    }
}
