//! The watch stream's safe point: the ledger id up to which every row that will ever
//! commit has committed (`GET /watch`, `docs/reference/http.md`).
//!
//! Ledger ids are handed out when a row is inserted, but on Postgres transactions
//! commit in another order: a row with id 10 can commit after a row with id 11. A
//! reader that read 11 and then asked for `id > 11` would never see 10. So readers
//! read only up to [`FeedMark::safe`]: one control plane writes the database, and it
//! knows each of its transactions. A transaction registers itself before it inserts
//! its first ledger row ([`FeedMark::open`]); every id it gets is then higher than
//! the highest id known at that moment (ids come from one increasing sequence). So
//! the safe point is just below the lowest such bound among the transactions still
//! open, or the highest id known when none is. A transaction that has not written a
//! ledger row yet, for example one waiting for a token's lock, holds nothing back.
//!
//! On SQLite the one writer commits in id order, and the safe point is simply the
//! highest committed id ([`FeedMark::committed`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::guard::{as_it_is, locked};

#[derive(Debug)]
struct State {
    /// The highest ledger id this process has seen handed out (or found at start).
    known: i64,
    /// Open transactions that write ledger rows: serial -> the lowest id they can
    /// hold.
    open: BTreeMap<u64, i64>,
    /// The next serial.
    serial: u64,
}

/// A cheap, cloneable handle to the safe point of the feed.
#[derive(Debug, Clone)]
pub struct FeedMark {
    state: Arc<Mutex<State>>,
    /// The safe point, for streams that wait for it to move.
    moved: Arc<watch::Sender<i64>>,
}

/// One transaction's registration; [`FeedMark::close`] ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened(u64);

impl FeedMark {
    /// A mark after `last`, the highest ledger id in the database at start.
    pub fn new(last: i64) -> FeedMark {
        let (moved, _) = watch::channel(last);
        FeedMark {
            state: Arc::new(Mutex::new(State {
                known: last,
                open: BTreeMap::new(),
                serial: 0,
            })),
            moved: Arc::new(moved),
        }
    }

    fn with<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        // A panic while the lock was held leaves plain numbers behind: still usable.
        let mut state = locked(&self.state, as_it_is);
        let answer = change(&mut state);
        let safe = safe_of(&state);
        drop(state);
        self.moved.send_if_modified(|old| {
            let moved = safe > *old;
            if moved {
                *old = safe;
            }
            moved
        });
        answer
    }

    /// Register a transaction before its first ledger insert.
    pub fn open(&self) -> Opened {
        self.with(|state| {
            state.serial += 1;
            let bound = state.known + 1;
            state.open.insert(state.serial, bound);
            Opened(state.serial)
        })
    }

    /// The transaction got the ledger id `id`.
    pub fn saw(&self, _opened: Opened, id: i64) {
        self.with(|state| state.known = state.known.max(id));
    }

    /// The transaction ended (committed or rolled back).
    pub fn close(&self, opened: Opened) {
        self.with(|state| {
            state.open.remove(&opened.0);
        });
    }

    /// The one writer (SQLite) committed rows up to `id`.
    pub fn committed(&self, id: i64) {
        self.with(|state| state.known = state.known.max(id));
    }

    /// Every ledger row with an id up to this one that will ever commit has
    /// committed.
    pub fn safe(&self) -> i64 {
        self.with(|state| safe_of(state))
    }

    /// A receiver that wakes when the safe point moves.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.moved.subscribe()
    }
}

fn safe_of(state: &State) -> i64 {
    match state.open.values().min() {
        Some(lowest) => (lowest - 1).min(state.known),
        None => state.known,
    }
}

#[cfg(test)]
mod tests {
    use super::FeedMark;

    #[test]
    fn an_open_transaction_holds_the_safe_point_below_its_ids() {
        let mark = FeedMark::new(10);
        let slow = mark.open();
        let fast = mark.open();
        mark.saw(slow, 11);
        mark.saw(fast, 12);
        mark.close(fast);
        // 12 committed, but 11 may still commit: readers stop at 10.
        assert_eq!(mark.safe(), 10);
        mark.close(slow);
        assert_eq!(mark.safe(), 12);
    }

    #[test]
    fn a_transaction_that_has_no_id_yet_holds_back_only_later_ids() {
        let mark = FeedMark::new(5);
        let waiting = mark.open();
        assert_eq!(mark.safe(), 5);
        let other = mark.open();
        mark.saw(other, 6);
        mark.close(other);
        // `waiting` registered at 5, so its ids will be above 5; 6 may not be safe
        // yet because `waiting` could get 6 only if it asked before `other`: it
        // registered first, so 6 waits for it.
        assert_eq!(mark.safe(), 5);
        mark.saw(waiting, 7);
        mark.close(waiting);
        assert_eq!(mark.safe(), 7);
    }

    #[test]
    fn the_one_writer_moves_the_mark_by_its_commits() {
        let mark = FeedMark::new(0);
        let mut moved = mark.subscribe();
        mark.committed(3);
        assert_eq!(mark.safe(), 3);
        assert!(moved.has_changed().unwrap());
        assert_eq!(*moved.borrow_and_update(), 3);
    }
}
