//! The SQL of `retry_policies` and `task_delays`, as SQLite's
//! (`store/sqlite/retry_policies.rs`).

use super::{get, PgTx};
use crate::store::retry_policies::{ClaimFacts, RetryPolicies, RetryPolicyRow};
use crate::store::StoreResult;

impl RetryPolicies for PgTx<'_> {
    fn retry_policies(&self) -> StoreResult<Vec<RetryPolicyRow>> {
        let rows = self.query(
            "SELECT state, delay, doubling, cap, jitter, set_at FROM retry_policies
             ORDER BY state",
            &[],
        )?;
        rows.iter()
            .map(|row| {
                Ok(RetryPolicyRow {
                    state: get(row, 0)?,
                    delay: get(row, 1)?,
                    doubling: get::<i64>(row, 2)? != 0,
                    cap: get(row, 3)?,
                    jitter: get(row, 4)?,
                    set_at: get(row, 5)?,
                })
            })
            .collect()
    }

    fn put_retry_policy(&self, row: &RetryPolicyRow) -> StoreResult<()> {
        self.execute(
            "INSERT INTO retry_policies (state, delay, doubling, cap, jitter, set_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (state) DO UPDATE SET delay = excluded.delay,
                 doubling = excluded.doubling, cap = excluded.cap,
                 jitter = excluded.jitter, set_at = excluded.set_at",
            &[
                &row.state,
                &row.delay,
                &i64::from(row.doubling),
                &row.cap,
                &row.jitter,
                &row.set_at,
            ],
        )?;
        Ok(())
    }

    fn remove_retry_policy(&self, state: &str) -> StoreResult<bool> {
        Ok(self.execute("DELETE FROM retry_policies WHERE state = $1", &[&state])? > 0)
    }

    fn delay_task(&self, task: i64, not_before: i64) -> StoreResult<()> {
        crate::store::claim_switch::turn_on(self, crate::store::claim_switch::ClaimFact::Delays);
        self.execute(
            "INSERT INTO task_delays (task, not_before) VALUES ($1, $2)
             ON CONFLICT (task) DO UPDATE SET not_before = excluded.not_before",
            &[&task, &not_before],
        )?;
        Ok(())
    }

    fn task_delay(&self, task: i64) -> StoreResult<Option<i64>> {
        let row = self.query_opt(
            "SELECT not_before FROM task_delays WHERE task = $1",
            &[&task],
        )?;
        row.map(|row| get(&row, 0)).transpose()
    }

    fn delays_over(&self, now: i64) -> StoreResult<bool> {
        let row = self.query_one(
            "SELECT EXISTS (SELECT 1 FROM task_delays WHERE not_before <= $1)",
            &[&now],
        )?;
        get(&row, 0)
    }

    fn end_delays(&self, now: i64) -> StoreResult<u64> {
        self.execute("DELETE FROM task_delays WHERE not_before <= $1", &[&now])
    }

    fn claim_facts_held(&self) -> StoreResult<crate::store::claim_switch::Held> {
        let row = self.query_one(
            "SELECT EXISTS (SELECT 1 FROM limits), EXISTS (SELECT 1 FROM priorities),
                    EXISTS (SELECT 1 FROM task_delays),
                    EXISTS (SELECT 1 FROM limits WHERE per IS NOT NULL)",
            &[],
        )?;
        Ok([get(&row, 0)?, get(&row, 1)?, get(&row, 2)?, get(&row, 3)?])
    }

    fn claim_facts(&self, now: i64) -> StoreResult<ClaimFacts> {
        let row = self.query_one(
            "SELECT EXISTS (SELECT 1 FROM limits), EXISTS (SELECT 1 FROM priorities),
                    ARRAY(SELECT task FROM task_delays WHERE not_before > $1)",
            &[&now],
        )?;
        Ok(ClaimFacts {
            limits: get(&row, 0)?,
            priorities: get(&row, 1)?,
            delayed: get(&row, 2)?,
        })
    }
}
