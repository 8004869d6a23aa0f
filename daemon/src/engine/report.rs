//! Report an outcome (`docs/inside/workflows.md`, "Report").

use std::sync::Arc;

use stateous_shared::durations::parse_duration;
use stateous_shared::refusal::Code;
use stateous_shared::wire::{Object, Schedule, TokenView};

use super::lease::end_if_over;
use super::route::{apply, decide, hold, route, settle_task, task_failed, Decision};
use super::{existing, py, refuse, reject, view, Fail, Rules, Step, OWN_EVENTS};
use crate::store::{EntryKind, TaskRow, TaskStatus, TokenRow, TokenStatus, Tx};
use crate::validated::{ReportInput, ReportKind, Supervisor};

/// The task, if someone still works on it (and, with `supervisor`, that one; and,
/// with `attempt`, on that attempt).
///
/// A lease is judged now, not only at the clock's next tick (a report counts only if it
/// gets to the control plane before its task's lease ends, `docs/guarantees.md`,
/// "Leases"): a task whose lease is over has it ended here, with the rows the clock
/// would write, which stay (`Fail::Recorded`) while the request is refused as the
/// clock's ending would make it refused.
pub fn worked_task(
    rules: &Rules,
    tx: &dyn Tx,
    task_id: i64,
    supervisor: Option<&str>,
    waiting: bool,
    attempt: Option<i64>,
) -> Step<TaskRow> {
    let Some(mut task) = tx.lock_task(task_id, true)? else {
        return refuse(Code::TaskNotFound, format!("there is no task {task_id}"));
    };
    if end_if_over(rules, tx, &mut task)? {
        return match judge(&task, supervisor, waiting, attempt) {
            Ok(()) => Ok(task),
            Err(fail) => Err(Fail::Recorded(fail.refusal())),
        };
    }
    judge(&task, supervisor, waiting, attempt)?;
    Ok(task)
}

/// Whether someone works on `task` now: see [`worked_task`].
fn judge(
    task: &TaskRow,
    supervisor: Option<&str>,
    waiting: bool,
    attempt: Option<i64>,
) -> Step<()> {
    let task_id = task.id;
    if let Some(attempt) = attempt.filter(|a| *a != task.attempt) {
        // An old attempt is over; an attempt that did not start is no one's.
        let code = if attempt < task.attempt {
            Code::AttemptOver
        } else {
            Code::TaskNotHeld
        };
        let sentence = format!(
            "task {task_id} is at attempt {}, not attempt {attempt}",
            task.attempt
        );
        return refuse(code, sentence);
    }
    if !matches!(task.status, TaskStatus::Claimed | TaskStatus::Waiting) {
        let sentence = format!("task {task_id} is {}; no one works on it now", task.status);
        return refuse(Code::TaskNotHeld, sentence);
    }
    if let Some(name) = supervisor {
        if task.status != TaskStatus::Claimed || task.claimed_by.as_deref() != Some(name) {
            let sentence = format!("task {task_id} is not held by {}", py(name));
            return refuse(Code::TaskNotHeld, sentence);
        }
    } else if waiting {
        return refuse(
            Code::TaskNotHeld,
            "only the supervisor that holds a task reports it waiting",
        );
    }
    Ok(())
}

/// Apply the outcome of a task and answer the token.
pub fn report(rules: &Rules, tx: &dyn Tx, input: &ReportInput) -> Step<TokenView> {
    let waiting = matches!(input.kind, ReportKind::Waiting);
    let supervisor = input.supervisor.as_ref().map(Supervisor::as_str);
    let mut task = worked_task(rules, tx, input.task, supervisor, waiting, input.attempt)?;
    let mut row = existing(tx, &task.token)?;
    if let ReportKind::Failed(error) = &input.kind {
        let error = if error.is_empty() {
            "the routine failed, and said no more"
        } else {
            error
        };
        task_failed(rules, tx, &mut row, &mut task, error)?;
        return Ok(view(&row));
    }
    let workflow = rules.workflow(&row)?;
    let mut context = Arc::clone(&row.context);
    if !input.context.is_empty() {
        Arc::make_mut(&mut context).extend(input.context.clone());
    }
    let errors = workflow.context_errors(&context);
    if !errors.is_empty() {
        let sentence = format!(
            "the context changes break the schema: {}",
            errors.join("; ")
        );
        return refuse(Code::InvalidContext, sentence);
    }
    for schedule in &input.schedules {
        if let Some(problem) = schedule_problem(rules, &row, schedule)? {
            return refuse(Code::InvalidPayload, problem);
        }
    }
    let event = match &input.kind {
        ReportKind::Event(event) => event.clone(),
        _ => {
            apply(tx, &mut row, &input.context, &input.schedules, &context)?;
            let (status, kind) = (TaskStatus::Waiting, EntryKind::TaskWaiting);
            settle_task(tx, &row.token, &mut task, status, kind)?;
            return Ok(view(&row));
        }
    };
    report_event(rules, tx, &mut row, &mut task, input, &event, &context)?;
    Ok(view(&row))
}

/// An event outcome: check it, decide with the changed context (a refused
/// outcome saves none of its changes), then hold it or move the token.
fn report_event(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    task: &mut TaskRow,
    input: &ReportInput,
    event: &str,
    context: &Arc<Object>,
) -> Step<()> {
    let emits = &rules.state(row, &task.state)?.emits;
    if !emits.iter().any(|e| e == event) {
        let allowed = if emits.is_empty() {
            "nothing".to_string()
        } else {
            emits.join(", ")
        };
        let reason = format!(
            "{} may not emit {}; it may emit: {allowed}",
            py(&task.state),
            py(event)
        );
        return Err(reject(tx, row, event, reason, Code::EventNotAllowed));
    }
    let payload = input.payload.as_ref();
    let errors = rules.workflow(row)?.payload_errors(event, payload);
    if !errors.is_empty() {
        return refuse(
            Code::InvalidPayload,
            format!("{event}: {}", errors.join("; ")),
        );
    }
    if let Decision::Refuse {
        reason,
        fail: false,
    } = decide(rules, tx, row, event, payload, context)?
    {
        return Err(reject(tx, row, event, reason, Code::EventNotAllowed));
    }
    if row.status == TokenStatus::Paused {
        // Hold the whole outcome: resume saves its changes with its event, or none.
        let from = Some((&*task, &input.context, input.schedules.as_slice()));
        hold(rules, tx, row, event, payload, super::Via::NONE, from)?;
        return settle_task(tx, &row.token, task, TaskStatus::Done, EntryKind::TaskDone);
    }
    apply(tx, row, &input.context, &input.schedules, context)?;
    if let Some(refusal) = route(rules, tx, row, event, payload, super::Via::NONE)? {
        let sentence = format!("the decision found a transition, but routing refused: {refusal}");
        return refuse(Code::Unexpected, sentence);
    }
    Ok(())
}

/// Why a routine's timer cannot be set, or `None`.
fn schedule_problem(rules: &Rules, row: &TokenRow, schedule: &Schedule) -> Step<Option<String>> {
    let workflow = rules.workflow(row)?;
    let event = &schedule.event;
    if let Err(problem) = parse_duration(&schedule.after) {
        return Ok(Some(format!("a timer for {}: {problem}", py(event))));
    }
    if OWN_EVENTS.contains(&event.as_str()) || !workflow.declares(event) {
        return Ok(Some(format!(
            "a timer names {}, which is not an event of {}",
            py(event),
            py(&workflow.name)
        )));
    }
    let errors = workflow.payload_errors(event, schedule.payload.as_ref());
    if !errors.is_empty() {
        return Ok(Some(format!(
            "a timer for {}: {}",
            py(event),
            errors.join("; ")
        )));
    }
    Ok(None)
}
