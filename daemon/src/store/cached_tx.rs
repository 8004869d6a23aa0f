//! `CachedTx`: a write transaction that answers the engine's reads of a token from
//! the facts the write path already knows (`store/facts.rs`) and writes through to
//! the backend's transaction, keeping those facts as the transaction changes them.
//! Reads it cannot answer go to the backend, and what they find is kept too. It
//! implements only the methods that read or change those facts; every other one
//! passes to the backend unchanged (`store/through.rs`).
//!
//! The rule that keeps the facts true: a transaction may keep (and publish) the
//! facts of a token only while it holds the token's family. SQLite's one writer
//! holds every family; on Postgres, `lock_family` takes the family in this process
//! (`store/family.rs`) and drops the facts it read before, so that what it keeps was
//! read under the lock: a transaction of its own then takes the database's row lock
//! too ([`Locking::Rows`]), a request of the Postgres writer's batch does not (the
//! writer is the one writer of the database, [`Locking::Batch`]).

mod families;

pub use families::{BatchLocks, Locking};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use foldhash::{HashMap as FastMap, HashSet as FastSet};

use serde_json::Value;
use stateous_shared::wire::Object;

use super::facts::{Facts, Layer};
use super::locked::Head;
use super::notifications::NewNotification;
use super::through::Through;
use super::{
    EntryKind, Ledger, LedgerRow, Memory, NewEntry, NewTimer, StoreResult, TaskRow, Tasks,
    TimerRow, TimerStatus, Timers, TokenRow, Tokens, Tx,
};
use crate::notify::{Snapshot, Subscribed};

/// Facts this transaction read or changed.
#[derive(Debug, Clone, Default)]
struct Staged {
    facts: Facts,
    /// Changed by this transaction (not only read).
    dirty: bool,
}

/// What a finished transaction leaves for the cache.
#[derive(Debug, Default)]
pub struct Finished {
    /// The facts to publish once (and only if) the transaction commits.
    pub changed: FastMap<String, Facts>,
    /// Tokens whose cached facts may be wrong now: forget them on commit.
    pub forget: Vec<String>,
    /// Forget every cached fact on commit (a change no entry can follow).
    pub clear: bool,
    /// The families taken in this process, to give back after the commit.
    pub tops: FastSet<String>,
    /// [`Locking::Batch`]: the request had to wait for a family another
    /// transaction holds; its answer stands for nothing, and it runs again in a
    /// transaction of its own.
    pub contended: bool,
}

/// A write transaction over `inner` with the write path's facts.
pub struct CachedTx<'a> {
    inner: &'a dyn Tx,
    base: &'a dyn Layer,
    locks: Locking<'a>,
    /// [`Locking::Batch`]: a family held elsewhere was waited for.
    contended: Cell<bool>,
    staged: RefCell<FastMap<String, Staged>>,
    tops: RefCell<FastSet<String>>,
    clear: Cell<bool>,
    /// The access key whose request writes the next ledger entries.
    by: RefCell<Option<String>>,
    /// The active subscriptions (`notify::Subscribed`), taken at the start.
    outbox: Option<Arc<Snapshot>>,
    /// The entries appended that a subscription may want: written to the
    /// outbox by [`CachedTx::write_outbox`] before the commit.
    candidates: RefCell<Vec<Candidate>>,
}

/// [`CachedTx::write_outbox`] after a request that keeps its changes: true when
/// written; on a failure the request's answer is forgotten (its caller is told it
/// failed) and false, so that nothing of it stays.
pub fn outboxed(cached: &CachedTx<'_>, request: &mut dyn super::request::Request) -> bool {
    match cached.write_outbox() {
        Ok(()) => true,
        Err(error) => {
            tracing::error!("cannot write the outbox of notifications: {error}");
            request.forget();
            false
        }
    }
}

/// An appended entry that a subscription may want.
#[derive(Debug)]
struct Candidate {
    id: i64,
    token: String,
    kind: EntryKind,
    /// The state, for `entered`.
    state: Option<String>,
}

impl<'a> CachedTx<'a> {
    /// A transaction over `inner` whose facts start from `base`, holding families
    /// as `locks` says.
    pub fn new(inner: &'a dyn Tx, base: &'a dyn Layer, locks: Locking<'a>) -> CachedTx<'a> {
        CachedTx {
            inner,
            base,
            locks,
            contended: Cell::new(false),
            staged: RefCell::new(FastMap::default()),
            tops: RefCell::new(FastSet::default()),
            clear: Cell::new(false),
            by: RefCell::new(None),
            outbox: None,
            candidates: RefCell::new(Vec::new()),
        }
    }

    /// Match the entries this transaction appends against `subscribed`'s
    /// active subscriptions (`docs/notifications.md`); none when it has none.
    pub fn notifying(mut self, subscribed: &Subscribed) -> CachedTx<'a> {
        let snapshot = subscribed.snapshot();
        if !snapshot.matchers.is_empty() {
            self.outbox = Some(snapshot);
        }
        self
    }

    /// Write to the outbox, in this transaction, a notification for each entry
    /// appended and each subscription that wants it, judged on the token as the
    /// transaction leaves it. Called once the request ran and keeps its changes.
    pub fn write_outbox(&self) -> StoreResult<()> {
        let Some(snapshot) = &self.outbox else {
            return Ok(());
        };
        let candidates = std::mem::take(&mut *self.candidates.borrow_mut());
        let now = self.now();
        // A request appends its token's entries one after another: the row is
        // read (a copy, context and all) once for each run of them.
        let mut last: Option<(String, Option<TokenRow>)> = None;
        let mut rows = Vec::new();
        for candidate in &candidates {
            if last.as_ref().map(|(token, _)| token) != Some(&candidate.token) {
                last = Some((candidate.token.clone(), self.token(&candidate.token)?));
            }
            let Some((_, Some(row))) = &last else {
                continue;
            };
            let kind = candidate.kind.as_str();
            for matcher in &snapshot.matchers {
                if matcher.matches(kind, candidate.state.as_deref(), row, &snapshot.main, now) {
                    rows.push(NewNotification {
                        subscription: &matcher.name,
                        entry: Some(candidate.id),
                        token: &candidate.token,
                        kind,
                        state: None,
                        visit: None,
                    });
                }
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        self.inner.insert_notifications(&rows)
    }

    /// Run `work` on the staged facts of `token` (taken from the base first).
    fn with<R>(&self, token: &str, work: impl FnOnce(&mut Staged) -> R) -> R {
        let mut staged = self.staged.borrow_mut();
        // Looked up by `&str` first: most calls find the token staged, and a key
        // is made only for a new one.
        if let Some(entry) = staged.get_mut(token) {
            return work(entry);
        }
        let facts = self.base.facts(token).unwrap_or_default();
        let entry = staged.entry(token.to_string()).or_insert(Staged {
            facts,
            dirty: false,
        });
        work(entry)
    }

    /// Change the facts of `token`.
    fn change(&self, token: &str, work: impl FnOnce(&mut Facts)) {
        self.with(token, |entry| {
            work(&mut entry.facts);
            entry.dirty = true;
        });
    }

    /// A fact of `token`: the staged one, or read from the backend and kept.
    fn known<T: Clone>(
        &self,
        token: &str,
        get: impl FnOnce(&Facts) -> Option<T>,
        set: impl FnOnce(&mut Facts, T),
        read: impl FnOnce() -> StoreResult<T>,
    ) -> StoreResult<T> {
        if let Some(found) = self.with(token, |entry| get(&entry.facts)) {
            return Ok(found);
        }
        let found = read()?;
        self.with(token, |entry| set(&mut entry.facts, found.clone()));
        Ok(found)
    }

    /// Change the memory of `token`'s `state`: `write` it to the backend, then
    /// `edit` the known memory (read first) the same way.
    fn memory_changed<R>(
        &self,
        token: &str,
        state: &str,
        write: impl FnOnce() -> StoreResult<R>,
        edit: impl FnOnce(&mut Object),
    ) -> StoreResult<R> {
        let mut memory = self.memory(token, state)?;
        let written = write()?;
        edit(&mut memory);
        self.change(token, |facts| {
            facts.memory.insert(state.to_string(), memory);
        });
        Ok(written)
    }

    /// The token an open task belongs to, if any facts here or below know it.
    fn task_token(&self, id: i64) -> Option<String> {
        let staged = self.staged.borrow();
        let here = staged
            .iter()
            .find_map(|(token, entry)| has_task(&entry.facts, id).then(|| token.clone()));
        here.or_else(|| self.base.task_token(id))
    }

    /// Whether the task was queued before this write, from its token's open tasks
    /// (`None`: not known here).
    fn was_queued(&self, id: i64) -> Option<bool> {
        let token = self.task_token(id)?;
        self.with(&token, |entry| {
            let open = entry.facts.open.as_ref()?;
            Some(
                open.iter()
                    .any(|t| t.id == id && t.status == super::TaskStatus::Queued),
            )
        })
    }

    /// Change a task's row among its token's open tasks (where known).
    fn task_changed(&self, row: &TaskRow) {
        self.change(&row.token, |facts| {
            if let Some(open) = facts.open.as_mut() {
                open.retain(|task| task.id != row.id);
                if row.status.open() {
                    open.push(row.clone());
                    open.sort_by_key(|task| task.id);
                }
            }
        });
    }

    /// Set the lease of the open task `id`, wherever its facts are known.
    fn lease_changed(&self, id: i64, until: Option<i64>) {
        if let Some(token) = self.task_token(id) {
            self.change(&token, |facts| {
                for task in facts.open.iter_mut().flatten() {
                    if task.id == id {
                        task.lease_until = until;
                    }
                }
            });
        }
    }
}

fn has_task(facts: &Facts, id: i64) -> bool {
    facts.open.iter().flatten().any(|task| task.id == id)
}

// Rows read before a family's lock are read again under it only where
// transactions run side by side (Postgres, with `locks`); SQLite's one writer
// held every family all along.
impl Tx for CachedTx<'_> {
    fn now(&self) -> i64 {
        self.inner.now()
    }

    fn reads_again(&self) -> bool {
        self.side_by_side()
    }

    fn turned(&self) -> Option<&super::claim_switch::Turned<'_>> {
        self.inner.turned()
    }
}

// Every other method (the traits written with `passed_through!`) goes to the
// backend: its rows are current (every write goes through to it), so listings and
// scans read it. `adopt_graph` changes rows behind the facts: it runs once, as a
// control plane starts (`engine/serving.rs`), before any request has read a token.
impl Through for CachedTx<'_> {
    fn through(&self) -> &dyn Tx {
        self.inner
    }
}

impl Tokens for CachedTx<'_> {
    fn lock_family(&self, token: &str, wait: bool) -> StoreResult<bool> {
        match self.locks {
            Locking::Rows(locks, patience) => self.take_family(locks, patience, token, wait),
            Locking::Batch(batch) => self.take_family(batch.families, Duration::ZERO, token, wait),
            Locking::Serial => self.inner.lock_family(token, wait),
        }
    }

    fn lock_top(&self, top: &str, wait: bool) -> StoreResult<Option<Option<TokenRow>>> {
        if !self.lock_family(top, wait)? {
            return Ok(None);
        }
        Ok(Some(self.token(top)?))
    }

    fn token(&self, id: &str) -> StoreResult<Option<TokenRow>> {
        // With one writer every read is under the lock: a token not there has
        // nothing in any table yet. So too in a batch that holds its family.
        let serial =
            !self.side_by_side() || (matches!(self.locks, Locking::Batch(_)) && self.holds(id));
        self.known(
            id,
            |facts| facts.row.clone(),
            |facts, row| match row {
                None if serial => *facts = Facts::fresh(),
                row => facts.row = Some(row),
            },
            || self.inner.token(id),
        )
    }

    fn insert_token(&self, row: &TokenRow) -> StoreResult<()> {
        self.inner.insert_token(row)?;
        self.change(&row.token, |facts| facts.row = Some(Some(row.clone())));
        Ok(())
    }

    fn update_token(&self, row: &TokenRow) -> StoreResult<()> {
        self.inner.update_token(row)?;
        self.change(&row.token, |facts| facts.row = Some(Some(row.clone())));
        Ok(())
    }

    fn delete_token(&self, token: &str) -> StoreResult<()> {
        self.inner.delete_token(token)?;
        // Gone from every table: the facts of a token not made yet.
        self.change(token, |facts| *facts = Facts::fresh());
        Ok(())
    }
}

impl Ledger for CachedTx<'_> {
    fn append(
        &self,
        token: &str,
        kind: EntryKind,
        key: Option<&str>,
        data: &Object,
    ) -> StoreResult<i64> {
        let seq = self.last_seq(token)? + 1;
        let entry = NewEntry { kind, key, data };
        let id = self.inner.insert_entry(token, seq, entry)?;
        let by = self.by.borrow().clone();
        let text = |name: &str| data.get(name).and_then(Value::as_str).map(str::to_string);
        if self.outbox.as_ref().is_some_and(|s| s.wants(kind.as_str())) {
            let state = match kind {
                EntryKind::Entered => text("state"),
                _ => None,
            };
            self.candidates.borrow_mut().push(Candidate {
                id,
                token: token.to_string(),
                kind,
                state,
            });
        }
        self.change(token, |facts| {
            facts.seq = Some(seq);
            match kind {
                EntryKind::EventAccepted => {
                    if let Some(counts) = facts.counts.as_mut() {
                        *counts.entry(text("event").unwrap_or_default()).or_insert(0) += 1;
                    }
                    // Kept whole only for the kind that is read back.
                    let row = entry.row(id, token, seq, self.now(), by);
                    facts.accepted = Some(Some(Arc::new(row)));
                }
                EntryKind::Entered => {
                    if let Some(state) = text("state") {
                        match facts.visits.get_mut(&state) {
                            Some(visits) => *visits += 1,
                            None if facts.all_visits => {
                                facts.visits.insert(state, 1);
                            }
                            None => {}
                        }
                    }
                }
                _ => {}
            }
        });
        Ok(seq)
    }

    fn act_for(&self, key: Option<&str>) {
        *self.by.borrow_mut() = key.map(str::to_string);
        self.inner.act_for(key);
    }

    fn last_seq(&self, token: &str) -> StoreResult<i64> {
        self.known(
            token,
            |facts| facts.seq,
            |facts, seq| facts.seq = Some(seq),
            || self.inner.last_seq(token),
        )
    }

    fn insert_entry(&self, token: &str, seq: i64, entry: NewEntry<'_>) -> StoreResult<i64> {
        // Only `append` keeps the facts; an entry written past it makes them unknown.
        self.change(token, |facts| *facts = Facts::default());
        self.inner.insert_entry(token, seq, entry)
    }

    fn counts(&self, token: &str) -> StoreResult<HashMap<String, i64>> {
        self.known(
            token,
            |facts| facts.counts.clone(),
            |facts, counts| facts.counts = Some(counts),
            || self.inner.counts(token),
        )
    }

    fn visits(&self, token: &str, state: &str) -> StoreResult<i64> {
        self.known(
            token,
            |facts| match facts.visits.get(state) {
                Some(visits) => Some(*visits),
                None => facts.all_visits.then_some(0),
            },
            |facts, visits| {
                facts.visits.insert(state.to_string(), visits);
            },
            || self.inner.visits(token, state),
        )
    }

    fn last_accepted(&self, token: &str) -> StoreResult<Option<LedgerRow>> {
        let shared = self.known(
            token,
            |facts| facts.accepted.clone(),
            |facts, accepted| facts.accepted = Some(accepted),
            || Ok(self.inner.last_accepted(token)?.map(Arc::new)),
        )?;
        Ok(shared.map(Arc::unwrap_or_clone))
    }
}

impl Tasks for CachedTx<'_> {
    fn queue_task(&self, token: &str, state: &str, visit: i64) -> StoreResult<i64> {
        let id = self.inner.queue_task(token, state, visit)?;
        let row = TaskRow::queued(id, token, state, visit, self.now());
        self.task_changed(&row);
        super::task_keys::task_queued(self, &row)?;
        Ok(id)
    }

    fn task(&self, id: i64) -> StoreResult<Option<TaskRow>> {
        if let Some(token) = self.task_token(id) {
            let found = self.with(&token, |entry| {
                entry
                    .facts
                    .open
                    .iter()
                    .flatten()
                    .find(|task| task.id == id)
                    .cloned()
            });
            if found.is_some() {
                return Ok(found);
            }
        }
        self.inner.task(id)
    }

    fn update_task(&self, row: &TaskRow) -> StoreResult<()> {
        // Whether it was queued, from the facts kept (`None`: not kept), where
        // `task_keys` is kept at all.
        let keyed =
            super::claim_switch::switch_of(self).applies(super::claim_switch::ClaimFact::Keys);
        let was_queued = if keyed { self.was_queued(row.id) } else { None };
        self.inner.update_task(row)?;
        self.task_changed(row);
        if keyed {
            super::task_keys::task_written(self, row, was_queued)?;
        }
        if row.attempt > 0 && row.status != super::TaskStatus::Claimed {
            super::claim_limits::slot_returned(self, row);
        }
        Ok(())
    }

    fn open_tasks(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        self.known(
            token,
            |facts| facts.open.clone(),
            |facts, open| facts.open = Some(open),
            || self.inner.open_tasks(token),
        )
    }

    fn lock_queued(&self, states: &[(Option<String>, String)]) -> StoreResult<Head> {
        let head = self.inner.lock_queued(states)?;
        let locks = match self.locks {
            Locking::Serial => return Ok(head),
            Locking::Rows(locks, _) => locks,
            Locking::Batch(batch) => batch.families,
        };
        let Head::Task(id) = head else {
            return Ok(head);
        };
        // Locked in the database; in this process, only if no one holds it (a
        // transaction that holds it waits for the database's lock we now hold).
        let Some(task) = self.task(id)? else {
            return Ok(Head::Unsure);
        };
        if self.holds(&task.token) {
            return Ok(head);
        }
        if !locks.take(&task.token, None) {
            return Ok(Head::Unsure);
        }
        self.held(task.token);
        Ok(head)
    }

    fn renew_leases(&self, supervisor: &str, ids: &[i64], until: i64) -> StoreResult<Vec<i64>> {
        let renewed = self.inner.renew_leases(supervisor, ids, until)?;
        for id in &renewed {
            self.lease_changed(*id, Some(until));
        }
        Ok(renewed)
    }

    fn end_lease(&self, id: i64) -> StoreResult<bool> {
        let ended = self.inner.end_lease(id)?;
        if ended {
            self.lease_changed(id, None);
        }
        Ok(ended)
    }

    fn extend_all_leases(&self, until: i64) -> StoreResult<usize> {
        self.clear.set(true);
        self.staged.borrow_mut().clear();
        self.inner.extend_all_leases(until)
    }
}

impl Timers for CachedTx<'_> {
    fn set_timer(&self, new: NewTimer<'_>) -> StoreResult<TimerRow> {
        let timer = self.inner.set_timer(new)?;
        self.change(new.token, |facts| {
            if let Some(timers) = facts.timers.as_mut() {
                timers.push(timer.clone());
            }
        });
        Ok(timer)
    }

    fn pending_timers(&self, token: &str) -> StoreResult<Vec<TimerRow>> {
        self.known(
            token,
            |facts| facts.timers.clone(),
            |facts, timers| facts.timers = Some(timers),
            || self.inner.pending_timers(token),
        )
    }

    fn update_timer(&self, row: &TimerRow) -> StoreResult<()> {
        self.inner.update_timer(row)?;
        self.change(&row.token, |facts| {
            if let Some(timers) = facts.timers.as_mut() {
                timers.retain(|timer| timer.id != row.id);
                if row.status == TimerStatus::Pending {
                    timers.push(row.clone());
                    timers.sort_by_key(|timer| timer.id);
                }
            }
        });
        Ok(())
    }
}

impl Memory for CachedTx<'_> {
    fn memory(&self, token: &str, state: &str) -> StoreResult<Object> {
        self.known(
            token,
            |facts| match facts.memory.get(state) {
                Some(memory) => Some(memory.clone()),
                None => facts.all_memory.then(Object::new),
            },
            |facts, memory| {
                facts.memory.insert(state.to_string(), memory);
            },
            || self.inner.memory(token, state),
        )
    }

    fn set_memory(&self, token: &str, state: &str, key: &str, value: &Value) -> StoreResult<()> {
        self.memory_changed(
            token,
            state,
            || self.inner.set_memory(token, state, key, value),
            |memory| {
                memory.insert(key.to_string(), value.clone());
            },
        )
    }

    fn forget(&self, token: &str, state: &str, key: &str) -> StoreResult<bool> {
        self.memory_changed(
            token,
            state,
            || self.inner.forget(token, state, key),
            |memory| {
                memory.remove(key);
            },
        )
    }

    fn delete_memory(&self, token: &str) -> StoreResult<()> {
        // Known to have no memory (every state's known, and empty: a token started here
        // and never given any) leaves no row to delete: one statement less at each
        // token's end.
        let none = self.with(token, |entry| {
            entry.facts.all_memory && entry.facts.memory.values().all(Object::is_empty)
        });
        if !none {
            self.inner.delete_memory(token)?;
        }
        self.change(token, |facts| {
            facts.memory.clear();
            facts.all_memory = true;
        });
        Ok(())
    }
}
