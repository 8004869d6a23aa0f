//! Retention (`serve --retain-ended DURATION`, `docs/reference/cli.md`): about every
//! `--retain-every` it runs one pass of [`Control::retain`], which prunes the tokens
//! that ended longer ago than DURATION, a batch at a time with a pause between
//! batches, archiving each first with `--archive DIR`.
//!
//! A pass that fails is logged and the next one tries again; a lost database ends
//! the loop (the clock stops the server).

use std::time::Duration;

use stateous_shared::operate::span;
use stateous_shared::refusal::Code;
use tokio::sync::watch;

use crate::control::prune::RetainPass;
use crate::control::Control;

/// How many tokens one batch of a pass reads and prunes at most.
pub const BATCH: i64 = 100;

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
        loop {
            if *stop.borrow_and_update() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                changed = stop.changed() => {
                    if changed.is_err() { return }
                    continue;
                }
            }
            let pass = tokio::select! {
                pass = self.control.retain(&self.pass) => pass,
                _ = stop.changed() => return,
            };
            match pass {
                Ok(0) => {}
                Ok(pruned) => tracing::info!(
                    target: "stateous.serve",
                    "retention pruned {pruned} token(s) that ended more than {age} ago"
                ),
                Err(refusal) if refusal.code == Code::NotServing => return,
                Err(refusal) => tracing::error!(
                    target: "stateous.serve",
                    "a retention pass failed ({}); the next tries again in {}",
                    refusal.error,
                    span(self.every.as_secs_f64())
                ),
            }
        }
    }
}
