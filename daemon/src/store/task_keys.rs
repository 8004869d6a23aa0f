//! The table `task_keys` (schema 0018, `docs/inside/data.md`; `docs/limits.md`, "No
//! head-of-line blocking"): for each limit with `per` (a keyed pool), the key of
//! each queued task of its states, so that a claim finds the best queued task of
//! each key that is not full without reading the tasks of the full ones.
//!
//! A row is written in the transaction that queues its task and deleted in the one
//! that takes it out of `queued` (a claim, a cancel, a pause's or a prune's write:
//! every task's write on the write path goes through `CachedTx::queue_task` and
//! `CachedTx::update_task`, which call [`task_queued`] and [`task_written`]; a token's
//! delete deletes its tasks' rows). A limit set rewrites its pool's rows from the
//! tasks queued then; a limit removed deletes them. While no limit with `per` may
//! be set ([`ClaimFact::Keys`](super::claim_switch::ClaimFact::Keys) off), the write
//! path makes no statement more. The key is computed from the token's context when
//! the task is queued; a claim judges the task again with its context then.

use stateous_shared::guards::{parse_guard, value_of, Guard, GuardInput};
use stateous_shared::wire::Object;

use super::claim_switch::{switch_of, ClaimFact};
use super::priorities::Candidate;
use super::through::passed_through;
use super::{StoreResult, TaskRow, TaskStatus, Tx};

/// A row of `task_keys`: a queued task's key in one keyed pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskKey {
    /// The limit's name.
    pub pool: String,
    /// The key (the value of `per` over the token's context, as JSON text).
    pub key: String,
    /// The queued task.
    pub task: i64,
}

/// What a claim asks of one keyed pool ([`TaskKeys::key_heads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadsAsked<'a> {
    /// The limit's name.
    pub pool: &'a str,
    /// The names of the states the claim serves (a head of another state is
    /// passed over).
    pub states: &'a [String],
    /// The keys that hold all their slots: never read.
    pub full: &'a [String],
    /// How many keys to look at, those whose turn is oldest first.
    pub keys: i64,
    /// Order each key's tasks by priority first (some priority is set).
    pub prioritized: bool,
}

passed_through! {
    /// The table `task_keys`.
    pub trait TaskKeys {
        /// Write these rows (one that is there already stays; a task queued again
        /// whose key changed has both until it leaves the queue, and a claim
        /// judges it with its context then).
        fn put_task_keys(&self, rows: &[TaskKey]) -> StoreResult<()>;
        /// Delete the rows of the task: it is no longer queued.
        fn drop_task_keys(&self, task: i64) -> StoreResult<()>;
        /// Delete every row of `pool`.
        fn clear_task_keys(&self, pool: &str) -> StoreResult<()>;
        /// Whether `pool` has a row.
        fn has_task_keys(&self, pool: &str) -> StoreResult<bool>;
        /// Every queued task now of these state names, with its token's workflow
        /// and context (a limit set writes its pool's rows from them).
        fn queued_now(&self, states: &[String]) -> StoreResult<Vec<super::claim_limits::ClaimedTask>>;
        /// For up to `asked.keys` keys of `asked.pool` that have queued tasks and
        /// are not in `asked.full`, those whose turn (`key_turns`) is oldest first,
        /// the best queued task of an active token in `asked.states`: the highest
        /// priority (with `prioritized`), then the oldest. One statement; the
        /// full keys' tasks are not read.
        fn key_heads(&self, asked: &HeadsAsked<'_>) -> StoreResult<Vec<Candidate>>;
    }
}

/// The key of a token's context under `per`: its value as JSON text.
pub fn key_of(per: &Guard, context: &Object) -> String {
    let count = |_: &str| 0;
    let input = GuardInput {
        ctx: context,
        payload: None,
        count: &count,
        branches: None,
    };
    value_of(per, &input).to_string()
}

/// Whether a limit's `states` cover `state` of a token of `workflow` (`None`: the
/// main one): `state`, or `<workflow>/<state>` for a child's.
pub fn covers(states: &[String], workflow: Option<&str>, state: &str) -> bool {
    states.iter().any(|covered| match workflow {
        None => covered == state,
        Some(workflow) => covered
            .split_once('/')
            .is_some_and(|(w, s)| w == workflow && s == state),
    })
}

/// The rows of a queued task of `state` (of a token of `workflow` with
/// `context`): one for each keyed pool of `limits` that covers it.
pub fn rows_of(
    limits: &[super::LimitRow],
    task: i64,
    workflow: Option<&str>,
    state: &str,
    context: &Object,
) -> Vec<TaskKey> {
    limits
        .iter()
        .filter(|limit| covers(&limit.states, workflow, state))
        .filter_map(|limit| {
            let per = parse_guard(limit.per.as_deref()?).ok()?;
            Some(TaskKey {
                pool: limit.name.clone(),
                key: key_of(&per, context),
                task,
            })
        })
        .collect()
}

/// A task was queued (new, or again: a retry, a resume): write its rows, where a
/// keyed pool may be set. Called inside the transaction that writes it.
pub fn task_queued(tx: &dyn Tx, task: &TaskRow) -> StoreResult<()> {
    if !switch_of(tx).applies(ClaimFact::Keys) {
        return Ok(());
    }
    let limits: Vec<super::LimitRow> = tx
        .limits()?
        .into_iter()
        .filter(|limit| limit.per.is_some())
        .collect();
    if limits.is_empty() {
        return Ok(());
    }
    let Some(token) = tx.token(&task.token)? else {
        return Ok(());
    };
    let rows = rows_of(
        &limits,
        task.id,
        token.workflow.as_deref(),
        &task.state,
        &token.context,
    );
    if rows.is_empty() {
        return Ok(());
    }
    tx.put_task_keys(&rows)
}

/// A task was written (`CachedTx::update_task`, where a keyed pool may be set),
/// having been queued before or not (`was_queued`; `None`: not known): a task
/// queued again gets its rows, one that left the queue loses them.
pub fn task_written(tx: &dyn Tx, task: &TaskRow, was_queued: Option<bool>) -> StoreResult<()> {
    match (task.status == TaskStatus::Queued, was_queued) {
        (true, Some(true)) | (false, Some(false)) => Ok(()),
        (true, _) => task_queued(tx, task),
        (false, _) => tx.drop_task_keys(task.id),
    }
}
