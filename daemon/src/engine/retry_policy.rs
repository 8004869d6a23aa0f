//! Retry policies (`docs/limits.md`, "Retry policies"): a state's pause between a
//! failed attempt and the next. When an attempt fails and the state has a retry
//! left, the next attempt is queued at once, as the reference queues it, but a
//! claim does not take it before its pause is over (`task_delays`): `delay` after
//! the first failure, doubled after each further one up to `cap` with
//! `doubling`, lengthened by up to `jitter`, drawn from the task and the attempt
//! so that the same failure always gives the same pause. Each change goes on the
//! journal (subject `retry_policy`).

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use stateous_shared::durations::parse_duration;
use stateous_shared::refusal::Code;
use stateous_shared::retry_policies::RetryPolicyView;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::Object;

use super::{refuse, Rules, Step};
use crate::store::{RetryPolicyRow, TaskRow, TokenRow, Tx};

/// The journal's subject of retry policies.
pub const JOURNAL_SUBJECT: &str = "retry_policy";

/// The longest pause: one day.
const LONGEST: i64 = 86_400_000_000;

/// `text` as microseconds; a duration that does not parse, or one over
/// [`LONGEST`], is refused rather than cut.
fn micros(text: &str, what: &str) -> Step<i64> {
    match parse_duration(text) {
        Ok(duration) => match i64::try_from(duration.as_micros()) {
            Ok(micros) if micros <= LONGEST => Ok(micros),
            _ => refuse(
                Code::InvalidArgument,
                format!("'{what}' is at most 1 day, not {text:?}"),
            ),
        },
        Err(sentence) => refuse(Code::InvalidArgument, format!("{what}: {sentence}")),
    }
}

fn text_of<'b>(body: &'b Object, key: &str) -> Step<Option<&'b str>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => refuse(
            Code::InvalidArgument,
            format!("'{key}' is a duration such as \"2s\", not {other}"),
        ),
    }
}

/// Set a state's retry policy from `PUT /retry-policies/{state}`'s body; 422
/// `invalid_argument` for a state the served graph lacks or a bad duration.
pub fn set_policy(rules: &Rules, tx: &dyn Tx, state: &str, body: &Object) -> Step<RetryPolicyView> {
    let row = policy_row(&rules.graph, state, body, tx.now())?;
    put_policy(tx, &row)
}

/// A retry policy's row from `PUT /retry-policies/{state}`'s body, set at `now`,
/// checked against `graph` (the refusals of [`set_policy`]); nothing written.
pub fn policy_row(
    graph: &stateous_shared::graph::Graph,
    state: &str,
    body: &Object,
    now: i64,
) -> Step<RetryPolicyRow> {
    if let Some(key) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "delay" | "backoff" | "cap" | "jitter"))
    {
        return refuse(
            Code::InvalidBody,
            format!("a retry policy has the fields delay, backoff, cap and jitter, not '{key}'"),
        );
    }
    let known = match state.split_once('/') {
        None => graph.main.states.contains_key(state),
        Some((w, s)) => graph
            .children
            .get(w)
            .is_some_and(|w| w.states.contains_key(s)),
    };
    if !known {
        return refuse(
            Code::InvalidArgument,
            format!(
                "the served graph has no state {}",
                stateous_shared::pyrepr::repr_str(state)
            ),
        );
    }
    let Some(delay) = text_of(body, "delay")? else {
        return refuse(
            Code::InvalidArgument,
            "a retry policy has a 'delay', such as \"2s\"",
        );
    };
    let delay = micros(delay, "delay")?;
    let doubling = match body.get("backoff") {
        None | Some(Value::Null) => false,
        Some(Value::String(text)) if text == "fixed" => false,
        Some(Value::String(text)) if text == "doubling" => true,
        Some(other) => {
            return refuse(
                Code::InvalidArgument,
                format!("'backoff' is fixed or doubling, not {other}"),
            )
        }
    };
    let cap = match text_of(body, "cap")? {
        Some(_) if !doubling => {
            return refuse(
                Code::InvalidArgument,
                "'cap' goes with a doubling backoff: a fixed pause is always the delay",
            )
        }
        Some(cap) => micros(cap, "cap")?,
        None => LONGEST.max(delay),
    };
    if cap < delay {
        return refuse(
            Code::InvalidArgument,
            format!(
                "'cap' is the longest pause, so it is at least the delay ({}), not {}",
                stateous_shared::durations::span(delay as f64 / 1e6),
                stateous_shared::durations::span(cap as f64 / 1e6)
            ),
        );
    }
    let jitter = match text_of(body, "jitter")? {
        Some(jitter) => micros(jitter, "jitter")?,
        None => 0,
    };
    Ok(RetryPolicyRow {
        state: state.to_string(),
        delay,
        doubling,
        cap,
        jitter,
        set_at: now,
    })
}

/// Keep `row` as its state's retry policy, on the journal.
pub fn put_policy(tx: &dyn Tx, row: &RetryPolicyRow) -> Step<RetryPolicyView> {
    tx.put_retry_policy(row)?;
    let view = view(row);
    let data = json!({
        "delay_seconds": view.delay_seconds,
        "backoff": view.backoff,
        "cap_seconds": view.cap_seconds,
        "jitter_seconds": view.jitter_seconds,
    });
    tx.journal_append(
        JOURNAL_SUBJECT,
        &row.state,
        "set",
        data.as_object().unwrap_or(&Object::new()),
    )?;
    Ok(view)
}

/// Remove a state's retry policy (404 `not_found` for none); on the journal.
pub fn remove_policy(tx: &dyn Tx, state: &str) -> Step<()> {
    if !tx.remove_retry_policy(state)? {
        return refuse(
            Code::NotFound,
            format!(
                "no retry policy is set for {}",
                stateous_shared::pyrepr::repr_str(state)
            ),
        );
    }
    tx.journal_append(JOURNAL_SUBJECT, state, "removed", &Object::new())?;
    Ok(())
}

/// Every retry policy, by state.
pub fn policies(tx: &dyn Tx) -> Step<Vec<RetryPolicyView>> {
    Ok(tx.retry_policies()?.iter().map(view).collect())
}

fn view(row: &RetryPolicyRow) -> RetryPolicyView {
    let seconds = |micros: i64| micros as f64 / 1e6;
    RetryPolicyView {
        state: row.state.clone(),
        delay_seconds: seconds(row.delay),
        backoff: if row.doubling { "doubling" } else { "fixed" }.to_string(),
        cap_seconds: seconds(if row.doubling { row.cap } else { row.delay }),
        jitter_seconds: seconds(row.jitter),
        set_at: iso(from_micros(row.set_at)),
    }
}

/// The pause after failed attempt `attempt` (1 for the first) of `task`.
fn pause(row: &RetryPolicyRow, task: i64, attempt: i64) -> i64 {
    let mut pause = row.delay;
    if row.doubling {
        for _ in 1..attempt.clamp(1, 64) {
            pause = pause.saturating_mul(2).min(row.cap);
        }
    }
    if row.jitter > 0 {
        let digest = Sha256::digest(format!("{task}/{attempt}").as_bytes());
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[..8]);
        let drawn = u64::from_le_bytes(bytes) % (row.jitter as u64 + 1);
        pause = pause.saturating_add(drawn as i64);
    }
    pause
}

/// A failed attempt of `task` was queued again: hold its next attempt back for
/// its state's pause, if the state has a retry policy.
pub fn hold_next(tx: &dyn Tx, row: &TokenRow, task: &TaskRow) -> Step<()> {
    let state = match &row.workflow {
        Some(workflow) => format!("{workflow}/{}", task.state),
        None => task.state.clone(),
    };
    let Some(policy) = tx.retry_policies()?.into_iter().find(|p| p.state == state) else {
        return Ok(());
    };
    let not_before = tx
        .now()
        .saturating_add(pause(&policy, task.id, task.attempt));
    tx.delay_task(task.id, not_before)?;
    Ok(())
}

/// When a queued task's next attempt may be claimed, if its pause is not over.
pub fn held_until(tx: &dyn Tx, task: i64) -> Step<Option<i64>> {
    Ok(tx.task_delay(task)?.filter(|at| *at > tx.now()))
}
