//! Notifications (`docs/notifications.md`): subscriptions to ledger entries and to
//! tokens that did not move, an outbox written in the transaction of the entry
//! that causes each notification, and a sender per subscription that delivers
//! after the commit, signed per Standard Webhooks, with retries until a 2xx.
//!
//! - [`Subscribed`]: the write path's copy of the active subscriptions, which
//!   `CachedTx` matches each appended entry against (a cheap test of the kind,
//!   then the states, the workflow and the filter of the token as the transaction
//!   leaves it).
//! - `input.rs`: a new subscription's checks and its row.
//! - `body.rs`: the bodies (`json`, `slack`) and the signature headers.
//! - `send.rs`: one HTTP request with a deadline and a cap on the answer.
//! - `sender.rs`: the queues, the backoff and the dead letters.
//! - `waiting.rs`: which queues wait for a receiver they could not reach, kept
//!   in memory for what the control plane shows.

pub mod body;
pub mod input;
pub mod send;
pub mod sender;
pub mod waiting;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use stateous_shared::guards::filter::{moved_seconds, parse_filter, Filter, TokenFacts};

use crate::store::notifications::SubscriptionRow;
use crate::store::TokenRow;

/// One active subscription as the write path matches it.
#[derive(Debug)]
pub struct Matcher {
    /// Its name.
    pub name: String,
    /// The ledger entry kinds it is about.
    pub kinds: Vec<String>,
    /// The states it is narrowed to (empty: any): a state's name, of any
    /// workflow, or `WORKFLOW/STATE`, of that workflow only.
    pub states: Vec<String>,
    /// The workflow it is narrowed to.
    pub workflow: Option<String>,
    /// The filter it is narrowed by.
    pub filter: Option<Filter>,
}

impl Matcher {
    /// The matcher of an active subscription's row; `None` for a paused one.
    pub fn of(row: &SubscriptionRow) -> Option<Matcher> {
        if row.status != "active" {
            return None;
        }
        let list = |text: &str| serde_json::from_str::<Vec<String>>(text).unwrap_or_default();
        Some(Matcher {
            name: row.name.clone(),
            kinds: list(&row.kinds),
            states: list(&row.states),
            workflow: row.workflow.clone(),
            filter: row.filter.as_deref().and_then(|f| parse_filter(f).ok()),
        })
    }

    /// Whether an entry of `kind` may interest it (the cheap test made at each
    /// append).
    pub fn wants(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }

    /// Whether the entry of `kind` (about `state`, for `entered`) of the token
    /// `row`, as the transaction leaves it, is one of its notifications; `main`
    /// is the main workflow's name.
    pub fn matches(
        &self,
        kind: &str,
        state: Option<&str>,
        row: &TokenRow,
        main: &str,
        now: i64,
    ) -> bool {
        if !self.wants(kind) {
            return false;
        }
        let state = state.unwrap_or(&row.state);
        let workflow = row.workflow.as_deref().unwrap_or(main);
        let named = |given: &String| match given.rsplit_once('/') {
            None => given == state,
            Some((of, name)) => of == workflow && name == state,
        };
        if !self.states.is_empty() && !self.states.iter().any(named) {
            return false;
        }
        if self.workflow.as_deref().is_some_and(|w| w != workflow) {
            return false;
        }
        self.filter.as_ref().is_none_or(|filter| {
            filter.matches(&TokenFacts {
                token: &row.token,
                state: &row.state,
                status: row.status.as_str(),
                visit: row.visit,
                workflow,
                parent: row.parent.as_deref(),
                moved: moved_seconds(row.entered_at, now),
                graph: row.graph.as_deref().unwrap_or(""),
                context: &row.context,
            })
        })
    }
}

/// The active subscriptions, as the write path matches them.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Each active subscription with ledger entry kinds.
    pub matchers: Vec<Matcher>,
    /// The main workflow's name (a token of no workflow runs it).
    pub main: String,
    /// Every subscription, paused ones too, by name and the moment it was
    /// added (microseconds): one added again under a removed one's name has
    /// a later one.
    pub added: Vec<(String, i64)>,
}

impl Snapshot {
    /// Whether some subscription may want an entry of `kind`.
    pub fn wants(&self, kind: &str) -> bool {
        self.matchers.iter().any(|m| m.wants(kind))
    }

    /// Whether the subscription `name` added at `added` (microseconds) is
    /// here (not removed, nor added again since).
    pub fn has(&self, name: &str, added: i64) -> bool {
        self.added.iter().any(|(n, at)| n == name && *at == added)
    }

    /// Whether the subscription `name` added at `added` is here and active.
    pub fn active(&self, name: &str, added: i64) -> bool {
        self.has(name, added) && self.matchers.iter().any(|m| m.name == name)
    }
}

/// The write path's copy of the active subscriptions, replaced whole after each
/// change to one (and at the start); cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Subscribed {
    current: Arc<RwLock<Arc<Snapshot>>>,
    /// Told when an operator asks for notifications to go now (`notify test`,
    /// `redeliver`, `resume`): a queue waiting for a receiver it could not
    /// reach tries again at once.
    asked: Arc<tokio::sync::Notify>,
    /// How many times an operator asked so far (a queue that starts after
    /// a word, or is not waiting when it comes, still sees it).
    words: Arc<AtomicU64>,
    /// The queues that wait for a receiver they could not reach, by
    /// subscription (`waiting.rs`).
    waiting: Arc<Mutex<HashMap<String, waiting::Waiting>>>,
}

impl Subscribed {
    /// Wake the queues that wait for a receiver they could not reach.
    pub fn ask_sends(&self) {
        self.words.fetch_add(1, Ordering::SeqCst);
        self.asked.notify_waiters();
    }

    /// How many times an operator asked for notifications to go now so far.
    pub fn words(&self) -> u64 {
        self.words.load(Ordering::SeqCst)
    }

    /// Until an operator asks for notifications to go now ([`Subscribed::ask_sends`]).
    pub async fn sends_asked(&self) {
        self.asked.notified().await;
    }

    /// The subscriptions now; a transaction takes this once.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replace the copy with the subscriptions of `rows`.
    pub fn replace(&self, rows: &[SubscriptionRow], main: &str) {
        let snapshot = Arc::new(Snapshot {
            matchers: rows.iter().filter_map(Matcher::of).collect(),
            main: main.to_string(),
            added: rows
                .iter()
                .map(|r| (r.name.clone(), r.created_at))
                .collect(),
        });
        match self.current.write() {
            Ok(mut current) => *current = snapshot,
            Err(poisoned) => *poisoned.into_inner() = snapshot,
        }
        // After the copy: a queue that marks itself from now on sees it.
        self.forget_waits(rows);
    }
}
