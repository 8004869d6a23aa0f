//! The clock loop of `stateous serve`: about every tick (1 s by default) it asks the
//! control plane to renew its hold on the database, end the leases that are over
//! and fire the timers that are due ([`Control::tick`]).
//!
//! A tick that fails is logged with the reference's line and the clock carries on;
//! the same failure tick after tick (a full disk, a database that does not answer)
//! is logged once, and the first tick that works again says so.
//! A request that finds the database lost wakes the clock for a tick at once.
//! A tick refused with `not_serving` means another control plane took the
//! database: the clock marks the API lost (every request then answers 503), logs
//! one line, tells the server to stop, and ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stateous_shared::refusal::Code;
use tokio::sync::{watch, Notify};

use crate::control::Control;

/// The log line of a lost hold on the database.
pub use crate::engine::LOST as LOST_LINE;

/// The clock: options, then [`Clock::run`].
pub struct Clock {
    /// The control plane it ticks.
    pub control: Control,
    /// The time between the end of one tick and the start of the next.
    pub every: Duration,
    /// Set when the hold on the database is lost; the API reads it.
    pub lost: Arc<AtomicBool>,
    /// Notified once when the hold is lost, so that `serve` stops.
    pub on_lost: Arc<Notify>,
}

impl Clock {
    /// Tick until `stop` turns true, or until the hold is lost. A tick in progress
    /// ends before `run` returns, so the database can close after it.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        // The last failure logged: the same failure tick after tick is logged once.
        let mut failing: Option<String> = None;
        loop {
            if *stop.borrow_and_update() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                // A request found the database lost: tick now, and stop.
                _ = self.control.lost_noticed() => {}
                changed = stop.changed() => {
                    if changed.is_err() { return }
                    continue;
                }
            }
            if !self.step(&mut failing).await {
                return;
            }
        }
    }

    /// One tick; false when the hold on the database is lost. A failure is logged
    /// when it differs from the one before (`failing`); the first tick that works
    /// after failures says so.
    async fn step(&self, failing: &mut Option<String>) -> bool {
        match self.control.tick().await {
            Ok(()) => {
                if failing.take().is_some() {
                    tracing::info!(target: "stateous.serve", "the clock's ticks work again");
                }
                true
            }
            Err(refusal) if refusal.code == Code::NotServing => {
                self.lost.store(true, Ordering::SeqCst);
                tracing::error!(target: "stateous.serve", "{LOST_LINE}");
                self.on_lost.notify_one();
                false
            }
            Err(refusal) => {
                let sentence = refusal
                    .error
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                if failing.as_deref() == Some(sentence.as_str()) {
                    return true;
                }
                *failing = Some(sentence.clone());
                tracing::error!(
                    target: "stateous.serve",
                    "the clock's tick failed ({sentence}); it tries again in {:?} seconds",
                    self.every.as_secs_f64()
                );
                true
            }
        }
    }
}
