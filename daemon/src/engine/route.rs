//! Routing: decide where an event leads, and move the token (reference
//! `_route`, `_decide`, `_take`, `_enter`, `_leave`, `_end`, `_fail`, `_hold`,
//! `_apply`, `_task_failed`). Every workflow that moves a token goes through here,
//! so the ledger rows of a move are written in one order everywhere.

use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::durations::parse_duration;
use stateous_shared::graph::{TransitionSpec, END, ERROR, JOINED, TIMEOUT};
use stateous_shared::guards::{evaluate, GuardInput};
use stateous_shared::refusal::Code;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::{Object, Schedule};

use super::cancel::cancel_row;
use super::join::{branch_finished, cannot_enter, children, family, start_children, top};
use super::{append, payload_value, py, refuse, Rules, Step, Via};
use crate::store::{
    EntryKind, TaskRow, TaskStatus, TimerKind, TimerStatus, TokenRow, TokenStatus, Tx,
};
use crate::time_source::micros;

/// Where an event leads from the token's state.
pub enum Decision<'g> {
    /// This transition.
    Take(&'g TransitionSpec),
    /// Nowhere, and why; `fail`: the token cannot go on at all (two guards hold).
    Refuse {
        /// The reason, as the ledger records it.
        reason: String,
        /// Whether the token fails.
        fail: bool,
    },
}

fn refused<'g>(reason: String) -> Step<Decision<'g>> {
    Ok(Decision::Refuse {
        reason,
        fail: false,
    })
}

/// The transition `event` takes from the token's state with this context, or why
/// there is none. Changes nothing. `count()` includes the event being routed.
pub fn decide<'g>(
    rules: &'g Rules,
    tx: &dyn Tx,
    row: &TokenRow,
    event: &str,
    payload: Option<&Object>,
    context: &Object,
) -> Step<Decision<'g>> {
    let workflow = rules.workflow(row)?;
    // The transitions are read directly so that the borrow lives as long as the graph.
    let candidates: Vec<&'g TransitionSpec> = workflow
        .transitions
        .iter()
        .filter(|t| t.source == row.state && t.event == event)
        .collect();
    if candidates.is_empty() {
        return refused(format!(
            "no transition for {} from {}",
            py(event),
            py(&row.state)
        ));
    }
    let mut counts = tx.counts(&row.token)?;
    *counts.entry(event.to_string()).or_insert(0) += 1;
    let count = |name: &str| counts.get(name).copied().unwrap_or(0);
    let branches = match payload.and_then(|p| p.get("branches")) {
        Some(Value::Array(items)) if event == JOINED => Some(items.as_slice()),
        _ => None,
    };
    let input = GuardInput {
        ctx: context,
        payload,
        count: &count,
        branches,
    };
    let chosen = match choose(&candidates, &input) {
        Ok(chosen) => chosen,
        // Never a silent choice: the token fails.
        Err(targets) => {
            return Ok(Decision::Refuse {
                reason: format!(
                    "{} from {} matched more than one guard ({}); compile the workflow again, \
                     which refuses such guards",
                    py(event),
                    py(&row.state),
                    targets.join(", ")
                ),
                fail: true,
            })
        }
    };
    let Some(chosen) = chosen else {
        return refused(format!(
            "no guard matched {} from {}, and no otherwise",
            py(event),
            py(&row.state)
        ));
    };
    if chosen.target != END {
        let problem = cannot_enter(
            rules.graph_of(row),
            tx,
            &row.token,
            workflow,
            &chosen.target,
            context,
        )?;
        if let Some(problem) = problem {
            return refused(problem);
        }
    }
    Ok(Decision::Take(chosen))
}

/// Route one event: hold it for a paused token, or decide and move. Returns why
/// the event cannot move the token; the caller records that refusal.
pub fn route(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    event: &str,
    payload: Option<&Object>,
    via: Via,
) -> Step<Option<String>> {
    if row.status.ended() {
        return Ok(Some(format!(
            "token {} is {}; it takes no events",
            py(&row.token),
            row.status
        )));
    }
    if row.status == TokenStatus::Paused {
        hold(rules, tx, row, event, payload, via, None)?;
        return Ok(None);
    }
    let context = row.context.clone();
    match decide(rules, tx, row, event, payload, &context)? {
        Decision::Refuse { reason, fail: true } => {
            fail(rules, tx, row, &reason)?;
            Ok(None)
        }
        Decision::Refuse { reason, .. } => Ok(Some(reason)),
        Decision::Take(chosen) => {
            take(rules, tx, row, chosen, event, payload, via)?;
            Ok(None)
        }
    }
}

/// Move the token along the chosen transition, and record it (with the hook the
/// event came through, if any: `Via`).
pub fn take(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    chosen: &TransitionSpec,
    event: &str,
    payload: Option<&Object>,
    via: Via,
) -> Step<()> {
    let mut data = json!({"event": event, "payload": payload_value(payload), "state": row.state});
    via.mark(&mut data);
    append(tx, &row.token, EntryKind::EventAccepted, via.key, data)?;
    let why = format!("the parent left {} on {}", py(&row.state), py(event));
    leave(rules, tx, row, Some(event), &why)?;
    if chosen.target == END {
        end(rules, tx, row, TokenStatus::Completed, json!({}))
    } else {
        enter(rules, tx, row, &chosen.target)
    }
}

/// Enter `state`: record it, queue its task, set its timeout. A parallel state
/// starts one child for each of its workflows in place of a task, after its timeout.
pub fn enter(rules: &Rules, tx: &dyn Tx, row: &mut TokenRow, state: &str) -> Step<()> {
    let spec = rules.state(row, state)?.clone();
    let visit = tx.visits(&row.token, state)? + 1;
    append(
        tx,
        &row.token,
        EntryKind::Entered,
        None,
        json!({"state": state, "visit": visit}),
    )?;
    row.state = state.to_string();
    row.visit = visit;
    row.entered_at = tx.now();
    tx.update_token(row)?;
    if spec.parallel.is_empty() {
        let task = tx.queue_task(&row.token, state, visit)?;
        append(
            tx,
            &row.token,
            EntryKind::TaskQueued,
            None,
            json!({"task": task, "state": state}),
        )?;
    }
    if let Some(timeout) = &spec.timeout {
        let after = match parse_duration(timeout) {
            Ok(after) => after,
            Err(problem) => return refuse(Code::Unexpected, problem),
        };
        set_timer(tx, row, TIMEOUT, None, micros(after), TimerKind::Timeout)?;
    }
    start_children(rules, tx, row, &spec, visit)
}

/// A timer in the token's current state and visit; leaving the state cancels it.
pub fn set_timer(
    tx: &dyn Tx,
    row: &TokenRow,
    event: &str,
    payload: Option<&Object>,
    after: i64,
    kind: TimerKind,
) -> Step<()> {
    let due = tx.now().saturating_add(after);
    let timer = tx.add_timer(&row.token, &row.state, row.visit, event, payload, due, kind)?;
    let data = json!({"event": event, "due_at": iso(from_micros(timer.due_at))});
    append(tx, &row.token, EntryKind::TimerSet, None, data)
}

/// Which of `candidates` the guards choose for `input`: the one whose guard holds,
/// else the one without a guard (`otherwise`), else none. More than one guard that
/// holds is the targets' names, quoted: the compiler refuses such guards, but an
/// older graph file can still have them.
pub fn choose<'t>(
    candidates: &[&'t TransitionSpec],
    input: &GuardInput,
) -> Result<Option<&'t TransitionSpec>, Vec<String>> {
    let matching: Vec<&TransitionSpec> = candidates
        .iter()
        .copied()
        .filter(|t| t.when.as_ref().is_some_and(|g| evaluate(g, input)))
        .collect();
    if matching.len() > 1 {
        return Err(matching.iter().map(|t| py(&t.target)).collect());
    }
    Ok(matching
        .first()
        .copied()
        .or_else(|| candidates.iter().copied().find(|t| t.when.is_none())))
}

/// `task` of `token` leaves its claim for `status` (its lease cleared), with the
/// entry `kind` (`{"task": id}`): done, waiting or cancelled.
pub fn settle_task(
    tx: &dyn Tx,
    token: &str,
    task: &mut TaskRow,
    status: TaskStatus,
    kind: EntryKind,
) -> Step<()> {
    task.status = status;
    task.lease_until = None;
    tx.update_task(task)?;
    append(tx, token, kind, None, json!({"task": task.id}))
}

/// Stop all that the current state started. Leaving on one of the state's own
/// outcomes finishes a task that someone works on; anything else cancels it. Each
/// live child is cancelled with `why` as its reason.
pub fn leave(rules: &Rules, tx: &dyn Tx, row: &TokenRow, via: Option<&str>, why: &str) -> Step<()> {
    let finished = match via {
        Some(event) => rules
            .state(row, &row.state)?
            .emits
            .iter()
            .any(|e| e == event),
        None => false,
    };
    for mut task in tx.open_tasks(&row.token)? {
        let done = finished && matches!(task.status, TaskStatus::Claimed | TaskStatus::Waiting);
        let (status, kind) = if done {
            (TaskStatus::Done, EntryKind::TaskDone)
        } else {
            (TaskStatus::Cancelled, EntryKind::TaskCancelled)
        };
        settle_task(tx, &row.token, &mut task, status, kind)?;
    }
    for mut timer in tx.pending_timers(&row.token)? {
        timer.status = TimerStatus::Cancelled;
        tx.update_timer(&timer)?;
    }
    for mut child in children(rules, tx, row)? {
        if child.status.live() {
            cancel_row(rules, tx, &mut child, json!({"reason": why}))?;
        }
    }
    Ok(())
}

/// The token ends; its memory goes in the same transaction. A child that completes
/// or fails tells its parent, whose join may now be met; a cancelled child was
/// cancelled by its parent, so it tells no one. The ledger entry's kind is the
/// status's name (`completed`, `failed`, `cancelled`).
pub fn end(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    status: TokenStatus,
    data: Value,
) -> Step<()> {
    row.status = status;
    tx.update_token(row)?;
    append(tx, &row.token, EntryKind::ended(status), None, data)?;
    tx.delete_memory(&row.token)?;
    if status != TokenStatus::Cancelled {
        branch_finished(rules, tx, row)?;
    }
    Ok(())
}

/// No way to go on: the token fails in its state, and says why.
pub fn fail(rules: &Rules, tx: &dyn Tx, row: &mut TokenRow, reason: &str) -> Step<()> {
    leave(
        rules,
        tx,
        row,
        None,
        &format!("the parent failed: {reason}"),
    )?;
    end(
        rules,
        tx,
        row,
        TokenStatus::Failed,
        json!({"reason": reason}),
    )
}

/// Hold an event for a paused token. An event from a task is bound to the task's
/// state and visit, with the report's context changes and timers.
pub fn hold(
    rules: &Rules,
    tx: &dyn Tx,
    row: &TokenRow,
    event: &str,
    payload: Option<&Object>,
    via: Via,
    from: Option<(&TaskRow, &Object, &[Schedule])>,
) -> Step<()> {
    // `arrival` counts the events the whole family holds, so that resume applies
    // them in one order of arrival.
    let top = top(tx, row)?;
    let mut arrival = 1;
    for member in family(rules, tx, &top)? {
        arrival += super::pause::held_events(&tx.entries(&member.token)?).len();
    }
    let payload = payload_value(payload);
    let Some((task, changes, schedules)) = from else {
        let mut data = json!({"event": event, "payload": payload, "arrival": arrival});
        via.mark(&mut data);
        return append(tx, &row.token, EntryKind::EventDeferred, via.key, data);
    };
    let mut data = json!({
        "event": event, "payload": payload, "state": task.state, "visit": task.visit,
        "task": task.id, "arrival": arrival,
    });
    if let Some(map) = data.as_object_mut() {
        if !changes.is_empty() {
            map.insert("context".into(), Value::Object(changes.clone()));
        }
        if !schedules.is_empty() {
            let list = serde_json::to_value(schedules).unwrap_or(Value::Null);
            map.insert("schedules".into(), list);
        }
    }
    append(tx, &row.token, EntryKind::EventDeferred, via.key, data)
}

/// Save a report's context changes (`context` has them applied) and set its
/// timers, before the move, so that leaving the state cancels them.
pub fn apply(
    tx: &dyn Tx,
    row: &mut TokenRow,
    changes: &Object,
    schedules: &[Schedule],
    context: &Arc<Object>,
) -> Step<()> {
    if !changes.is_empty() {
        row.context = Arc::clone(context);
        tx.update_token(row)?;
        let mut keys: Vec<&String> = changes.keys().collect();
        keys.sort();
        append(
            tx,
            &row.token,
            EntryKind::ContextChanged,
            None,
            json!({"keys": keys}),
        )?;
    }
    for schedule in schedules {
        let after = match parse_duration(&schedule.after) {
            Ok(after) => micros(after),
            Err(problem) => return refuse(Code::InvalidBody, problem),
        };
        set_timer(
            tx,
            row,
            &schedule.event,
            schedule.payload.as_ref(),
            after,
            TimerKind::Timer,
        )?;
    }
    Ok(())
}

/// One failed attempt: queue the task again while retries are left; then the
/// token gets `error`, or fails when `error` cannot move it.
pub fn task_failed(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    task: &mut TaskRow,
    error: &str,
) -> Step<()> {
    append(
        tx,
        &row.token,
        EntryKind::TaskFailed,
        None,
        json!({"task": task.id, "error": error}),
    )?;
    task.lease_until = None;
    let mut retries = i64::from(rules.state(row, &task.state)?.retries);
    if task.attempt > retries {
        // Ours: attempts a budget stopped do not count (`engine/usage.rs`).
        retries += super::usage::spared_attempts(tx, row, task.id)?;
    }
    if task.attempt <= retries {
        task.status = TaskStatus::Queued;
        task.claimed_by = None;
        tx.update_task(task)?;
        // Ours: the state's retry policy holds the next attempt back a while.
        super::retry_policy::hold_next(tx, row, task)?;
        let data = json!({"task": task.id, "attempt": task.attempt + 1});
        append(tx, &row.token, EntryKind::TaskRetrying, None, data)?;
        // The next attempt runs the routine again and sets its own timers; the
        // state's timeout stays, as it covers every attempt.
        for mut timer in tx.pending_timers(&row.token)? {
            if timer.kind == TimerKind::Timer {
                timer.status = TimerStatus::Cancelled;
                tx.update_timer(&timer)?;
            }
        }
        return Ok(());
    }
    task.status = TaskStatus::Failed;
    tx.update_task(task)?;
    if row.status == TokenStatus::Paused {
        let empty = Object::new();
        return hold(
            rules,
            tx,
            row,
            ERROR,
            None,
            Via::NONE,
            Some((task, &empty, &[])),
        );
    }
    let workflow = rules.workflow(row)?;
    let on_error = |t: &TransitionSpec| t.source == row.state && t.event == ERROR;
    if !workflow.transitions.iter().any(on_error) {
        let reason = format!(
            "{} failed, and has no transition on 'error': {error}",
            py(&task.state)
        );
        return fail(rules, tx, row, &reason);
    }
    if let Some(refusal) = route(rules, tx, row, ERROR, None, Via::NONE)? {
        let reason = format!(
            "{} failed, and 'error' cannot move it: {refusal}",
            py(&task.state)
        );
        return fail(rules, tx, row, &reason);
    }
    Ok(())
}
