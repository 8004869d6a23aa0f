//! Rows read back: each row type decoded once from the columns either backend
//! returns ([`Stored`]), in the order of the column list that each table's `SELECT`
//! names (`sqlite/X.rs`, `postgres/X.rs`: the same order on both).

use std::sync::Arc;

use stateous_shared::wire::Object;

use super::access::stored_role;
use super::json::{object, optional_object};
use super::{
    AccessKeyRow, Closed, ControlPlaneRow, GraphRow, LedgerRow, StoreError, TaskRow, TimerRow,
    TokenRow,
};

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
    /// From token, state, status, visit, context, entered_at, parent, workflow, graph.
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
    /// From name, role, supervisor, hash, created_at, last_used_at, revoked_at.
    pub fn read<R: Stored>(row: &R) -> Result<AccessKeyRow, R::Error> {
        Ok(AccessKeyRow {
            name: row.text(0)?,
            role: stored_role(&row.text(1)?).map_err(R::corrupt)?,
            supervisor: row.maybe_text(2)?,
            hash: row.text(3)?,
            created_at: row.int(4)?,
            last_used_at: row.maybe_int(5)?,
            revoked_at: row.maybe_int(6)?,
        })
    }
}
