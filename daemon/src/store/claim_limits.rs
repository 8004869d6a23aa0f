//! The tables of limits on claims (schema 0017, `docs/inside/data.md`, `limits` and
//! `slots`; `docs/limits.md`): each limit's settings and its rate's bucket, and the
//! slots that claims took. A slot counts only while its task is claimed with its
//! attempt, so a slot whose attempt ended (by any path: report, `waiting`, lease
//! end, cancel, prune) is free at once, in the same commit, with nothing to give
//! back: no slot can leak. In a pool without `per`, the slots are the attempts
//! claimed now of the states it covers ([`running_slots`]), with no row of their
//! own (a limit set adopts what runs already, so every such attempt holds one). In
//! a pool with `per`, a slot is a row naming its task, attempt and key (the key is
//! the token's context when the claim took it); rows of ended attempts are swept
//! away by the next claim of their pool.

use super::through::passed_through;
use super::{StoreError, StoreResult};

/// The one place where a slot comes back: called, inside the transaction, for
/// every write of a task that has been claimed (`attempt` above 0) and is not
/// claimed now (`CachedTx::update_task`, through which every task's write on the
/// write path goes). The slot itself needs nothing done: it stopped counting with
/// that write (see above). Where limits may apply, every waiting claim is woken
/// after the commit (`claimable::made_claimable`): the slot may be of a limit over
/// several states.
pub fn slot_returned(tx: &dyn super::Tx, task: &super::TaskRow) {
    let _ = task;
    // With no limit set, a slot never stood between a claim and a task.
    if super::claim_switch::switch_of(tx).may_apply() {
        super::claimable::made_claimable(None);
    }
}

/// A row of `limits`. Times are microseconds since 1970.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitRow {
    /// Its name (the key).
    pub name: String,
    /// The states it covers (`state` or `<workflow>/<state>`).
    pub states: Vec<String>,
    /// Slots at once, in the pool or in each key.
    pub max: i64,
    /// The key expression over the token's context, as given.
    pub per: Option<String>,
    /// The rate: claims per period.
    pub rate_count: Option<i64>,
    /// The rate's period, in seconds.
    pub rate_period: Option<i64>,
    /// Claims the rate's bucket held at `bucket_at` (fractions fill over time).
    pub bucket: f64,
    /// When `bucket` was counted.
    pub bucket_at: i64,
    /// When the limit was last set.
    pub set_at: i64,
}

/// A slot a claim took: the pool, its key, and the attempt that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRow {
    /// The task.
    pub task: i64,
    /// The attempt of the task that took the slot.
    pub attempt: i64,
    /// The limit's name.
    pub pool: String,
    /// The key (the value of `per`, as JSON text, never empty); empty without
    /// `per` (such a slot is written as no row: [`written_as_row`]).
    pub key: String,
}

/// Whether a slot taken is written as a row of `slots`: only a pool with `per`
/// keeps rows (its key); a pool without `per` counts the attempts claimed of its
/// states ([`running_slots`]).
pub fn written_as_row(slot: &SlotRow) -> bool {
    !slot.key.is_empty()
}

/// The attempts claimed now, with their token's workflow and holder: the same
/// SQL on both backends, each row a [`Running`]. In no order: so SQLite reads its
/// index of claimed tasks (`tasks_leases`), not every task in id order.
pub const RUNNING: &str = "SELECT t.id, t.attempt, t.state, k.workflow, t.claimed_by
     FROM tasks t JOIN tokens k ON k.token = t.token
     WHERE t.status = 'claimed'";

/// An attempt claimed now, as a row of [`RUNNING`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// The task.
    pub task: i64,
    /// Its attempt.
    pub attempt: i64,
    /// Its state.
    pub state: String,
    /// The token's workflow (`None`: the main one).
    pub workflow: Option<String>,
    /// The supervisor that claimed it.
    pub holder: String,
}

/// The slots of `limit` held by the attempts of `running`, if it has no `per`,
/// in task order: each attempt of a state it covers holds one; `None` for a limit
/// with `per` (its slots are rows).
pub fn running_slots(limit: &LimitRow, running: &[Running]) -> Option<Vec<HeldSlot>> {
    if limit.per.is_some() {
        return None;
    }
    let mut held: Vec<HeldSlot> = covered(limit, running)
        .map(|attempt| HeldSlot {
            slot: SlotRow {
                task: attempt.task,
                attempt: attempt.attempt,
                pool: limit.name.clone(),
                key: String::new(),
            },
            holder: attempt.holder.clone(),
        })
        .collect();
    held.sort_by_key(|held| held.slot.task);
    Some(held)
}

/// The counts by key of [`running_slots`] (one key, the empty one, when any is
/// held), counted without making the slots: a claim's read.
pub fn running_counts(limit: &LimitRow, running: &[Running]) -> Option<Vec<(String, i64)>> {
    if limit.per.is_some() {
        return None;
    }
    let count = i64::try_from(covered(limit, running).count()).unwrap_or(i64::MAX);
    Some(if count > 0 {
        vec![(String::new(), count)]
    } else {
        Vec::new()
    })
}

/// The attempts of `running` in states `limit` covers.
fn covered<'r>(limit: &'r LimitRow, running: &'r [Running]) -> impl Iterator<Item = &'r Running> {
    running.iter().filter(|attempt| {
        super::task_keys::covers(&limit.states, attempt.workflow.as_deref(), &attempt.state)
    })
}

/// A slot held now: its row and the supervisor whose claimed attempt holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldSlot {
    /// The slot.
    pub slot: SlotRow,
    /// The supervisor that holds the attempt.
    pub holder: String,
}

/// The states of a row, kept as a JSON list of strings.
pub fn states_of(text: &str) -> StoreResult<Vec<String>> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("a limit's states: {e}")))
}

/// The states of a row as they are kept.
pub fn states_text(states: &[String]) -> String {
    serde_json::Value::from(states.to_vec()).to_string()
}

/// A claimed attempt, with what decides its slots: its token's workflow and
/// context.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedTask {
    /// The task.
    pub task: i64,
    /// Its attempt.
    pub attempt: i64,
    /// Its state.
    pub state: String,
    /// The token's workflow (`None`: the main one).
    pub workflow: Option<String>,
    /// The token's context, as JSON text.
    pub context: String,
}

passed_through! {
    /// The tables `limits` and `slots`.
    pub trait Limits {
        /// Every limit, by name.
        fn limits(&self) -> StoreResult<Vec<LimitRow>>;
        /// Set a limit whole, replacing one of the same name.
        fn put_limit(&self, row: &LimitRow) -> StoreResult<()>;
        /// Remove a limit and its slots' rows; whether there was one.
        fn remove_limit(&self, name: &str) -> StoreResult<bool>;
        /// Take the lock under which claims count and take slots and limits are
        /// set, until the transaction ends, so that two claims never both take the
        /// last slot (Postgres: a transaction-scoped advisory lock; SQLite's one
        /// writer holds it always).
        fn lock_slots(&self) -> StoreResult<()>;
        /// Write a limit's rate bucket.
        fn set_bucket(&self, name: &str, bucket: f64, at: i64) -> StoreResult<()>;
        /// The slots of `limit`'s pool held now, in task order: its rows whose
        /// task is claimed with the row's attempt, or without `per` the attempts
        /// claimed of its states ([`running_slots`]).
        fn held_slots(&self, limit: &LimitRow) -> StoreResult<Vec<HeldSlot>>;
        /// How many slots of `limit`'s pool are held now, by key (live attempts
        /// only): a claim's one read of them.
        fn slot_counts(&self, limit: &LimitRow) -> StoreResult<Vec<(String, i64)>>;
        /// Take a slot: a row of a pool with `per` (one of an earlier attempt of
        /// the task in the pool is replaced); without `per`, no row
        /// ([`written_as_row`]), the claimed attempt is the slot.
        fn take_slot(&self, slot: &SlotRow) -> StoreResult<()>;
        /// Delete the rows of `pool` whose attempt is no longer claimed; how many.
        fn sweep_slots(&self, pool: &str) -> StoreResult<u64>;
        /// Every claimed attempt now, with its token's workflow and context (a
        /// limit set adopts those it covers).
        fn claimed_now(&self) -> StoreResult<Vec<ClaimedTask>>;
        /// Delete every row of `pool`.
        fn clear_slots(&self, pool: &str) -> StoreResult<()>;
        /// When each key of `pool` last took a slot: `(key, at)`.
        fn key_turns(&self, pool: &str) -> StoreResult<Vec<(String, i64)>>;
        /// Record that `key` of `pool` took a slot at `at`.
        fn take_turn(&self, pool: &str, key: &str, at: i64) -> StoreResult<()>;
    }
}
