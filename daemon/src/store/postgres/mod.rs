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
mod claim_limits;
mod claims;
mod columns;
mod conn;
mod control_plane;
mod counts;
mod durability;
mod graphs;
pub mod hold;
mod in_flight;
mod journal;
mod ledger;
mod memory;
mod notifications;
mod params;
mod pending;
#[cfg(test)]
mod plan_tests;
mod priorities;
mod retry_policies;
mod schedules;
pub mod schema;
mod slot_book;
pub mod store;
mod task_keys;
mod tasks;
mod timers;
pub mod tls;
mod tokens;
mod usage;

use crate::store::claim_switch::Turned;
use std::cell::{Cell, RefCell};
use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use foldhash::HashMap as FastMap;
use postgres::types::ToSql;
use postgres::Row;

pub use claims::KnownClaims;
pub use conn::{config as connector, Connector, PgConn};
pub use pending::Ids;
use pending::Pending;
use slot_book::SlotBook;
pub use slot_book::{KeptBook, KeptBooks};

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

use super::family::SoloTransactions;
use super::feed::{FeedMark, Opened};
use super::rows::Stored;
use super::{ClaimRow, Closed, StoreError, StoreResult, TokenRow, Tx};

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
    /// How many connections the pool keeps at most: reads, the writer's batch, and
    /// requests that run alone (`store/writer.rs`).
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
    earlier: RefCell<Pending>,
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
    /// The last id `token` read, and the other token whose id differs from it only
    /// in case, if any (`tokens.rs`); forgotten when a token is made.
    folded: RefCell<Option<(String, Option<String>)>>,
    /// The `claims` rows the running request wrote, and those of the requests kept
    /// before (all of them outside the writer's batch).
    claims: RefCell<FastMap<String, ClaimRow>>,
    kept_claims: RefCell<FastMap<String, ClaimRow>>,
    /// A transaction of the writer's batch (`store/writer.rs`); `None` for one
    /// of its own.
    batch: Option<Batch<'c>>,
    /// The writer's batch: the candidates a claim found beyond the one it took, by
    /// the states it asked for (`tasks.rs`); forgotten when writes are sent.
    heads: RefCell<FastMap<String, VecDeque<(i64, String)>>>,
    /// The writer's batch: the rows of the tokens its requests are about, read
    /// ahead (`tokens.rs` `read_ahead`); forgotten when writes are sent.
    ahead: RefCell<Option<ReadAhead>>,
    /// The limits and the slots held, as this transaction knows them under the
    /// slots' lock (`slot_book.rs`).
    slots: RefCell<SlotBook>,
    /// The write path's claim switch and what this transaction turned on
    /// (`store/claim_switch.rs`); `None` outside the write path.
    turned: Option<&'c Turned<'c>>,
}

/// What the transaction of the writer's batch knows beside the database.
#[derive(Clone, Copy)]
struct Batch<'c> {
    /// The rows of `claims` committed (`claims.rs`).
    claims: &'c KnownClaims,
    /// The transactions of their own that run beside the batch: while one runs,
    /// or ran since a read, what this process knows may be old.
    solo: &'c SoloTransactions,
    /// Their mark when the batch began, if none ran (`SoloTransactions::quiet`).
    quiet: Option<u64>,
}

/// Rows of `tokens` read ahead for a batch, by folded id (lower case).
#[derive(Debug, Default)]
struct ReadAhead {
    /// The folded ids asked for.
    asked: foldhash::HashSet<String>,
    /// The rows found, by folded id.
    rows: FastMap<String, TokenRow>,
    /// How many transactions had begun beside the batch when they were read.
    mark: u64,
}

impl<'c> PgTx<'c> {
    /// Work on `conn`, whose transaction the caller opened, at `now` (microseconds);
    /// new rows take their ids from `ids`.
    pub fn new(conn: &'c mut PgConn, now: i64, mark: &'c FeedMark, ids: &'c Sequences) -> PgTx<'c> {
        PgTx {
            conn: RefCell::new(conn),
            pending: RefCell::new(Pending::default()),
            earlier: RefCell::new(Pending::default()),
            sent: Cell::new(false),
            ids,
            now: Cell::new(now),
            locked: RefCell::new(HashSet::new()),
            mark,
            opened: Cell::new(None),
            failed: RefCell::new(None),
            by: RefCell::new(None),
            folded: RefCell::new(None),
            claims: RefCell::new(FastMap::default()),
            kept_claims: RefCell::new(FastMap::default()),
            batch: None,
            heads: RefCell::new(FastMap::default()),
            ahead: RefCell::new(None),
            slots: RefCell::new(SlotBook::default()),
            turned: None,
        }
    }

    /// A transaction of the write path, whose writes turn `turned`'s switch on.
    pub fn turning(mut self, turned: &'c Turned<'c>) -> PgTx<'c> {
        self.turned = Some(turned);
        self
    }

    /// The transaction of the writer's batch: a supervisor's last claim is
    /// answered from `known` while no transaction runs alone (`solo`), and a claim finds
    /// candidates for the batch's next claims too.
    /// `quiet` is the mark of the transactions of their own when the batch
    /// began, if none ran (`SoloTransactions::quiet`); `kept`, the slot book the
    /// last committed batch left at that mark, which the batch's `BEGIN` locked
    /// (`slot_book.rs`).
    pub fn for_batch(
        mut self,
        claims: &'c KnownClaims,
        solo: &'c SoloTransactions,
        quiet: Option<u64>,
        kept: Option<KeptBook>,
    ) -> PgTx<'c> {
        if let Some(kept) = kept {
            let mut book = SlotBook::seeded(kept);
            book.locked = true;
            self.slots = RefCell::new(book);
        }
        self.batch = Some(Batch {
            claims,
            solo,
            quiet,
        });
        self
    }

    /// The slot book to leave for the writer's next batch, should this one
    /// commit: none when a transaction of its own ran as it began.
    pub fn slots_to_keep(&self) -> Option<KeptBook> {
        let mark = self.batch?.quiet?;
        self.slots.borrow_mut().take_to_keep(mark)
    }

    /// The `claims` rows the kept requests wrote (all of them, outside a batch),
    /// to publish once the transaction committed.
    pub fn written_claims(&self) -> FastMap<String, ClaimRow> {
        let mut written = self.kept_claims.take();
        written.extend(self.claims.take());
        written
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
        let Some(mut waiting) = self.waiting() else {
            return Ok(());
        };
        let result = waiting.flush(&mut self.conn.borrow_mut());
        self.kept(result)
    }

    /// Send the writes that wait, then `end` (the fence and `COMMIT`), in one
    /// round trip. `Err`: the writes failed, and nothing was committed (the
    /// transaction is aborted); `Ok`: the end's own answer, an error too when the
    /// wait for both failed (then whether it committed is not known).
    pub fn flush_and_end(&self, end: &str) -> StoreResult<StoreResult<()>> {
        let Some(waiting) = self.waiting() else {
            return Ok(self.conn.borrow_mut().batch(end));
        };
        let mut conn = self.conn.borrow_mut();
        let sent = waiting.send(|sql, params| conn.execute_then_batch((sql, params), end));
        drop(conn);
        match sent {
            Ok((Ok(()), ended)) => Ok(ended),
            Ok((Err(error), _)) => {
                // Kept as the transaction's first error.
                let _ = self.kept::<()>(Err(error.clone()));
                Err(error)
            }
            Err(error) => Ok(Err(error)),
        }
    }

    /// The writer's batch: the next request runs, at `now` (microseconds).
    pub fn begin_request(&self, now: i64) {
        self.now.set(now);
        self.sent.set(false);
        *self.by.borrow_mut() = None;
        *self.folded.borrow_mut() = None;
    }

    /// The writer's batch: the running request is kept; its writes wait with
    /// those of the requests kept before.
    pub fn keep_request(&self) {
        let mine = std::mem::take(&mut *self.pending.borrow_mut());
        self.earlier.borrow_mut().absorb(mine);
        let claims = self.claims.take();
        self.kept_claims.borrow_mut().extend(claims);
        self.slots.borrow_mut().keep();
    }

    /// The writer's batch: the running request's writes go. False when some of
    /// them reached the server already (then only a rollback takes them back).
    pub fn drop_request(&self) -> bool {
        *self.pending.borrow_mut() = Pending::default();
        self.claims.borrow_mut().clear();
        self.slots.borrow_mut().undo();
        !self.sent.get()
    }

    /// The next id of a new row of `table`'s sequence (a block is taken when the
    /// last one is used up).
    fn next_id(&self, ids: &Ids) -> StoreResult<i64> {
        let result = ids.next(&mut self.conn.borrow_mut());
        self.kept(result)
    }

    /// Run a statement that returns rows, after the writes that wait (sent with it,
    /// in one round trip).
    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        let waiting = self.waiting();
        let mut conn = self.conn.borrow_mut();
        let result = match waiting {
            None => conn.query(sql, params),
            Some(waiting) => waiting.send(|first, first_params| {
                conn.execute_then_query((first, first_params), sql, params)
            }),
        };
        drop(conn);
        self.kept(result)
    }

    /// Run statements that return rows after the writes that wait, all in one
    /// round trip, each after the one before it ended
    /// ([`PgConn::execute_then_queries`]).
    fn queries(&self, statements: &[(&str, &[&(dyn ToSql + Sync)])]) -> StoreResult<Vec<Vec<Row>>> {
        let waiting = self.waiting();
        let mut conn = self.conn.borrow_mut();
        let result = match waiting {
            None => conn.execute_then_queries(None, statements),
            Some(waiting) => waiting.send(|first, first_params| {
                conn.execute_then_queries(Some((first, first_params)), statements)
            }),
        };
        drop(conn);
        self.kept(result)
    }

    /// The writes that wait, taken to be sent now; `None` when there are none.
    fn waiting(&self) -> Option<Pending> {
        let mut kept = self.earlier.borrow_mut();
        let mut pending = self.pending.borrow_mut();
        if !pending.is_empty() {
            self.sent.set(true);
            kept.absorb(std::mem::take(&mut *pending));
        }
        if kept.is_empty() {
            return None;
        }
        // What is sent no longer shows in the writes that wait.
        self.forget_ahead();
        Some(std::mem::take(&mut *kept))
    }

    /// Run a statement that returns rows, without the writes that wait: the
    /// caller leaves out what they change ([`PgTx::touched`]).
    fn unflushed(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        if let Some(error) = self.failed() {
            return Err(error);
        }
        let result = self.conn.borrow_mut().query(sql, params);
        self.kept(result)
    }

    /// Forget what was read ahead of the writes that wait (sent now, they no
    /// longer show among them).
    fn forget_ahead(&self) {
        self.heads.borrow_mut().clear();
        *self.ahead.borrow_mut() = None;
    }

    /// The row of `token` as the writes that wait leave it, if they change it.
    fn waiting_token(&self, token: &str) -> Option<TokenRow> {
        let mine = self.pending.borrow().tokens.get(token).cloned();
        mine.or_else(|| self.earlier.borrow().tokens.get(token).cloned())
    }

    /// A new token among the writes that wait whose id differs from `token`'s only
    /// in case.
    fn waiting_folded(&self, token: &str) -> Option<String> {
        let mine = self.pending.borrow().folded_new(token);
        mine.or_else(|| self.earlier.borrow().folded_new(token))
    }

    /// Whether the writes that wait change the task `id` or the token `token`.
    fn touches(&self, id: i64, token: &str) -> bool {
        self.pending.borrow().touches(id, token) || self.earlier.borrow().touches(id, token)
    }

    /// The tasks and the tokens the writes that wait change.
    fn touched(&self) -> (Vec<i64>, Vec<String>) {
        let (mut tasks, mut tokens) = (Vec::new(), Vec::new());
        self.earlier.borrow().touched(&mut tasks, &mut tokens);
        self.pending.borrow().touched(&mut tasks, &mut tokens);
        (tasks, tokens)
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
        self.changing()?;
        let result = self.conn.borrow_mut().execute(sql, params);
        self.kept(result)
    }

    /// Before a statement that changes rows: the writes that wait go first, the
    /// running request has writes on the server now, and what was read ahead of
    /// them is forgotten.
    fn changing(&self) -> StoreResult<()> {
        self.flush()?;
        self.sent.set(true);
        self.forget_ahead();
        Ok(())
    }

    /// Run `first`, a statement that changes rows, then a statement that returns
    /// rows, in one round trip (after the writes that wait).
    fn after_change(
        &self,
        first: (&str, &[&(dyn ToSql + Sync)]),
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Row>> {
        self.changing()?;
        let result = self
            .conn
            .borrow_mut()
            .execute_then_query(first, sql, params);
        self.kept(result)
    }

    /// Run a statement that changes rows and returns some (`RETURNING`).
    fn change_rows(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        self.changing()?;
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

    fn turned(&self) -> Option<&Turned<'_>> {
        self.turned
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

impl Stored for Row {
    type Error = StoreError;
    fn corrupt(error: StoreError) -> StoreError {
        error
    }
    fn int(&self, at: usize) -> StoreResult<i64> {
        get(self, at)
    }
    fn text(&self, at: usize) -> StoreResult<String> {
        get(self, at)
    }
    fn maybe_int(&self, at: usize) -> StoreResult<Option<i64>> {
        get(self, at)
    }
    fn maybe_text(&self, at: usize) -> StoreResult<Option<String>> {
        get(self, at)
    }
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
