//! "Why is this token here?": every fact of the database that says why a token is where
//! it is: how long it has been in its state, each transition out of it with its guard's
//! value on the current context, its timers with the time left, its task (attempt,
//! retries left, holder, lease left), the events it holds while paused, the refused
//! event of this visit, the entry that failed it, and a parallel state's children and
//! join. A read; it changes nothing.
//!
//! What only the HTTP layer knows (the supervisors heard from) and the sentences
//! (`stateous_shared::why::explain`) are added by `api/why.rs`.

use stateous_shared::graph::{StateSpec, END, START};
use stateous_shared::guards::filter::moved_seconds;
use stateous_shared::guards::{evaluate, GuardInput};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::HeldEvent;
use stateous_shared::why::{Why, WhyChild, WhyJoin, WhyTask, WhyTimer, WhyTransition};
use stateous_shared::wire::{HistoryEntry, Object};

use super::join::children;
use super::pause::held_events;
use super::{existing, view, Rules, Step};
use crate::store::{LedgerRow, TaskStatus, TokenRow, TokenStatus, Tx};

fn entry(row: &LedgerRow) -> HistoryEntry {
    HistoryEntry {
        seq: row.seq,
        at: iso(from_micros(row.at)),
        kind: row.kind.clone(),
        data: row.data.clone(),
        by: row.by.clone(),
    }
}

fn seconds(micros: i64) -> f64 {
    micros as f64 / 1e6
}

/// The facts of one token, or 404 `token_not_found`. `supervisors`, `reasons` and
/// the task's `holder_heard` are left empty for the HTTP layer.
pub fn why(rules: &Rules, tx: &dyn Tx, token: &str) -> Step<Why> {
    let row = existing(tx, token)?;
    let now = tx.now();
    let entries = tx.entries(token)?;
    let entered = entries
        .iter()
        .rev()
        .find(|e| e.kind == "entered")
        .map_or(0, |e| e.seq);
    let rejected = entries
        .iter()
        .rev()
        .take_while(|e| e.seq > entered)
        .find(|e| e.kind == "event_rejected")
        .map(entry);
    let failure = match row.status {
        TokenStatus::Failed => entries.iter().rev().find(|e| e.kind == "failed").map(entry),
        _ => None,
    };
    let paused_at = entries
        .iter()
        .rev()
        .find(|e| e.kind == "paused")
        .map(|e| e.at);
    let held = if row.status == TokenStatus::Paused {
        held_events(&entries)
            .into_iter()
            .map(|h| HeldEvent {
                event: h.event,
                payload: h.payload,
                at: Some(iso(from_micros(h.at))),
            })
            .collect()
    } else {
        Vec::new()
    };
    let in_state = row.state != START && row.state != END;
    let spec = if !in_state {
        None
    } else if row.status.ended() {
        ended_spec(rules, &row).cloned()
    } else {
        Some(rules.state(&row, &row.state)?.clone())
    };
    let (children, join) = match &spec {
        Some(spec) if !spec.parallel.is_empty() && row.status.live() => {
            let found = children(rules, tx, &row)?;
            let ended = found.iter().filter(|c| c.status.ended()).count();
            let join = WhyJoin {
                join: spec.join.clone(),
                ended: ended as i64,
                children: spec.parallel.len() as i64,
            };
            let listed = found
                .into_iter()
                .map(|c| WhyChild {
                    token: c.token,
                    workflow: c.workflow.unwrap_or_default(),
                    state: c.state,
                    status: c.status.as_str().to_string(),
                })
                .collect();
            (listed, Some(join))
        }
        _ => (Vec::new(), None),
    };
    let frozen = row.status == TokenStatus::Paused;
    let timers = tx
        .pending_timers(token)?
        .into_iter()
        .map(|t| {
            // While paused a timer stands still: resume moves it by the paused time.
            let from = match (frozen, paused_at) {
                (true, Some(at)) => at.max(t.set_at),
                _ => now,
            };
            let left = (t.due_at - from).max(0);
            // A frozen timer is due `left` after the resume: said as if resumed
            // now, never as the stored moment, which a moved clock may have passed.
            let due = if frozen { now + left } else { t.due_at };
            WhyTimer {
                event: t.event,
                kind: t.kind.as_str().to_string(),
                due_at: iso(from_micros(due)),
                left: seconds(left),
                frozen,
            }
        })
        .collect();
    Ok(Why {
        token: view(&row),
        moved: moved_seconds(row.entered_at, now),
        reasons: Vec::new(),
        timeout: spec.as_ref().and_then(|s| s.timeout.clone()),
        transitions: transitions(rules, tx, &row)?,
        timers,
        task: task(rules, tx, &row, now)?,
        supervisors: Vec::new(),
        stopped: Vec::new(),
        held,
        rejected,
        failure,
        children,
        join,
        budget: budget_facts(rules, tx, &row)?,
        limits: limit_facts(tx, &row, now)?,
    })
}

/// Ours: what the token's queued task waits for among the limits on claims
/// (`docs/limits.md`): each full pool or key with who holds its slots, and each
/// spent rate with when the next claim may be.
fn limit_facts(tx: &dyn Tx, row: &TokenRow, now: i64) -> Step<Vec<String>> {
    let Some(task) = tx.open_tasks(&row.token)?.into_iter().next() else {
        return Ok(Vec::new());
    };
    if task.status != TaskStatus::Queued {
        return Ok(Vec::new());
    }
    let mut sentences = Vec::new();
    if let Some(at) = super::retry_policy::held_until(tx, task.id)? {
        sentences.push(format!(
            "its retry policy holds the next attempt until {} (in {} s)",
            iso(from_micros(at)),
            ((at - now) as f64 / 1e6).ceil() as i64
        ));
    }
    for pool in super::claim_limits::pools(tx)? {
        if !pool.covers(row.workflow.as_deref(), &task.state) {
            continue;
        }
        let key = pool.key_of(&row.context);
        let held = super::claim_limits::holders(tx, &pool.row.name, &key)?;
        if held.len() as i64 >= pool.row.max {
            let of_key = match &pool.row.per {
                Some(per) => format!(" for {per} = {}", super::claim_limits::key_words(&key)),
                None => String::new(),
            };
            let holders: Vec<String> = held
                .iter()
                .take(3)
                .map(|h| format!("{}, task {}", h.holder, h.slot.task))
                .collect();
            let more = if held.len() > 3 { ", ..." } else { "" };
            sentences.push(format!(
                "waiting for a slot of {}{of_key}: {} of {} held by {}{more}",
                pool.row.name,
                held.len(),
                pool.row.max,
                holders.join("; ")
            ));
        }
        if let Some(at) = pool.rate_opens_at(now) {
            let rate = pool.rate.map(|r| r.words()).unwrap_or_default();
            sentences.push(format!(
                "rate of {} ({rate}): next claim in {}",
                pool.row.name,
                stateous_shared::durations::span(((at - now) as f64 / 1e6).ceil())
            ));
        }
    }
    Ok(sentences)
}

/// Ours: the token's usage and budget, when it has either.
fn budget_facts(
    rules: &Rules,
    tx: &dyn Tx,
    row: &TokenRow,
) -> Step<Option<stateous_shared::usage::TokenBudget>> {
    let view = super::budget::view_of(rules, tx, row)?;
    Ok((!view.usage.is_empty() || !view.budget.is_empty()).then_some(view))
}

/// The spec of an ended token's state, if the served graph has it. A token ends
/// in a state of the graph it ran on, and once no token is live `serve` takes a
/// graph of another structure (`serving::check_structure`), which may lack that
/// state or the token's child workflow. An ended token needs no spec to be
/// explained, so a missing one is `None` here, not a refusal.
fn ended_spec<'a>(rules: &'a Rules, row: &TokenRow) -> Option<&'a StateSpec> {
    rules.state(row, &row.state).ok()
}

/// Each transition out of the token's state, with its guard's value now. A
/// guard's `count()` counts the event itself, as the decision would. None for an
/// ended token in a state that the served graph does not have ([`ended_spec`]).
fn transitions(rules: &Rules, tx: &dyn Tx, row: &TokenRow) -> Step<Vec<WhyTransition>> {
    if row.state == END || (row.status.ended() && ended_spec(rules, row).is_none()) {
        return Ok(Vec::new());
    }
    let workflow = rules.workflow(row)?;
    let counts = tx.counts(&row.token)?;
    let empty = Object::new();
    let mut found = Vec::new();
    for t in workflow
        .transitions
        .iter()
        .filter(|t| t.source == row.state)
    {
        let reads_payload = t
            .when
            .as_ref()
            .is_some_and(|g| !g.reads.payload_fields.is_empty() || g.reads.branches);
        let count =
            |name: &str| counts.get(name).copied().unwrap_or(0) + i64::from(name == t.event);
        let holds = match &t.when {
            Some(guard) if !reads_payload => {
                let input = GuardInput {
                    ctx: &row.context,
                    payload: Some(&empty),
                    count: &count,
                    branches: None,
                };
                Some(evaluate(guard, &input))
            }
            _ => None,
        };
        found.push(WhyTransition {
            event: t.event.clone(),
            to: t.target.clone(),
            guard: t.when.as_ref().map(|g| g.text.clone()),
            otherwise: t.otherwise,
            holds,
            reads_payload,
        });
    }
    Ok(found)
}

/// The open task of the state, with the retries it has left.
fn task(rules: &Rules, tx: &dyn Tx, row: &TokenRow, now: i64) -> Step<Option<WhyTask>> {
    let Some(task) = tx.open_tasks(&row.token)?.into_iter().next() else {
        return Ok(None);
    };
    let retries = i64::from(rules.state(row, &task.state)?.retries)
        + super::usage::spared_attempts(tx, row, task.id)?;
    // The attempt running now, or the one the next claim starts.
    let current = match task.status {
        TaskStatus::Claimed | TaskStatus::Waiting => task.attempt,
        _ => task.attempt + 1,
    };
    let state = match &row.workflow {
        Some(workflow) => format!("{workflow}/{}", task.state),
        None => task.state.clone(),
    };
    Ok(Some(WhyTask {
        task: task.id,
        state,
        status: task.status.as_str().to_string(),
        attempt: task.attempt,
        retries_left: (retries + 1 - current).max(0),
        holder: task
            .claimed_by
            .filter(|_| task.status == TaskStatus::Claimed),
        lease_left: task.lease_until.map(|until| seconds((until - now).max(0))),
        holder_heard: None,
        // Every claim and heartbeat sets the lease to the rules' length from then.
        lease_renewed: task
            .lease_until
            .filter(|_| task.status == TaskStatus::Claimed)
            .map(|until| seconds((now - (until - rules.lease)).max(0))),
    }))
}
