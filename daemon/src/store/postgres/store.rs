//! The Postgres backend as `Control` sees it (`store::Store::Postgres`): the serving
//! lock, the writer that runs the requests that wait in one transaction
//! (`store/writer.rs`), a pool of connections for reads and for a request that runs
//! alone in a transaction of its own (run once more after a deadlock), the fence
//! before each commit, and the feed's safe point.

#[cfg(test)]
mod tests;
mod writer;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;

use super::conn::{config, Answering, Manager, PgConn, Session, Unconnected};
use super::hold::{ServingLock, Tried};
use super::in_flight::InFlight;
use super::schema::{first_to_run, migrate};
use super::{KeptBooks, KnownClaims, PgTx, Sequences};
use crate::store::backend::{without_password, Inspected, StoreOptions};
use crate::store::cached_tx::{CachedTx, Locking};
use crate::store::claim_switch::ClaimSwitch;
use crate::store::facts::Cache;
use crate::store::family::{FamilyLocks, SoloTransactions};
use crate::store::feed::{FeedMark, Opened};
use crate::store::schema::MigrateError;
use crate::store::serving;
use crate::store::{ControlPlane, StoreError, StoreResult, Tx};
use crate::time_source::{micros, Clock};

/// How long one wait for a pooled connection lasts before the wait looks again
/// at whether the server answers (`Inner::connection`).
const POOL_SLICE: Duration = Duration::from_millis(100);

/// A Postgres database held by this control plane. Cheap to share: the pool and
/// the lock live behind an `Arc`.
pub struct PgStore {
    inner: Arc<Inner>,
    writer: writer::Writer,
}

/// The pool and the lock's connection.
struct Connections {
    pool: r2d2::Pool<Manager>,
    serving: ServingLock,
}

struct Inner {
    /// `None` only while `Inner` is dropped (see there).
    connections: Option<Connections>,
    mark: FeedMark,
    clock: Clock,
    holder: String,
    epoch: i64,
    commits: AtomicU64,
    lost: AtomicBool,
    /// What the write path knows of each token it changed (`store/facts.rs`).
    cache: Cache,
    /// The families this process's transactions hold (`store/family.rs`).
    families: FamilyLocks,
    /// The transactions of their own that run beside the writer's batches.
    solo: SoloTransactions,
    /// Every write transaction running, by when it began (`in_flight.rs`).
    in_flight: InFlight,
    /// The rows of `claims` this control plane committed.
    claims: KnownClaims,
    /// The slot book the writer's last committed batch left for the next
    /// (`slot_book.rs`).
    books: KeptBooks,
    /// The active subscriptions (`docs/notifications.md`).
    pub(super) subscribed: crate::notify::Subscribed,
    /// How long a transaction waits for a family (the lock limit).
    lock_wait: Duration,
    /// Ids for new rows, taken from their sequences a block at a time.
    ids: Sequences,
    /// Whether the server answers (every connection of the store tells it).
    answering: Answering,
    /// How long a statement may take on this side.
    statement_deadline: Duration,
    /// Transactions whose commit got no answer, with their ledger rows' place in
    /// the feed: they may still commit, so the feed's mark stays below their rows
    /// and no write trusts a row read without its row lock (see
    /// [`Inner::settled`]) until the server's session that ran them has ended
    /// (`Inner::settle`).
    unsettled: Mutex<Unsettled>,
    /// Whether a limit, a priority or a retry pause may be set in the database
    /// (`store/claim_switch.rs`): loaded at the open, which for a standby ends at
    /// its takeover.
    pub(super) switch: ClaimSwitch,
}

/// The commits that got no answer and may still land.
#[derive(Default)]
struct Unsettled {
    /// Each one's ledger rows (if it wrote any) and the server session that ran it.
    sessions: Vec<(Option<Opened>, Session)>,
    /// How many were ever registered: a write that saw none at its start, and
    /// the same count at its end, read nothing a late commit changed.
    registered: u64,
}

impl PgStore {
    /// Take the serving lock (a second control plane is refused before it changes
    /// anything; a standby waits for it), make or upgrade the tables, move the
    /// epoch on, and fill the pool. Each refusal is one sentence; Postgres
    /// unreachable ends a start within about the connect timeout. A standby's
    /// takeover and a start share every step after the lock.
    pub fn open(url: &str, options: &StoreOptions) -> Result<PgStore, String> {
        let pg = &options.postgres;
        let connector = config(url, pg)?;
        let shown = without_password(url);
        let serving = match &options.standby {
            Some(standby) => ServingLock::wait(&connector, standby)
                .ok_or_else(|| "the standby stopped before it took the database".to_string())?,
            None => match ServingLock::take(&connector) {
                Ok(Tried::Held(lock)) => lock,
                Ok(Tried::Busy(mut conn)) => return Err(held_by_another(&mut conn)),
                Err(error) => return Err(not_connected(&shown, &error)),
            },
        };
        serving
            .with(|conn| conn.unlimited(migrate))
            .map_err(|e| match e {
                MigrateError::Foreign(why) => format!("cannot use the database {shown}: {why}"),
                MigrateError::Store(error) => format!("cannot open the database {shown}: {error}"),
            })?;
        // Warned, not refused: a test server may run without fsync on purpose.
        for weak in serving
            .with(super::durability::weak_settings)
            .unwrap_or_default()
        {
            tracing::warn!(target: "stateous.serve", "{weak}");
        }
        let now = options.clock.now();
        let (epoch, last, held) = serving
            .with(|conn| {
                once(conn, now, |tx| {
                    let epoch = serving::take_hold(tx, &options.holder)?;
                    Ok((epoch, tx.last_entry_id()?, tx.claim_facts_held()?))
                })
            })
            .map_err(|e| format!("cannot use the database {shown}: {e}"))?;
        let pool = r2d2::Pool::builder()
            .max_size(pg.pool.max(1))
            .min_idle(Some(0))
            // A request waits for a free connection no longer than for a lock.
            .connection_timeout(pg.lock_timeout.max(Duration::from_millis(100)))
            // Each request's BEGIN finds a dead connection anyway; a check on every
            // checkout would cost a round trip per request.
            .test_on_check_out(false)
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build_unchecked(Manager::new(connector.clone()));
        let inner = Arc::new(Inner {
            connections: Some(Connections { pool, serving }),
            mark: FeedMark::new(last),
            clock: options.clock.clone(),
            holder: options.holder.clone(),
            epoch,
            commits: AtomicU64::new(0),
            lost: AtomicBool::new(false),
            cache: Cache::default(),
            families: FamilyLocks::default(),
            solo: SoloTransactions::default(),
            in_flight: InFlight::default(),
            claims: KnownClaims::default(),
            books: KeptBooks::default(),
            subscribed: options.subscribed.clone(),
            lock_wait: pg.lock_timeout,
            ids: Sequences::default(),
            answering: connector.answering.clone(),
            statement_deadline: connector.deadlines.statement,
            unsettled: Mutex::new(Unsettled::default()),
            switch: ClaimSwitch::with(held),
        });
        let writer = writer::Writer::spawn(Arc::clone(&inner))
            .map_err(|e| format!("cannot start the writer thread: {e}"))?;
        Ok(PgStore { inner, writer })
    }

    /// See `Store::inspect`: one read-only transaction on a connection of its own,
    /// without the serving lock, once the schema is this build's.
    pub fn inspect<R>(
        url: &str,
        options: &StoreOptions,
        read: impl FnOnce(&dyn Tx) -> StoreResult<R>,
    ) -> Result<Inspected<R>, String> {
        let connector = config(url, &options.postgres)?;
        let shown = without_password(url);
        let mut conn = PgConn::connect(&connector).map_err(|e| not_connected(&shown, &e))?;
        let first = first_to_run(&mut conn).map_err(|e| match e {
            MigrateError::Foreign(why) => format!("cannot use the database {shown}: {why}"),
            MigrateError::Store(error) => format!("cannot open the database {shown}: {error}"),
        })?;
        if let Some(inspected) = Inspected::before_reading(first) {
            return Ok(inspected);
        }
        let cannot = |e: StoreError| format!("cannot use the database {shown}: {e}");
        conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(cannot)?;
        let (mark, ids) = (FeedMark::new(0), Sequences::default());
        let tx = PgTx::new(&mut conn, options.clock.now(), &mark, &ids);
        let answer = read(&tx);
        drop(tx);
        let ended = conn.batch("COMMIT");
        let answer = answer.map_err(cannot)?;
        ended.map_err(cannot)?;
        Ok(Inspected::Read(answer))
    }

    /// See `Store::write`: queued for the writer's next batch now, not when first
    /// polled, so that a caller that queues many writes before it waits for the
    /// first (the clock's tick) has them in one batch, in the order queued.
    pub fn write<R, F>(&self, work: F) -> impl std::future::Future<Output = StoreResult<R>> + Send
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        self.writer.submit(None, work)
    }

    /// [`PgStore::write`] of a request about the token `about` (a start): the
    /// writer reads the rows of its batch's tokens in one statement first.
    pub fn write_about<R, F>(
        &self,
        about: Option<String>,
        work: F,
    ) -> impl std::future::Future<Output = StoreResult<R>> + Send
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        self.writer.submit(about, work)
    }

    /// See `Store::read`: one repeatable-read snapshot on a pooled connection.
    pub async fn read<R, F>(&self, now: i64, read: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> StoreResult<R> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let answer = inner.read(now, read);
            inner.held_after(answer)
        })
        .await
        .map_err(|_| StoreError::Database("a read failed unexpectedly".into()))?
    }

    /// The feed's safe point.
    pub fn mark(&self) -> &FeedMark {
        &self.inner.mark
    }

    /// Whether a limit, a priority or a retry pause may be set
    /// (`store/claim_switch.rs`).
    pub fn claim_switch(&self) -> &ClaimSwitch {
        &self.inner.switch
    }

    /// Wait until every write transaction that began before this call has ended
    /// and no commit that got no answer may still land (`in_flight.rs`): the set
    /// of the first limit, or the first with `per`, once it turned its fact on,
    /// so that it counts what they claimed and queued. Blocking work. Busy when
    /// the lock limit passed first.
    pub fn settle_writes(&self) -> StoreResult<()> {
        self.inner.settle_writes()
    }

    /// How many write transactions committed.
    pub fn commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// True once a fence failed or the lock's connection ended.
    pub fn lost(&self) -> bool {
        self.inner.lost.load(Ordering::SeqCst)
    }

    /// See `Store::keep_hold`: the lock's connection is alive, and the record still
    /// names this control plane and its epoch.
    pub async fn keep_hold(&self, renew_every: Duration) -> StoreResult<bool> {
        let inner = Arc::clone(&self.inner);
        let alive = tokio::task::spawn_blocking(move || {
            inner.settle();
            inner.connections().serving.alive()
        })
        .await
        .map_err(|_| StoreError::Database("a check failed unexpectedly".into()))?;
        match alive {
            Ok(()) => {}
            // Silence says nothing about the lock's session: ask again next tick.
            Err(StoreError::NotAnswering(limit)) => return Err(StoreError::NotAnswering(limit)),
            Err(_) => {
                self.inner.lost.store(true, Ordering::SeqCst);
                return Ok(false);
            }
        }
        let (holder, epoch) = (self.inner.holder.clone(), self.inner.epoch);
        let renew = micros(renew_every);
        let kept = self
            .write(move |tx| {
                let kept = serving::keep_hold(tx, &holder, epoch, renew);
                (matches!(kept, Ok(true)), kept)
            })
            .await;
        match kept {
            Ok(Ok(true)) => Ok(true),
            Ok(Ok(false)) | Err(StoreError::NotServing) => {
                self.inner.lost.store(true, Ordering::SeqCst);
                Ok(false)
            }
            Ok(Err(_)) => Err(StoreError::Busy),
            Err(error) => Err(error),
        }
    }

    /// True while the server does not answer: the last wait on it passed its
    /// deadline, and none answered in time since.
    pub fn not_answering(&self) -> bool {
        self.inner.answering.silent()
    }

    /// See `Store::release`: clear the record, then let the serving lock go.
    pub async fn release(&self) -> StoreResult<()> {
        let holder = self.inner.holder.clone();
        let released = self
            .write(move |tx| {
                let released = serving::release(tx, &holder);
                (released.is_ok(), released)
            })
            .await;
        self.inner.lost.store(true, Ordering::SeqCst);
        let still_held = matches!(released, Ok(Ok(())));
        let inner = Arc::clone(&self.inner);
        let _ = tokio::task::spawn_blocking(move || {
            if still_held {
                // No write starts any more: the ids not handed out go back to
                // their sequences while this control plane still holds them.
                let given = inner
                    .connections()
                    .serving
                    .with(|conn| inner.ids.give_back(conn));
                if let Err(error) = given {
                    tracing::warn!("the ids not used were not given back: {error}");
                }
            }
            inner.connections().serving.unlock()
        })
        .await;
        released?.map_err(|_| StoreError::Busy)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A closing Postgres client runs a runtime of its own to say goodbye, which
        // cannot run on a thread that drives async tasks: the pool's connections and
        // the lock's connection close on a thread of their own.
        if let Some(connections) = self.connections.take() {
            let _ = std::thread::spawn(move || drop(connections)).join();
        }
    }
}

impl Inner {
    fn connections(&self) -> &Connections {
        self.connections
            .as_ref()
            .expect("the connections live as long as the store")
    }

    fn lock_unsettled(&self) -> std::sync::MutexGuard<'_, Unsettled> {
        // A panic while the lock was held leaves a plain list behind: still usable.
        self.unsettled.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`PgStore::settle_writes`].
    fn settle_writes(&self) -> StoreResult<()> {
        let wait = self.lock_wait;
        let deadline = Instant::now() + wait;
        if !self.in_flight.settle(wait) {
            return Err(StoreError::Busy);
        }
        // Closed by the clock's tick once its server session ended.
        while self.settled().is_none() {
            if Instant::now() >= deadline {
                return Err(StoreError::Busy);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// `Some` (a count to compare later) when no commit that got no answer may
    /// still land; `None` while one may. A commit that lands late changes rows
    /// that a write may already have read: its rows hold no lock yet when it
    /// reaches the server after them. So while one may land, every write takes
    /// its rows' locks (the writer's requests run alone), and a write keeps the
    /// facts it read for the next (the cache, the claims known) only when this
    /// was `Some` and the same at its start and after its commit.
    fn settled(&self) -> Option<u64> {
        let unsettled = self.lock_unsettled();
        unsettled
            .sessions
            .is_empty()
            .then_some(unsettled.registered)
    }

    /// Close the feed's registration of each commit that got no answer whose
    /// server session has ended since: its rows committed or never will. Asked on
    /// the lock's connection, at each tick.
    fn settle(&self) {
        let unsettled = std::mem::take(&mut self.lock_unsettled().sessions);
        if unsettled.is_empty() {
            return;
        }
        let mut still = Vec::new();
        for (opened, session) in unsettled {
            let ended = self.connections().serving.with(|conn| {
                conn.ask_bool(
                    "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity \
                     WHERE pid = $1 AND backend_start::text = $2)",
                    &[&session.pid, &session.started],
                )
            });
            match ended {
                Ok(true) => {
                    if let Some(opened) = opened {
                        self.mark.close(opened);
                    }
                }
                _ => still.push((opened, session)),
            }
        }
        self.lock_unsettled().sessions.extend(still);
    }

    /// A pooled connection, waited for no longer than the lock limit; while the
    /// server does not answer, no longer than a statement may take (a new
    /// connection would wait for the whole connect timeout, and the request with
    /// it). The wait looks again at [`Answering`] every [`POOL_SLICE`], so that a
    /// request already waiting when the silence is found is held no longer than a
    /// statement either. None free in time while the server does not answer:
    /// `NotAnswering` (the connections wait on it, and a new one cannot log in);
    /// otherwise `Busy`.
    fn connection(&self) -> StoreResult<r2d2::PooledConnection<Manager>> {
        let pool = &self.connections().pool;
        let began = Instant::now();
        loop {
            let silent = self.answering.silent();
            let limit = if silent {
                self.statement_deadline
            } else {
                pool.connection_timeout()
            };
            let left = limit.saturating_sub(began.elapsed());
            if left.is_zero() {
                return Err(self.waited_too_long());
            }
            if let Ok(conn) = pool.get_timeout(left.min(POOL_SLICE)) {
                return Ok(conn);
            }
        }
    }

    /// The answer to a request that waited for the writer, or for a pooled
    /// connection, longer than it may: the server does not answer, or it is busy.
    fn waited_too_long(&self) -> StoreError {
        if self.answering.silent() {
            StoreError::NotAnswering(self.statement_deadline)
        } else {
            StoreError::Busy
        }
    }

    /// Run `work` in its own transaction; once more after a conflict.
    fn write<R>(&self, work: &dyn Fn(&dyn Tx) -> (bool, R)) -> StoreResult<R> {
        let _solo = self.solo.enter();
        let written = match self.write_once(work) {
            Err(StoreError::Conflict) => match self.write_once(work) {
                // Twice in a row: say busy, and let the client send it again.
                Err(StoreError::Conflict) => Err(StoreError::Busy),
                other => other,
            },
            other => other,
        };
        self.held_after(written)
    }

    /// A request that failed busy (a lost connection among the causes) asks
    /// whether the serving lock's session still stands: when it ended (the server
    /// ended this control plane's sessions, as after a stop long enough for a
    /// standby to take over), the answer is `not_serving`, and so is every
    /// request after it.
    fn held_after<R>(&self, answer: StoreResult<R>) -> StoreResult<R> {
        if !matches!(answer, Err(StoreError::Busy)) {
            return answer;
        }
        match self.connections().serving.alive() {
            Err(StoreError::NotServing) => {
                self.lost.store(true, Ordering::SeqCst);
                Err(StoreError::NotServing)
            }
            Err(StoreError::NotAnswering(limit)) => Err(StoreError::NotAnswering(limit)),
            _ => answer,
        }
    }

    fn write_once<R>(&self, work: &dyn Fn(&dyn Tx) -> (bool, R)) -> StoreResult<R> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(StoreError::NotServing);
        }
        let _in_flight = self.in_flight.enter();
        // Dropped after the commit or rollback (`store/claim_switch.rs`).
        let turned = self.switch.turned();
        let mut conn = self.connection()?;
        conn.begin("BEGIN");
        let now = self.clock.now();
        let settled = self.settled();
        let tx = PgTx::new(&mut conn, now, &self.mark, &self.ids).turning(&turned);
        let locking = Locking::Rows(&self.families, self.lock_wait);
        let cached = CachedTx::new(&tx, &self.cache, locking).notifying(&self.subscribed);
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let (keep, answer) = work(&cached);
            match cached.write_outbox() {
                Ok(()) => (keep, answer),
                Err(error) => {
                    // The transaction keeps the failure (`PgTx::failed`): it rolls back.
                    tracing::error!("cannot write the outbox of notifications: {error}");
                    (false, answer)
                }
            }
        }));
        let finished = cached.finish();
        if matches!(ran, Ok((true, _))) {
            // The writes that waited; an error is kept as the transaction's.
            let _ = tx.flush();
        }
        let (failed, opened, claims) = (tx.failed(), tx.opened(), tx.written_claims());
        drop(tx);
        let ended = match (&ran, &failed) {
            (Ok((true, _)), None) => self.commit(&mut conn),
            _ => conn.end("ROLLBACK", true),
        };
        if ended.is_ok() && matches!((&ran, &failed), (Ok((true, _)), None)) {
            // Published before the families are given back: the next holder of a
            // family reads what this transaction committed.
            if finished.clear || !self.keeps(settled) {
                self.cache.clear();
                self.claims.clear();
            } else {
                self.cache.forget(&finished.forget);
                self.cache.publish(finished.changed);
                self.claims.publish(claims);
            }
        }
        self.families.give_back(&finished.tops);
        let tried = matches!((&ran, &failed), (Ok((true, _)), None));
        if self.ended(tried, &ended, opened, &conn) {
            turned.outcome_unknown();
        }
        if let Some(error) = failed {
            return Err(error);
        }
        let (keep, answer) = ran.map_err(|_| {
            tracing::error!("a request panicked; its transaction was rolled back");
            StoreError::Database("the request failed unexpectedly".into())
        })?;
        ended?;
        if keep {
            self.commits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(answer)
    }

    /// After a transaction on `conn` ended with `ended`: a lost fence loses the
    /// database; a commit (`tried`) that got no answer (a passed deadline, a
    /// connection that ended) may land once the server hears it, so the facts kept
    /// of any token and of claims may be out of date, and its rows may still commit
    /// (it is unsettled until its session ends, `Inner::settle`: the feed's mark
    /// waits below its ledger rows, from `opened` on, and writes take their row
    /// locks, `Inner::settled`); otherwise `opened` is closed. Whether the commit's
    /// outcome is unknown.
    fn ended(
        &self,
        tried: bool,
        ended: &StoreResult<()>,
        opened: Option<Opened>,
        conn: &PgConn,
    ) -> bool {
        if matches!(ended, Err(StoreError::NotServing)) {
            self.lost.store(true, Ordering::SeqCst);
        }
        let unknown = tried
            && match ended {
                Err(StoreError::NotAnswering(_)) => true,
                Err(StoreError::Busy) => conn.is_closed(),
                _ => false,
            };
        if unknown {
            let mut unsettled = self.lock_unsettled();
            unsettled.sessions.push((opened, conn.session().clone()));
            unsettled.registered += 1;
            drop(unsettled);
            self.cache.clear();
            self.claims.clear();
        } else if let Some(opened) = opened {
            self.mark.close(opened);
        }
        unknown
    }

    /// Whether a write that began when [`Inner::settled`] said `at_start` may keep
    /// the facts it read, now that it committed.
    fn keeps(&self, at_start: Option<u64>) -> bool {
        at_start.is_some() && self.settled() == at_start
    }

    /// The fence and the commit, as one text of statements.
    fn fence_and_commit(&self) -> String {
        format!("SELECT stateous_fence({}); COMMIT", self.epoch)
    }

    /// The fence and the commit, in one round trip. A failed fence leaves the
    /// transaction aborted: it is rolled back.
    fn commit(&self, conn: &mut PgConn) -> StoreResult<()> {
        let committed = conn.end(&self.fence_and_commit(), false);
        if committed.is_err() {
            let _ = conn.end("ROLLBACK", true);
        }
        committed
    }

    fn read<R>(&self, now: i64, read: impl FnOnce(&dyn Tx) -> StoreResult<R>) -> StoreResult<R> {
        let mut conn = self.connection()?;
        conn.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        let tx = PgTx::new(&mut conn, now, &self.mark, &self.ids);
        let result = read(&tx);
        drop(tx);
        let ended = conn.end("COMMIT", true);
        let value = result?;
        ended?;
        Ok(value)
    }
}

/// Run one step on the lock's connection before the pool exists, in its own
/// transaction.
fn once<R>(
    conn: &mut PgConn,
    now: i64,
    step: impl FnOnce(&dyn Tx) -> StoreResult<R>,
) -> StoreResult<R> {
    conn.batch("BEGIN")?;
    let mark = FeedMark::new(0);
    let ids = Sequences::default();
    let tx = PgTx::new(conn, now, &mark, &ids);
    let result = step(&tx);
    let _ = tx.flush();
    let failed = tx.failed();
    drop(tx);
    match (result, failed) {
        (Ok(value), None) => {
            conn.batch("COMMIT")?;
            Ok(value)
        }
        (Err(error), _) | (Ok(_), Some(error)) => {
            let _ = conn.batch("ROLLBACK");
            Err(error)
        }
    }
}

/// The sentence when another session holds the serving lock: the record says who.
fn held_by_another(conn: &mut PgConn) -> String {
    let mark = FeedMark::new(0);
    let row = {
        let ids = Sequences::default();
        let tx = PgTx::new(conn, 0, &mark, &ids);
        tx.control_plane().ok()
    };
    serving::held_sentence(&row.unwrap_or_default())
}

/// The sentence of a connection that failed. When the server answered (the
/// database does not exist, the role or its password is refused), that answer is
/// the sentence: "cannot reach" would send the operator looking for an outage.
/// Only when no answer came is the database unreachable.
fn not_connected(shown: &str, error: &Unconnected) -> String {
    let error = match error {
        Unconnected::Failed(error) => error,
        other => return format!("cannot reach the database {shown}: {other}"),
    };
    match error.as_db_error() {
        Some(answer) if *answer.code() == SqlState::INVALID_CATALOG_NAME => format!(
            "the server of {shown} answered that the database does not exist ({}); \
             create it first",
            answer.message()
        ),
        Some(answer) => format!(
            "the server of {shown} refused the connection: {}",
            answer.message()
        ),
        None => format!("cannot reach the database {shown}: {}", reason(error)),
    }
}

/// A connection error's reason in a few words.
fn reason(error: &tokio_postgres::Error) -> String {
    let text = error.to_string();
    let source = std::error::Error::source(error).map(|s| s.to_string());
    match source {
        Some(source) if !text.contains(&source) => format!("{text}: {source}"),
        _ => text,
    }
}
