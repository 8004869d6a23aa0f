//! The dev clock's requests (`serve --dev-clock`): advance, freeze and thaw the control
//! plane's time.
//!
//! An advance steps from one due moment to the next (the earliest pending timer of
//! an active token, the earliest end of a claimed task's lease, or the earliest
//! due occurrence of an active schedule) and ticks at
//! each, so that what falls due inside it happens in due order, each once (the
//! engine fires a timer and ends a lease only while it is still pending and
//! over). A timer that an earlier step set, inside the advance, is found by the
//! next step. Without a dev clock each request answers 404 `not_found`.

use std::time::Duration;

use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::DevClock;

use super::Control;
use crate::time_source::micros;

/// The most an advance may move the clock: a year.
pub const MOST_ADVANCE: Duration = Duration::from_secs(366 * 86_400);

/// How many times a step ticks again when something due did not happen (on
/// Postgres the clock skips a token whose family another request holds).
const RETRIES: u32 = 20;

/// The refusal without `--dev-clock`.
pub fn no_dev_clock() -> Refusal {
    Refusal::new(
        Code::NotFound,
        "this control plane was not started with --dev-clock, so its clock cannot be \
         moved; start it with stateous serve --dev-clock",
    )
}

impl Control {
    /// Where the dev clock stands; `None` without `--dev-clock`.
    pub fn dev_clock(&self) -> Option<DevClock> {
        let state = self.inner.options.clock.dev_state()?;
        Some(DevClock {
            now: iso(from_micros(state.now)),
            ahead: state.ahead as f64 / 1e6,
            frozen: state.frozen,
            steps: None,
        })
    }

    /// `POST /clock/advance`: move the dev clock `by` forward, ticking at each due
    /// moment inside it in order, and at its end.
    pub async fn advance(&self, by: Duration) -> Result<DevClock, Refusal> {
        self.dev_clock().ok_or_else(no_dev_clock)?;
        self.serving()?;
        if by > MOST_ADVANCE {
            return Err(Refusal::new(
                Code::InvalidArgument,
                "the dev clock moves at most 366d at a time",
            ));
        }
        let _one = self.inner.advancing.lock().await;
        let clock = self.inner.options.clock.clone();
        let target = clock.now().saturating_add(micros(by));
        // What is due already goes first.
        self.tick_through().await?;
        let mut steps = 0;
        loop {
            let now = clock.now();
            let next = self
                .read_now(move |tx| {
                    let timer = tx.next_due_after(now)?;
                    let lease = tx.next_lease_end_after(now)?;
                    Ok(timer.into_iter().chain(lease).min())
                })
                .await?;
            let (schedule, _) = self.schedules_due(now).await?;
            let next = next.into_iter().chain(schedule).min();
            match next {
                Some(at) if at <= target => {
                    clock.move_to(at);
                    steps += 1;
                    self.tick_through().await?;
                }
                _ => break,
            }
        }
        clock.move_to(target);
        self.tick_through().await?;
        let mut answer = self.dev_clock().ok_or_else(no_dev_clock)?;
        answer.steps = Some(steps);
        Ok(answer)
    }

    /// `POST /clock/freeze`: the dev clock stands still until thawed.
    pub fn freeze(&self) -> Result<DevClock, Refusal> {
        self.serving()?;
        if !self.inner.options.clock.freeze() {
            return Err(no_dev_clock());
        }
        self.dev_clock().ok_or_else(no_dev_clock)
    }

    /// `POST /clock/thaw`: the dev clock runs again from where it stood.
    pub fn thaw(&self) -> Result<DevClock, Refusal> {
        self.serving()?;
        if !self.inner.options.clock.thaw() {
            return Err(no_dev_clock());
        }
        self.dev_clock().ok_or_else(no_dev_clock)
    }

    /// Tick until nothing due now is left (a few tries: a timer of a token that
    /// cannot move stays pending, and is left to later ticks).
    async fn tick_through(&self) -> Result<(), Refusal> {
        for _ in 0..RETRIES {
            self.tick().await?;
            let left = self
                .read_now(|tx| Ok(tx.due_timers()?.len() + tx.expired_leases()?.len()))
                .await?;
            let (_, schedules) = self.schedules_due(i64::MAX).await?;
            let left = left + schedules;
            if left == 0 {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}
