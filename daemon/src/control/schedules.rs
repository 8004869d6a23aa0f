//! Schedules on the control plane (`docs/schedules.md`): the requests of
//! `/schedules`, and the clock's part, which fires the occurrences that fell due
//! ([`Control::fire_schedules`], from `Control::tick`), each schedule in a write of
//! its own.

use std::sync::Arc;

use futures_util::future::join_all;
use stateous_shared::refusal::Refusal;
use stateous_shared::schedules::{NewSchedule, ScheduleList, ScheduleView, Triggered};

use super::Control;
use crate::engine::occurrence::{self, Fired, Refused};
use crate::engine::schedules;
use crate::schedule::ScheduleInput;

/// The most schedules one tick fires; more wait for the next tick (or the next
/// step of a dev clock advance).
const MOST_PER_TICK: i64 = 1000;

/// The most schedules one list shows.
pub const MOST_LISTED: i64 = 10_000;

/// How many times a schedule's write runs again with a refused start recorded as
/// skipped: each run learns one more.
const MOST_REFUSED: usize = 16;

impl Control {
    /// `POST /schedules`: add (201) or, with `replace`, change (200) a schedule;
    /// its view.
    pub async fn add_schedule(&self, body: NewSchedule) -> Result<(ScheduleView, bool), Refusal> {
        let input = ScheduleInput::new(body, self.inner.options.clock.now())?;
        let name = input.name.clone();
        let (_, created) = self
            .write(move |rules, tx| schedules::add(rules, tx, &input))
            .await?;
        Ok((self.schedule(name).await?, created))
    }

    /// `GET /schedules`: every schedule, by name.
    pub async fn schedules(&self) -> Result<ScheduleList, Refusal> {
        let schedules = self
            .read(|tx| schedules::list(tx, None, MOST_LISTED))
            .await?;
        Ok(ScheduleList { schedules })
    }

    /// `GET /schedules/{name}`.
    pub async fn schedule(&self, name: String) -> Result<ScheduleView, Refusal> {
        self.read(move |tx| schedules::show(tx, &name)).await
    }

    /// `POST /schedules/{name}/pause`.
    pub async fn pause_schedule(&self, name: String) -> Result<ScheduleView, Refusal> {
        let asked = name.clone();
        self.write(move |_, tx| schedules::pause(tx, &asked))
            .await?;
        self.schedule(name).await
    }

    /// `POST /schedules/{name}/resume`.
    pub async fn resume_schedule(&self, name: String) -> Result<ScheduleView, Refusal> {
        let asked = name.clone();
        self.write(move |_, tx| schedules::resume(tx, &asked))
            .await?;
        self.schedule(name).await
    }

    /// `DELETE /schedules/{name}`.
    pub async fn remove_schedule(&self, name: String) -> Result<(), Refusal> {
        self.write(move |_, tx| schedules::remove(tx, &name)).await
    }

    /// `POST /schedules/{name}/trigger`: an occurrence now.
    pub async fn trigger_schedule(&self, name: String) -> Result<Triggered, Refusal> {
        let (triggered, fired) = self
            .write(move |rules, tx| occurrence::trigger(rules, tx, &name))
            .await?;
        self.inner.metrics.schedules_fired(&fired);
        Ok(triggered)
    }

    /// The clock's part: each schedule with an occurrence due, or with one that
    /// waited for a token that has ended, in a write of its own (queued at once,
    /// so that SQLite commits them together). A start the engine refuses is
    /// recorded as a skipped occurrence and the write made again.
    pub(super) async fn fire_schedules(&self) -> Result<(), Refusal> {
        let names = self
            .read_now(|tx| {
                let mut names = tx.unblocked_schedules()?;
                for name in tx.due_schedules(MOST_PER_TICK)? {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                Ok(names)
            })
            .await?;
        let fired = join_all(names.into_iter().map(|name| self.fire_one(name))).await;
        let mut first_error = None;
        for one in fired {
            match one {
                Ok(fired) => self.inner.metrics.schedules_fired(&fired),
                Err(refusal) => {
                    first_error.get_or_insert(refusal);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One schedule's write, made again while a start is refused.
    async fn fire_one(&self, name: String) -> Result<Fired, Refusal> {
        let name: Arc<str> = Arc::from(name);
        let mut refused: Vec<Refused> = Vec::new();
        loop {
            let known = Arc::new(refused.clone());
            let asked = Arc::clone(&name);
            let outcome = self
                .write_deciding(None, move |rules, tx| {
                    let done = occurrence::fire(rules, tx, &asked, &known);
                    let kept = matches!(done, Ok(Ok(_)));
                    (kept, done)
                })
                .await?;
            match outcome {
                Ok(fired) => return Ok(fired),
                Err(one) if refused.len() < MOST_REFUSED => {
                    tracing::warn!(
                        target: "stateous.serve",
                        "the schedule {name}'s occurrence could not start its token: {}",
                        one.refusal.error
                    );
                    refused.push(one);
                }
                Err(one) => return Err(one.refusal),
            }
        }
    }

    /// The earliest due moment of an active schedule after `after` (the dev clock
    /// steps to it), and how many are due now.
    pub(super) async fn schedules_due(&self, after: i64) -> Result<(Option<i64>, usize), Refusal> {
        self.read_now(move |tx| {
            let next = tx.next_schedule_due_after(after)?;
            let due = tx.due_schedules(MOST_PER_TICK)?.len() + tx.unblocked_schedules()?.len();
            Ok((next, due))
        })
        .await
    }
}
