//! The write transactions of one Postgres store that run now, by when they began
//! ([`InFlight::settle`]). The first limit (or the first with `per`) changes what
//! claims and queued tasks are judged by: its set turns the claim switch's fact
//! on, then waits for every write transaction that began before, which may have
//! judged without it and taken no lock, to end; only then does its own
//! transaction count the attempts claimed and the tasks queued
//! (`docs/limits.md`, `Store::settle_writes`).

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The write transactions running, by generation.
#[derive(Debug, Default)]
pub struct InFlight {
    book: Mutex<Book>,
    ended: Condvar,
}

#[derive(Debug, Default)]
struct Book {
    /// Moved on by each [`InFlight::settle`]: a transaction entered after it
    /// counts in the next generation.
    generation: u64,
    /// How many run, by the generation they entered in.
    running: BTreeMap<u64, usize>,
}

/// One write transaction's place in [`InFlight`], given back when dropped (after
/// its commit or rollback).
#[derive(Debug)]
pub struct Entered<'f> {
    flight: &'f InFlight,
    generation: u64,
}

impl InFlight {
    fn book(&self) -> MutexGuard<'_, Book> {
        // A panic while the lock was held leaves counts behind: still usable.
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A write transaction begins (before it reads the claim switch).
    pub fn enter(&self) -> Entered<'_> {
        let mut book = self.book();
        let generation = book.generation;
        *book.running.entry(generation).or_insert(0) += 1;
        Entered {
            flight: self,
            generation,
        }
    }

    /// Wait until every write transaction that began before this call has ended;
    /// false when `wait` passed first.
    pub fn settle(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut book = self.book();
        let before = book.generation;
        book.generation += 1;
        loop {
            if book.running.range(..=before).all(|(_, count)| *count == 0) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            book = self
                .ended
                .wait_timeout(book, left)
                .map(|(book, _)| book)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let mut book = self.flight.book();
        if let Some(count) = book.running.get_mut(&self.generation) {
            *count -= 1;
            if *count == 0 {
                book.running.remove(&self.generation);
            }
        }
        drop(book);
        self.flight.ended.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_waits_for_what_began_before_it_and_not_after() {
        let flight = InFlight::default();
        let before = flight.enter();
        assert!(!flight.settle(Duration::from_millis(20)));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| flight.settle(Duration::from_secs(10)));
            // Once the settle began (two generations moved), one that enters is
            // not waited for.
            while flight.book().generation < 2 {
                std::thread::yield_now();
            }
            let _after = flight.enter();
            drop(before);
            assert!(
                waiting.join().unwrap(),
                "ended before; one after runs still"
            );
        });
        assert!(flight.settle(Duration::ZERO));
    }
}
