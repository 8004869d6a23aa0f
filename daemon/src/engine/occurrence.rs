//! A schedule's occurrences (`docs/schedules.md`): the clock's work on one schedule
//! at `now`, and a start by hand (`trigger`). Each is one transaction: the tokens
//! it starts and the schedule's advance commit together or not at all, so an
//! occurrence is handled once whatever stops the control plane, and its token id
//! (from the template) makes a start repeated anyway a no-op.
//!
//! In order, under the schedule's lock: an occurrence that waited for a live token
//! starts once that token ended (`buffer_one`); the occurrences that fell due are
//! planned by the catch-up policy (`schedule::plan`); each one to start meets the
//! overlap policy; the schedule moves on to its next occurrence. Each thing that
//! happens is an entry of the journal, subject `schedule`.

use serde_json::{json, Value};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::schedules::Triggered;
use stateous_shared::wire::Object;

use super::{start, Rules, Step};
use crate::schedule::plan::{self, Due, Policy};
use crate::schedule::{iso, Compiled};
use crate::store::{Overlap, ScheduleRow, ScheduleStatus, Tx};
use crate::validated::StartInput;

/// The journal's subject of schedules.
pub const SUBJECT: &str = "schedule";

/// What one write of a schedule did, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fired {
    /// Occurrences that started their token.
    pub started: u64,
    /// Occurrences that started nothing (overlap, catch-up, a token of that id).
    pub skipped: u64,
    /// Occurrences that wait for a live token to end.
    pub buffered: u64,
    /// Started occurrences that started later than their grace (a catch-up).
    pub late: u64,
}

/// An occurrence whose start the engine refused (its context no longer fits the
/// workflow, its id differs from another only in case): the write is rolled back
/// and made again with this occurrence recorded as skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The occurrence's moment.
    pub at: i64,
    /// The start's refusal.
    pub refusal: Refusal,
}

/// The clock's work on the schedule `name` at `Tx::now`; `refused` are
/// occurrences whose start a former run of this write found refused, recorded
/// now as skipped. `Ok(Err(_))`: a start was refused; keep nothing, and run
/// again with it among `refused`.
pub fn fire(
    rules: &Rules,
    tx: &dyn Tx,
    name: &str,
    refused: &[Refused],
) -> Step<Result<Fired, Refused>> {
    let Some(mut row) = tx.lock_schedule(name)? else {
        return Ok(Ok(Fired::default()));
    };
    if row.status != ScheduleStatus::Active {
        return Ok(Ok(Fired::default()));
    }
    let compiled = compiled(&row)?;
    let context = context_of(&row)?;
    let mut run = Run {
        rules,
        tx,
        compiled: &compiled,
        context: &context,
        refused,
        fired: Fired::default(),
    };
    if let Some(at) = row.buffered {
        if live_token(tx, &row)?.is_none() {
            row.buffered = None;
            if let Err(refused) = run.start(&mut row, at, json!({"buffered": true}))? {
                return Ok(Err(refused));
            }
        }
    }
    let now = tx.now();
    if let (Some(next_at), Some(due)) = (row.next_at, row.next_due) {
        if due <= now {
            let policy = Policy {
                catch_up: row.catch_up,
                window: row.window,
                cap: row.cap,
            };
            let plan = plan::plan(&compiled, &policy, next_at, now);
            for missed in &plan.missed {
                let mut data = json!({
                    "occurrence": iso(missed.first),
                    "count": missed.count,
                    "reason": missed.reason,
                });
                if missed.count > 1 {
                    data["last"] = iso(missed.last).into();
                }
                if missed.more {
                    data["more"] = true.into();
                }
                journal(tx, name, "skipped", data)?;
                run.fired.skipped += missed.count as u64;
            }
            for due in plan.starts {
                if let Err(refused) = run.occur(&mut row, due)? {
                    return Ok(Err(refused));
                }
            }
            row.next_at = plan.next;
            row.next_due = plan.next.map(|at| compiled.due(at));
        }
    }
    tx.put_schedule(&row)?;
    Ok(Ok(run.fired))
}

/// `POST /schedules/{name}/trigger`: an occurrence now (to the second), whatever
/// the calendar says and also while paused, under the overlap policy; the
/// schedule's next occurrence stays. A start the engine refuses is refused.
pub fn trigger(rules: &Rules, tx: &dyn Tx, name: &str) -> Step<(Triggered, Fired)> {
    let Some(mut row) = tx.lock_schedule(name)? else {
        return Err(not_found(name).into());
    };
    let compiled = compiled(&row)?;
    let context = context_of(&row)?;
    let at = tx.now().div_euclid(1_000_000) * 1_000_000;
    journal(tx, name, "triggered", json!({"occurrence": iso(at)}))?;
    let mut run = Run {
        rules,
        tx,
        compiled: &compiled,
        context: &context,
        refused: &[],
        fired: Fired::default(),
    };
    let outcome = run.occur(&mut row, Due { at, late: false })?;
    if let Err(refused) = outcome {
        return Err(refused.refusal.into());
    }
    tx.put_schedule(&row)?;
    let token = compiled.token_id(at);
    let fired = run.fired;
    let (outcome, reason) = if fired.started > 0 {
        ("started", None)
    } else if fired.buffered > 0 {
        ("buffered", None)
    } else {
        let latest = tx.journal_latest(SUBJECT, name, "skipped", 1)?;
        let reason = latest
            .first()
            .and_then(|row| row.data.get("reason"))
            .and_then(Value::as_str)
            .map(str::to_string);
        ("skipped", reason)
    };
    let triggered = Triggered {
        outcome: outcome.to_string(),
        token,
        reason,
    };
    Ok((triggered, fired))
}

/// One write's occurrences of one schedule.
struct Run<'a> {
    rules: &'a Rules,
    tx: &'a dyn Tx,
    compiled: &'a Compiled,
    context: &'a Object,
    refused: &'a [Refused],
    fired: Fired,
}

impl Run<'_> {
    /// One occurrence to start, under the overlap policy.
    fn occur(&mut self, row: &mut ScheduleRow, due: Due) -> Step<Result<(), Refused>> {
        let extra = if due.late {
            json!({"late": true})
        } else {
            json!({})
        };
        let Some(live) = live_token(self.tx, row)? else {
            return self.start(row, due.at, extra);
        };
        match row.overlap {
            Overlap::Allow => self.start(row, due.at, extra),
            Overlap::Skip => {
                let reason = format!(
                    "the token {live} of an earlier occurrence is still live (overlap skip)"
                );
                self.skipped(row, due.at, None, &reason)?;
                Ok(Ok(()))
            }
            Overlap::BufferOne => {
                if let Some(waiting) = row.buffered {
                    let reason = format!(
                        "a later occurrence took its place in the wait for the token {live} \
                         (overlap buffer_one)"
                    );
                    self.skipped(row, waiting, None, &reason)?;
                }
                row.buffered = Some(due.at);
                let data = json!({"occurrence": iso(due.at), "behind": live});
                journal(self.tx, &row.name, "buffered", data)?;
                self.fired.buffered += 1;
                Ok(Ok(()))
            }
        }
    }

    /// Start the occurrence at `at`: its token, or, when a token of that id
    /// exists, nothing (recorded as skipped). `extra` goes into the entry.
    fn start(&mut self, row: &mut ScheduleRow, at: i64, extra: Value) -> Step<Result<(), Refused>> {
        let token = self.compiled.token_id(at);
        if let Some(refused) = self.refused.iter().find(|r| r.at == at) {
            let reason = format!("its start was refused: {}", refused.refusal.error);
            self.skipped(row, at, Some(&token), &reason)?;
            return Ok(Ok(()));
        }
        let context = self.compiled.context(self.context, at);
        let started = StartInput::new(token.clone(), context)
            .map_err(super::Fail::Rollback)
            .and_then(|input| start::start(self.rules, self.tx, &input));
        let created = match started {
            Ok((_, created)) => created,
            Err(fail) => {
                return Ok(Err(Refused {
                    at,
                    refusal: fail.refusal(),
                }))
            }
        };
        if !created {
            let reason =
                format!("a token {token} exists already; an occurrence starts at most one token");
            self.skipped(row, at, Some(&token), &reason)?;
            return Ok(Ok(()));
        }
        let late = extra.get("late").is_some();
        let mut data = json!({"occurrence": iso(at), "token": token});
        if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
            data.extend(extra);
        }
        journal(self.tx, &row.name, "started", data)?;
        row.last_token = Some(token);
        row.last_at = Some(at);
        self.fired.started += 1;
        if late {
            self.fired.late += 1;
        }
        Ok(Ok(()))
    }

    fn skipped(
        &mut self,
        row: &ScheduleRow,
        at: i64,
        token: Option<&str>,
        reason: &str,
    ) -> Step<()> {
        let mut data = json!({"occurrence": iso(at), "count": 1, "reason": reason});
        if let Some(token) = token {
            data["token"] = token.into();
        }
        journal(self.tx, &row.name, "skipped", data)?;
        self.fired.skipped += 1;
        Ok(())
    }
}

/// The schedule's last token when it is live (active or paused).
fn live_token(tx: &dyn Tx, row: &ScheduleRow) -> Step<Option<String>> {
    let Some(token) = &row.last_token else {
        return Ok(None);
    };
    let live = tx.token(token)?.is_some_and(|t| t.status.live());
    Ok(live.then(|| token.clone()))
}

/// The schedule's calendar and templates, read again from its row (they were
/// checked when it was added).
pub fn compiled(row: &ScheduleRow) -> Step<Compiled> {
    Compiled::new(&row.name, &row.spec, &row.zone, &row.token, row.jitter).map_err(|why| {
        super::Fail::Rollback(Refusal::new(
            Code::Unexpected,
            format!("the schedule {} cannot be read: {why}", row.name),
        ))
    })
}

/// The schedule's context template.
pub fn context_of(row: &ScheduleRow) -> Step<Object> {
    serde_json::from_str(&row.context).map_err(|_| {
        super::Fail::Rollback(Refusal::new(
            Code::Unexpected,
            format!("the schedule {}'s context cannot be read", row.name),
        ))
    })
}

/// The refusal of a schedule that does not exist.
pub fn not_found(name: &str) -> Refusal {
    Refusal::new(
        Code::ScheduleNotFound,
        format!("no schedule is named {name}; stateous schedule list shows them"),
    )
}

/// Append a journal entry of the schedule `name`.
pub fn journal(tx: &dyn Tx, name: &str, kind: &str, data: Value) -> Step<()> {
    let data = match data {
        Value::Object(map) => map,
        _ => Object::new(),
    };
    tx.journal_append(SUBJECT, name, kind, &data)?;
    Ok(())
}
