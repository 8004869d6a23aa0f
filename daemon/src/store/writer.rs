//! The write path: one thread owns the write connection. Requests queue on a
//! channel; the thread takes all that are waiting, runs each inside its own
//! SAVEPOINT of one transaction, commits once, then answers them all (group
//! commit, SPEC section 4). A request that fails rolls back only its savepoint.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::sqlite::SqliteTx;
use super::{StoreError, StoreResult};
use crate::clock::Clock;

/// How many waiting requests one transaction takes at most, so that one commit
/// never holds answers back for long.
const MOST_IN_ONE_COMMIT: usize = 512;

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
}

impl Writer {
    /// Start the writer thread on `conn`. It stops when every handle is dropped.
    pub fn spawn(conn: Connection, clock: Clock) -> std::io::Result<(Writer, JoinHandle<()>)> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("stateous-writer".into())
            .spawn(move || run(conn, clock, queue))?;
        Ok((Writer { jobs }, thread))
    }

    /// Run `work` in its own savepoint of the next group commit, at the writer's
    /// `now`. `work` returns whether to keep its changes and its answer; the answer
    /// comes back after the commit. A failed commit answers its error instead.
    pub async fn run<R, F>(&self, work: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&SqliteTx<'_>) -> (bool, R) + Send + 'static,
    {
        let (answer, answered) = oneshot::channel::<StoreResult<R>>();
        let job: Job = Box::new(Pending { work, answer });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Database("the writer thread stopped".into()))?;
        // A job that panicked drops its sender: say so, never hang.
        answered
            .await
            .map_err(|_| StoreError::Database("the request failed inside the writer".into()))?
    }
}

fn run(conn: Connection, clock: Clock, queue: mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MOST_IN_ONE_COMMIT {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit_batch(&conn, &clock, batch);
    }
}

fn commit_batch(conn: &Connection, clock: &Clock, batch: Vec<Job>) {
    if let Err(error) = conn.execute_batch("BEGIN IMMEDIATE") {
        let error = StoreError::from(error);
        // The jobs never ran; each answers the failure to begin.
        for job in batch {
            job.refuse(copy(&error));
        }
        return;
    }
    let mut delivers = Vec::with_capacity(batch.len());
    for job in batch {
        if let Some(deliver) = one_request(conn, clock, job) {
            delivers.push(deliver);
        }
    }
    let committed = conn.execute_batch("COMMIT").map_err(StoreError::from);
    if committed.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for deliver in delivers {
        deliver(match &committed {
            Ok(()) => Ok(()),
            Err(error) => Err(copy(error)),
        });
    }
}

/// Run one job in its savepoint; `None` when it panicked (its answer is dropped).
fn one_request(conn: &Connection, clock: &Clock, job: Job) -> Option<Deliver> {
    if let Err(error) = conn.execute_batch("SAVEPOINT request") {
        tracing::error!("cannot open a savepoint: {error}");
    }
    let tx = SqliteTx::new(conn, clock.now());
    let ran = catch_unwind(AssertUnwindSafe(|| job.run(&tx)));
    let keep = matches!(ran, Ok((true, _)));
    if !keep {
        let _ = conn.execute_batch("ROLLBACK TO request");
    }
    let _ = conn.execute_batch("RELEASE request");
    match ran {
        Ok((_, deliver)) => Some(deliver),
        Err(_) => {
            tracing::error!("a request panicked inside the writer; its changes were rolled back");
            None
        }
    }
}

fn copy(error: &StoreError) -> StoreError {
    match error {
        StoreError::Busy => StoreError::Busy,
        StoreError::Database(text) => StoreError::Database(text.clone()),
        StoreError::Corrupt(text) => StoreError::Corrupt(text.clone()),
    }
}
