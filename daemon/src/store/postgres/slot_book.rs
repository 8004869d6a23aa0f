//! What one Postgres transaction knows of the limits and of the slots held, read
//! once under the slots' lock (`claim_limits.rs`, [`super::claim_limits::SLOTS_LOCK`])
//! and kept up to date by the transaction's own writes: the claims of the writer's
//! batch after the first ask no statement of their own (`docs/limits.md`, "Speed").
//!
//! Why the counts stay true: the lock is transaction-scoped, so from the read to
//! the commit no other transaction (of this process, or of a standby that took
//! over) takes a slot; this transaction's own slots and the ends of its own
//! attempts are counted here as it writes them ([`SlotBook::took`],
//! [`SlotBook::task_changed`]), with a slot counted only while its task is claimed
//! with its attempt, as `held_slots` counts in the database. Another transaction
//! may only end attempts meanwhile (a report, a lease's end): then the counts here
//! are too high until the commit, never too low, and a claim is refused at worst.
//! A request of the batch that is dropped takes its changes back
//! ([`SlotBook::undo`]); a rolled-back transaction takes the whole book with it.
//!
//! The writer keeps the book of a committed batch for the next one
//! ([`KeptBooks`]): the next batch starts from it, counts its own writes on top,
//! and trusts it once it holds the lock and no transaction of its own
//! (`store/family.rs`, `SoloTransactions`) began or ran since the batch that read
//! it began: the writer's batches were then the only transactions, and each one
//! counted its writes in the book. So a batch with claims asks for the lock alone,
//! not for every slot held again; one batch in [`READ_AGAIN_EVERY`] reads them
//! again anyway (and sweeps the rows of ended attempts away).

use std::sync::Mutex;

use foldhash::HashMap as FastMap;

use crate::store::guard::locked;

use crate::store::{LimitRow, SlotRow, TaskRow, TaskStatus};

/// A slot as the book keeps it, by task and pool.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kept {
    attempt: i64,
    key: String,
    /// Its task is claimed with its attempt, as this transaction left it.
    live: bool,
}

/// The slots held, read under the lock.
#[derive(Debug, Default)]
struct Held {
    /// By task, then pool.
    slots: FastMap<i64, Vec<(String, Kept)>>,
    /// Live slots by pool and key.
    counts: FastMap<(String, String), i64>,
}

impl Held {
    /// Set the slot of `task` in `pool` (`None`: none), counting the change; the
    /// slot it replaces.
    fn set(&mut self, task: i64, pool: &str, new: Option<Kept>) -> Option<Kept> {
        let slots = self.slots.entry(task).or_default();
        let at = slots.iter().position(|(p, _)| p == pool);
        let old = match (at, new.clone()) {
            (Some(at), Some(new)) => Some(std::mem::replace(&mut slots[at].1, new)),
            (Some(at), None) => Some(slots.remove(at).1),
            (None, Some(new)) => {
                slots.push((pool.to_string(), new));
                None
            }
            (None, None) => None,
        };
        if slots.is_empty() {
            self.slots.remove(&task);
        }
        for (slot, by) in [(&old, -1), (&new, 1)] {
            if let Some(slot) = slot.as_ref().filter(|slot| slot.live) {
                *self
                    .counts
                    .entry((pool.to_string(), slot.key.clone()))
                    .or_insert(0) += by;
            }
        }
        old
    }
}

/// One batch in this many (by its moment in microseconds) reads the limits and
/// the slots held again, though it was given a book it could trust.
pub const READ_AGAIN_EVERY: i64 = 16;

/// The limits and slots one transaction knows ([`super::PgTx`]).
#[derive(Debug, Default)]
pub struct SlotBook {
    /// The slots' lock is held (until the transaction ends).
    pub locked: bool,
    /// The limits, read under the lock; `None`: not read, or changed since.
    pub limits: Option<Vec<LimitRow>>,
    held: Option<Held>,
    /// The running request's changes to `held`, each slot as it was before:
    /// put back if the request is dropped.
    undo: Vec<(i64, String, Option<Kept>)>,
    /// The book came from an earlier batch ([`KeptBook`]), at this mark of the
    /// transactions of their own, and is not yet trusted: `None` once it is (or
    /// when it was read in this transaction).
    pub seeded: Option<u64>,
}

/// The book of a committed batch, for the writer's next batch: the limits, the
/// live slots, and the mark of the transactions of their own
/// (`SoloTransactions::quiet`) when that batch began.
#[derive(Debug)]
pub struct KeptBook {
    limits: Vec<LimitRow>,
    held: Held,
    mark: u64,
}

/// The book the writer's last committed batch left, if it may be used
/// ([`SlotBook::take_to_keep`]).
#[derive(Debug, Default)]
pub struct KeptBooks {
    kept: Mutex<Option<KeptBook>>,
}

impl KeptBooks {
    /// The kept book, if it was left at `mark`; it is taken (a batch that does
    /// not commit leaves none).
    pub fn take(&self, mark: u64) -> Option<KeptBook> {
        locked(&self.kept, |kept| *kept = None)
            .take()
            .filter(|book| book.mark == mark)
    }

    /// Leave `book` for the next batch (`None`: none).
    pub fn put(&self, book: Option<KeptBook>) {
        *locked(&self.kept, |kept| *kept = None) = book;
    }
}

impl SlotBook {
    /// A book that starts from an earlier batch's, not trusted yet.
    pub fn seeded(kept: KeptBook) -> SlotBook {
        SlotBook {
            limits: Some(kept.limits),
            held: Some(kept.held),
            seeded: Some(kept.mark),
            ..SlotBook::default()
        }
    }

    /// What a committed batch that began at `mark` leaves for the next: its
    /// limits and live slots, if it knows both.
    pub fn take_to_keep(&mut self, mark: u64) -> Option<KeptBook> {
        let limits = self.limits.take()?;
        let mut held = self.held.take()?;
        held.slots.retain(|_, slots| {
            slots.retain(|(_, kept)| kept.live);
            !slots.is_empty()
        });
        held.counts.retain(|_, count| *count > 0);
        Some(KeptBook { limits, held, mark })
    }

    /// Whether the slots held were read.
    pub fn knows_slots(&self) -> bool {
        self.held.is_some()
    }

    /// The slots held now, as read under the lock (live ones only).
    pub fn read(&mut self, rows: Vec<SlotRow>) {
        let mut held = Held::default();
        for row in rows {
            let kept = Kept {
                attempt: row.attempt,
                key: row.key,
                live: true,
            };
            held.set(row.task, &row.pool, Some(kept));
        }
        self.held = Some(held);
    }

    /// How many slots of `pool` are held, by key (keys with none left out);
    /// `None` when the slots were not read.
    pub fn counts(&self, pool: &str) -> Option<Vec<(String, i64)>> {
        let held = self.held.as_ref()?;
        Some(
            held.counts
                .iter()
                .filter(|((p, _), count)| p == pool && **count > 0)
                .map(|((_, key), count)| (key.clone(), *count))
                .collect(),
        )
    }

    /// This transaction took `slot` (its task is claimed with its attempt).
    pub fn took(&mut self, slot: &SlotRow) {
        let Some(held) = self.held.as_mut() else {
            return;
        };
        let kept = Kept {
            attempt: slot.attempt,
            key: slot.key.clone(),
            live: true,
        };
        let old = held.set(slot.task, &slot.pool, Some(kept));
        self.undo.push((slot.task, slot.pool.clone(), old));
    }

    /// This transaction wrote the task `row`: its slots count only while it is
    /// claimed with their attempt.
    pub fn task_changed(&mut self, row: &TaskRow) {
        let Some(held) = self.held.as_mut() else {
            return;
        };
        let Some(slots) = held.slots.get(&row.id) else {
            return;
        };
        let changed: Vec<(String, Kept)> = slots
            .iter()
            .filter_map(|(pool, kept)| {
                let live = row.status == TaskStatus::Claimed && row.attempt == kept.attempt;
                (live != kept.live).then(|| {
                    (
                        pool.clone(),
                        Kept {
                            live,
                            ..kept.clone()
                        },
                    )
                })
            })
            .collect();
        for (pool, kept) in changed {
            let old = held.set(row.id, &pool, Some(kept));
            self.undo.push((row.id, pool, old));
        }
    }

    /// The running request is kept: its changes stay.
    pub fn keep(&mut self) {
        self.undo.clear();
    }

    /// The running request is dropped (none of its writes reached the server):
    /// its changes go.
    pub fn undo(&mut self) {
        let undo = std::mem::take(&mut self.undo);
        let Some(held) = self.held.as_mut() else {
            return;
        };
        for (task, pool, old) in undo.into_iter().rev() {
            held.set(task, &pool, old);
        }
    }

    /// Forget the limits and the slots (a statement changed them in the
    /// database): the next claim reads them again. The lock stays held.
    pub fn forget(&mut self) {
        self.limits = None;
        self.held = None;
        self.undo.clear();
        self.seeded = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(task: i64, attempt: i64, pool: &str, key: &str) -> SlotRow {
        SlotRow {
            task,
            attempt,
            pool: pool.into(),
            key: key.into(),
        }
    }

    fn task(id: i64, attempt: i64, status: TaskStatus) -> TaskRow {
        TaskRow {
            id,
            token: "T".into(),
            state: "s".into(),
            visit: 1,
            status,
            attempt,
            claimed_by: None,
            lease_until: None,
            queued_at: 0,
        }
    }

    fn count(book: &SlotBook, pool: &str, key: &str) -> i64 {
        book.counts(pool)
            .unwrap_or_default()
            .into_iter()
            .find(|(k, _)| k == key)
            .map_or(0, |(_, count)| count)
    }

    #[test]
    fn a_slot_counts_while_its_task_is_claimed_with_its_attempt() {
        let mut book = SlotBook::default();
        assert_eq!(book.counts("p"), None);
        book.read(vec![slot(1, 1, "p", ""), slot(2, 3, "p", "")]);
        assert_eq!(count(&book, "p", ""), 2);
        book.took(&slot(3, 1, "p", ""));
        assert_eq!(count(&book, "p", ""), 3);
        // Reported: the slot is free; claimed again with the next attempt and a
        // new slot: one.
        book.task_changed(&task(1, 1, TaskStatus::Done));
        assert_eq!(count(&book, "p", ""), 2);
        book.task_changed(&task(2, 4, TaskStatus::Claimed));
        assert_eq!(count(&book, "p", ""), 1);
        book.took(&slot(2, 4, "p", ""));
        assert_eq!(count(&book, "p", ""), 2);
        // A renewed lease changes nothing.
        book.task_changed(&task(2, 4, TaskStatus::Claimed));
        assert_eq!(count(&book, "p", ""), 2);
    }

    #[test]
    fn a_dropped_request_takes_its_changes_back_and_a_kept_one_keeps_them() {
        let mut book = SlotBook::default();
        book.read(vec![slot(1, 1, "p", "a"), slot(1, 1, "q", "")]);
        book.took(&slot(2, 1, "p", "a"));
        book.keep();
        book.task_changed(&task(1, 1, TaskStatus::Queued));
        book.took(&slot(3, 1, "p", "b"));
        assert_eq!(count(&book, "p", "a"), 1);
        assert_eq!(count(&book, "q", ""), 0);
        assert_eq!(count(&book, "p", "b"), 1);
        book.undo();
        assert_eq!(count(&book, "p", "a"), 2);
        assert_eq!(count(&book, "q", ""), 1);
        assert_eq!(count(&book, "p", "b"), 0);
        book.forget();
        assert_eq!(book.counts("p"), None);
    }

    #[test]
    fn a_kept_book_holds_the_live_slots_and_starts_the_next_batch_untrusted() {
        assert!(
            SlotBook::default().take_to_keep(1).is_none(),
            "nothing read"
        );
        let mut book = SlotBook {
            limits: Some(Vec::new()),
            ..SlotBook::default()
        };
        book.read(vec![slot(1, 1, "p", "a"), slot(2, 1, "p", "b")]);
        book.task_changed(&task(2, 1, TaskStatus::Done));
        let kept = book.take_to_keep(7).unwrap();
        assert_eq!(
            kept.held.slots.len(),
            1,
            "the ended attempt's slot is left out"
        );
        let books = KeptBooks::default();
        books.put(Some(kept));
        assert!(books.take(8).is_none(), "kept at another mark: not used");
        assert!(books.take(7).is_none(), "a take empties it");
        let mut book = SlotBook {
            limits: Some(Vec::new()),
            ..SlotBook::default()
        };
        book.read(vec![slot(1, 1, "p", "a")]);
        books.put(book.take_to_keep(7));
        let next = SlotBook::seeded(books.take(7).unwrap());
        assert_eq!(next.seeded, Some(7));
        assert_eq!(count(&next, "p", "a"), 1);
        assert_eq!(count(&next, "p", "b"), 0);
    }
}
