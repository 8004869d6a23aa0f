//! The Postgres backend (`docs/how-to/use-postgres.md`): a pool of connections, each
//! request its own transaction, each token family's row locked before it changes, a
//! session advisory lock that holds the database, and an epoch that fences every
//! commit.
//!
//! `PgTx` implements every table trait over one connection whose transaction the
//! store opened; all SQL for a table sits in that table's module, with a comment
//! wherever it must differ from SQLite's. JSON values are kept as text, as on SQLite,
//! so that a value reads back byte for byte (JSON keeps its text; `jsonb` would
//! reorder keys) and `\u0000` inside JSON stays storable.

mod access_keys;
mod claims;
mod conn;
mod control_plane;
mod counts;
mod graphs;
pub mod hold;
mod ledger;
mod memory;
mod params;
mod pending;
#[cfg(test)]
mod plan_tests;
pub mod schema;
pub mod store;
mod tasks;
mod timers;
pub mod tls;
mod tokens;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::Row;

pub use conn::{config as connector, Connector, PgConn};
pub use pending::Ids;
use pending::Pending;

/// The sequences new rows take their ids from, a block at a time.
#[derive(Debug)]
pub struct Sequences {
    /// `ledger.id`: handed out in increasing order (the feed's mark counts on it).
    pub ledger: Ids,
    /// `tasks.id`.
    pub tasks: Ids,
    /// `timers.id`.
    pub timers: Ids,
}

impl Sequences {
    /// Give every table's ids not handed out back to its sequence (`Ids::give_back`).
    pub fn give_back(&self, conn: &mut PgConn) -> StoreResult<()> {
        self.ledger.give_back(conn)?;
        self.tasks.give_back(conn)?;
        self.timers.give_back(conn)
    }
}

impl Default for Sequences {
    fn default() -> Sequences {
        Sequences {
            ledger: Ids::new("ledger"),
            tasks: Ids::new("tasks"),
            timers: Ids::new("timers"),
        }
    }
}
pub use store::PgStore;

use super::feed::{FeedMark, Opened};
use super::{Closed, StoreError, StoreResult, Tx};

/// The time limits of each Postgres connection (`docs/guarantees.md`, "Time limits on
/// each database") and the size of the pool. Each is a flag of `serve` and an
/// environment variable.
#[derive(Debug, Clone, PartialEq)]
pub struct PgOptions {
    /// How long making a connection may take. Default 10 s.
    pub connect_timeout: Duration,
    /// How long one statement may run. Default 30 s.
    pub statement_timeout: Duration,
    /// How long a statement may wait for a lock, a token's too. Default 10 s.
    pub lock_timeout: Duration,
    /// TCP keepalives: the first probe after this long without traffic. 30 s.
    pub keepalive_idle: Duration,
    /// TCP keepalives: then a probe this often. 10 s.
    pub keepalive_interval: Duration,
    /// TCP keepalives: a connection is dead after this many unanswered probes. 3.
    pub keepalive_count: u32,
    /// How many connections the pool keeps at most (requests run side by side).
    pub pool: u32,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            connect_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(10),
            keepalive_idle: Duration::from_secs(30),
            keepalive_interval: Duration::from_secs(10),
            keepalive_count: 3,
            pool: 16,
        }
    }
}

/// A transaction on a pooled connection, at `now`.
///
/// The first failed statement poisons the transaction (Postgres refuses every later
/// statement of it): the error is kept, and the store answers it, rolls back, and
/// may run the request once more ([`StoreError::Conflict`]).
pub struct PgTx<'c> {
    conn: RefCell<&'c mut PgConn>,
    /// Writes not sent yet: they go before the next read, or at the commit. In the
    /// writer's batch (`writer.rs`), those of the request that runs.
    pending: RefCell<Pending>,
    /// In the writer's batch: the writes not sent yet of the requests kept before.
    kept: RefCell<Pending>,
    /// Whether the server got some of the running request's writes already.
    sent: Cell<bool>,
    ids: &'c Sequences,
    now: Cell<i64>,
    /// The top tokens whose row this transaction locked.
    locked: RefCell<HashSet<String>>,
    mark: &'c FeedMark,
    /// This transaction's registration with the feed's mark, from its first
    /// ledger row on.
    opened: Cell<Option<Opened>>,
    failed: RefCell<Option<StoreError>>,
    /// The access key whose request writes the next ledger entries.
    by: RefCell<Option<String>>,
}

impl<'c> PgTx<'c> {
    /// Work on `conn`, whose transaction the caller opened, at `now` (microseconds);
    /// new rows take their ids from `ids`.
    pub fn new(conn: &'c mut PgConn, now: i64, mark: &'c FeedMark, ids: &'c Sequences) -> PgTx<'c> {
        PgTx {
            conn: RefCell::new(conn),
            pending: RefCell::new(Pending::default()),
            kept: RefCell::new(Pending::default()),
            sent: Cell::new(false),
            ids,
            now: Cell::new(now),
            locked: RefCell::new(HashSet::new()),
            mark,
            opened: Cell::new(None),
            failed: RefCell::new(None),
            by: RefCell::new(None),
        }
    }

    /// The first error a statement of this transaction met.
    pub fn failed(&self) -> Option<StoreError> {
        self.failed.borrow().clone()
    }

    /// The registration with the feed's mark, if the transaction wrote a ledger row.
    pub fn opened(&self) -> Option<Opened> {
        self.opened.get()
    }

    /// Send the writes that wait (before a read, and before the commit).
    pub fn flush(&self) -> StoreResult<()> {
        let result = {
            let mut kept = self.kept.borrow_mut();
            let mut pending = self.pending.borrow_mut();
            if !pending.is_empty() {
                self.sent.set(true);
                kept.absorb(std::mem::take(&mut *pending));
            }
            let mut conn = self.conn.borrow_mut();
            kept.flush(&mut conn)
        };
        self.kept(result)
    }

    /// The writer's batch: the next request runs, at `now` (microseconds).
    pub fn begin_request(&self, now: i64) {
        self.now.set(now);
        self.sent.set(false);
        *self.by.borrow_mut() = None;
    }

    /// The writer's batch: the running request is kept; its writes wait with
    /// those of the requests kept before.
    pub fn keep_request(&self) {
        let mine = std::mem::take(&mut *self.pending.borrow_mut());
        self.kept.borrow_mut().absorb(mine);
    }

    /// The writer's batch: the running request's writes go. False when some of
    /// them reached the server already (then only a rollback takes them back).
    pub fn drop_request(&self) -> bool {
        *self.pending.borrow_mut() = Pending::default();
        !self.sent.get()
    }

    /// The next id of a new row of `table`'s sequence (a block is taken when the
    /// last one is used up).
    fn next_id(&self, ids: &Ids) -> StoreResult<i64> {
        let result = ids.next(&mut self.conn.borrow_mut());
        self.kept(result)
    }

    /// Run a statement that returns rows (after the writes that wait).
    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        self.flush()?;
        let result = self.conn.borrow_mut().query(sql, params);
        self.kept(result)
    }

    /// Run a statement that returns at most one row.
    fn query_opt(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Run a statement that returns exactly one row.
    fn query_one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Database(format!("no row from: {sql}")))
    }

    /// Run a statement; how many rows it changed (after the writes that wait).
    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        self.flush()?;
        self.sent.set(true);
        let result = self.conn.borrow_mut().execute(sql, params);
        self.kept(result)
    }

    /// Run a statement that changes rows and returns some (`RETURNING`).
    fn change_rows(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        self.flush()?;
        self.sent.set(true);
        let result = self.conn.borrow_mut().query(sql, params);
        self.kept(result)
    }

    /// Keep the first error: the transaction is poisoned from then on.
    fn kept<T>(&self, result: StoreResult<T>) -> StoreResult<T> {
        if let Err(error) = &result {
            self.failed
                .borrow_mut()
                .get_or_insert_with(|| error.clone());
        }
        result
    }
}

impl Tx for PgTx<'_> {
    fn now(&self) -> i64 {
        self.now.get()
    }
}

/// A column of a row, or `Corrupt`.
fn get<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, index: usize) -> StoreResult<T> {
    row.try_get(index)
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// A closed set's text as it is kept, or `Corrupt`.
fn closed<T: Closed>(row: &Row, index: usize) -> StoreResult<T> {
    let text: String = get(row, index)?;
    T::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("the status {text:?}")))
}

/// The SQLSTATE this code raises when a commit finds that its control plane no
/// longer holds the database (`stateous_fence` in `schema.rs`).
pub const NOT_SERVING_STATE: &str = "SN001";

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> StoreError {
        let Some(state) = error.code() else {
            // No SQLSTATE: the connection closed, timed out or failed to connect.
            return StoreError::Busy;
        };
        match state.code() {
            // deadlock_detected, serialization_failure, unique_violation: another
            // transaction got there first; a second run gives the answer.
            "40P01" | "40001" | "23505" => StoreError::Conflict,
            // lock_not_available (lock_timeout), query_canceled (statement_timeout),
            // too many connections, admin shutdown, crash shutdown, cannot connect now.
            "55P03" | "57014" | "53300" | "57P01" | "57P02" | "57P03" | "08000" | "08003"
            | "08006" | "08001" | "08004" => StoreError::Busy,
            // disk_full: the server cannot write its files.
            "53100" => StoreError::DiskFull,
            NOT_SERVING_STATE => StoreError::NotServing,
            // character_not_in_repertoire: text that holds a NUL character.
            "22021" => StoreError::Unstorable(
                "Postgres cannot keep this text: it holds the NUL character (\\u0000)".into(),
            ),
            _ => StoreError::Database(error.to_string()),
        }
    }
}
