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

/// Which of the settings a claim looks at may be set: a limit, a priority, a
/// retry pause ([`claim_facts_apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimFact {
    /// A row of `limits`.
    Limits,
    /// A row of `priorities`.
    Priorities,
    /// A row of `task_delays`.
    Delays,
}

/// Whether each of the settings a claim looks at may be set ([`ClaimFact`], in
/// its order). False only while no store of this process has written one, nor
/// opened a database that holds one (`Store::open` looks): the control plane is
/// its database's only writer, so the table is then empty. With none set, a
/// claim is the plain oldest-first one, with no statement more (on Postgres a
/// read in a batch is a round trip of its own: reading them on every claim cut
/// the bench to a third); with limits only, a claim reads the limits and skips
/// [`ClaimFacts`] (the transaction keeps the limits and slots it read,
/// `docs/limits.md`, "Speed"). Each turns true before such a write and never
/// back, so a rolled-back write only costs claims that statement.
static CLAIM_FACTS_MAY_APPLY: [std::sync::atomic::AtomicBool; 3] = [
    std::sync::atomic::AtomicBool::new(false),
    std::sync::atomic::AtomicBool::new(false),
    std::sync::atomic::AtomicBool::new(false),
];

fn may_apply(fact: ClaimFact) -> bool {
    CLAIM_FACTS_MAY_APPLY[fact as usize].load(std::sync::atomic::Ordering::SeqCst)
}

/// Whether some limit, priority or retry pause may be set
/// ([`CLAIM_FACTS_MAY_APPLY`]): then claims look at them.
pub fn claim_facts_may_apply() -> bool {
    may_apply(ClaimFact::Limits) || claim_facts_must_be_read()
}

/// Whether a claim must read [`ClaimFacts`]: some priority or retry pause may be
/// set. With limits only, a claim asks for the limits alone.
pub fn claim_facts_must_be_read() -> bool {
    may_apply(ClaimFact::Priorities) || may_apply(ClaimFact::Delays)
}

/// From now on claims look at `fact`: called before a limit, a priority or a
/// retry pause is written, and when an opened database holds one.
pub fn claim_facts_apply(fact: ClaimFact) {
    CLAIM_FACTS_MAY_APPLY[fact as usize].store(true, std::sync::atomic::Ordering::SeqCst);
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
    }
}
