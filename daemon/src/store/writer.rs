//! The write path: one thread owns the write connection. Requests queue on a
//! channel; the thread takes all that are waiting, runs each inside its own
//! SAVEPOINT of one transaction, commits once, then answers them all (group
//! commit, SPEC section 4). A request that fails rolls back only its savepoint.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::{broadcast, oneshot};

use super::sqlite::SqliteTx;
use super::{LedgerRow, StoreError, StoreResult};
use crate::clock::Clock;

/// How many waiting requests one transaction takes at most, so that one commit
/// never holds answers back for long.
const MOST_IN_ONE_COMMIT: usize = 512;

/// How many committed ledger rows a slow subscriber may fall behind before it is
/// told it lagged (it then reads the rest from the ledger by id).
const PUBLISHED_ROWS: usize = 8192;

/// Called after the commit with its result: it answers the request.
type Deliver = Box<dyn FnOnce(StoreResult<()>) + Send>;
/// A queued request.
type Job = Box<dyn Request>;

/// A request: it runs inside its savepoint and says whether to keep its changes,
/// or it is refused without running when the transaction cannot begin.
trait Request: Send {
    fn run(self: Box<Self>, tx: &SqliteTx<'_>) -> (bool, Deliver);
    fn refuse(self: Box<Self>, error: StoreError);
}

struct Pending<R, F> {
    work: F,
    answer: oneshot::Sender<StoreResult<R>>,
}

impl<R, F> Request for Pending<R, F>
where
    R: Send + 'static,
    F: FnOnce(&SqliteTx<'_>) -> (bool, R) + Send + 'static,
{
    fn run(self: Box<Self>, tx: &SqliteTx<'_>) -> (bool, Deliver) {
        let Pending { work, answer } = *self;
        let (keep, result) = work(tx);
        let deliver: Deliver = Box::new(move |committed| {
            let _ = answer.send(committed.map(|()| result));
        });
        (keep, deliver)
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.answer.send(Err(error));
    }
}

/// A cheap, cloneable handle to the writer thread.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
    commits: Arc<AtomicU64>,
    published: broadcast::Sender<Arc<LedgerRow>>,
}

impl Writer {
    /// Start the writer thread on `conn`. It stops when every handle is dropped.
    pub fn spawn(conn: Connection, clock: Clock) -> std::io::Result<(Writer, JoinHandle<()>)> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let commits = Arc::new(AtomicU64::new(0));
        let (published, _) = broadcast::channel(PUBLISHED_ROWS);
        let path = Path {
            commits: Arc::clone(&commits),
            published: published.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("stateous-writer".into())
            .spawn(move || run(conn, clock, queue, &path))?;
        Ok((
            Writer {
                jobs,
                commits,
                published,
            },
            thread,
        ))
    }

    /// Every ledger row from now on, each sent once its transaction committed.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LedgerRow>> {
        self.published.subscribe()
    }

    /// How many transactions the writer committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Run `work` in its own savepoint of the next group commit, at the writer's
    /// `now`. `work` returns whether to keep its changes and its answer; the answer
    /// comes back after the commit. A failed commit answers its error instead.
    pub async fn run<R, F>(&self, work: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&SqliteTx<'_>) -> (bool, R) + Send + 'static,
    {
        self.submit(work).await
    }

    /// Queue `work` now (as `run` does) and return the future of its answer, so
    /// that a caller can queue many requests before it waits for the first.
    pub fn submit<R, F>(&self, work: F) -> impl Future<Output = StoreResult<R>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&SqliteTx<'_>) -> (bool, R) + Send + 'static,
    {
        let (answer, answered) = oneshot::channel::<StoreResult<R>>();
        let job: Job = Box::new(Pending { work, answer });
        let sent = self.jobs.send(job).is_ok();
        async move {
            if !sent {
                return Err(StoreError::Database("the writer thread stopped".into()));
            }
            // A job that panicked drops its sender: say so, never hang.
            answered
                .await
                .map_err(|_| StoreError::Database("the request failed inside the writer".into()))?
        }
    }
}

/// What the writer thread reports to: the commit count and the watchers.
struct Path {
    commits: Arc<AtomicU64>,
    published: broadcast::Sender<Arc<LedgerRow>>,
}

fn run(conn: Connection, clock: Clock, queue: mpsc::Receiver<Job>, path: &Path) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MOST_IN_ONE_COMMIT {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit_batch(&conn, &clock, batch, path);
    }
}

/// Run a batch in one transaction, count the commit, publish its ledger rows, then
/// answer every request. Rows are published only after the commit.
fn commit_batch(conn: &Connection, clock: &Clock, batch: Vec<Job>, path: &Path) {
    if let Err(error) = control(conn, "BEGIN IMMEDIATE") {
        let error = StoreError::from(error);
        // The jobs never ran; each answers the failure to begin.
        for job in batch {
            job.refuse(copy(&error));
        }
        return;
    }
    let mut delivers = Vec::with_capacity(batch.len());
    let mut rows = Vec::new();
    for job in batch {
        if let Some(deliver) = one_request(conn, clock, job, &mut rows) {
            delivers.push(deliver);
        }
    }
    let committed = control(conn, "COMMIT").map_err(StoreError::from);
    if committed.is_err() {
        let _ = control(conn, "ROLLBACK");
    }
    if committed.is_ok() {
        path.commits.fetch_add(1, Ordering::Relaxed);
        for row in rows {
            // No subscriber is not an error: nobody watches.
            let _ = path.published.send(Arc::new(row));
        }
    }
    for deliver in delivers {
        deliver(match &committed {
            Ok(()) => Ok(()),
            Err(error) => Err(copy(error)),
        });
    }
}

/// Run one job in its savepoint, adding the ledger rows it keeps to `rows`; `None`
/// when it panicked (its answer is dropped).
fn one_request(
    conn: &Connection,
    clock: &Clock,
    job: Job,
    rows: &mut Vec<LedgerRow>,
) -> Option<Deliver> {
    if let Err(error) = control(conn, "SAVEPOINT request") {
        tracing::error!("cannot open a savepoint: {error}");
    }
    let tx = SqliteTx::new(conn, clock.now());
    let ran = catch_unwind(AssertUnwindSafe(|| job.run(&tx)));
    let keep = matches!(ran, Ok((true, _)));
    if keep {
        rows.extend(tx.take_appended());
    } else {
        let _ = control(conn, "ROLLBACK TO request");
    }
    let _ = control(conn, "RELEASE request");
    match ran {
        Ok((_, deliver)) => Some(deliver),
        Err(_) => {
            tracing::error!("a request panicked inside the writer; its changes were rolled back");
            None
        }
    }
}

/// Run one transaction-control statement from the statement cache: parsing
/// `SAVEPOINT` and `RELEASE` anew for every request cost the writer more than
/// some requests' own SQL.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

fn copy(error: &StoreError) -> StoreError {
    match error {
        StoreError::Busy => StoreError::Busy,
        StoreError::Database(text) => StoreError::Database(text.clone()),
        StoreError::Corrupt(text) => StoreError::Corrupt(text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::schema::migrate;
    use crate::store::sqlite::open;
    use crate::store::Ledger;

    fn writer(folder: &tempfile::TempDir) -> Writer {
        let path = folder.path().join("w.db");
        let conn = open(&path, std::time::Duration::from_secs(5), false).unwrap();
        migrate(&conn).unwrap();
        Writer::spawn(conn, Clock::manual(1_000_000)).unwrap().0
    }

    fn row(tx: &SqliteTx<'_>, token: &str) -> i64 {
        let data = json!({"n": 1}).as_object().unwrap().clone();
        tx.append(token, "note", None, &data).unwrap()
    }

    #[tokio::test]
    async fn waiting_requests_commit_together_and_a_failed_one_rolls_back_alone() {
        let folder = tempfile::tempdir().unwrap();
        let writer = writer(&folder);
        let (started, wait_started) = std::sync::mpsc::channel::<()>();
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let blocker = writer.submit(move |_| {
            started.send(()).unwrap();
            gate.recv().unwrap();
            (true, ())
        });
        wait_started.recv().unwrap();
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
        // One commit for the blocker, one for everything that waited behind it.
        assert_eq!(writer.commits(), 2);
        let counts = writer
            .submit(|tx| {
                let count = |t: &str| tx.entries(t).unwrap().len();
                (false, (count("kept"), count("dropped"), count("panicked")))
            })
            .await
            .unwrap();
        assert_eq!(counts, (51, 0, 0));
    }
}
