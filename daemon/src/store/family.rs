//! The token families this process's Postgres transactions hold.
//!
//! The database's row lock on a family's top token orders transactions in the
//! database; this lock, held from before the database's and until after the
//! transaction's facts are published to the cache (`store/facts.rs`), orders them
//! in this process, so that no transaction reads a family's cached facts while
//! another has committed changes it has not published yet. A transaction that
//! waits takes this lock first, then the database's; one that must not wait (a
//! claim, the clock) only tries it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::guard::{as_it_is, locked};

/// The Postgres transactions of their own (a request that runs alone, beside the
/// writer's batches): how many run now, and how many began so far. While none ran
/// since a batch began, the batch is the one writer, and what it read of a family
/// before it took the family is still so.
#[derive(Debug, Default)]
pub struct SoloTransactions {
    running: AtomicUsize,
    began: AtomicU64,
}

impl SoloTransactions {
    /// A transaction of its own begins; it ends when the guard is dropped.
    pub fn enter(&self) -> SoloGuard<'_> {
        // Counted as running before it is counted as begun: see [`Self::quiet`].
        self.running.fetch_add(1, Ordering::SeqCst);
        self.began.fetch_add(1, Ordering::SeqCst);
        SoloGuard(self)
    }

    /// How many began so far, when every one of them has ended; `None` while one
    /// runs. Read in this order (and counted in the other by [`Self::enter`]), a
    /// `Some(mark)` means each transaction counted in `mark` ended before this
    /// call: whatever it committed, a statement sent after this call sees.
    pub fn quiet(&self) -> Option<u64> {
        let began = self.began.load(Ordering::SeqCst);
        (self.running.load(Ordering::SeqCst) == 0).then_some(began)
    }

    /// How many began so far (a batch's mark).
    pub fn began(&self) -> u64 {
        self.began.load(Ordering::SeqCst)
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Whether none ran since `began` was `mark`.
    pub fn none_since(&self, mark: u64) -> bool {
        self.running.load(Ordering::SeqCst) == 0 && self.began.load(Ordering::SeqCst) == mark
    }
}

/// A transaction of its own that runs (see [`SoloTransactions::enter`]).
pub struct SoloGuard<'a>(&'a SoloTransactions);

impl Drop for SoloGuard<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The families held in this process, by top token id.
#[derive(Debug, Default)]
pub struct FamilyLocks {
    held: Mutex<HashSet<String>>,
    freed: Condvar,
}

impl FamilyLocks {
    fn held(&self) -> MutexGuard<'_, HashSet<String>> {
        locked(&self.held, as_it_is)
    }

    /// Take the family of `top`: waiting up to `wait` for another transaction to
    /// give it back, or with `None` only if it is free now. True when taken.
    pub fn take(&self, top: &str, wait: Option<Duration>) -> bool {
        let mut held = self.held();
        let deadline = wait.map(|wait| Instant::now() + wait);
        while held.contains(top) {
            let Some(deadline) = deadline else {
                return false;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            held = match self.freed.wait_timeout(held, left) {
                Ok((held, _)) => held,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        held.insert(top.to_string());
        true
    }

    /// Give these families back.
    pub fn give_back<'a>(&self, tops: impl IntoIterator<Item = &'a String>) {
        let mut held = self.held();
        for top in tops {
            held.remove(top);
        }
        drop(held);
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_held_family_is_refused_to_a_try_and_waited_for_by_a_wait() {
        let locks = Arc::new(FamilyLocks::default());
        assert!(locks.take("T-1", None));
        assert!(!locks.take("T-1", None));
        assert!(!locks.take("T-1", Some(Duration::from_millis(20))));
        assert!(locks.take("T-2", None));
        let waiter = {
            let locks = Arc::clone(&locks);
            std::thread::spawn(move || locks.take("T-1", Some(Duration::from_secs(5))))
        };
        std::thread::sleep(Duration::from_millis(50));
        locks.give_back(&["T-1".to_string()]);
        assert!(waiter.join().unwrap());
    }
}
