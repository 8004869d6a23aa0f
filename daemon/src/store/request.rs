//! A write request as both writer threads hold it (`sqlite/writer.rs`,
//! `postgres/store/writer.rs`): the work, run in a batch and perhaps run again, and
//! the channel of its answer, which waits for the batch's commit.

use std::sync::mpsc::{Receiver, TrySendError};

use tokio::sync::oneshot;

use super::{StoreError, StoreResult, Tx};

/// A request of a writer's batch: it runs and holds its answer until the commit;
/// or it is refused without running.
pub trait Request: Send {
    /// Run on `tx`; whether to keep what it wrote. The answer of the last run is
    /// held.
    fn run(&mut self, tx: &dyn Tx) -> bool;
    /// Forget the held answer (a run that panicked, or one that stands for
    /// nothing): its caller is told the request failed.
    fn forget(&mut self);
    /// Answer after the commit: the held answer, or the commit's error.
    fn deliver(self: Box<Self>, committed: StoreResult<()>);
    /// Answer `error` without running.
    fn refuse(self: Box<Self>, error: StoreError);
}

/// The work of a request (which returns whether to keep its changes, and its
/// answer), where its answer goes, and the answer of its last run; `extra` is
/// what a writer keeps beside (the Postgres writer: the runtime a request that
/// runs alone gets its thread from).
pub struct Waiting<R, F, E = ()> {
    work: F,
    answer: oneshot::Sender<StoreResult<R>>,
    result: Option<R>,
    pub extra: E,
}

impl<R, F, E> Waiting<R, F, E> {
    /// A request of `work`, and the receiver of its answer.
    pub fn new(work: F, extra: E) -> (Waiting<R, F, E>, oneshot::Receiver<StoreResult<R>>) {
        let (answer, answered) = oneshot::channel();
        let waiting = Waiting {
            work,
            answer,
            result: None,
            extra,
        };
        (waiting, answered)
    }

    /// Its work and where its answer goes, to run it elsewhere.
    pub fn into_parts(self) -> (F, oneshot::Sender<StoreResult<R>>, E) {
        (self.work, self.answer, self.extra)
    }
}

impl<R, F, E> Request for Waiting<R, F, E>
where
    R: Send + 'static,
    F: Fn(&dyn Tx) -> (bool, R) + Send + 'static,
    E: Send,
{
    fn run(&mut self, tx: &dyn Tx) -> bool {
        self.result = None;
        let (keep, result) = (self.work)(tx);
        self.result = Some(result);
        keep
    }

    fn forget(&mut self) {
        self.result = None;
    }

    fn deliver(self: Box<Self>, committed: StoreResult<()>) {
        // A request that panicked has no answer: dropping its sender says so.
        if let Some(result) = self.result {
            let _ = self.answer.send(committed.map(|()| result));
        }
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.answer.send(Err(error));
    }
}

/// Whether a writer's queue took a request: a full queue is `Busy` (overload is
/// answered at once), a writer that stopped is a database error.
pub fn queued<J>(sent: Result<(), TrySendError<J>>) -> StoreResult<()> {
    match sent {
        Ok(()) => Ok(()),
        Err(TrySendError::Full(_)) => Err(StoreError::Busy),
        Err(TrySendError::Disconnected(_)) => {
            Err(StoreError::Database("the writer thread stopped".into()))
        }
    }
}

/// The answer of a request that `queued` says was queued (or not): a request
/// that panicked in the writer drops its sender, and is answered so, never left
/// waiting.
pub async fn answer<R>(
    queued: StoreResult<()>,
    answered: oneshot::Receiver<StoreResult<R>>,
) -> StoreResult<R> {
    queued?;
    answered
        .await
        .map_err(|_| StoreError::Database("the request failed inside the writer".into()))?
}

/// The next batch of a writer: the first job that comes (`None` once every sender
/// is gone), then those that wait behind it, up to `most` in all.
pub fn next_batch<J>(queue: &Receiver<J>, most: usize) -> Option<Vec<J>> {
    let mut batch = vec![queue.recv().ok()?];
    while batch.len() < most {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    Some(batch)
}
