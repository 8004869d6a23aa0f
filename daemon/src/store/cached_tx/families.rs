//! How a [`CachedTx`] holds the token families it changes ([`Locking`]): the
//! family lock in this process (`store/family.rs`), then, for a transaction of its
//! own on Postgres, the top token's row in the database; and which of the facts it
//! staged it may publish when it finishes (only those of families it held).

use std::cell::RefCell;
use std::time::Duration;

use foldhash::{HashMap as FastMap, HashSet as FastSet};

use super::{CachedTx, Finished, Staged};
use crate::store::facts::{Facts, Layer};
use crate::store::family::{FamilyLocks, SoloTransactions};
use crate::store::{StoreError, StoreResult, TokenRow, Tokens};

/// How a transaction holds the token families it changes.
#[derive(Clone, Copy)]
pub enum Locking<'a> {
    /// SQLite: the one writer holds every family; nothing is taken.
    Serial,
    /// Postgres, a transaction of its own: each family is taken in this process,
    /// waiting up to the `Duration`, then its top token's row in the database.
    Rows(&'a FamilyLocks, Duration),
    /// Postgres, a request of the writer's batch (`postgres/writer.rs`): each family
    /// is taken in this process only, and never waited for. A family another
    /// transaction holds makes a request that must wait for it
    /// [`Finished::contended`].
    Batch(&'a BatchLocks<'a>),
}

/// What the requests of one batch of the Postgres writer share.
pub struct BatchLocks<'a> {
    /// The families of this process.
    pub families: &'a FamilyLocks,
    /// The families the batch's requests took so far.
    pub held: RefCell<FastSet<String>>,
    /// The transactions of their own that run beside the batch.
    pub solo: &'a SoloTransactions,
    /// How many of those had begun when the batch began.
    pub mark: u64,
}

impl CachedTx<'_> {
    /// What the cache should learn if the transaction commits; the families to
    /// give back in any case.
    pub fn finish(self) -> Finished {
        let staged = self.staged.into_inner();
        let tops = self.tops.into_inner();
        let mut finished = Finished {
            clear: self.clear.get(),
            contended: self.contended.get(),
            ..Finished::default()
        };
        let batch = match self.locks {
            Locking::Serial => {
                // SQLite: the one writer holds every family.
                finished.changed = staged
                    .into_iter()
                    .map(|(token, entry)| (token, entry.facts))
                    .collect();
                finished.tops = tops;
                return finished;
            }
            Locking::Rows(..) => None,
            Locking::Batch(batch) => Some(batch.held.borrow()),
        };
        let held: FastSet<String> = staged
            .keys()
            .filter(|token| {
                top_among(token, &staged, self.base).is_some_and(|top| {
                    tops.contains(&top) || batch.as_ref().is_some_and(|held| held.contains(&top))
                })
            })
            .cloned()
            .collect();
        drop(batch);
        for (token, entry) in staged {
            if held.contains(&token) {
                finished.changed.insert(token, entry.facts);
            } else if entry.dirty {
                // Changed without its family held: never trust a cached copy.
                finished.forget.push(token);
            }
        }
        finished.tops = tops;
        finished
    }

    /// Postgres: take the family of `token` in this process, then in the database.
    pub(super) fn take_family(
        &self,
        locks: &FamilyLocks,
        wait: Duration,
        token: &str,
        block: bool,
    ) -> StoreResult<bool> {
        let top = self.top_of(token)?;
        if self.holds(&top) {
            return Ok(true);
        }
        if let Locking::Batch(batch) = self.locks {
            // The writer never waits: a family held elsewhere sends a request that
            // must wait for it to a transaction of its own.
            if !locks.take(&top, None) {
                if block {
                    self.contended.set(true);
                    return Err(StoreError::Busy);
                }
                return Ok(false);
            }
            if batch.solo.none_since(batch.mark) {
                // No other transaction wrote since the batch began: what it read
                // stands.
                self.tops.borrow_mut().insert(top.clone());
            } else {
                // Read again: every transaction publishes what it changed before
                // it gives a family back, so the facts below are the database's;
                // the row itself is read when they do not know it.
                self.held(top.clone());
                if self.base.facts(&top).is_none() {
                    let row = self.inner.token(&top)?;
                    self.with(&top, |entry| entry.facts.row = Some(row));
                }
            }
            // A token that does not exist has nothing in any table.
            self.with(&top, |entry| {
                if entry.facts.row == Some(None) && !entry.dirty {
                    entry.facts = Facts::fresh();
                }
            });
            return Ok(true);
        }
        if !locks.take(&top, block.then_some(wait)) {
            return if block {
                Err(StoreError::Busy)
            } else {
                Ok(false)
            };
        }
        let row = match self.inner.lock_top(&top, block) {
            Ok(Some(row)) => row,
            Ok(None) => {
                locks.give_back([&top]);
                return Ok(false);
            }
            Err(error) => {
                locks.give_back([&top]);
                return Err(error);
            }
        };
        self.held(top.clone());
        // The row was read under the lock: what it says is so.
        self.with(&top, |entry| match row {
            Some(row) => entry.facts.row = Some(Some(row)),
            None => entry.facts = Facts::fresh(),
        });
        Ok(true)
    }

    /// Whether other transactions may change rows between two reads of this one
    /// (Postgres): a row read before its family was taken is read again after.
    pub(super) fn side_by_side(&self) -> bool {
        !matches!(self.locks, Locking::Serial)
    }

    /// Whether this transaction (or its batch) holds the family of `top`.
    pub(super) fn holds(&self, top: &str) -> bool {
        if self.tops.borrow().contains(top) {
            return true;
        }
        match self.locks {
            Locking::Batch(batch) => batch.held.borrow().contains(top),
            _ => false,
        }
    }

    /// A family is now held: facts read before may be old, and go.
    pub(super) fn held(&self, top: String) {
        self.staged.borrow_mut().retain(|_, entry| entry.dirty);
        self.tops.borrow_mut().insert(top);
    }

    /// The top token of `token`'s family (a parent never changes, so the walk may
    /// read what it finds without the family's lock).
    pub(super) fn top_of(&self, token: &str) -> StoreResult<String> {
        let mut current = token.to_string();
        for _ in 0..64 {
            match self.token(&current)?.and_then(|row| row.parent) {
                Some(parent) => current = parent,
                None => return Ok(current),
            }
        }
        Ok(current)
    }
}

/// The top token of `token` as the staged rows (then the base's) know it; `None`
/// when a row on the way is not known.
fn top_among(token: &str, staged: &FastMap<String, Staged>, base: &dyn Layer) -> Option<String> {
    let mut current = token.to_string();
    for _ in 0..64 {
        let row = match staged.get(&current) {
            Some(entry) => entry.facts.row.clone(),
            None => base.facts(&current).and_then(|facts| facts.row),
        };
        match row? {
            Some(TokenRow {
                parent: Some(parent),
                ..
            }) => current = parent,
            // A token not made (yet): its own top.
            _ => return Some(current),
        }
    }
    None
}
