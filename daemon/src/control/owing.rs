//! What a stall of the control plane owes the claimed leases ([`Stalls`]), given
//! inside each write before the write judges any lease, and settled once a write
//! that gave it has committed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::engine::{self, Step};
use crate::store::Tx;
use crate::time_source::{Owed, Sent, Stalls};

/// One write's share of what stalls owe: made when the write is sent.
pub(super) struct Owing {
    stalls: Stalls,
    sent: Sent,
    /// The write may run twice; only its first run measures its wait.
    first: AtomicBool,
    /// What its last run gave, while that run's changes stay.
    gave: Mutex<Option<Owed>>,
}

impl Owing {
    /// A write sent now.
    pub(super) fn new(stalls: &Stalls) -> Arc<Owing> {
        Arc::new(Owing {
            stalls: stalls.clone(),
            sent: stalls.sent(),
            first: AtomicBool::new(true),
            gave: Mutex::new(None),
        })
    }

    fn gave(&self) -> std::sync::MutexGuard<'_, Option<Owed>> {
        self.gave.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `work` on `tx` after giving the claimed leases what is owed now. The
    /// given time stays only if `work`'s changes stay (its `bool`).
    pub(super) fn run<R>(
        &self,
        tx: &dyn Tx,
        work: impl FnOnce() -> (bool, Step<R>),
    ) -> (bool, Step<R>) {
        if self.first.swap(false, Ordering::SeqCst) {
            self.stalls.waited(self.sent);
        }
        let owed = self.stalls.owed();
        if let Some(owed) = owed {
            if let Err(fail) = engine::lease::give_back(tx, owed.until) {
                *self.gave() = None;
                return (false, Err(fail));
            }
        }
        let done = work();
        *self.gave() = owed.filter(|_| done.0);
        done
    }

    /// The write was answered; `committed`: its transaction committed.
    pub(super) fn answered(&self, committed: bool) {
        let gave = self.gave().take();
        if let Some(owed) = gave.filter(|_| committed) {
            self.stalls.settled(owed);
        }
    }
}
