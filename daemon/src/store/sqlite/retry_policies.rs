//! The SQL of `retry_policies` and `task_delays` (`store/retry_policies.rs`).

use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::retry_policies::{ClaimFacts, RetryPolicies, RetryPolicyRow};
use crate::store::StoreResult;

impl RetryPolicies for SqliteTx<'_> {
    fn retry_policies(&self) -> StoreResult<Vec<RetryPolicyRow>> {
        let mut statement = self.prepare(
            "SELECT state, delay, doubling, cap, jitter, set_at FROM retry_policies
             ORDER BY state",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(RetryPolicyRow {
                state: row.get(0)?,
                delay: row.get(1)?,
                doubling: row.get::<_, i64>(2)? != 0,
                cap: row.get(3)?,
                jitter: row.get(4)?,
                set_at: row.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn put_retry_policy(&self, row: &RetryPolicyRow) -> StoreResult<()> {
        self.prepare(
            "INSERT INTO retry_policies (state, delay, doubling, cap, jitter, set_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (state) DO UPDATE SET delay = excluded.delay,
                 doubling = excluded.doubling, cap = excluded.cap,
                 jitter = excluded.jitter, set_at = excluded.set_at",
        )?
        .execute(params![
            row.state,
            row.delay,
            i64::from(row.doubling),
            row.cap,
            row.jitter,
            row.set_at
        ])?;
        Ok(())
    }

    fn remove_retry_policy(&self, state: &str) -> StoreResult<bool> {
        let gone = self
            .prepare("DELETE FROM retry_policies WHERE state = ?1")?
            .execute([state])?;
        Ok(gone > 0)
    }

    fn delay_task(&self, task: i64, not_before: i64) -> StoreResult<()> {
        crate::store::claim_switch::turn_on(self, crate::store::claim_switch::ClaimFact::Delays);
        self.prepare(
            "INSERT INTO task_delays (task, not_before) VALUES (?1, ?2)
             ON CONFLICT (task) DO UPDATE SET not_before = excluded.not_before",
        )?
        .execute(params![task, not_before])?;
        Ok(())
    }

    fn task_delay(&self, task: i64) -> StoreResult<Option<i64>> {
        Ok(self
            .prepare("SELECT not_before FROM task_delays WHERE task = ?1")?
            .query_row([task], |row| row.get(0))
            .optional()?)
    }

    fn delays_over(&self, now: i64) -> StoreResult<bool> {
        Ok(self
            .prepare("SELECT EXISTS (SELECT 1 FROM task_delays WHERE not_before <= ?1)")?
            .query_row([now], |row| row.get(0))?)
    }

    fn end_delays(&self, now: i64) -> StoreResult<u64> {
        let deleted = self
            .prepare("DELETE FROM task_delays WHERE not_before <= ?1")?
            .execute([now])?;
        Ok(deleted as u64)
    }

    fn claim_facts_held(&self) -> StoreResult<crate::store::claim_switch::Held> {
        let held: (bool, bool, bool, bool) = self
            .prepare(
                "SELECT EXISTS (SELECT 1 FROM limits), EXISTS (SELECT 1 FROM priorities),
                        EXISTS (SELECT 1 FROM task_delays),
                        EXISTS (SELECT 1 FROM limits WHERE per IS NOT NULL)",
            )?
            .query_row([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
        Ok([held.0, held.1, held.2, held.3])
    }

    fn claim_facts(&self, now: i64) -> StoreResult<ClaimFacts> {
        let (limits, priorities, delayed): (i64, i64, Option<String>) = self
            .prepare(
                "SELECT EXISTS (SELECT 1 FROM limits), EXISTS (SELECT 1 FROM priorities),
                        (SELECT group_concat(task) FROM task_delays WHERE not_before > ?1)",
            )?
            .query_row([now], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(ClaimFacts {
            limits: limits != 0,
            priorities: priorities != 0,
            delayed: delayed
                .unwrap_or_default()
                .split(',')
                .filter_map(|id| id.parse().ok())
                .collect(),
        })
    }
}
