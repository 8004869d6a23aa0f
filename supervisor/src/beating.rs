//! The heartbeat loop and the watch loop: how a supervisor learns that a task it
//! runs is no longer its own (`docs/guarantees.md`, "Stops: graceful and crash",
//! a lost task; `docs/inside/workflows.md`, "Heartbeat").
//!
//! The heartbeat names every running task with the attempt it runs. Its period is
//! the configured `heartbeat`, or a third of the shortest lease the control plane
//! granted for a running task when that is shorter, so a lease shorter than the
//! configured heartbeat is still renewed twice before it ends. The watch loop
//! follows the control plane's `GET /watch` stream and, when a held task ends
//! there (the token moved on, was cancelled, timed out, or the lease ended), asks
//! for a heartbeat at once: its answer names the lost attempts exactly, and their
//! routines stop within about a second instead of a heartbeat later. A control
//! plane without `/watch` (the reference's answers 404) leaves the heartbeat alone
//! to find them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stateous_client::{Followed, Follower, WatchEntry};
use tokio::time::Instant;

use crate::api::CallError;
use crate::log_line;
use crate::supervisor::{Core, Running};

/// The ledger entries that end a task's attempt.
const ENDS: [&str; 3] = ["task_done", "task_failed", "task_cancelled"];
/// The ledger entry of a budget crossed, which names the tasks it stopped.
const STOPPED_OVER_BUDGET: &str = "budget_exceeded";
/// The shortest period, whatever lease is granted: no heartbeat storm.
const MIN_PERIOD: Duration = Duration::from_millis(10);

impl Core {
    /// The time between two heartbeats now: the configured heartbeat, or a third
    /// of the shortest granted lease of a running task when that is shorter.
    pub(crate) fn period(&self) -> Duration {
        self.running_list()
            .iter()
            .filter_map(|running| running.lease)
            .map(|lease| (lease / 3).max(MIN_PERIOD))
            .fold(self.timings.heartbeat, Duration::min)
    }

    /// Beat every period, at once when the watch loop asks, and again sooner
    /// when a new grant shortens the period.
    pub(crate) async fn beat_forever(self: Arc<Core>) {
        let mut last = Instant::now();
        loop {
            let due = last + self.period();
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = self.beat_now.notified() => {}
                _ = self.repace.notified() => continue,
            }
            last = Instant::now();
            self.beat().await;
        }
    }

    /// One heartbeat for the running tasks not yet lost; the routines of the
    /// attempts it answers lost are stopped.
    async fn beat(self: &Arc<Core>) {
        let held: Vec<Arc<Running>> = self
            .running_list()
            .into_iter()
            .filter(|r| !r.lost.load(Ordering::SeqCst))
            .collect();
        if held.is_empty() {
            return;
        }
        let mut named: BTreeMap<i64, i64> = BTreeMap::new();
        for running in &held {
            let attempt = named.entry(running.grant.task).or_default();
            *attempt = (*attempt).max(running.grant.attempt);
        }
        match self
            .api
            .heartbeat(&self.name, &named, self.depth(), None)
            .await
        {
            Ok(lost) => {
                for running in held.iter().filter(|r| lost.contains(&r.grant.task)) {
                    self.lose(running);
                }
            }
            Err(CallError::Refused { message, .. }) => {
                log_line!("the control plane refused a heartbeat: {message}");
            }
            Err(CallError::GaveUp) => {}
        }
    }

    /// The control plane took the task of `running` back: stop its routine now
    /// (SIGTERM to its group, SIGKILL after the grace), and drop every message of
    /// its attempt from the outbox, sent or not. Nothing once its report is on
    /// its way, or when it is lost already.
    pub(crate) fn lose(self: &Arc<Core>, running: &Arc<Running>) {
        if running.reporting.load(Ordering::SeqCst) || running.lost.swap(true, Ordering::SeqCst) {
            return;
        }
        log_line!(
            "task {} of {}: the control plane took attempt {} back; stopping its routine",
            running.grant.task,
            running.grant.token,
            running.grant.attempt
        );
        running.kill.set();
        let (core, task, attempt) = (self.clone(), running.grant.task, running.grant.attempt);
        tokio::spawn(async move { core.drop_messages(task, attempt).await });
    }

    /// Remove every message of one attempt from the outbox.
    pub(crate) async fn drop_messages(&self, task: i64, attempt: i64) {
        if let Err(e) = self.outbox_do(move |o| o.drop_attempt(task, attempt)).await {
            log_line!("task {task}: cannot drop its messages from the outbox: {e}");
        }
    }

    /// Follow `GET /watch` for as long as the supervisor runs, resuming after the
    /// last event seen when the stream breaks; return when the control plane has
    /// no such stream.
    pub(crate) async fn watch_forever(self: Arc<Core>) {
        let client = self.api.client().clone();
        let mut follower = Follower::new(client, None, self.api.backoff().clone());
        loop {
            match follower.next().await {
                Followed::Unopened(error) if error.status() == Some(404) => {
                    log_line!(
                        "the control plane at {} has no /watch stream; a routine whose task \
                         ended is stopped at the next heartbeat",
                        self.api.url()
                    );
                    return;
                }
                Followed::Event(event) => {
                    if let Some(entry) = event.entry() {
                        self.heard(&entry);
                    }
                }
                // The claim loop and the heartbeat say when the control plane
                // cannot be reached; this loop only tries again, quietly.
                Followed::Opened | Followed::Broke | Followed::Unopened(_) => {}
            }
        }
    }

    /// An entry of the stream: a held task's end asks for a heartbeat now; so does
    /// a budget crossed that stopped a held task (ours, `budget_exceeded`, whose
    /// `stopped` lists the tasks).
    fn heard(&self, entry: &WatchEntry) {
        let data = &entry.entry.data;
        let tasks: Vec<i64> = match entry.entry.kind.as_str() {
            kind if ENDS.contains(&kind) => data
                .get("task")
                .and_then(Value::as_i64)
                .into_iter()
                .collect(),
            STOPPED_OVER_BUDGET => data
                .get("stopped")
                .and_then(Value::as_array)
                .map(|list| list.iter().filter_map(|one| one["task"].as_i64()).collect())
                .unwrap_or_default(),
            _ => return,
        };
        let held = self.running_list().into_iter().any(|running| {
            tasks.contains(&running.grant.task)
                && !running.lost.load(Ordering::SeqCst)
                && !running.reporting.load(Ordering::SeqCst)
        });
        if held {
            self.beat_now.notify_one();
        }
    }
}
