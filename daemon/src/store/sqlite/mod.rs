//! The SQLite backend: one `SqliteTx` over a connection, implementing every table
//! trait of the store; the one writer thread (`writer.rs`), the read connections
//! (`reader.rs`), the schema (`schema.rs`), the hold on the file (`hold.rs`) and the
//! backend as `Control` sees it (`store.rs`). All SQL for a table sits in that
//! table's module.

mod access_keys;
pub mod checkpointer;
mod claim_limits;
pub mod claims;
mod control_plane;
mod counts;
mod graphs;
pub mod hold;
mod journal;
mod ledger;
mod memory;
mod notifications;
mod priorities;
pub mod reader;
mod retry_policies;
mod schedules;
pub mod schema;
pub mod store;
mod task_keys;
mod tasks;
mod timers;
mod tokens;
mod usage;
pub mod writer;

use crate::store::claim_switch::Turned;
use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::time::Duration;

use rusqlite::{CachedStatement, Connection, OpenFlags, Statement};

pub use store::SqliteStore;

pub(crate) use crate::store::json::to_text;

use super::rows::Stored;
use super::{Closed, StoreError, StoreResult, Tx};

/// A transaction (or a savepoint inside one) on a SQLite connection, at `now`.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
    now: Cell<i64>,
    /// The highest ledger id this transaction appended; 0 for none.
    last_id: Cell<i64>,
    /// The statements it ran, kept ready until it ends (`prepare`).
    held: RefCell<Vec<(Box<str>, CachedStatement<'c>)>>,
    /// The writer's: the rows of `claims` it knows (`claims.rs`).
    claims: Option<claims::ClaimsView<'c>>,
    /// The access key whose request writes the next ledger entries.
    by: RefCell<Option<String>>,
    /// The writer's claim switch and what this transaction turned on
    /// (`store/claim_switch.rs`); `None` outside the writer.
    turned: Option<&'c Turned<'c>>,
}

impl<'c> SqliteTx<'c> {
    /// Work on `conn`, whose transaction the caller opened, at `now` (microseconds).
    pub fn new(conn: &'c Connection, now: i64) -> SqliteTx<'c> {
        SqliteTx {
            conn,
            now: Cell::new(now),
            last_id: Cell::new(0),
            held: RefCell::new(Vec::new()),
            claims: None,
            by: RefCell::new(None),
            turned: None,
        }
    }

    /// The writer's transaction: as [`SqliteTx::new`], and it reads each
    /// supervisor's claim from `known` once known (`claims.rs`). The writer tells
    /// it when each request ends ([`SqliteTx::request_done`]) and publishes what a
    /// committed batch changed ([`SqliteTx::take_claims`]).
    pub fn for_writer(
        conn: &'c Connection,
        now: i64,
        known: &'c claims::KnownClaims,
        turned: &'c Turned<'c>,
    ) -> SqliteTx<'c> {
        SqliteTx {
            claims: Some(claims::ClaimsView::new(known)),
            turned: Some(turned),
            ..SqliteTx::new(conn, now)
        }
    }

    /// The running request ended, `kept` or refused (its changes rolled back).
    pub fn request_done(&self, kept: bool) {
        if let Some(view) = &self.claims {
            view.request_done(kept);
        }
    }

    /// The `claims` rows the kept requests wrote, to publish once committed.
    pub fn take_claims(&self) -> claims::Changed {
        self.claims
            .as_ref()
            .map(claims::ClaimsView::take_kept)
            .unwrap_or_default()
    }

    /// Go on with the next request of a batch, at `now`: what it appends is
    /// counted afresh (`last_id`), and the statements stay ready.
    pub fn next_request(&self, now: i64) {
        self.now.set(now);
        self.last_id.set(0);
    }

    /// The highest ledger id appended so far; 0 for none.
    pub fn last_id(&self) -> i64 {
        self.last_id.get()
    }

    /// The prepared statement of `sql`: one this transaction ran before (the writer
    /// keeps one `SqliteTx` for a whole batch), else from the connection's cache.
    /// Taking a statement from rusqlite's cache and giving it back hashed the SQL text
    /// twice and moved it in an LRU list each time, about 1,000 instructions per
    /// statement, some 35 statements per token (measured with callgrind). A statement
    /// in use is out of the list, so the same SQL used inside its own use gets a second
    /// one.
    fn prepare(&self, sql: &str) -> rusqlite::Result<Held<'_, 'c>> {
        let found = {
            let mut held = self.held.borrow_mut();
            let at = held.iter().position(|(text, _)| &**text == sql);
            at.map(|at| held.swap_remove(at))
        };
        let (text, statement) = match found {
            Some(pair) => pair,
            None => (sql.into(), self.conn.prepare_cached(sql)?),
        };
        Ok(Held {
            tx: self,
            text: Some(text),
            statement: Some(statement),
        })
    }

    fn now(&self) -> i64 {
        self.now.get()
    }
}

/// A statement of a `SqliteTx` in use; back in its list when dropped.
struct Held<'t, 'c> {
    tx: &'t SqliteTx<'c>,
    text: Option<Box<str>>,
    statement: Option<CachedStatement<'c>>,
}

impl<'c> Deref for Held<'_, 'c> {
    type Target = Statement<'c>;

    fn deref(&self) -> &Statement<'c> {
        self.statement
            .as_ref()
            .expect("a held statement is there until it is dropped")
    }
}

impl<'c> DerefMut for Held<'_, 'c> {
    fn deref_mut(&mut self) -> &mut Statement<'c> {
        self.statement
            .as_mut()
            .expect("a held statement is there until it is dropped")
    }
}

impl Drop for Held<'_, '_> {
    fn drop(&mut self) {
        if let (Some(text), Some(statement)) = (self.text.take(), self.statement.take()) {
            if let Ok(mut held) = self.tx.held.try_borrow_mut() {
                held.push((text, statement));
            }
        }
    }
}

// The one writer thread runs one request at a time, so a row read before its
// family's lock is as it is under the lock: no row is read twice.
impl Tx for SqliteTx<'_> {
    fn now(&self) -> i64 {
        self.now.get()
    }

    fn reads_again(&self) -> bool {
        false
    }

    fn turned(&self) -> Option<&Turned<'_>> {
        self.turned
    }
}

/// A closed set's text as it is kept, or `Corrupt`.
pub(crate) fn closed<T: Closed>(text: String) -> rusqlite::Result<T> {
    T::parse(&text).ok_or_else(|| corrupt(StoreError::Corrupt(format!("the status {text:?}"))))
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

/// Turn a JSON-parse failure inside a row mapper into a rusqlite error, so that a
/// mapper can use `?`.
pub(crate) fn corrupt(error: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(error))
}

impl Stored for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn corrupt(error: StoreError) -> rusqlite::Error {
        corrupt(error)
    }
    fn int(&self, at: usize) -> rusqlite::Result<i64> {
        self.get(at)
    }
    fn text(&self, at: usize) -> rusqlite::Result<String> {
        self.get(at)
    }
    fn maybe_int(&self, at: usize) -> rusqlite::Result<Option<i64>> {
        self.get(at)
    }
    fn maybe_text(&self, at: usize) -> rusqlite::Result<Option<String>> {
        self.get(at)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        // The operational failures (the reference's `OperationalError`): the
        // database cannot take the request now, and trying again may help.
        match error.sqlite_error_code() {
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::OutOfMemory,
            ) => StoreError::Busy,
            Some(ErrorCode::DiskFull) => StoreError::DiskFull,
            _ => match error {
                // A stored value that a row mapper could not read back.
                rusqlite::Error::ToSqlConversionFailure(inner) => {
                    match inner.downcast::<StoreError>() {
                        Ok(store) => *store,
                        Err(other) => StoreError::Database(other.to_string()),
                    }
                }
                other => StoreError::Database(other.to_string()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateous_shared::refusal::{Code, Refusal};

    /// A full disk is said as such, not as a busy database: SQLite answers
    /// SQLITE_FULL when a database reaches its `max_page_count` as when its disk is
    /// full.
    #[test]
    fn a_full_disk_is_refused_as_a_full_disk() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x BLOB); PRAGMA max_page_count = 8;")
            .unwrap();
        let full = (0..100)
            .map(|_| conn.execute("INSERT INTO t VALUES (zeroblob(4096))", []))
            .find_map(Result::err)
            .expect("the database fills up");
        let error = StoreError::from(full);
        assert!(matches!(error, StoreError::DiskFull), "{error:?}");
        let refusal = Refusal::from(error);
        assert_eq!(refusal.code, Code::DatabaseBusy);
        assert!(
            refusal
                .error
                .starts_with("the disk of the database is full"),
            "{refusal:?}"
        );
    }
}
