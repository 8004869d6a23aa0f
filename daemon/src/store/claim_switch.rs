//! The claim switch of one store (`docs/limits.md`, "How it is built"): whether a
//! limit, a priority other than 0 or a retry pause may be set in its database, so
//! that while none is, a claim is the plain oldest-first one with no statement more
//! (on Postgres a read in a batch is a round trip of its own: reading them on every
//! claim cut the bench to a third).
//!
//! Each store holds its own ([`Store::claim_switch`](super::Store::claim_switch)):
//! two stores of one process (tests, a standby) never share it. It is loaded from
//! the tables when the store opens (a standby's open ends at its takeover). A write
//! turns its fact on before the write, through the transaction
//! ([`Turned::turn_on`]), so that the switch is on before the row's commit is
//! visible; the clock's tick turns a fact off again once the tables hold none
//! ([`ClaimSwitch::turn_off`]).
//!
//! Turning off never lets a claim skip a row that exists. A write that turns a fact
//! on counts as pending from before its write until its transaction ended (the
//! [`Turned`] of the transaction is dropped after the commit or rollback), and each
//! end moves the switch's epoch. The tick takes a [`Mark`] (none while a write is
//! pending), reads the tables in a transaction that begins after it, and turns off
//! only what that read found absent, and only if no write began or ended since the
//! mark: a row the read could not see belongs to a write that was pending at the
//! mark or began after it. A Postgres commit whose outcome is unknown (it may land
//! later) never ends its pending count: that store's switch then stays on.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Which of the settings a claim looks at may be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimFact {
    /// A row of `limits`.
    Limits,
    /// A row of `priorities` (a priority other than 0).
    Priorities,
    /// A row of `task_delays` (a retry policy's pause).
    Delays,
    /// A row of `limits` with `per`: the write path keeps `task_keys`
    /// (`store/task_keys.rs`).
    Keys,
}

/// What the tables hold, by [`ClaimFact`] in its order.
pub type Held = [bool; 4];

/// Whether each [`ClaimFact`] may be set in one store's database.
#[derive(Debug)]
pub struct ClaimSwitch {
    on: [AtomicBool; 4],
    book: Mutex<Book>,
}

/// The writes that turned a fact on and have not ended, and a count moved by
/// every turn-on and every end.
#[derive(Debug, Default)]
struct Book {
    pending: u64,
    epoch: u64,
}

/// A moment at which no write that turns a fact on was pending
/// ([`ClaimSwitch::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(u64);

/// The switch of a transaction that belongs to no store's write path (reads, the
/// steps of an open): every fact may apply.
pub static ALL_ON: ClaimSwitch = ClaimSwitch::with([true; 4]);

impl ClaimSwitch {
    /// A switch with each fact on or off as given.
    pub const fn with(held: Held) -> ClaimSwitch {
        ClaimSwitch {
            on: [
                AtomicBool::new(held[0]),
                AtomicBool::new(held[1]),
                AtomicBool::new(held[2]),
                AtomicBool::new(held[3]),
            ],
            book: Mutex::new(Book {
                pending: 0,
                epoch: 0,
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        // A panic while the lock was held leaves two counters behind: still usable.
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `fact` may be set.
    pub fn applies(&self, fact: ClaimFact) -> bool {
        self.on[fact as usize].load(Ordering::SeqCst)
    }

    /// Whether some limit, priority or retry pause may be set: then claims look
    /// at them.
    pub fn may_apply(&self) -> bool {
        self.applies(ClaimFact::Limits) || self.must_be_read()
    }

    /// Whether a claim must read the claim facts: some priority or retry pause may
    /// be set. With limits only, a claim asks for the limits alone.
    pub fn must_be_read(&self) -> bool {
        self.applies(ClaimFact::Priorities) || self.applies(ClaimFact::Delays)
    }

    /// Set every fact as the tables hold them (the store's open; a standby's open
    /// ends at its takeover). A fact a pending write turned on stays on.
    pub fn load(&self, held: Held) {
        let mut book = self.book();
        book.epoch += 1;
        for (on, held) in self.on.iter().zip(held) {
            if held || book.pending == 0 {
                on.store(held, Ordering::SeqCst);
            }
        }
    }

    /// Turn `fact` on before a write of it, counted pending until [`Self::ended`].
    fn turn_on(&self, fact: ClaimFact) {
        let mut book = self.book();
        book.pending += 1;
        book.epoch += 1;
        self.on[fact as usize].store(true, Ordering::SeqCst);
    }

    /// `count` writes that turned a fact on have ended (committed or rolled back).
    fn ended(&self, count: u64) {
        let mut book = self.book();
        book.pending = book.pending.saturating_sub(count);
        book.epoch += 1;
    }

    /// The moment before a read of what the tables hold; `None` while a write
    /// that turns a fact on is pending (nothing may be turned off then).
    pub fn mark(&self) -> Option<Mark> {
        let book = self.book();
        (book.pending == 0).then_some(Mark(book.epoch))
    }

    /// Turn off each fact that a read begun after `mark` found absent, unless a
    /// write turned one on or ended since `mark`. Whether the switch changed.
    pub fn turn_off(&self, mark: Mark, held: Held) -> bool {
        let book = self.book();
        if book.pending != 0 || book.epoch != mark.0 {
            return false;
        }
        let mut changed = false;
        for (on, held) in self.on.iter().zip(held) {
            if !held && on.swap(false, Ordering::SeqCst) {
                changed = true;
            }
        }
        changed
    }

    /// What a write transaction of this store's write path turns on: its count
    /// of pending writes ends when it is dropped, after the commit or rollback.
    pub fn turned(&self) -> Turned<'_> {
        Turned {
            switch: self,
            count: Cell::new(0),
            unknown: Cell::new(false),
        }
    }
}

/// The writes of one transaction that turned a fact on: made before the
/// transaction by the write path ([`ClaimSwitch::turned`]) and dropped after it
/// ended.
#[derive(Debug)]
pub struct Turned<'s> {
    switch: &'s ClaimSwitch,
    count: Cell<u64>,
    unknown: Cell<bool>,
}

impl Turned<'_> {
    /// The store's switch.
    pub fn switch(&self) -> &ClaimSwitch {
        self.switch
    }

    /// Turn `fact` on before the transaction writes it.
    pub fn turn_on(&self, fact: ClaimFact) {
        self.switch.turn_on(fact);
        self.count.set(self.count.get() + 1);
    }

    /// The transaction's commit got no answer and may land later: its writes
    /// stay pending for the life of the store, so the switch stays on.
    pub fn outcome_unknown(&self) {
        self.unknown.set(true);
    }
}

impl Drop for Turned<'_> {
    fn drop(&mut self) {
        if self.count.get() > 0 && !self.unknown.get() {
            self.switch.ended(self.count.get());
        }
    }
}

/// The switch that a transaction's claims read: its write path's, or [`ALL_ON`].
pub fn switch_of(tx: &dyn super::Tx) -> &ClaimSwitch {
    match tx.turned() {
        Some(turned) => turned.switch(),
        None => &ALL_ON,
    }
}

/// Turn `fact` on before `tx` writes it (nothing to do for a transaction outside
/// a write path: [`ALL_ON`] is on).
pub fn turn_on(tx: &dyn super::Tx, fact: ClaimFact) {
    if let Some(turned) = tx.turned() {
        turned.turn_on(fact);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_pending_at_the_mark_or_begun_after_it_keeps_the_switch_on() {
        let switch = ClaimSwitch::with([false; 4]);
        // Begun before the mark: no mark while it is pending.
        let turned = switch.turned();
        turned.turn_on(ClaimFact::Limits);
        assert_eq!(switch.mark(), None);
        drop(turned);
        // Begun after the mark, ended before the turn-off: the epoch moved.
        let mark = switch.mark().unwrap();
        let turned = switch.turned();
        turned.turn_on(ClaimFact::Limits);
        drop(turned);
        assert!(!switch.turn_off(mark, [false; 4]));
        assert!(switch.applies(ClaimFact::Limits));
        // Nothing since the mark: off.
        let mark = switch.mark().unwrap();
        assert!(switch.turn_off(mark, [false; 4]));
        assert!(!switch.may_apply());
    }

    #[test]
    fn a_commit_of_unknown_outcome_keeps_the_switch_on() {
        let switch = ClaimSwitch::with([false; 4]);
        let turned = switch.turned();
        turned.turn_on(ClaimFact::Priorities);
        turned.outcome_unknown();
        drop(turned);
        assert_eq!(switch.mark(), None);
        assert!(switch.must_be_read());
    }
}
