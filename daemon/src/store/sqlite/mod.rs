//! The SQLite backend: one `SqliteTx` over a connection, implementing every table
//! trait of the store. All SQL for a table sits in that table's module.

mod claims;
mod control_plane;
mod feed;
mod ledger;
mod memory;
mod tasks;
mod timers;
mod tokens;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use stateous_shared::wire::Object;

pub use feed::FeedRow;

use super::{StoreError, StoreResult, Tx};

/// A transaction (or a savepoint inside one) on a SQLite connection, at `now`.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
    now: i64,
}

impl<'c> SqliteTx<'c> {
    /// Work on `conn`, whose transaction the caller opened, at `now` (microseconds).
    pub fn new(conn: &'c Connection, now: i64) -> SqliteTx<'c> {
        SqliteTx { conn, now }
    }
}

impl Tx for SqliteTx<'_> {
    fn now(&self) -> i64 {
        self.now
    }
}

/// Open a connection to the file: WAL, `synchronous=FULL`, and a busy timeout so
/// that another process's write lock is waited for, not failed on at once.
pub fn open(path: &Path, busy_timeout: Duration, read_only: bool) -> StoreResult<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    if !read_only {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// An object as stored JSON text.
pub(crate) fn to_text(value: &Object) -> String {
    Value::Object(value.clone()).to_string()
}

/// Stored JSON text as an object.
pub(crate) fn object(text: &str) -> Result<Object, StoreError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(StoreError::Corrupt(format!("not an object: {other}"))),
        Err(error) => Err(StoreError::Corrupt(error.to_string())),
    }
}

/// Stored JSON text, or NULL, as an optional object.
pub(crate) fn optional_object(text: Option<String>) -> Result<Option<Object>, StoreError> {
    match text {
        None => Ok(None),
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Null) => Ok(None),
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(other) => Err(StoreError::Corrupt(format!("not an object: {other}"))),
            Err(error) => Err(StoreError::Corrupt(error.to_string())),
        },
    }
}

/// Turn a JSON-parse failure inside a row mapper into a rusqlite error, so that a
/// mapper can use `?`.
pub(crate) fn corrupt(error: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(error))
}
