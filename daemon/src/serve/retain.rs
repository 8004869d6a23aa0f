//! Retention (`serve --retain-ended DURATION`, `docs/reference/cli.md`): about every
//! `--retain-every` it runs one pass of [`Control::retain`], which prunes the tokens
//! that ended longer ago than DURATION, a batch at a time with a pause between
//! batches, archiving each first with `--archive DIR`.
//!
//! The notifications' retention (`serve --notify-keep`, `docs/notifications.md`,
//! "Kept") runs as [`NotificationRetention`], always, at the same pace: one pass of
//! [`Control::retain_notifications`] about every `--retain-every`.
//!
//! A pass that fails is logged and the next one tries again; a lost database ends
//! the loop (the clock stops the server).

use std::future::Future;
use std::time::Duration;

use stateous_shared::durations::span;
use stateous_shared::refusal::{Code, Refusal};
use tokio::sync::watch;

use crate::control::notify_retain::NotifyRetainPass;
use crate::control::prune::RetainPass;
use crate::control::Control;

/// How many tokens one batch of a pass reads and prunes at most.
pub const BATCH: i64 = 100;

/// How many notifications one write of the notifications' retention reads by id
/// (and deletes at most).
pub const NOTIFY_WINDOW: i64 = 1000;

/// The pause between two batches of a pass: the write path serves others meanwhile.
pub const PAUSE: Duration = Duration::from_millis(50);

/// The retention loop: options, then [`Retention::run`].
pub struct Retention {
    /// The control plane it prunes.
    pub control: Control,
    /// What each pass prunes.
    pub pass: RetainPass,
    /// The time between the end of one pass and the start of the next.
    pub every: Duration,
}

impl Retention {
    /// Run passes until `stop` turns true; a pass in progress is dropped then (each
    /// family's write already sent commits whole or not at all).
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let age = span(self.pass.after.as_secs_f64());
        // What the last pass that pruned nothing left, as logged: the same again
        // (a token kept for now, pass after pass) is not logged again.
        let mut last_left = String::new();
        loop {
            let pass = || self.control.retain(&self.pass);
            let next = next_pass(self.every, &mut stop, "a retention pass", pass);
            let Some(retained) = next.await else { return };
            let left = retained.left_summary();
            let told = match (retained.pruned, left.is_empty()) {
                (0, true) => None,
                (0, false) if left == last_left => None,
                (0, false) => Some(format!(
                    "retention pruned no token that ended more than {age} ago; {left}"
                )),
                (pruned, true) => Some(format!(
                    "retention pruned {pruned} token(s) that ended more than {age} ago"
                )),
                (pruned, false) => Some(format!(
                    "retention pruned {pruned} token(s) that ended more than {age} ago; {left}"
                )),
            };
            if let Some(line) = told {
                tracing::info!(target: "stateous.serve", "{line}");
            }
            last_left = left;
        }
    }
}

/// Wait `every`, then run `pass`, until one succeeds: its outcome. A pass that
/// fails is logged (`WHAT failed (ERROR); the next tries again in EVERY`) and the
/// wait starts again. `None` once `stop` has turned true (or its sender is gone),
/// the pass in progress dropped then, or once the database is lost (`not_serving`).
/// A change of `stop` that leaves it false starts the wait again.
async fn next_pass<T, F: Future<Output = Result<T, Refusal>>>(
    every: Duration,
    stop: &mut watch::Receiver<bool>,
    what: &str,
    pass: impl Fn() -> F,
) -> Option<T> {
    loop {
        if *stop.borrow_and_update() {
            return None;
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            changed = stop.changed() => {
                if changed.is_err() { return None }
                continue;
            }
        }
        let outcome = tokio::select! {
            outcome = pass() => outcome,
            _ = stop.changed() => return None,
        };
        match outcome {
            Ok(done) => return Some(done),
            Err(refusal) if refusal.code == Code::NotServing => return None,
            Err(refusal) => tracing::error!(
                target: "stateous.serve",
                "{what} failed ({}); the next tries again in {}",
                refusal.error,
                span(every.as_secs_f64())
            ),
        }
    }
}

/// The notifications' retention loop: options, then [`NotificationRetention::run`].
pub struct NotificationRetention {
    /// The control plane whose notifications it deletes.
    pub control: Control,
    /// What each pass deletes.
    pub pass: NotifyRetainPass,
    /// The time between the end of one pass and the start of the next.
    pub every: Duration,
}

impl NotificationRetention {
    /// Run passes until `stop` turns true; a pass in progress is dropped then
    /// (each window's write commits whole or not at all).
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let age = span(self.pass.keep.as_secs_f64());
        loop {
            let what = "a pass of the notifications' retention";
            let pass = || self.control.retain_notifications(&self.pass);
            let Some(deleted) = next_pass(self.every, &mut stop, what, pass).await else {
                return;
            };
            if deleted != 0 {
                tracing::info!(
                    target: "stateous.serve",
                    "retention deleted {deleted} notification(s) delivered more than {age} ago"
                );
            }
        }
    }
}
