//! The Postgres write path: one thread, the writer, runs the requests that wait in
//! one transaction (a batch), sends all their rows in one statement, checks the
//! fence and commits once, then answers them all, as SQLite's writer does
//! (`sqlite/writer.rs`). This control plane is the one writer of the database (the
//! serving lock and the epoch fence, `docs/guarantees.md`), so a batch needs no row
//! locks: each family a request changes is taken in this process only
//! ([`Locking::Batch`]), and the facts the write path knows (`store/facts.rs`) answer
//! most reads.
//!
//! A request that cannot finish in the batch runs again alone, in a transaction of
//! its own on the pool (`Inner::write`, with the database's row locks and the whole
//! lock limit), and is answered from there:
//! - one that must wait for a family another transaction of this process holds;
//! - every request of a batch that failed where one request alone may be the cause:
//!   a row held by another session past the batch's short lock limit, text Postgres
//!   cannot keep, a conflict, or a refused request whose writes had reached the
//!   server already (only a rollback takes those back).
//!
//! A batch that failed because the server does not answer, its connection ended or
//! this control plane no longer holds the database answers every request with that.
//!
//! A commit that got no answer may still land later (`Inner::settled`): until the
//! server's session that sent it has ended, every request runs alone, so that it
//! waits for that commit's row locks instead of reading the rows as they were.

use std::cell::RefCell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use foldhash::HashSet as FastSet;
use tokio::runtime::Handle;

use super::{Inner, PgTx};
use crate::store::cached_tx::outboxed;
use crate::store::cached_tx::{BatchLocks, CachedTx, Locking};
use crate::store::facts::Overlay;
use crate::store::request::{self, next_batch, Request, Waiting};
use crate::store::{StoreError, StoreResult, Tx};

/// How many waiting requests one transaction takes at most, so that one commit
/// never holds answers back for long.
const MOST_IN_ONE_COMMIT: usize = 128;

/// How many requests may wait for the writer at most: overload answers 503
/// `database_busy` at once instead of growing the queue without end.
const MOST_WAITING: usize = 16_384;

/// A batch's transaction: how long one of its statements waits for a row another
/// session holds before the batch gives up and its requests run alone, each with
/// the whole lock limit (the rest of the batch must not wait that long); and
/// each statement run with the one plan Postgres keeps for it (a generic plan,
/// the plan `plan_tests.rs` checks), never planned again for its parameters.
/// Left to itself, Postgres planned every flush that wrote notifications anew
/// (`pg_stat_statements`: as many plans as runs, a sixth of the flush's time
/// on the server, under `stateous bench` with a subscription to every entry),
/// since it estimated that statement's generic plan dearer than a custom one.
const BEGIN: &str =
    "BEGIN; SET LOCAL lock_timeout = '50ms'; SET LOCAL plan_cache_mode = force_generic_plan";

/// [`BEGIN`], then the slots' lock (`claim_limits::SLOTS_LOCK`), for a batch that
/// starts from an earlier batch's slot book (`slot_book.rs`): its claims then
/// ask for no lock of their own, and no write waits to be sent before it.
const BEGIN_LOCKING_SLOTS: &str = "BEGIN; SET LOCAL lock_timeout = '50ms'; \
     SET LOCAL plan_cache_mode = force_generic_plan; \
     SELECT pg_advisory_xact_lock(hashtextextended('@stateous/slots', 0))";

/// A request of a batch, which can also run again alone.
trait Batched: Request {
    /// Run again in a transaction of its own on the pool, and answer from there.
    fn alone(self: Box<Self>, inner: Arc<Inner>);
}

/// Where a request that runs alone gets a blocking thread; `None` outside a
/// runtime (a thread of its own then).
type Runtime = Option<Handle>;

impl<R, F> Batched for Waiting<R, F, Runtime>
where
    R: Send + 'static,
    F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
{
    fn alone(self: Box<Self>, inner: Arc<Inner>) {
        let (work, answer, runtime) = self.into_parts();
        let run = move || {
            let _ = answer.send(inner.write(&work));
        };
        match runtime {
            Some(runtime) => drop(runtime.spawn_blocking(run)),
            None => {
                if let Err(error) = std::thread::Builder::new()
                    .name("stateous-alone".into())
                    .spawn(run)
                {
                    tracing::error!("cannot start a thread for a request: {error}");
                }
            }
        }
    }
}

/// A queued request, the token it is about (if the caller said), and the moment
/// it stops waiting for the writer.
struct Job {
    request: Box<dyn Batched>,
    about: Option<String>,
    deadline: Instant,
}

/// A cheap, cloneable handle to the writer thread; the thread stops when every
/// handle is dropped.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::SyncSender<Job>,
    /// How long a request may wait for the writer (the lock limit).
    patience: Duration,
}

impl Writer {
    /// Start the writer thread over `inner`'s pool.
    pub fn spawn(inner: Arc<Inner>) -> std::io::Result<Writer> {
        let (jobs, queue) = mpsc::sync_channel::<Job>(MOST_WAITING);
        let patience = inner.lock_wait.max(Duration::from_millis(100));
        std::thread::Builder::new()
            .name("stateous-writer".into())
            .spawn(move || {
                while let Some(batch) = next_batch(&queue, MOST_IN_ONE_COMMIT) {
                    run_batch(&inner, batch);
                }
            })?;
        Ok(Writer { jobs, patience })
    }

    /// Queue `work` for the next batch and return the future of its answer (so
    /// that a caller can queue many requests before it waits for the first).
    /// `work` returns whether to keep its changes and its answer; the answer comes
    /// after the commit. [`MOST_WAITING`] requests already waiting: `Busy`.
    pub fn submit<R, F>(
        &self,
        about: Option<String>,
        work: F,
    ) -> impl Future<Output = StoreResult<R>> + Send + 'static
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        let (request, answered) = Waiting::new(work, Handle::try_current().ok());
        let job = Job {
            request: Box::new(request),
            about,
            deadline: Instant::now() + self.patience,
        };
        request::answer(request::queued(self.jobs.try_send(job)), answered)
    }
}

/// How a batch ended before its commit.
enum Outcome {
    /// Every request ran; the batch may commit.
    Ran,
    /// Each request runs again alone.
    Alone,
    /// Every request is answered this error.
    Refused(StoreError),
}

/// Run `batch` in one transaction, commit it, answer every request.
fn run_batch(inner: &Arc<Inner>, batch: Vec<Job>) {
    let now = Instant::now();
    let (late, batch): (Vec<Job>, Vec<Job>) =
        batch.into_iter().partition(|job| job.deadline <= now);
    for job in late {
        job.request.refuse(inner.waited_too_long());
    }
    if batch.is_empty() {
        return;
    }
    // The tokens the requests are about whose facts the write path does not know:
    // their rows are read in one statement, with the batch's `BEGIN`.
    let about: Vec<String> = batch
        .iter()
        .filter_map(|job| job.about.clone())
        .filter(|token| !inner.cache.knows(token))
        .collect();
    let mut requests: Vec<Box<dyn Batched>> = batch.into_iter().map(|job| job.request).collect();
    if inner.lost.load(Ordering::SeqCst) {
        return refuse_all(requests, &StoreError::NotServing);
    }
    // A commit that got no answer may still land: its rows hold no lock yet, so
    // a batch would read them as they were before it. Each request runs alone,
    // with its rows' locks, until it settled.
    let settled = inner.settled();
    if settled.is_none() {
        for request in requests {
            request.alone(Arc::clone(inner));
        }
        return;
    }
    let mut conn = match inner.connection() {
        Ok(conn) => conn,
        Err(error) => {
            let error = inner
                .held_after::<()>(Err(error))
                .err()
                .unwrap_or(StoreError::Busy);
            return refuse_all(requests, &error);
        }
    };
    let _in_flight = inner.in_flight.enter();
    // The slot book the last committed batch left, if no transaction of its own
    // began or ran since that batch began.
    let quiet = inner.solo.quiet();
    let kept = quiet.and_then(|mark| inner.books.take(mark));
    conn.begin(if kept.is_some() {
        BEGIN_LOCKING_SLOTS
    } else {
        BEGIN
    });
    let overlay = Overlay::new(&inner.cache);
    let locks = BatchLocks {
        families: &inner.families,
        held: RefCell::new(FastSet::default()),
        solo: &inner.solo,
        mark: inner.solo.began(),
    };
    // Which requests run alone after the batch (they had to wait for a family).
    let mut contended = vec![false; requests.len()];
    // Dropped after the commit or rollback (`store/claim_switch.rs`).
    let turned = inner.switch.turned();
    let tx = PgTx::new(&mut conn, inner.clock.now(), &inner.mark, &inner.ids)
        .for_batch(&inner.claims, &inner.solo, quiet, kept)
        .turning(&turned);
    let mut outcome = Outcome::Ran;
    if !about.is_empty() {
        if let Err(error) = tx.read_ahead(&about, locks.mark) {
            outcome = after_failure(error);
        }
    }
    for (index, request) in requests.iter_mut().enumerate() {
        if !matches!(outcome, Outcome::Ran) {
            break;
        }
        tx.begin_request(inner.clock.now());
        let cached =
            CachedTx::new(&tx, &overlay, Locking::Batch(&locks)).notifying(&inner.subscribed);
        let ran = catch_unwind(AssertUnwindSafe(|| {
            request.run(&cached) && outboxed(&cached, request.as_mut())
        }));
        let mut finished = cached.finish();
        locks
            .held
            .borrow_mut()
            .extend(std::mem::take(&mut finished.tops));
        if let Some(error) = tx.failed() {
            outcome = after_failure(error);
            break;
        }
        let keep = match ran {
            Ok(keep) => keep && !finished.contended,
            Err(_) => {
                tracing::error!("a request panicked inside the writer; its changes were dropped");
                request.forget();
                false
            }
        };
        if keep {
            tx.keep_request();
            overlay.keep(finished);
            continue;
        }
        if finished.contended {
            request.forget();
            contended[index] = true;
        }
        if !tx.drop_request() {
            // Its writes reached the server: only a rollback takes them back.
            outcome = Outcome::Alone;
            break;
        }
    }
    // The rows of every kept request in one statement, then the fence and the
    // commit, in one round trip.
    let ended = match outcome {
        Outcome::Ran => match tx.flush_and_end(&inner.fence_and_commit()) {
            Ok(ended) => Some(ended),
            Err(error) => {
                outcome = after_failure(error);
                None
            }
        },
        _ => None,
    };
    let (opened, claims, book) = (tx.opened(), tx.written_claims(), tx.slots_to_keep());
    drop(tx);
    let ended = match ended {
        Some(Ok(())) => Ok(()),
        Some(Err(error)) => {
            // A failed fence leaves the transaction aborted: it is rolled back.
            let _ = conn.end("ROLLBACK", true);
            Err(error)
        }
        None => conn.end("ROLLBACK", true),
    };
    let committed = matches!(outcome, Outcome::Ran) && ended.is_ok();
    if committed {
        // Published before the families are given back: the next holder of a
        // family reads what this batch committed.
        if inner.keeps(settled) {
            overlay.publish();
            inner.claims.publish(claims);
            inner.books.put(book);
        } else {
            inner.cache.clear();
            inner.claims.clear();
        }
        inner.commits.fetch_add(1, Ordering::Relaxed);
    }
    inner.families.give_back(locks.held.borrow().iter());
    if inner.ended(matches!(outcome, Outcome::Ran), &ended, opened, &conn) {
        turned.outcome_unknown();
    }
    drop(conn);
    drop(turned);
    let (mut batch, mut runs_alone) = (Vec::new(), Vec::new());
    for (request, contended) in requests.into_iter().zip(contended) {
        if contended {
            runs_alone.push(request);
        } else {
            batch.push(request);
        }
    }
    match outcome {
        Outcome::Ran => {
            let answer = ended.map_err(|error| {
                inner
                    .held_after::<()>(Err(error))
                    .err()
                    .unwrap_or(StoreError::Busy)
            });
            for request in batch {
                request.deliver(answer.clone());
            }
        }
        Outcome::Alone => runs_alone.append(&mut batch),
        Outcome::Refused(error) => {
            let error = inner
                .held_after::<()>(Err(error))
                .err()
                .unwrap_or(StoreError::Busy);
            refuse_all(batch, &error);
        }
    }
    for request in runs_alone {
        request.alone(Arc::clone(inner));
    }
}

/// What a statement's failure means for the batch: an error that every request
/// alone would meet too is every request's answer; any other may be one
/// request's doing, and each runs alone.
fn after_failure(error: StoreError) -> Outcome {
    match error {
        StoreError::NotAnswering(_) | StoreError::NotServing | StoreError::DiskFull => {
            Outcome::Refused(error)
        }
        _ => Outcome::Alone,
    }
}

fn refuse_all(requests: Vec<Box<dyn Batched>>, error: &StoreError) {
    for request in requests {
        request.refuse(error.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::notifications::WaitingNotification;
    use crate::store::postgres::claim_limits::SLOTS_LOCK;
    use crate::store::postgres::pending::Pending;
    use crate::store::postgres::plan_tests::new_database;
    use crate::store::rows::LedgerRow;
    use crate::testing::PgTestDb;

    /// A batch's flush that writes notifications runs with the plan Postgres
    /// keeps, as every other flush does. Left to choose, Postgres planned it
    /// anew at every run, each plan for the parameters of that run.
    #[test]
    fn a_batch_flushes_notifications_with_the_kept_plan_not_a_new_one_each_time() {
        let Some(db) = PgTestDb::create() else {
            return;
        };
        std::thread::spawn(move || {
            let mut conn = new_database(&db, 0);
            // As a control plane's sessions are: Postgres chooses the plans.
            conn.batch(
                "SET plan_cache_mode = auto;
                 INSERT INTO subscriptions (name, url, kinds, states, format, status,
                                            secrets, created_at, changed_at)
                 VALUES ('all', 'http://127.0.0.1:9/', '[]', '[]', 'json', 'active',
                         '[]', 0, 0)",
            )
            .unwrap();
            const RUNS: i64 = 12;
            for run in 0..RUNS {
                let mut pending = Pending::default();
                for entry in 0..40 {
                    let (id, token) = (run * 40 + entry + 1, format!("T-{run}-{entry}"));
                    pending.ledger.push(LedgerRow {
                        id,
                        token: token.clone(),
                        seq: 1,
                        at: id,
                        kind: "started".into(),
                        key: None,
                        data: Default::default(),
                        by: None,
                    });
                    pending.notifications.push(WaitingNotification {
                        subscription: "all".into(),
                        entry: Some(id),
                        token,
                        kind: "started".into(),
                        state: None,
                        visit: None,
                        at: id,
                    });
                }
                conn.begin(BEGIN);
                pending
                    .send(|sql, params| conn.execute(sql, params))
                    .unwrap();
                conn.end("COMMIT", false).unwrap();
            }
            let plans = conn
                .texts(
                    "SELECT custom_plans || ' custom, ' || generic_plans || ' kept'
                     FROM pg_prepared_statements WHERE statement LIKE '%notification_batches%'",
                )
                .unwrap();
            assert_eq!(plans, [format!("0 custom, {RUNS} kept")]);
            let batches = conn
                .texts("SELECT count(*) FROM notification_batches")
                .unwrap();
            assert_eq!(batches, [RUNS.to_string()]);
        })
        .join()
        .unwrap();
    }

    /// The lock a kept slot book's batch asks for in its `BEGIN` is the slots'
    /// lock that claims and limit changes take.
    #[test]
    fn a_batch_that_starts_from_a_kept_book_begins_with_the_slots_lock() {
        assert!(BEGIN_LOCKING_SLOTS.starts_with(BEGIN));
        assert!(BEGIN_LOCKING_SLOTS.ends_with(&format!("pg_advisory_xact_lock({SLOTS_LOCK})")));
    }
}
