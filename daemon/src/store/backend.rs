//! The backend interface behind `Control`: one write path, one read path, the feed's
//! safe point and the hold on the database, over SQLite or Postgres. Everything above
//! it (the engine, `Control`, the API, the watch stream) names no backend.
//!
//! A write is a function of one transaction ([`Tx`]) that returns whether to keep
//! its changes and its answer. It must be re-runnable (`Fn`): Postgres runs a
//! request once more when it was stopped by a deadlock or lost a race to make the
//! same new row (`StoreError::Conflict`). Its answer comes only after its commit.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::feed::FeedMark;
use super::postgres::{PgOptions, PgStore};
use super::sqlite::SqliteStore;
use super::{StoreResult, Tx};
use crate::time_source::Clock;

/// The database a control plane serves (`serve --db`).
#[derive(Debug, Clone, PartialEq)]
pub enum Database {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A Postgres server: the URL as given (`postgresql://` or `postgres://`).
    Postgres(String),
}

/// How the store runs; every timing is configurable (`docs/reference/bounds.md`).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The database.
    pub database: Database,
    /// The source of each transaction's `now`.
    pub clock: Clock,
    /// How this control plane names itself in the serving record: `host:pid:id`.
    pub holder: String,
    /// SQLite: how long a request waits for another process's write lock. 30 s.
    pub busy_timeout: Duration,
    /// Postgres: the time limits of each connection and the size of the pool.
    pub postgres: PgOptions,
    /// `serve --standby`: wait for the database's hold instead of being refused
    /// when another control plane has it. Postgres only.
    pub standby: Option<Standby>,
    /// The active subscriptions the write path matches each appended entry
    /// against (`docs/notifications.md`).
    pub subscribed: crate::notify::Subscribed,
}

/// How a standby waits for the database (`serve --standby`): it asks for the serving
/// lock every `every` (a free lock is taken within that, once the server has ended the
/// old holder's session) until `stop` is set.
#[derive(Debug, Clone)]
pub struct Standby {
    /// The time between two tries of the lock.
    pub every: Duration,
    /// Set to stop waiting (a signal): the open then fails.
    pub stop: Arc<AtomicBool>,
}

/// The refusal of `--standby` on a SQLite database.
pub const STANDBY_NEEDS_POSTGRES: &str = "--standby needs a Postgres database (--db \
    postgresql://...): a SQLite file is served by the control plane on its own machine, \
    and systemd's Restart= brings that one back";

/// What [`Store::inspect`] found.
pub enum Inspected<R> {
    /// The schema is this build's; the read's answer.
    Read(R),
    /// No database yet: no tables of ours (on SQLite, no file, and none is made).
    Empty,
    /// An older schema that the holder will upgrade: nothing this build can read
    /// yet. `first`: the index in `schema::VERSIONS` of the first migration it
    /// needs, so that what a version before it did not have is known absent.
    NotYet { first: usize },
}

impl<R> Inspected<R> {
    /// What a database is whose first migration to run is `first` (the index in
    /// `schema::VERSIONS`), unless its schema is this build's (then `None`).
    pub fn before_reading(first: usize) -> Option<Inspected<R>> {
        match first {
            0 => Some(Inspected::Empty),
            first if first < super::schema::VERSIONS.len() => Some(Inspected::NotYet { first }),
            _ => None,
        }
    }
}

/// A write's answer, once its transaction committed (or its error).
pub type Written<R> = Pin<Box<dyn Future<Output = StoreResult<R>> + Send>>;

/// The store of one control plane: SQLite or Postgres.
pub enum Store {
    /// One writer thread (group commit) and a few read connections.
    Sqlite(SqliteStore),
    /// One writer's batches, and a pool of connections for reads and for a request
    /// that runs alone.
    Postgres(PgStore),
}

/// How many writes of a bulk run are on the write path at once: about one batch of
/// the writer (one group commit).
const WINDOW: usize = 64;

impl Store {
    /// Open the database: take it for this control plane (a second one is refused
    /// in one sentence), make or upgrade its tables, and record the hold.
    pub fn open(options: &StoreOptions) -> Result<Store, String> {
        match &options.database {
            Database::Sqlite(_) if options.standby.is_some() => {
                Err(STANDBY_NEEDS_POSTGRES.to_string())
            }
            Database::Sqlite(path) => SqliteStore::open(path, options).map(Store::Sqlite),
            Database::Postgres(url) => PgStore::open(url, options).map(Store::Postgres),
        }
    }

    /// Whether a limit, a priority or a retry pause may be set in the database
    /// (`claim_switch.rs`): this store's own, loaded from the tables at the open.
    pub fn claim_switch(&self) -> &super::claim_switch::ClaimSwitch {
        match self {
            Store::Sqlite(store) => store.claim_switch(),
            Store::Postgres(store) => store.claim_switch(),
        }
    }

    /// Wait until every write transaction that began before this call has ended
    /// (`postgres/in_flight.rs`): the first limit's set, once its fact is on
    /// (`control/claim_limits.rs`). Nothing to wait for on SQLite, whose one
    /// writer runs one transaction at a time. Blocking work; busy when the lock
    /// limit passed first.
    pub fn settle_writes(&self) -> StoreResult<()> {
        match self {
            Store::Sqlite(_) => Ok(()),
            Store::Postgres(store) => store.settle_writes(),
        }
    }

    /// Run `read` in one read-only transaction without taking the database (a
    /// standby checks the graph before it waits; a start reads whether keys exist
    /// before it opens the database): blocking work. A database this build cannot
    /// use is refused with the sentence a start gives.
    pub fn inspect<R>(
        options: &StoreOptions,
        read: impl FnOnce(&dyn Tx) -> StoreResult<R>,
    ) -> Result<Inspected<R>, String> {
        match &options.database {
            Database::Sqlite(path) => SqliteStore::inspect(path, options, read),
            Database::Postgres(url) => PgStore::inspect(url, options, read),
        }
    }

    /// Run `work` as one write transaction (or, on SQLite, one savepoint of the next
    /// group commit) and answer after the commit. Queued at once, so that a caller
    /// can queue many before it waits for the first.
    pub fn write<R, F>(&self, work: F) -> Written<R>
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        match self {
            Store::Sqlite(store) => Box::pin(store.write(work)),
            Store::Postgres(store) => Box::pin(store.write(work)),
        }
    }

    /// [`Store::write`] of a request about the token `about` (a start): Postgres's
    /// writer reads the rows of the tokens its batch's requests are about in one
    /// statement before it runs them (`postgres/store/writer.rs`).
    pub fn write_about<R, F>(&self, about: &str, work: F) -> Written<R>
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        match self {
            Store::Sqlite(store) => Box::pin(store.write(work)),
            Store::Postgres(store) => Box::pin(store.write_about(Some(about.to_string()), work)),
        }
    }

    /// Run each of `works` as its own write transaction, one after another in the
    /// order given, and answer each in that order. The clock's lease ends (by task
    /// id) and timer fires (by due moment, then id) go through here: the reference's
    /// clock runs them one at a time, so the rows each makes take the ids it would
    /// give them (two timeouts due together queue their tasks in due order, whatever
    /// the machine's load). On SQLite all are queued at once and the one writer runs
    /// them in that order, sharing group commits; on Postgres each starts once the
    /// one before it has ended, since side by side the transactions would take ids
    /// from the sequences in whatever order they reached them.
    pub async fn write_in_order<R, F>(&self, works: Vec<F>) -> Vec<StoreResult<R>>
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        let mut answers = Vec::with_capacity(works.len());
        match self {
            Store::Sqlite(store) => {
                let queued: Vec<_> = works.into_iter().map(|work| store.write(work)).collect();
                for answer in queued {
                    answers.push(answer.await);
                }
            }
            Store::Postgres(store) => {
                for work in works {
                    answers.push(store.write(work).await);
                }
            }
        }
        answers
    }

    /// Run `read` in one snapshot on a read connection, at `now`.
    pub async fn read<R, F>(&self, now: i64, read: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> StoreResult<R> + Send + 'static,
    {
        match self {
            Store::Sqlite(store) => store.read(now, read).await,
            Store::Postgres(store) => store.read(now, read).await,
        }
    }

    /// The feed's safe point (see [`FeedMark`]).
    pub fn mark(&self) -> &FeedMark {
        match self {
            Store::Sqlite(store) => store.mark(),
            Store::Postgres(store) => store.mark(),
        }
    }

    /// How many writes of a bulk run may be on the write path at once: one batch's
    /// worth of the writer (on either backend), so that other requests wait behind
    /// at most one batch of them.
    pub fn bulk_window(&self) -> usize {
        WINDOW
    }

    /// How many write transactions committed so far.
    pub fn commits(&self) -> u64 {
        match self {
            Store::Sqlite(store) => store.commits(),
            Store::Postgres(store) => store.commits(),
        }
    }

    /// True once this control plane lost the database: a commit found another epoch
    /// on record, or (Postgres) the lock's connection ended.
    pub fn lost(&self) -> bool {
        match self {
            Store::Sqlite(store) => store.lost(),
            Store::Postgres(store) => store.lost(),
        }
    }

    /// True while the database does not answer in time (Postgres: a wait on the
    /// server passed a deadline of this side, and none answered in time since).
    pub fn not_answering(&self) -> bool {
        match self {
            Store::Sqlite(_) => false,
            Store::Postgres(store) => store.not_answering(),
        }
    }

    /// Check the hold and renew the record's `since` when it is older than
    /// `renew_every`. False: this control plane lost the database.
    pub async fn keep_hold(&self, renew_every: Duration) -> StoreResult<bool> {
        match self {
            Store::Sqlite(store) => store.keep_hold(renew_every).await,
            Store::Postgres(store) => store.keep_hold(renew_every).await,
        }
    }

    /// Give up the hold, so that another control plane may take the database at
    /// once.
    pub async fn release(&self) -> StoreResult<()> {
        match self {
            Store::Sqlite(store) => store.release().await,
            Store::Postgres(store) => store.release().await,
        }
    }
}

/// `host:pid:id`: how a control plane names itself in the serving record, as the
/// reference does.
pub fn holder_name() -> String {
    let host = host_name();
    let id: u32 = rand::random();
    format!("{host}:{}:{id:08x}", std::process::id())
}

fn host_name() -> String {
    let mut name = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most
    // that many bytes and the result is read only up to the first NUL.
    let got = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    if got == 0 {
        let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        "localhost".to_string()
    }
}

/// A URL as a message shows it: its password, if any, as `***`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Some((credentials, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_string(),
    }
}
