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

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use stateous_shared::wire::Object;

pub use feed::FeedRow;

use super::{LedgerRow, StoreError, StoreResult, Tx};

/// A transaction (or a savepoint inside one) on a SQLite connection, at `now`.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
    now: i64,
    /// The ledger rows this transaction appended, to publish after the commit.
    appended: RefCell<Vec<LedgerRow>>,
}

impl<'c> SqliteTx<'c> {
    /// Work on `conn`, whose transaction the caller opened, at `now` (microseconds).
    pub fn new(conn: &'c Connection, now: i64) -> SqliteTx<'c> {
        SqliteTx {
            conn,
            now,
            appended: RefCell::new(Vec::new()),
        }
    }

    /// The ledger rows appended so far, taken out.
    pub fn take_appended(&self) -> Vec<LedgerRow> {
        std::mem::take(&mut *self.appended.borrow_mut())
    }
}

impl Tx for SqliteTx<'_> {
    fn now(&self) -> i64 {
        self.now
    }
}

/// The writer connection's page cache, in KiB (a negative `cache_size`).
const WRITER_CACHE_KIB: i64 = -16 * 1024;

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
    // At open, a failure is said as it is ("unable to open database file"), not
    // as a busy database: serve refuses to start with that sentence.
    let shown = format!(": {}", path.display());
    let said = |e: rusqlite::Error| {
        // SQLite names the file at the end; the caller names it already.
        let text = e.to_string();
        StoreError::Database(text.strip_suffix(&shown).unwrap_or(&text).to_string())
    };
    let conn = Connection::open_with_flags(path, flags).map_err(said)?;
    conn.busy_timeout(busy_timeout).map_err(said)?;
    if !read_only {
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(said)?;
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(said)?;
    conn.pragma_update(None, "foreign_keys", "OFF")
        .map_err(said)?;
    // The writer opens a savepoint per request; with the default temp store each
    // first change of a page inside one is copied to a sub-journal *file* (a
    // write system call per page). In memory it is a copy.
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(said)?;
    if !read_only {
        // The writer walks the indexes of every table on each request: 16 MiB
        // keeps their upper levels cached with a million tokens stored.
        conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)
            .map_err(said)?;
    }
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// An object as stored JSON text.
pub(crate) fn to_text(value: &Object) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
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
