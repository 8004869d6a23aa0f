//! What the write path knows about each token between requests: its row, its last
//! ledger seq, its event counts and visits, its last accepted event, its open tasks and
//! pending timers. One control plane owns the database and every change goes through
//! it, so the facts of a token it changed are the database's facts, as long as they are
//! published only once their transaction committed, and read only by a transaction that
//! holds the token family's lock:
//!
//! - SQLite: the one writer holds every family. A request's facts go to its batch's
//!   overlay when its savepoint is kept; the overlay goes to the cache once the
//!   batch committed (`store/sqlite/writer.rs`).
//! - Postgres: a transaction holds the family's lock in this process (and the
//!   family's row lock in the database) from before it reads the facts until after
//!   it published them (`store/family.rs`, `store/postgres/store.rs`).
//!
//! The cache is bounded ([`CAPACITY`] tokens, least recently used first out): a
//! token it forgot is read from the database again.

use std::collections::HashMap;

use foldhash::{HashMap as FastMap, HashSet as FastSet};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use super::cached_tx::Finished;
use super::guard::{as_it_is, locked};
use stateous_shared::wire::Object;

use super::{LedgerRow, TaskRow, TimerRow, TokenRow};

/// How many tokens' facts the cache keeps at most (a few hundred bytes each).
pub const CAPACITY: usize = 20_000;

/// What is known about one token; `None`: not known (read it from the database).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Its row (`Some(None)`: it does not exist).
    pub row: Option<Option<TokenRow>>,
    /// Its last ledger seq.
    pub seq: Option<i64>,
    /// How many times each event was accepted.
    pub counts: Option<HashMap<String, i64>>,
    /// How many times it entered each state known here.
    pub visits: FastMap<String, i64>,
    /// `visits` has every state it ever entered (a state missing: 0).
    pub all_visits: bool,
    /// Its last `event_accepted` entry (shared: facts are copied once a request,
    /// the entry is read only by a claim's grant).
    pub accepted: Option<Option<Arc<LedgerRow>>>,
    /// Its queued, claimed and waiting tasks, by id.
    pub open: Option<Vec<TaskRow>>,
    /// Its pending timers, by id.
    pub timers: Option<Vec<TimerRow>>,
    /// The routine's memory of each state known here.
    pub memory: FastMap<String, Object>,
    /// `memory` has every state's (a state missing: empty).
    pub all_memory: bool,
}

impl Facts {
    /// The facts of a token that does not exist yet: nothing in any table.
    pub fn fresh() -> Facts {
        Facts {
            row: Some(None),
            seq: Some(0),
            counts: Some(HashMap::new()),
            visits: FastMap::default(),
            all_visits: true,
            accepted: Some(None),
            open: Some(Vec::new()),
            timers: Some(Vec::new()),
            memory: FastMap::default(),
            all_memory: true,
        }
    }
}

/// Where a transaction's facts come from when it has none of its own yet.
pub trait Layer: Sync {
    /// The facts of `token`, if this layer (or one below) knows any.
    fn facts(&self, token: &str) -> Option<Facts>;
    /// The token that the open task `id` belongs to, if known.
    fn task_token(&self, id: i64) -> Option<String>;
}

/// The facts of tokens the write path changed, shared by its transactions.
#[derive(Debug)]
pub struct Cache {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    facts: lru::LruCache<String, Facts>,
    /// Open task id -> its token, for the facts in `facts`.
    tasks: FastMap<i64, String>,
}

impl Default for Cache {
    fn default() -> Cache {
        Cache::new(CAPACITY)
    }
}

impl Cache {
    /// An empty cache of at most `capacity` tokens.
    pub fn new(capacity: usize) -> Cache {
        let capacity = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        Cache {
            state: Mutex::new(State {
                facts: lru::LruCache::new(capacity),
                tasks: FastMap::default(),
            }),
        }
    }

    fn with<R>(&self, work: impl FnOnce(&mut State) -> R) -> R {
        // A panic while the lock was held can leave a half-written entry: forget
        // everything then, rather than trust it.
        let mut state = locked(&self.state, |state| {
            state.facts.clear();
            state.tasks.clear();
        });
        work(&mut state)
    }

    /// Publish the facts a committed transaction ended with.
    pub fn publish(&self, changed: FastMap<String, Facts>) {
        self.with(|state| {
            for (token, facts) in changed {
                state.forget_tasks(&token);
                for task in facts.open.iter().flatten() {
                    state.tasks.insert(task.id, token.clone());
                }
                if let Some((old, evicted)) = state.facts.push(token.clone(), facts) {
                    if old != token {
                        for task in evicted.open.iter().flatten() {
                            state.tasks.remove(&task.id);
                        }
                    }
                }
            }
        });
    }

    /// Forget these tokens (their facts may be wrong now).
    pub fn forget(&self, tokens: &[String]) {
        self.with(|state| {
            for token in tokens {
                state.forget_tasks(token);
                state.facts.pop(token);
            }
        });
    }

    /// Forget everything (a change that no cache entry can follow).
    pub fn clear(&self) {
        self.with(|state| {
            state.facts.clear();
            state.tasks.clear();
        });
    }

    /// Whether it knows facts of `token` (without copying them, nor making them
    /// the most recently used).
    pub fn knows(&self, token: &str) -> bool {
        self.with(|state| state.facts.contains(token))
    }

    /// How many tokens it knows.
    pub fn len(&self) -> usize {
        self.with(|state| state.facts.len())
    }

    /// Whether it knows none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl State {
    fn forget_tasks(&mut self, token: &str) {
        if let Some(facts) = self.facts.peek(token) {
            for task in facts.open.iter().flatten() {
                self.tasks.remove(&task.id);
            }
        }
    }
}

impl Layer for Cache {
    fn facts(&self, token: &str) -> Option<Facts> {
        self.with(|state| state.facts.get(token).cloned())
    }

    fn task_token(&self, id: i64) -> Option<String> {
        self.with(|state| state.tasks.get(&id).cloned())
    }
}

/// The facts that the kept requests of one SQLite batch changed, over the cache:
/// a later request of the batch sees them before the batch commits.
pub struct Overlay<'c> {
    cache: &'c Cache,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    changed: FastMap<String, Facts>,
    forget: FastSet<String>,
    clear: bool,
}

impl<'c> Overlay<'c> {
    /// An empty overlay over `cache`.
    pub fn new(cache: &'c Cache) -> Overlay<'c> {
        Overlay {
            cache,
            kept: Mutex::new(Kept::default()),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        locked(&self.kept, as_it_is)
    }

    /// A kept request's changes.
    pub fn keep(&self, finished: Finished) {
        let mut kept = self.kept();
        if finished.clear {
            kept.clear = true;
            kept.changed.clear();
        }
        for token in finished.forget {
            kept.changed.remove(&token);
            kept.forget.insert(token);
        }
        for (token, facts) in finished.changed {
            kept.forget.remove(&token);
            kept.changed.insert(token, facts);
        }
    }

    /// The batch committed: its facts go to the cache.
    pub fn publish(self) {
        let kept = self.kept.into_inner().unwrap_or_default();
        if kept.clear {
            self.cache.clear();
        }
        let forget: Vec<String> = kept.forget.into_iter().collect();
        self.cache.forget(&forget);
        self.cache.publish(kept.changed);
    }
}

impl Layer for Overlay<'_> {
    fn facts(&self, token: &str) -> Option<Facts> {
        let kept = self.kept();
        if let Some(facts) = kept.changed.get(token) {
            return Some(facts.clone());
        }
        if kept.clear || kept.forget.contains(token) {
            return None;
        }
        drop(kept);
        self.cache.facts(token)
    }

    fn task_token(&self, id: i64) -> Option<String> {
        let kept = self.kept();
        let mine = kept.changed.iter().find_map(|(token, facts)| {
            facts
                .open
                .iter()
                .flatten()
                .any(|task| task.id == id)
                .then(|| token.clone())
        });
        if mine.is_some() || kept.clear {
            return mine;
        }
        drop(kept);
        self.cache
            .task_token(id)
            .filter(|token| !self.kept().forget.contains(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TaskStatus;

    fn task(id: i64, token: &str) -> TaskRow {
        TaskRow {
            id,
            token: token.into(),
            state: "s".into(),
            visit: 1,
            status: TaskStatus::Queued,
            attempt: 0,
            claimed_by: None,
            lease_until: None,
            queued_at: 0,
        }
    }

    fn with_task(id: i64, token: &str) -> Facts {
        Facts {
            open: Some(vec![task(id, token)]),
            ..Facts::default()
        }
    }

    #[test]
    fn published_facts_are_found_by_token_and_by_open_task() {
        let cache = Cache::new(10);
        cache.publish([("A".to_string(), with_task(7, "A"))].into_iter().collect());
        assert_eq!(cache.task_token(7).as_deref(), Some("A"));
        assert!(cache.facts("A").is_some());
        cache.forget(&["A".to_string()]);
        assert_eq!(cache.task_token(7), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn the_least_recently_used_token_goes_first_with_its_tasks() {
        let cache = Cache::new(2);
        cache.publish([("A".to_string(), with_task(1, "A"))].into_iter().collect());
        cache.publish([("B".to_string(), with_task(2, "B"))].into_iter().collect());
        assert!(cache.facts("A").is_some()); // A is now the most recent
        cache.publish([("C".to_string(), with_task(3, "C"))].into_iter().collect());
        assert!(cache.facts("B").is_none());
        assert_eq!(cache.task_token(2), None);
        assert_eq!(cache.task_token(1).as_deref(), Some("A"));
    }

    #[test]
    fn an_overlay_shows_its_batch_first_and_publishes_only_when_asked() {
        let cache = Cache::new(10);
        cache.publish([("A".to_string(), Facts::default())].into_iter().collect());
        let overlay = Overlay::new(&cache);
        overlay.keep(Finished {
            changed: [("A".to_string(), with_task(4, "A"))].into_iter().collect(),
            ..Finished::default()
        });
        assert_eq!(overlay.task_token(4).as_deref(), Some("A"));
        assert_eq!(cache.task_token(4), None);
        overlay.publish();
        assert_eq!(cache.task_token(4).as_deref(), Some("A"));
    }
}
