//! Claims that wait (`POST /tasks/claim` with `wait`, `docs/reference/http.md`):
//! with no free task, the claim stays open until a commit makes a task of one of
//! its states claimable (`engine::claimable`, the hook), the wait ends, or the
//! control plane stops serving.
//!
//! A waiting claim costs no CPU and no database work while it waits: it sleeps on
//! its own [`Notify`], registered in [`Waiters`] before its first try, so that a
//! commit that lands between that try and the sleep still wakes it. A commit that
//! made something claimable wakes every claim whose states it names ([`Waiters::wake`]);
//! each tries once more, one gets the task, the others find nothing and sleep
//! again. At most [`Options::waiting_claims`](super::Options) claims wait at
//! once; a claim beyond them answers at once, as one without `wait` does, so that
//! waiting claims never hold every connection the server takes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stateous_shared::refusal::Refusal;
use stateous_shared::wire::Grant;
use tokio::sync::Notify;

use super::Control;
use crate::store::claimable::{self, Claimable};
use crate::validated::ClaimInput;

/// The longest wait a claim may ask for: 60 s.
pub const MOST_WAIT: Duration = Duration::from_secs(60);

/// The claims waiting now, each with the states it serves.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    state: Mutex<Registry>,
    next: AtomicU64,
}

#[derive(Debug, Default)]
struct Registry {
    waiting: HashMap<u64, (Vec<String>, Arc<Notify>)>,
    /// The control plane stopped serving: every claim answers now.
    closed: bool,
}

/// One waiting claim's place in [`Waiters`]; dropping it leaves.
struct Place<'a> {
    waiters: &'a Waiters,
    id: u64,
    notify: Arc<Notify>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.waiters.registry().waiting.remove(&self.id);
    }
}

impl Waiters {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a claim of `served`, unless `most` claims wait already or the
    /// control plane stopped serving.
    fn enter(&self, served: &[String], most: usize) -> Option<Place<'_>> {
        let mut registry = self.registry();
        if registry.closed || registry.waiting.len() >= most {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        registry
            .waiting
            .insert(id, (served.to_vec(), Arc::clone(&notify)));
        Some(Place {
            waiters: self,
            id,
            notify,
        })
    }

    /// Wake the claims that `made` names (after the commit that made it).
    pub(super) fn wake(&self, made: &Claimable) {
        if *made == Claimable::Nothing {
            return;
        }
        let registry = self.registry();
        for (served, notify) in registry.waiting.values() {
            if made.wakes(served) {
                // A permit is kept when the claim is not asleep yet: its next
                // sleep ends at once.
                notify.notify_one();
            }
        }
    }

    /// The control plane stopped serving: answer every waiting claim now, and
    /// let none wait from now on.
    pub(super) fn close(&self) {
        let mut registry = self.registry();
        registry.closed = true;
        for (_, notify) in registry.waiting.values() {
            notify.notify_one();
        }
    }

    fn closed(&self) -> bool {
        self.registry().closed
    }

    /// How many claims wait now.
    pub(super) fn count(&self) -> usize {
        self.registry().waiting.len()
    }
}

impl Control {
    /// `POST /tasks/claim` with `wait` (at most [`MOST_WAIT`]): the grant of a
    /// task of the claim's states once one is free, or `None` when `wait` ends,
    /// `stop` ends (the server stops), or no place is free among the waiting
    /// claims (after one try, as a claim without `wait`). A control plane that
    /// stops serving answers its waiting claims at once, `not_serving`. Each try is
    /// the claim of [`Control::claim`], with the same request id: a repeat of it
    /// answers the same task and attempt.
    pub async fn claim_waiting(
        &self,
        input: ClaimInput,
        wait: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Grant>, Refusal> {
        let most = self.inner.options.waiting_claims;
        let place = if wait.is_zero() {
            None
        } else {
            self.inner.waiters.enter(input.states.names(), most)
        };
        let Some(place) = place else {
            return self.claim(input).await;
        };
        let until = tokio::time::Instant::now() + wait.min(MOST_WAIT);
        tokio::pin!(stop);
        loop {
            if let Some(grant) = self.claim(input.clone()).await? {
                return Ok(Some(grant));
            }
            tokio::select! {
                _ = place.notify.notified() => {}
                _ = tokio::time::sleep_until(until) => return Ok(None),
                _ = &mut stop => {
                    self.serving()?;
                    return Ok(None);
                }
            }
            if self.inner.waiters.closed() {
                self.serving()?;
                return Ok(None);
            }
        }
    }

    /// Wake the claims that wait for what a write `made` claimable, once
    /// `committed` says its transaction committed.
    pub(super) fn after_commit(&self, made: &Claimable, committed: bool) {
        if committed {
            self.inner.waiters.wake(made);
        }
    }

    /// How many claims wait now (`GET /metrics`).
    pub fn waiting_claims(&self) -> usize {
        self.inner.waiters.count()
    }
}

/// What one write made claimable, kept across its runs (only the last counts).
#[derive(Default)]
pub(super) struct Made(Mutex<Claimable>);

impl Made {
    pub(super) fn new() -> Arc<Made> {
        Arc::new(Made::default())
    }

    /// Run `work`, keeping what it made claimable when its changes stay.
    pub(super) fn run<R>(&self, work: impl FnOnce() -> (bool, R)) -> (bool, R) {
        let (done, made) = claimable::collect(work);
        let kept = if done.0 { made } else { Claimable::Nothing };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = kept;
        done
    }

    /// What the last run made claimable.
    pub(super) fn taken(&self) -> Claimable {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Control {
    /// What time alone makes claimable (`docs/limits.md`): a retry policy's pause
    /// that is over (its row goes, and the claims that wait are woken) and a rate's
    /// bucket that fills (every waiting claim is woken at each tick while some
    /// limit has a rate: no commit tells when a claim may take its turn).
    ///
    /// It also turns the store's claim switch off for what the tables no longer
    /// hold (the last limit removed, the last priority other than 0 gone, the last
    /// pause over: `store/claim_switch.rs`), from a read that begins after the mark.
    pub(super) async fn wake_for_time(&self) -> Result<(), Refusal> {
        let switch = self.inner.store.claim_switch();
        if !switch.may_apply() {
            return Ok(());
        }
        let mark = switch.mark();
        let now = self.inner.options.clock.now();
        let (over, rated, held) = self
            .read_now(move |tx| {
                let rated = tx.limits()?.iter().any(|l| l.rate_count.is_some());
                Ok((tx.delays_over(now)?, rated, tx.claim_facts_held()?))
            })
            .await?;
        if let Some(mark) = mark {
            if self.inner.store.claim_switch().turn_off(mark, held) {
                tracing::debug!(
                    ?held,
                    "the claim switch turned off what the tables no longer hold"
                );
            }
        }
        if rated {
            self.inner.waiters.wake(&Claimable::Any);
        }
        if !over {
            return Ok(());
        }
        self.write(move |_, tx| {
            if tx.end_delays(tx.now())? > 0 {
                claimable::made_claimable(None);
            }
            Ok(())
        })
        .await
    }
}
