//! The tables `retry_policies` and `task_delays` (schema 0017,
//! `docs/inside/data.md`; `docs/limits.md`, "Retry policies"): a state's pause
//! between a failed attempt and the next, and the moment before which a task's
//! next attempt may not be claimed.

use super::through::passed_through;
use super::StoreResult;

/// A row of `retry_policies`. Durations are microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicyRow {
    /// The state (`state` or `<workflow>/<state>`).
    pub state: String,
    /// The pause after the first failed attempt.
    pub delay: i64,
    /// Whether the pause doubles after each further failure.
    pub doubling: bool,
    /// The longest pause.
    pub cap: i64,
    /// The most a pause is lengthened by, drawn per task and attempt.
    pub jitter: i64,
    /// When it was last set, in microseconds since 1970.
    pub set_at: i64,
}

/// What every claim reads first, in one statement: whether any limit and any
/// priority is set, and the tasks whose next attempt may not be claimed yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimFacts {
    /// Some limit is set.
    pub limits: bool,
    /// Some token has a priority other than 0.
    pub priorities: bool,
    /// The tasks whose next attempt waits for its retry policy's pause.
    pub delayed: Vec<i64>,
}

passed_through! {
    /// The tables `retry_policies` and `task_delays`.
    pub trait RetryPolicies {
        /// Every retry policy, by state.
        fn retry_policies(&self) -> StoreResult<Vec<RetryPolicyRow>>;
        /// Set a state's retry policy, whole.
        fn put_retry_policy(&self, row: &RetryPolicyRow) -> StoreResult<()>;
        /// Remove a state's retry policy; whether there was one.
        fn remove_retry_policy(&self, state: &str) -> StoreResult<bool>;
        /// The task's next attempt may not be claimed before `not_before`.
        fn delay_task(&self, task: i64, not_before: i64) -> StoreResult<()>;
        /// When the task's next attempt may be claimed, if it waits.
        fn task_delay(&self, task: i64) -> StoreResult<Option<i64>>;
        /// The facts a claim at `now` reads first.
        fn claim_facts(&self, now: i64) -> StoreResult<ClaimFacts>;
        /// Whether some task's pause ended at or before `now` (the index
        /// `task_delays_due`).
        fn delays_over(&self, now: i64) -> StoreResult<bool>;
        /// Delete the pauses that ended at or before `now`; how many.
        fn end_delays(&self, now: i64) -> StoreResult<u64>;
        /// Whether some limit, some priority and some pause is set, in one
        /// statement (the claim switch's load, `store/claim_switch.rs`).
        fn claim_facts_held(&self) -> StoreResult<super::claim_switch::Held>;
    }
}
