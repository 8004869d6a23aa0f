//! The store: the tables of the control plane and the small traits, one per table,
//! through which the engine reads and writes them (`docs/inside/data.md`), and the
//! backend interface behind `Control` ([`Store`]): SQLite ([`sqlite`]) or Postgres
//! ([`postgres`]).
//!
//! Nothing here decides; the engine does. Every method works inside a transaction
//! that the write path (or a read connection) opened, at the moment `Tx::now` gives.
//! Times are microseconds since 1970 in UTC. The engine never names a backend.
//!
//! Adding a table method: each table's SQL sits in one file per backend
//! (`sqlite/tokens.rs`, `postgres/tokens.rs`, ...; a Postgres write that waits for
//! the flush is packed there too, beside the table's other SQL). The write path runs
//! on [`cached_tx::CachedTx`], which answers some reads from the facts it keeps of
//! each token ([`facts`]) and must see every write that changes them: those methods
//! are the traits written plainly here ([`Tokens`], [`Ledger`], [`Tasks`],
//! [`Timers`], [`Memory`]). Every other method goes in a trait written inside
//! [`passed_through!`](through::passed_through) ([`TokenReads`], [`LedgerReads`],
//! [`Claims`], ...), which `CachedTx` passes to the backend unchanged: such a method
//! is written in three places, the trait, SQLite's and Postgres's. Put a method in
//! a plain trait (and teach `CachedTx` what it does to the facts) only when it
//! reads what the facts answer or changes what they hold. A row's columns are
//! decoded once for both backends (`rows.rs`).

pub mod access;
pub mod backend;
pub mod cached_tx;
pub mod claim_limits;
pub mod claim_switch;
pub mod claimable;
pub mod facts;
pub mod family;
pub mod feed;
pub mod guard;
pub mod journal;
pub mod json;
pub mod locked;
pub mod notifications;
pub mod postgres;
pub mod priorities;
pub mod request;
pub mod retry_policies;
pub mod rows;
pub mod schedules;
pub mod schema;
pub mod serving;
pub mod sqlite;
pub mod status;
pub mod task_keys;
pub mod through;
pub mod usage;

use std::collections::HashMap;

use stateous_shared::durations::limit_words;
use stateous_shared::wire::Object;

pub use access::{AccessKeyRow, AccessKeys};
pub use backend::Store;
pub use claim_limits::{HeldSlot, LimitRow, Limits, SlotRow};
pub use journal::{Journal, JournalRow};
pub use priorities::{Candidate, Priorities};
pub use retry_policies::{ClaimFacts, RetryPolicies, RetryPolicyRow};
// Usage and budgets (`docs/concepts/budgets.md`).
pub use locked::Head;
pub use notifications::Notifications;
pub use rows::{
    ClaimRow, ControlPlaneRow, GraphRow, LedgerRow, NewEntry, NewTimer, TaskRow, TimerRow, TokenRow,
};
pub use schedules::{ScheduleRow, Schedules};
pub use status::{CatchUp, Overlap, ScheduleStatus};
pub use status::{ClockKind, Closed, EntryKind, TaskStatus, TimerKind, TimerStatus, TokenStatus};
pub use task_keys::{TaskKey, TaskKeys};
use through::passed_through;
pub use usage::{BudgetRow, Budgets, Usage};

/// What can go wrong in the store. Busy and locked errors are their own variant,
/// so that the layers above can answer them as a request to try again later.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Another process holds a lock past its limit, a statement ran past its limit,
    /// or the database cannot be written or reached now (I/O failure, full disk, a
    /// lost connection). Trying again later may help.
    #[error("the database is busy")]
    Busy,
    /// The database did not answer within this deadline of this side (a server
    /// that accepted the connection and says nothing, a network that stopped
    /// passing bytes on): the connection that waited is not used again. A commit
    /// that waited so may have been applied: a request sent again with its
    /// idempotency key applies at most once.
    #[error("the database did not answer within {}", limit_words(*.0))]
    NotAnswering(std::time::Duration),
    /// The disk that holds the database is full: nothing can be written until
    /// space is freed. Nothing is lost, and writes go on by themselves once there is
    /// room again; told apart from `Busy` so that an operator looks at the disk, not
    /// at locks.
    #[error("the database's disk is full")]
    DiskFull,
    /// Postgres stopped the transaction to break a deadlock, or another transaction
    /// made the same new row first: running the request again gives its answer. The
    /// backend runs it once more; a second conflict answers as `Busy`.
    #[error("the transaction met another one and was stopped")]
    Conflict,
    /// This control plane no longer holds the database (another one took it, or its
    /// lock's connection ended): nothing it writes may commit (503 `not_serving`).
    #[error("this control plane no longer holds the database")]
    NotServing,
    /// A value the database cannot keep (Postgres text holds no NUL character).
    #[error("{0}")]
    Unstorable(String),
    /// Any other database failure.
    #[error("{0}")]
    Database(String),
    /// A stored value that cannot be read back (e.g. JSON that is not an object).
    #[error("the database holds a value that cannot be read: {0}")]
    Corrupt(String),
}

/// A store method's result.
pub type StoreResult<T> = Result<T, StoreError>;

/// How many tokens run on one graph (its checksum; `None` for rows that name
/// none) with one status.
pub type GraphCount = (Option<String>, TokenStatus, i64);

/// What a listing selects of `tokens` in SQL: the conditions of a filter that a
/// database can check by itself
/// ([`Pushdown`](stateous_shared::guards::filter::Pushdown)), the query's status and
/// state, and the parent. Every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenScan {
    /// The state is one of these; `None`: any. Empty: no token.
    pub states: Option<Vec<String>>,
    /// The state is none of these.
    pub not_states: Vec<String>,
    /// The status is one of these; `None`: any. Empty: no token.
    pub statuses: Option<Vec<TokenStatus>>,
    /// Only the children of this token.
    pub parent: Option<String>,
    /// `entered_at` is at most this (microseconds): the token moved this long ago
    /// or longer.
    pub entered_until: Option<i64>,
    /// `entered_at` is above this (microseconds).
    pub entered_after: Option<i64>,
}

/// Where a page of a listing starts: after the token with this `(entered_at,
/// token)`, in the listing's order (the most recently moved first, then by id).
pub type Cursor = (i64, String);

/// The table `tokens`: one token's row, as the write path's facts know it.
pub trait Tokens {
    /// Take the lock of the token's family (the token and its parents and children
    /// share the row lock of their top token) until the transaction ends, before any of
    /// the family's rows change, so that one token moves one step at a time
    /// (`docs/guarantees.md`, "The ledger: a change is whole or absent"). `wait`: wait
    /// up to the lock limit (then `Busy`); without it, answer false at once when
    /// another transaction holds the lock. A token not yet made is its own top.
    /// SQLite's one writer holds every token: always true there.
    fn lock_family(&self, token: &str, wait: bool) -> StoreResult<bool>;
    /// Take the lock of the family whose top token is `top` (the caller found it),
    /// and read the top's row under it: `Some(row)` when held (`row` is `None` for
    /// a token not made yet), `None` when `wait` is false and another transaction
    /// holds it. SQLite's one writer holds every family.
    fn lock_top(&self, top: &str, wait: bool) -> StoreResult<Option<Option<TokenRow>>>;
    /// The token with exactly this id.
    fn token(&self, id: &str) -> StoreResult<Option<TokenRow>>;
    /// Add a new token.
    fn insert_token(&self, row: &TokenRow) -> StoreResult<()>;
    /// Write a token's state, status, visit, context, `entered_at` and graph.
    fn update_token(&self, row: &TokenRow) -> StoreResult<()>;
    /// Delete the token and every row of it: its ledger entries (with its
    /// idempotency keys), tasks, timers and memory. The retention's delete path
    /// (`docs/reference/cli.md`, "token prune"); nothing else deletes a token.
    fn delete_token(&self, token: &str) -> StoreResult<()>;
}

passed_through! {
    /// The reads of `tokens` that the write path's facts do not answer: listings,
    /// counts and lookups across tokens, answered by the database.
    pub trait TokenReads {
        /// The id of another token that differs from `id` only in case.
        fn token_folded(&self, id: &str) -> StoreResult<Option<String>>;
        /// Tokens, the most recently moved first, filtered by status and parent.
        fn find_tokens(
            &self,
            status: Option<TokenStatus>,
            parent: Option<&str>,
            limit: i64,
        ) -> StoreResult<Vec<TokenRow>>;
        /// How many tokens are active or paused.
        fn count_live(&self) -> StoreResult<i64>;
        /// At most `limit` tokens that meet `scan`, the most recently moved first
        /// (then by id), after `after` when given, skipping the first `offset`: the
        /// index `tokens_moved` gives this order.
        fn scan_tokens(
            &self,
            scan: &TokenScan,
            after: Option<&Cursor>,
            offset: i64,
            limit: i64,
        ) -> StoreResult<Vec<TokenRow>>;
        /// How many tokens meet `scan`.
        fn count_tokens(&self, scan: &TokenScan) -> StoreResult<i64>;
        /// Whether deleting the token now would let a new row take one of its ids
        /// again: SQLite gives a new row of `ledger`, `tasks` or `timers` the id after
        /// the newest one there, so a token holding the newest row of one of them stays
        /// until a newer row exists (ids are never reused: the watch stream resumes by
        /// ledger id, and a supervisor's outbox names task ids). Postgres's sequences
        /// never go back: always false there.
        fn holds_newest_id(&self, token: &str) -> StoreResult<bool>;
        /// At most `limit` tokens that meet `scan`, by id, after the id `after` when
        /// given: a bulk action's walk. A token's id never changes, so a walk meets
        /// each token once, also one that moves while the walk runs (by the moment it
        /// moved, such a token went behind the walk and was never met).
        fn walk_tokens(
            &self,
            scan: &TokenScan,
            after: Option<&str>,
            limit: i64,
        ) -> StoreResult<Vec<TokenRow>>;
        /// `(token, trace)` of those of `tokens` that exist (`tokens.trace`, null for
        /// a token made before version 0014): the trace exporter's one read for the
        /// tokens a page of the feed brings (`docs/reference/traces.md`).
        fn traces_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, Option<String>)>>;
        /// The rows of those of `tokens` that exist, in no given order: the
        /// notifications' sender's one read of a batch's tokens
        /// (`docs/notifications.md`).
        fn tokens_of(&self, tokens: &[String]) -> StoreResult<Vec<TokenRow>>;
    }
}

/// The table `ledger`. Rows are only ever appended.
pub trait Ledger {
    /// Append one entry at `Tx::now`; returns its seq. The token's family is locked
    /// (or the token is new), so no other transaction takes the seq meanwhile.
    fn append(
        &self,
        token: &str,
        kind: EntryKind,
        key: Option<&str>,
        data: &Object,
    ) -> StoreResult<i64> {
        let seq = self.last_seq(token)? + 1;
        self.insert_entry(token, seq, NewEntry { kind, key, data })?;
        Ok(seq)
    }
    /// The token's last seq; 0 before its first entry.
    fn last_seq(&self, token: &str) -> StoreResult<i64>;
    /// The access key whose request writes the entries appended from now on
    /// (`None`: no key); the write path sets it around each request.
    fn act_for(&self, key: Option<&str>);
    /// Insert one entry with this seq at `Tx::now`; returns its id.
    fn insert_entry(&self, token: &str, seq: i64, entry: NewEntry<'_>) -> StoreResult<i64>;
    /// How many times each event was accepted on the token.
    fn counts(&self, token: &str) -> StoreResult<HashMap<String, i64>>;
    /// How many times the token entered `state`.
    fn visits(&self, token: &str, state: &str) -> StoreResult<i64>;
    /// The token's last `event_accepted` entry.
    fn last_accepted(&self, token: &str) -> StoreResult<Option<LedgerRow>>;
}

passed_through! {
    /// The reads of `ledger` that the write path's facts do not answer: whole
    /// histories and the watch stream's pages, answered by the database.
    pub trait LedgerReads {
        /// At most `limit` entries with an id above `after` and at most `upto`, in id
        /// order, of one token or of all (the watch stream reads only up to the id
        /// below which every transaction has ended: [`feed::FeedMark`]).
        fn entries_since(
            &self,
            after: i64,
            upto: i64,
            token: Option<&str>,
            limit: i64,
        ) -> StoreResult<Vec<LedgerRow>>;
        /// The id of the newest entry; 0 for an empty ledger.
        fn last_entry_id(&self) -> StoreResult<i64>;
        /// Every entry of the token, in seq order.
        fn entries(&self, token: &str) -> StoreResult<Vec<LedgerRow>>;
        /// Whether an entry of the token has this idempotency key.
        fn has_key(&self, token: &str, key: &str) -> StoreResult<bool>;
        /// Those of the entries `ids` that exist, in no given order: the
        /// notifications' sender's one read of a batch's entries
        /// (`docs/notifications.md`).
        fn entries_of(&self, ids: &[i64]) -> StoreResult<Vec<LedgerRow>>;
    }
}

/// The table `tasks`.
pub trait Tasks {
    /// Queue a task at `Tx::now`; returns its id.
    fn queue_task(&self, token: &str, state: &str, visit: i64) -> StoreResult<i64>;
    /// The task.
    fn task(&self, id: i64) -> StoreResult<Option<TaskRow>>;
    /// Write a task's status, attempt, holder and lease.
    fn update_task(&self, row: &TaskRow) -> StoreResult<()>;
    /// The token's queued, claimed and waiting tasks, by id.
    fn open_tasks(&self, token: &str) -> StoreResult<Vec<TaskRow>>;
    /// The oldest queued task of these states whose token is active and whose
    /// family this transaction now holds, never waiting for a family another
    /// transaction holds (one statement, `FOR UPDATE SKIP LOCKED`, on Postgres).
    /// Where families are locked, only tasks of top tokens are found here (a
    /// child's lock is its top's, found with `queued_tasks` and `lock_family`),
    /// so finding none is [`Head::Unsure`]; where one writer holds every family,
    /// every task is found, and none is [`Head::Empty`].
    fn lock_queued(&self, states: &[(Option<String>, String)]) -> StoreResult<Head>;
    /// Move to `until` the lease of each task in `ids` that `supervisor` still holds
    /// with a lease not yet over; returns those ids.
    fn renew_leases(&self, supervisor: &str, ids: &[i64], until: i64) -> StoreResult<Vec<i64>>;
    /// Clear the lease of a claimed task only if it is over now; false otherwise.
    fn end_lease(&self, id: i64) -> StoreResult<bool>;
    /// Move every claimed task's lease to at least `until`; how many moved.
    fn extend_all_leases(&self, until: i64) -> StoreResult<usize>;
}

passed_through! {
    /// The reads of `tasks` that the write path's facts do not answer: a token's
    /// whole history of tasks and the scans across tokens, answered by the database.
    pub trait TaskReads {
        /// Every task of the token, by id.
        fn tasks_of(&self, token: &str) -> StoreResult<Vec<TaskRow>>;
        /// Up to `limit` oldest queued tasks of active tokens in these states: each
        /// `(workflow, state)` with `None` for the main workflow.
        fn queued_tasks(
            &self,
            states: &[(Option<String>, String)],
            limit: i64,
        ) -> StoreResult<Vec<i64>>;
        /// The claimed tasks whose leases are over, by id.
        fn expired_leases(&self) -> StoreResult<Vec<i64>>;
        /// The earliest moment after `after` at which a claimed task's lease is over (its
        /// `lease_until` plus one microsecond: a lease ends once `now` is past it), for the
        /// dev clock's steps.
        fn next_lease_end_after(&self, after: i64) -> StoreResult<Option<i64>>;
    }
}

/// The table `timers`.
pub trait Timers {
    /// A pending timer, set at `Tx::now`; returns it with its id.
    #[allow(clippy::too_many_arguments)]
    fn add_timer(
        &self,
        token: &str,
        state: &str,
        visit: i64,
        event: &str,
        payload: Option<&Object>,
        due_at: i64,
        kind: TimerKind,
    ) -> StoreResult<TimerRow> {
        self.set_timer(NewTimer {
            token,
            state,
            visit,
            event,
            payload,
            due_at,
            kind,
        })
    }
    /// Write a new pending timer, set at `Tx::now`; returns it with its id.
    fn set_timer(&self, timer: NewTimer<'_>) -> StoreResult<TimerRow>;
    /// The token's pending timers, by id.
    fn pending_timers(&self, token: &str) -> StoreResult<Vec<TimerRow>>;
    /// Write a timer's status and due time.
    fn update_timer(&self, row: &TimerRow) -> StoreResult<()>;
}

passed_through! {
    /// The reads of `timers` that the write path's facts do not answer: a timer by
    /// its id and the scans across tokens, answered by the database.
    pub trait TimerReads {
        /// The timer.
        fn timer(&self, id: i64) -> StoreResult<Option<TimerRow>>;
        /// The pending timers of active tokens that are due now, by due time then id.
        fn due_timers(&self) -> StoreResult<Vec<i64>>;
        /// The earliest due time after `after` of a pending timer of an active token (the
        /// dev clock steps to it).
        fn next_due_after(&self, after: i64) -> StoreResult<Option<i64>>;
    }
}

/// The table `memory`: the routine's memory per token and state.
pub trait Memory {
    /// The memory of the token's state.
    fn memory(&self, token: &str, state: &str) -> StoreResult<Object>;
    /// Set one key.
    fn set_memory(
        &self,
        token: &str,
        state: &str,
        key: &str,
        value: &serde_json::Value,
    ) -> StoreResult<()>;
    /// Delete one key; false when it was not there.
    fn forget(&self, token: &str, state: &str, key: &str) -> StoreResult<bool>;
    /// Delete all of the token's memory.
    fn delete_memory(&self, token: &str) -> StoreResult<()>;
}

passed_through! {
    /// The table `claims`.
    pub trait Claims {
        /// The supervisor's last claim with a request id.
        fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>>;
        /// Keep this claim as the supervisor's last one.
        fn remember_claim(&self, row: &ClaimRow) -> StoreResult<()>;
    }
}

passed_through! {
    /// The table `control_plane` (one row).
    pub trait ControlPlane {
        /// The row.
        fn control_plane(&self) -> StoreResult<ControlPlaneRow>;
        /// Put a graph on record.
        fn record_graph(&self, structure: &str, checksum: &str) -> StoreResult<()>;
        /// Write who serves the database and since when.
        fn set_serving(&self, serving: Option<&str>, since: Option<i64>) -> StoreResult<()>;
        /// Move the epoch on (a control plane takes the database); the new epoch.
        fn next_epoch(&self) -> StoreResult<i64>;
        /// The kind of clock the control planes that served the database ran on:
        /// `None` before any served it; `System` once any served it on the real clock
        /// (schema 0005).
        fn served_clock(&self) -> StoreResult<Option<ClockKind>>;
        /// Record the kind of clock that serves the database now.
        fn record_clock(&self, kind: ClockKind) -> StoreResult<()>;
    }
}

/// How many tokens of one workflow (`None`: the main one) are in one state with
/// one status.
pub type TokenCount = (Option<String>, String, TokenStatus, i64);

passed_through! {
    /// Counts over whole tables, for `GET /metrics`, `GET /supervisors` and the TUI.
    pub trait Counts {
        /// How many tokens there are by workflow, state and status.
        fn token_counts(&self) -> StoreResult<Vec<TokenCount>>;
        /// How many tasks there are by state and status.
        fn task_counts(&self) -> StoreResult<Vec<(String, TaskStatus, i64)>>;
        /// How many timers there are by status.
        fn timer_counts(&self) -> StoreResult<Vec<(TimerStatus, i64)>>;
        /// How many tasks each supervisor holds now (claimed).
        fn running_by_supervisor(&self) -> StoreResult<Vec<(String, i64)>>;
        /// How many ledger entries of each kind have an id above `after` and at most
        /// `upto` (the metrics count what the requests wrote from these).
        fn entry_kinds(&self, after: i64, upto: i64) -> StoreResult<Vec<(String, i64)>>;
    }
}

passed_through! {
    /// The table `graphs`: every graph served, and which tokens run on each.
    pub trait Graphs {
        /// Keep `row` as served at `row.last_served`: a new row, or the kept one's
        /// `last_served` moved on (its `first_served` stays).
        fn graph_served(&self, row: &GraphRow) -> StoreResult<()>;
        /// Every graph kept, the first served first.
        fn graphs(&self) -> StoreResult<Vec<GraphRow>>;
        /// How many tokens run on each graph, by status.
        fn graph_counts(&self) -> StoreResult<Vec<GraphCount>>;
        /// How many top tokens (no parent) that are active or paused run on a kept
        /// graph whose main workflow is not `workflow`: `(workflow, count)` by
        /// workflow name, in name order. Tokens whose graph is not kept are not
        /// counted.
        fn live_of_other_workflows(&self, workflow: &str) -> StoreResult<Vec<(String, i64)>>;
        /// Name `to` as the graph of every token that names `from`; how many.
        fn adopt_graph(&self, from: &str, to: &str) -> StoreResult<u64>;
    }
}

/// One transaction: every table, at one moment.
pub trait Tx:
    Tokens
    + TokenReads
    + Ledger
    + LedgerReads
    + Tasks
    + TaskReads
    + Timers
    + TimerReads
    + Memory
    + Claims
    + ControlPlane
    + Counts
    + AccessKeys
    + Graphs
    + Journal
    + Usage
    + Budgets
    + Schedules
    + Notifications
    + Limits
    + Priorities
    + RetryPolicies
    + TaskKeys
{
    /// The moment of the transaction, in microseconds since 1970.
    fn now(&self) -> i64;

    /// The claim switch of the write path that runs this transaction, with the
    /// writes it turned on (`claim_switch.rs`); `None` outside a write path (a
    /// read, a step of an open): every fact then may apply.
    fn turned(&self) -> Option<&claim_switch::Turned<'_>> {
        None
    }

    /// Whether other transactions may change rows between two reads of this one, so
    /// that a row read before its family's lock is read again under it (`locked.rs`).
    /// True unless one writer runs one request at a time (SQLite).
    fn reads_again(&self) -> bool {
        true
    }

    /// The task, as it is under its token family's lock, which the transaction
    /// now holds: `wait` waits for the lock up to its limit; without it, a task
    /// whose family another transaction holds is `None`, to be tried later.
    fn lock_task(&self, id: i64, wait: bool) -> StoreResult<Option<TaskRow>> {
        locked::task(self, id, wait, self.reads_again())
    }

    /// The timer, as it is under its token family's lock, never waiting for a
    /// family another transaction holds (then `None`).
    fn lock_timer(&self, id: i64) -> StoreResult<Option<TimerRow>> {
        locked::timer(self, id, self.reads_again())
    }

    /// The tasks of `ids` that exist, as they are under their families' locks,
    /// waiting for each lock up to its limit.
    fn lock_tasks(&self, ids: &[i64]) -> StoreResult<Vec<TaskRow>> {
        locked::tasks(self, ids, self.reads_again())
    }
}
