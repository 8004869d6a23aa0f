//! The SQLite write path: one thread owns the write connection. Requests queue on a
//! channel; the thread takes all that are waiting, runs them in one transaction,
//! commits once, then answers them all (group commit). A request that fails rolls back
//! only its own changes.
//!
//! How a failed request's changes go without the others': the batch runs under one
//! SAVEPOINT, each request straight on the transaction. Nearly every refusal is decided
//! before the request writes, so it has nothing to undo (the connection's count of
//! changed rows did not move). Only when a request that wrote is refused or panics does
//! the batch roll back to its savepoint and run again, each request in a savepoint of
//! its own (requests are re-runnable, `Store::write`). A savepoint per request copied
//! every page a request touched into the sub-journal once per request (about a tenth of
//! the writer's instructions); one per batch copies each page once.
//!
//! Two checks guard each commit:
//! - the fence: inside the transaction, just before COMMIT, the recorded epoch must
//!   still be this control plane's, or nothing commits and every request of the
//!   batch answers `NotServing`;
//! - the busy limit: a request waits for another process's write lock only until
//!   its own deadline (its arrival plus the busy timeout), never a second timeout
//!   behind a batch that already waited.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::checkpointer::{self, Checkpointer};
use super::claims::{self, KnownClaims};
use super::SqliteTx;
use crate::notify::Subscribed;
use crate::store::cached_tx::outboxed;
use crate::store::cached_tx::{CachedTx, Locking};
use crate::store::claim_switch::{ClaimSwitch, Turned};
use crate::store::facts::{Cache, Overlay};
use crate::store::feed::FeedMark;
use crate::store::request::{self, next_batch, Request, Waiting};
use crate::store::{StoreError, StoreResult, Tx};
use crate::time_source::Clock;

/// How many waiting requests one transaction takes at most, so that one commit
/// never holds answers back for long.
const MOST_IN_ONE_COMMIT: usize = 512;

/// How many requests may wait for the writer at most (overload answers 503
/// `database_busy` at once instead of growing the queue, and its memory, without end).
/// At the writer's pace (a few thousand requests a second) the last of them waits a few
/// seconds.
pub const MOST_WAITING: usize = 16_384;

/// A request's deadline may pass by this much before it is refused: SQLite's busy
/// handler sleeps in steps.
const BUSY_MARGIN: Duration = Duration::from_millis(5);

/// A queued request and the moment it stops waiting for the write lock.
struct Job {
    request: Box<dyn Request>,
    deadline: Instant,
}

/// What the writer thread shares with its handles.
struct Shared {
    commits: AtomicU64,
    /// Batches run a second time, each request in its own savepoint.
    replays: AtomicU64,
    /// The epoch this control plane took; 0 before it took one (no fence yet).
    epoch: AtomicI64,
    /// Set once the fence failed: this control plane lost the database.
    lost: AtomicBool,
    mark: FeedMark,
    busy_timeout: Duration,
    /// What the write path knows of each token it changed (`store/facts.rs`).
    cache: Cache,
    /// The rows of `claims` the writer knows (`claims.rs`).
    claims: KnownClaims,
    /// The active subscriptions (`docs/notifications.md`).
    subscribed: Subscribed,
    /// The WAL's checkpoints, off this thread (`checkpointer.rs`); `None`: the
    /// connection's own.
    checkpoints: Option<Checkpointer>,
    /// Whether a limit, a priority or a retry pause may be set
    /// (`store/claim_switch.rs`): every fact on until the store's open loads it
    /// from the tables.
    switch: ClaimSwitch,
}

/// A cheap, cloneable handle to the writer thread.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::SyncSender<Job>,
    shared: Arc<Shared>,
}

impl Writer {
    /// Start the writer thread on `conn`, moving `mark` at each commit. It stops
    /// when every handle is dropped.
    pub fn spawn(
        conn: Connection,
        clock: Clock,
        busy_timeout: Duration,
        mark: FeedMark,
        subscribed: Subscribed,
    ) -> std::io::Result<(Writer, JoinHandle<()>)> {
        Writer::spawn_checkpointed(conn, clock, busy_timeout, mark, subscribed, None)
    }

    /// [`Writer::spawn`], the WAL checkpointed by `checkpoints` after commits
    /// instead of inside them (its own checkpoint only past
    /// [`checkpointer::WRITER_PAGES`]).
    pub fn spawn_checkpointed(
        conn: Connection,
        clock: Clock,
        busy_timeout: Duration,
        mark: FeedMark,
        subscribed: Subscribed,
        checkpoints: Option<Checkpointer>,
    ) -> std::io::Result<(Writer, JoinHandle<()>)> {
        if checkpoints.is_some() {
            conn.pragma_update(None, "wal_autocheckpoint", checkpointer::WRITER_PAGES)
                .map_err(std::io::Error::other)?;
        }
        let (jobs, queue) = mpsc::sync_channel::<Job>(MOST_WAITING);
        let shared = Arc::new(Shared {
            commits: AtomicU64::new(0),
            replays: AtomicU64::new(0),
            epoch: AtomicI64::new(0),
            lost: AtomicBool::new(false),
            mark,
            busy_timeout,
            cache: Cache::default(),
            claims: KnownClaims::default(),
            subscribed,
            checkpoints,
            switch: ClaimSwitch::with([true; 4]),
        });
        let inside = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("stateous-writer".into())
            .spawn(move || run(conn, clock, queue, &inside))?;
        Ok((Writer { jobs, shared }, thread))
    }

    /// Whether a limit, a priority or a retry pause may be set
    /// (`store/claim_switch.rs`).
    pub fn claim_switch(&self) -> &ClaimSwitch {
        &self.shared.switch
    }

    /// How many transactions the writer committed so far.
    pub fn commits(&self) -> u64 {
        self.shared.commits.load(Ordering::Relaxed)
    }

    /// How many batches ran a second time, each request in its own savepoint,
    /// because a request that wrote was refused or panicked.
    pub fn replays(&self) -> u64 {
        self.shared.replays.load(Ordering::Relaxed)
    }

    /// From now on, commit only while the recorded epoch is `epoch`.
    pub fn fence(&self, epoch: i64) {
        self.shared.epoch.store(epoch, Ordering::SeqCst);
    }

    /// True once a commit found another epoch on record.
    pub fn lost(&self) -> bool {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// Queue `work` to run in its own savepoint of the next group commit, at the
    /// writer's `now`, and return the future of its answer (so that a caller can
    /// queue many requests before it waits for the first). `work` returns whether to
    /// keep its changes and its answer; the answer comes after the commit. A failed
    /// commit answers its error instead; [`MOST_WAITING`] requests already waiting
    /// answer `StoreError::Busy` without running.
    pub fn submit<R, F>(&self, work: F) -> impl Future<Output = StoreResult<R>> + Send + 'static
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + 'static,
    {
        let (request, answered) = Waiting::new(work, ());
        let job = Job {
            request: Box::new(request),
            deadline: Instant::now() + self.shared.busy_timeout,
        };
        request::answer(request::queued(self.jobs.try_send(job)), answered)
    }
}

fn run(conn: Connection, clock: Clock, queue: mpsc::Receiver<Job>, shared: &Shared) {
    while let Some(batch) = next_batch(&queue, MOST_IN_ONE_COMMIT) {
        let Some(batch) = begin(&conn, batch) else {
            continue;
        };
        commit_batch(&conn, &clock, batch, shared);
    }
}

/// Open the transaction for `batch`, waiting for another process's write lock no
/// longer than the earliest deadline among its requests. A request whose deadline
/// passes is refused `Busy`; the others wait on. `None`: nothing is left to run.
fn begin(conn: &Connection, mut batch: Vec<Job>) -> Option<Vec<Job>> {
    loop {
        let now = Instant::now();
        let (late, waiting): (Vec<Job>, Vec<Job>) = batch
            .into_iter()
            .partition(|job| job.deadline <= now + BUSY_MARGIN);
        for job in late {
            job.request.refuse(StoreError::Busy);
        }
        batch = waiting;
        let earliest = batch.iter().map(|job| job.deadline).min()?;
        if let Err(error) = conn.busy_timeout(earliest.saturating_duration_since(now)) {
            refuse_all(batch, &StoreError::from(error));
            return None;
        }
        match control(conn, "BEGIN IMMEDIATE").map_err(StoreError::from) {
            Ok(()) => return Some(batch),
            Err(StoreError::Busy) => continue,
            Err(error) => {
                refuse_all(batch, &error);
                return None;
            }
        }
    }
}

fn refuse_all(batch: Vec<Job>, error: &StoreError) {
    for job in batch {
        job.request.refuse(error.clone());
    }
}

/// Run a batch in the open transaction, check the fence, commit, move the feed's
/// mark, then answer every request.
///
/// The batch runs straight on the transaction, with no savepoint: under one, SQLite
/// copies each page before its first change into a sub-journal, some 40 pages of 4 KiB
/// a batch of `orders` (callgrind: `memjrnlWrite`). Should a request that wrote be
/// refused, the whole transaction, which holds this batch only, is rolled back and
/// begun again, and the batch runs once more with a savepoint per request.
fn commit_batch(conn: &Connection, clock: &Clock, batch: Vec<Job>, shared: &Shared) {
    // Dropped after the commit or rollback (`store/claim_switch.rs`).
    let turned = shared.switch.turned();
    let mut requests: Vec<Box<dyn Request>> = batch.into_iter().map(|job| job.request).collect();
    let ran = match run_plain(conn, clock, &mut requests, shared, &turned) {
        Some(done) => Ok(done),
        None => {
            shared.replays.fetch_add(1, Ordering::Relaxed);
            control(conn, "ROLLBACK")
                .and_then(|()| control(conn, "BEGIN IMMEDIATE"))
                .map_err(StoreError::from)
                .map(|()| run_each_in_savepoint(conn, clock, &mut requests, shared, &turned))
        }
    };
    let committed = ran.and_then(|done| {
        fenced(conn, shared)?;
        control(conn, "COMMIT")?;
        Ok(done)
    });
    let answer = match committed {
        Ok((overlay, last_id, claims)) => {
            shared.commits.fetch_add(1, Ordering::Relaxed);
            if let Some(checkpoints) = &shared.checkpoints {
                checkpoints.nudge();
            }
            overlay.publish();
            shared.claims.publish(claims);
            if last_id > 0 {
                shared.mark.committed(last_id);
            }
            Ok(())
        }
        Err(error) => {
            if matches!(error, StoreError::NotServing) {
                shared.lost.store(true, Ordering::SeqCst);
            }
            let _ = control(conn, "ROLLBACK");
            Err(error)
        }
    };
    for request in requests {
        request.deliver(answer.clone());
    }
}

/// What a batch that ran keeps: the facts it changed, the last ledger id it wrote
/// and the `claims` rows it wrote.
type Ran<'c> = (Overlay<'c>, i64, claims::Changed);

/// Run every request straight on the transaction. `None` as soon as one that wrote
/// is refused or panics: its changes cannot be undone alone.
fn run_plain<'c>(
    conn: &Connection,
    clock: &Clock,
    requests: &mut [Box<dyn Request>],
    shared: &'c Shared,
    turned: &Turned<'_>,
) -> Option<Ran<'c>> {
    let overlay = Overlay::new(&shared.cache);
    let tx = SqliteTx::for_writer(conn, clock.now(), &shared.claims, turned);
    let mut last_id = 0;
    for request in requests.iter_mut() {
        let before = conn.total_changes();
        let keep = one_request(
            &tx,
            clock,
            request.as_mut(),
            &overlay,
            &mut last_id,
            &shared.subscribed,
        );
        if !keep && conn.total_changes() != before {
            return None;
        }
    }
    Some((overlay, last_id, tx.take_claims()))
}

/// Run every request in a savepoint of its own: a refused one rolls back alone.
fn run_each_in_savepoint<'c>(
    conn: &Connection,
    clock: &Clock,
    requests: &mut [Box<dyn Request>],
    shared: &'c Shared,
    turned: &Turned<'_>,
) -> Ran<'c> {
    let overlay = Overlay::new(&shared.cache);
    let tx = SqliteTx::for_writer(conn, clock.now(), &shared.claims, turned);
    let mut last_id = 0;
    for request in requests.iter_mut() {
        if let Err(error) = control(conn, "SAVEPOINT request") {
            tracing::error!("cannot open a savepoint: {error}");
        }
        if !one_request(
            &tx,
            clock,
            request.as_mut(),
            &overlay,
            &mut last_id,
            &shared.subscribed,
        ) {
            let _ = control(conn, "ROLLBACK TO request");
        }
        let _ = control(conn, "RELEASE request");
    }
    (overlay, last_id, tx.take_claims())
}

/// Run one request, raising `last_id` to the ledger ids it keeps and keeping the
/// facts it changed in the batch's overlay; whether its changes stay (false when
/// it was refused, or panicked: its answer is then forgotten).
fn one_request(
    tx: &SqliteTx<'_>,
    clock: &Clock,
    request: &mut dyn Request,
    overlay: &Overlay<'_>,
    last_id: &mut i64,
    subscribed: &Subscribed,
) -> bool {
    tx.next_request(clock.now());
    let cached = CachedTx::new(tx, overlay, Locking::Serial).notifying(subscribed);
    let ran = catch_unwind(AssertUnwindSafe(|| {
        request.run(&cached) && outboxed(&cached, request)
    }));
    let finished = cached.finish();
    let kept = match ran {
        Ok(true) => {
            *last_id = (*last_id).max(tx.last_id());
            overlay.keep(finished);
            true
        }
        Ok(false) => false,
        Err(_) => {
            tracing::error!("a request panicked inside the writer; its changes were rolled back");
            request.forget();
            false
        }
    };
    tx.request_done(kept);
    kept
}

/// Run one transaction-control statement from the statement cache: parsing
/// `SAVEPOINT` and `RELEASE` anew for every request cost the writer more than
/// some requests' own SQL.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The fence: the recorded epoch must be the one this control plane took.
fn fenced(conn: &Connection, shared: &Shared) -> StoreResult<()> {
    let mine = shared.epoch.load(Ordering::SeqCst);
    if mine == 0 {
        return Ok(());
    }
    let recorded: i64 = conn
        .prepare_cached("SELECT epoch FROM control_plane WHERE id = 1")?
        .query_row([], |row| row.get(0))?;
    if recorded != mine || shared.lost.load(Ordering::SeqCst) {
        return Err(StoreError::NotServing);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::sqlite::open;
    use crate::store::sqlite::schema::migrate;
    use crate::store::ClaimRow;

    fn writer(folder: &tempfile::TempDir) -> Writer {
        let path = folder.path().join("w.db");
        let conn = open(&path, Duration::from_secs(5), false).unwrap();
        migrate(&conn).unwrap();
        Writer::spawn(
            conn,
            Clock::manual(1_000_000),
            Duration::from_secs(5),
            FeedMark::new(0),
            Subscribed::default(),
        )
        .unwrap()
        .0
    }

    /// A request that holds the writer until `release` sends, once it runs: the
    /// requests submitted meanwhile wait behind it in one batch.
    fn blocked(
        writer: &Writer,
    ) -> (
        impl Future<Output = StoreResult<()>>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (started, wait_started) = std::sync::mpsc::channel::<()>();
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let blocker = writer.submit(move |_| {
            started.send(()).unwrap();
            gate.recv().unwrap();
            (true, ())
        });
        wait_started.recv().unwrap();
        (blocker, release)
    }

    fn row(tx: &dyn Tx, token: &str) -> i64 {
        let data = json!({"n": 1}).as_object().unwrap().clone();
        tx.append(token, crate::store::EntryKind::Note, None, &data)
            .unwrap()
    }

    #[tokio::test]
    async fn waiting_requests_commit_together_and_a_failed_one_rolls_back_alone() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        let (blocker, release) = blocked(&writer);
        let kept: Vec<_> = (0..50)
            .map(|_| writer.submit(|tx| (true, row(tx, "kept"))))
            .collect();
        let dropped = writer.submit(|tx| (false, row(tx, "dropped")));
        let panicked = writer.submit(|tx| -> (bool, i64) {
            row(tx, "panicked");
            panic!("a bug inside a request")
        });
        let last = writer.submit(|tx| (true, row(tx, "kept")));
        release.send(()).unwrap();
        blocker.await.unwrap();
        let mut seqs = Vec::new();
        for answer in kept {
            seqs.push(answer.await.unwrap());
        }
        assert_eq!(seqs, (1..=50).collect::<Vec<i64>>());
        assert_eq!(dropped.await.unwrap(), 1);
        assert!(panicked.await.is_err());
        assert_eq!(last.await.unwrap(), 51);
        // One commit for the blocker, one for everything that waited behind it,
        // which ran twice: two requests that wrote were refused.
        assert_eq!(writer.commits(), 2);
        assert_eq!(writer.replays(), 1);
        let counts = writer
            .submit(|tx| {
                let count = |t: &str| tx.entries(t).unwrap().len();
                (false, (count("kept"), count("dropped"), count("panicked")))
            })
            .await
            .unwrap();
        assert_eq!(counts, (51, 0, 0));
    }

    fn claim(supervisor: &str, request: &str) -> ClaimRow {
        ClaimRow {
            supervisor: supervisor.into(),
            request: request.into(),
            task_id: Some(7),
            attempt: Some(1),
        }
    }

    fn last(tx: &dyn Tx, supervisor: &str) -> Option<String> {
        tx.last_claim(supervisor).unwrap().map(|row| row.request)
    }

    #[tokio::test]
    async fn the_claims_the_writer_knows_are_those_kept_and_committed() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        let first = writer.submit(|tx| {
            tx.remember_claim(&claim("s", "r1")).unwrap();
            (true, ())
        });
        first.await.unwrap();
        let (blocker, release) = blocked(&writer);
        // One batch: a refused request that wrote (the batch runs again, each in a
        // savepoint), then requests that read what was kept before them.
        let seen_first = writer.submit(|tx| (true, last(tx, "s")));
        let refused = writer.submit(|tx| {
            tx.remember_claim(&claim("s", "r2")).unwrap();
            (false, last(tx, "s"))
        });
        let after_refused = writer.submit(|tx| (true, last(tx, "s")));
        let kept = writer.submit(|tx| {
            tx.remember_claim(&claim("s", "r3")).unwrap();
            (true, ())
        });
        let after_kept = writer.submit(|tx| (true, last(tx, "s")));
        release.send(()).unwrap();
        blocker.await.unwrap();
        assert_eq!(seen_first.await.unwrap().as_deref(), Some("r1"));
        assert_eq!(refused.await.unwrap().as_deref(), Some("r2"));
        assert_eq!(after_refused.await.unwrap().as_deref(), Some("r1"));
        kept.await.unwrap();
        assert_eq!(after_kept.await.unwrap().as_deref(), Some("r3"));
        assert_eq!(writer.replays(), 1);
        // The next batch, and the table itself, agree.
        let now = writer.submit(|tx| (true, last(tx, "s"))).await.unwrap();
        assert_eq!(now.as_deref(), Some("r3"));
        let conn = open(&folder.path().join("w.db"), Duration::from_secs(5), true).unwrap();
        let stored: String = conn
            .query_row(
                "SELECT request FROM claims WHERE supervisor = 's'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, "r3");
    }

    #[tokio::test]
    async fn a_batch_whose_epoch_is_no_longer_on_record_commits_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        writer.fence(1);
        writer
            .submit(|tx| (true, tx.next_epoch().unwrap()))
            .await
            .unwrap_or_else(|e| panic!("the first epoch commits: {e}"));
        let other = open(&folder.path().join("w.db"), Duration::from_secs(5), false).unwrap();
        other
            .execute("UPDATE control_plane SET epoch = 7", [])
            .unwrap();
        let refused = writer.submit(|tx| (true, row(tx, "late"))).await;
        assert!(
            matches!(refused, Err(StoreError::NotServing)),
            "{refused:?}"
        );
        assert!(writer.lost());
        let left: i64 = other
            .query_row("SELECT count(*) FROM ledger", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn a_full_queue_answers_busy_without_running_and_takes_requests_again_once_it_drains() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        let (blocker, release) = blocked(&writer);
        let waiting: Vec<_> = (0..MOST_WAITING)
            .map(|_| writer.submit(|tx| (true, row(tx, "waited"))))
            .collect();
        let refused = writer.submit(|tx| (true, row(tx, "refused"))).await;
        assert!(matches!(refused, Err(StoreError::Busy)), "{refused:?}");
        release.send(()).unwrap();
        blocker.await.unwrap();
        for answer in waiting {
            answer.await.unwrap();
        }
        let taken = writer.submit(|tx| (true, row(tx, "later"))).await.unwrap();
        assert_eq!(taken, 1);
        let counts = writer
            .submit(|tx| {
                (
                    false,
                    (
                        tx.entries("waited").unwrap().len(),
                        tx.entries("refused").unwrap().len(),
                    ),
                )
            })
            .await
            .unwrap();
        assert_eq!(counts, (MOST_WAITING, 0));
    }

    #[tokio::test]
    async fn a_batch_whose_refused_requests_wrote_nothing_runs_once() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        let (blocker, release) = blocked(&writer);
        let first = writer.submit(|tx| (true, row(tx, "kept")));
        let refused = writer.submit(|tx| (false, tx.entries("kept").unwrap().len()));
        let second = writer.submit(|tx| (true, row(tx, "kept")));
        release.send(()).unwrap();
        blocker.await.unwrap();
        assert_eq!(first.await.unwrap(), 1);
        assert_eq!(refused.await.unwrap(), 1, "it saw the request before it");
        assert_eq!(second.await.unwrap(), 2);
        assert_eq!(writer.commits(), 2);
        assert_eq!(writer.replays(), 0);
    }
}
