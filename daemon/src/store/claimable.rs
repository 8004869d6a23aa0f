//! The wake-up of waiting claims (`POST /tasks/claim` with `wait`,
//! `docs/reference/http.md`): what a write made claimable, noted inside its
//! transaction and told to the waiting claims once it commits
//! (`control/claim_wait.rs`).
//!
//! [`made_claimable`] is the one hook: any engine step that makes a task
//! claimable calls it (a task queued, an attempt to retry, a token resumed; a
//! limit's slot given back or a retry delay that ends, where limits apply). The
//! ledger's `engine::append` calls it for the entries that say so, so
//! that a new step that queues a task through the usual entries needs nothing
//! more. Noting is cheap and never fails: a note in a transaction that rolls
//! back only wakes a claim that then finds nothing and waits on.
//!
//! The notes live in a thread-local because a write's work runs, start to end, on
//! the thread that runs the transaction; [`collect`] takes them per run of the
//! work (a write may run twice: only its last run counts).

use std::cell::RefCell;

use crate::store::EntryKind;

/// What one write made claimable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Claimable {
    /// Nothing: no waiting claim is woken.
    #[default]
    Nothing,
    /// Tasks of these states (their names, without a workflow): the claims that
    /// wait for one of them are woken.
    States(Vec<String>),
    /// Something of any state (a token resumed, an attempt to retry): every
    /// waiting claim is woken.
    Any,
}

impl Claimable {
    fn add(&mut self, state: Option<&str>) {
        match (state, &mut *self) {
            (_, Claimable::Any) => {}
            (None, _) => *self = Claimable::Any,
            (Some(state), Claimable::Nothing) => *self = Claimable::States(vec![state.into()]),
            (Some(state), Claimable::States(states)) => {
                if !states.iter().any(|s| s == state) {
                    states.push(state.into());
                }
            }
        }
    }

    /// Whether a claim that serves `served` (state names, `W/S` for a child
    /// workflow's state) is woken by this.
    pub fn wakes(&self, served: &[String]) -> bool {
        match self {
            Claimable::Nothing => false,
            Claimable::Any => true,
            Claimable::States(states) => served.iter().any(|name| {
                let state = name.rsplit('/').next().unwrap_or(name);
                states.iter().any(|s| s == state)
            }),
        }
    }
}

thread_local! {
    static MADE: RefCell<Option<Claimable>> = const { RefCell::new(None) };
}

/// The hook: this transaction made a task of `state` claimable (`None`: of a
/// state not known here, which wakes every waiting claim). Called inside the
/// write; the waiting claims are told after its commit. Outside a [`collect`]
/// (a test driving the engine) it does nothing.
pub fn made_claimable(state: Option<&str>) {
    MADE.with(|made| {
        if let Some(made) = made.borrow_mut().as_mut() {
            made.add(state);
        }
    });
}

/// The entries that make a task claimable, for `engine::append`: a task
/// queued (of the state in its data), an attempt to retry and a token resumed
/// (of any state).
pub fn note_entry(kind: EntryKind, data: &serde_json::Map<String, serde_json::Value>) {
    match kind {
        EntryKind::TaskQueued => {
            made_claimable(Some(
                data.get("state")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default(),
            ));
        }
        EntryKind::TaskRetrying | EntryKind::Resumed => made_claimable(None),
        _ => {}
    }
}

/// Run `work` (one run of a write's work), and what it made claimable.
pub fn collect<R>(work: impl FnOnce() -> R) -> (R, Claimable) {
    let before = MADE.with(|made| made.borrow_mut().replace(Claimable::Nothing));
    let done = work();
    let made = MADE.with(|made| std::mem::replace(&mut *made.borrow_mut(), before));
    (done, made.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_gather_per_run_and_wake_the_claims_of_their_states() {
        made_claimable(Some("outside")); // no collect: nothing kept
        let ((), made) = collect(|| {
            made_claimable(Some("pack"));
            made_claimable(Some("pack"));
            made_claimable(Some("ship"));
        });
        assert_eq!(made, Claimable::States(vec!["pack".into(), "ship".into()]));
        assert!(made.wakes(&["pack".into()]));
        assert!(made.wakes(&["child/ship".into()]));
        assert!(!made.wakes(&["bill".into()]));
        let ((), any) = collect(|| {
            made_claimable(Some("pack"));
            made_claimable(None);
        });
        assert!(any.wakes(&["bill".into()]));
        let ((), nothing) = collect(|| {});
        assert!(!nothing.wakes(&["pack".into()]));
    }
}
