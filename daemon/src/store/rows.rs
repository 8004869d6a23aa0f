//! The rows of the tables, and the new rows the engine asks for (a timer, a ledger
//! entry) before the store gives them their ids. Each row type is decoded once from
//! the columns either backend returns ([`Stored`]), in the order of the column list
//! that each table's `SELECT` names (`sqlite/X.rs`, `postgres/X.rs`: the same order
//! on both).

use std::sync::Arc;

use stateous_shared::wire::Object;

use super::access::stored_role;
use super::json::{object, optional_object};
use super::{
    AccessKeyRow, Closed, EntryKind, StoreError, TaskStatus, TimerKind, TimerStatus, TokenStatus,
};

/// A row of `tokens`: where a token is now.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRow {
    /// The id.
    pub token: String,
    /// The state; `__start__` before the first entry. A token that ended keeps its
    /// last state.
    pub state: String,
    /// Where it is in its life.
    pub status: TokenStatus,
    /// How many times the token entered `state`.
    pub visit: i64,
    /// The context, shared: a token's row is copied on most reads of the write path,
    /// and copying the map each time cost more than the rest of the row (measured with
    /// callgrind). Change it with `Arc::make_mut`.
    pub context: Arc<Object>,
    /// When it entered `state`, in microseconds.
    pub entered_at: i64,
    /// The token whose parallel state started this one.
    pub parent: Option<String>,
    /// A child token's workflow; `None` for the main workflow.
    pub workflow: Option<String>,
    /// The checksum of the graph the token runs on (`graphs`): the one served when
    /// it started, a child's its parent's, or the one a migration moved it to.
    /// `None` only for a row that names none, which runs on the served graph.
    pub graph: Option<Arc<str>>,
    /// The trace the token runs in, as `TokenTrace::stored` writes it
    /// (`stateous_shared::trace_context`); `None` for a token made before version
    /// 0014. Never changes.
    pub trace: Option<Arc<str>>,
}

/// A row of `ledger`: one thing that happened to a token.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerRow {
    /// Global and increasing over all tokens: the watch stream's event id.
    pub id: i64,
    /// The token.
    pub token: String,
    /// 1, 2, 3 ... per token.
    pub seq: i64,
    /// When, in microseconds.
    pub at: i64,
    /// What happened: `entered`, `task_claimed`, ...
    pub kind: String,
    /// The idempotency key of an event from outside.
    pub key: Option<String>,
    /// The facts of the kind (`docs/inside/workflows.md`).
    pub data: Object,
    /// The name of the access key whose request wrote it (`key_name`); `None`
    /// without a key.
    pub by: Option<String>,
}

/// A row of `tasks`: one per entry into a state with a routine.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// The id, from 1, never reused.
    pub id: i64,
    /// The token.
    pub token: String,
    /// The state.
    pub state: String,
    /// The token's visit of the state.
    pub visit: i64,
    /// Where it is.
    pub status: TaskStatus,
    /// How many times a supervisor claimed it.
    pub attempt: i64,
    /// The supervisor that claimed it last.
    pub claimed_by: Option<String>,
    /// While claimed: when the lease ends, in microseconds.
    pub lease_until: Option<i64>,
    /// When it was queued, in microseconds.
    pub queued_at: i64,
}

/// A row of `timers`: a state's timeout or a routine's timer.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerRow {
    /// The id.
    pub id: i64,
    /// The token.
    pub token: String,
    /// The state it was set in; leaving the state cancels it.
    pub state: String,
    /// The visit it was set in.
    pub visit: i64,
    /// The event it fires.
    pub event: String,
    /// The event's payload.
    pub payload: Option<Object>,
    /// When it was set, in microseconds.
    pub set_at: i64,
    /// When it fires, in microseconds.
    pub due_at: i64,
    /// Where it is.
    pub status: TimerStatus,
    /// A state's timeout or a routine's timer.
    pub kind: TimerKind,
}

/// A timer to set: a [`TimerRow`] before the store gives it its id.
#[derive(Debug, Clone, Copy)]
pub struct NewTimer<'a> {
    /// The token.
    pub token: &'a str,
    /// The state it is set in.
    pub state: &'a str,
    /// The visit it is set in.
    pub visit: i64,
    /// The event it fires.
    pub event: &'a str,
    /// The event's payload.
    pub payload: Option<&'a Object>,
    /// When it fires, in microseconds.
    pub due_at: i64,
    /// A state's timeout or a routine's timer.
    pub kind: TimerKind,
}

impl NewTimer<'_> {
    /// The pending timer's row, with its id, set at `set_at`.
    pub fn row(&self, id: i64, set_at: i64) -> TimerRow {
        TimerRow {
            id,
            token: self.token.to_string(),
            state: self.state.to_string(),
            visit: self.visit,
            event: self.event.to_string(),
            payload: self.payload.cloned(),
            set_at,
            due_at: self.due_at,
            status: TimerStatus::Pending,
            kind: self.kind,
        }
    }
}

/// A ledger entry to append: a [`LedgerRow`] before the store gives it its id.
#[derive(Debug, Clone, Copy)]
pub struct NewEntry<'a> {
    /// What happened.
    pub kind: EntryKind,
    /// The idempotency key of an event from outside.
    pub key: Option<&'a str>,
    /// The facts of the kind.
    pub data: &'a Object,
}

impl NewEntry<'_> {
    /// The entry's row, with its id and seq, written at `at` by the key `by`.
    pub fn row(&self, id: i64, token: &str, seq: i64, at: i64, by: Option<String>) -> LedgerRow {
        LedgerRow {
            id,
            token: token.to_string(),
            seq,
            at,
            kind: self.kind.as_str().to_string(),
            key: self.key.map(str::to_string),
            data: self.data.clone(),
            by,
        }
    }
}

impl TaskRow {
    /// A task just queued, with its id, at `queued_at`.
    pub fn queued(id: i64, token: &str, state: &str, visit: i64, queued_at: i64) -> TaskRow {
        TaskRow {
            id,
            token: token.to_string(),
            state: state.to_string(),
            visit,
            status: TaskStatus::Queued,
            attempt: 0,
            claimed_by: None,
            lease_until: None,
            queued_at,
        }
    }
}

/// A row of `claims`: a supervisor's last claim that named a request id.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimRow {
    /// The supervisor.
    pub supervisor: String,
    /// The request id it sent.
    pub request: String,
    /// The task the claim got; `None` when it got none.
    pub task_id: Option<i64>,
    /// The attempt of that task that the claim started.
    pub attempt: Option<i64>,
}

/// The row of `control_plane`: the graph on record and who serves the database.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ControlPlaneRow {
    /// The structure on record.
    pub structure: Option<String>,
    /// The checksum on record.
    pub checksum: Option<String>,
    /// The control plane that holds the database: `host:pid:id`.
    pub serving: Option<String>,
    /// When it last said it still serves, in microseconds.
    pub since: Option<i64>,
    /// How many times a control plane took the database: each write commits only
    /// while the epoch is the one its control plane took (the fence).
    pub epoch: i64,
}

/// A row of `graphs`: a graph a control plane served (`docs/inside/data.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphRow {
    /// `sha256:` + hex of the canonical document: the key.
    pub checksum: String,
    /// The main workflow's name.
    pub workflow: String,
    /// The checksum without the states' `timeout` and `retries`.
    pub structure: String,
    /// The document, as JSON text.
    pub document: String,
    /// When a control plane first served it, in microseconds.
    pub first_served: i64,
    /// When a control plane last started serving it, in microseconds.
    pub last_served: i64,
}

/// A row a backend returned, its columns read by place.
pub trait Stored {
    /// The backend's error: rusqlite's inside a row mapper, the store's on Postgres.
    type Error;
    /// A stored value that cannot be read back, as the backend's error.
    fn corrupt(error: StoreError) -> Self::Error;
    /// An integer column.
    fn int(&self, at: usize) -> Result<i64, Self::Error>;
    /// A text column.
    fn text(&self, at: usize) -> Result<String, Self::Error>;
    /// An integer column that may be NULL.
    fn maybe_int(&self, at: usize) -> Result<Option<i64>, Self::Error>;
    /// A text column that may be NULL.
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error>;

    /// A closed set's text as it is kept (a status, a kind).
    fn closed<T: Closed>(&self, at: usize) -> Result<T, Self::Error> {
        let text = self.text(at)?;
        T::parse(&text)
            .ok_or_else(|| Self::corrupt(StoreError::Corrupt(format!("the status {text:?}"))))
    }

    /// A JSON object kept as text.
    fn object(&self, at: usize) -> Result<Object, Self::Error> {
        object(&self.text(at)?).map_err(Self::corrupt)
    }

    /// A JSON object kept as text, or NULL (or JSON `null`).
    fn maybe_object(&self, at: usize) -> Result<Option<Object>, Self::Error> {
        optional_object(self.maybe_text(at)?).map_err(Self::corrupt)
    }
}

impl TokenRow {
    /// From token, state, status, visit, context, entered_at, parent, workflow, graph,
    /// trace.
    pub fn read<R: Stored>(row: &R) -> Result<TokenRow, R::Error> {
        Ok(TokenRow {
            token: row.text(0)?,
            state: row.text(1)?,
            status: row.closed(2)?,
            visit: row.int(3)?,
            context: Arc::new(row.object(4)?),
            entered_at: row.int(5)?,
            parent: row.maybe_text(6)?,
            workflow: row.maybe_text(7)?,
            graph: row.maybe_text(8)?.map(Arc::from),
            trace: row.maybe_text(9)?.map(Arc::from),
        })
    }
}

impl LedgerRow {
    /// From id, token, seq, at, kind, key, data, key_name.
    pub fn read<R: Stored>(row: &R) -> Result<LedgerRow, R::Error> {
        Ok(LedgerRow {
            id: row.int(0)?,
            token: row.text(1)?,
            seq: row.int(2)?,
            at: row.int(3)?,
            kind: row.text(4)?,
            key: row.maybe_text(5)?,
            data: row.object(6)?,
            by: row.maybe_text(7)?,
        })
    }
}

impl TaskRow {
    /// From id, token, state, visit, status, attempt, claimed_by, lease_until,
    /// queued_at.
    pub fn read<R: Stored>(row: &R) -> Result<TaskRow, R::Error> {
        Ok(TaskRow {
            id: row.int(0)?,
            token: row.text(1)?,
            state: row.text(2)?,
            visit: row.int(3)?,
            status: row.closed(4)?,
            attempt: row.int(5)?,
            claimed_by: row.maybe_text(6)?,
            lease_until: row.maybe_int(7)?,
            queued_at: row.int(8)?,
        })
    }
}

impl TimerRow {
    /// From id, token, state, visit, event, payload, set_at, due_at, status, kind.
    pub fn read<R: Stored>(row: &R) -> Result<TimerRow, R::Error> {
        Ok(TimerRow {
            id: row.int(0)?,
            token: row.text(1)?,
            state: row.text(2)?,
            visit: row.int(3)?,
            event: row.text(4)?,
            payload: row.maybe_object(5)?,
            set_at: row.int(6)?,
            due_at: row.int(7)?,
            status: row.closed(8)?,
            kind: row.closed(9)?,
        })
    }
}

impl GraphRow {
    /// From checksum, workflow, structure, document, first_served, last_served.
    pub fn read<R: Stored>(row: &R) -> Result<GraphRow, R::Error> {
        Ok(GraphRow {
            checksum: row.text(0)?,
            workflow: row.text(1)?,
            structure: row.text(2)?,
            document: row.text(3)?,
            first_served: row.int(4)?,
            last_served: row.int(5)?,
        })
    }
}

impl ControlPlaneRow {
    /// From structure, checksum, serving, since, epoch.
    pub fn read<R: Stored>(row: &R) -> Result<ControlPlaneRow, R::Error> {
        Ok(ControlPlaneRow {
            structure: row.maybe_text(0)?,
            checksum: row.maybe_text(1)?,
            serving: row.maybe_text(2)?,
            since: row.maybe_int(3)?,
            epoch: row.int(4)?,
        })
    }
}

impl AccessKeyRow {
    /// From name, role, supervisor, hash, created_at, last_used_at, revoked_at,
    /// scope.
    pub fn read<R: Stored>(row: &R) -> Result<AccessKeyRow, R::Error> {
        Ok(AccessKeyRow {
            name: row.text(0)?,
            role: stored_role(&row.text(1)?).map_err(R::corrupt)?,
            supervisor: row.maybe_text(2)?,
            hash: row.text(3)?,
            created_at: row.int(4)?,
            last_used_at: row.maybe_int(5)?,
            revoked_at: row.maybe_int(6)?,
            scope: row.maybe_text(7)?,
        })
    }
}
