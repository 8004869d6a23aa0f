//! Claim a task (reference `docs/inside/workflows.md`, "Claim a task").

use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::refusal::Code;
use stateous_shared::wire::{EventRecord, Grant};

use super::{append, existing, lock_task, refuse, Rules, Step};
use crate::store::{ClaimRow, TaskRow, TaskStatus, TokenStatus, Tx};

/// The longest supervisor name.
pub const MAX_SUPERVISOR: usize = 256;
/// How many queued tasks one claim looks at (reference `CANDIDATES`).
pub const CANDIDATES: i64 = 20;
/// How many times a claim looks at the head of the queue (`Tasks::lock_queued`)
/// before it takes candidates one at a time.
const LOOKS: usize = 3;

/// A validated claim.
#[derive(Debug, Clone)]
pub struct ClaimInput {
    supervisor: String,
    states: Vec<(Option<String>, String)>,
    request: Option<String>,
}

/// Check a supervisor's name: 1 to 256 characters, none of them NUL (Postgres
/// text cannot keep it, so both backends refuse it); 422 `invalid_argument`.
pub fn check_supervisor(name: &str) -> Step<()> {
    let length = name.chars().count();
    if length == 0 || length > MAX_SUPERVISOR {
        return refuse(
            Code::InvalidArgument,
            format!("a supervisor name is 1 to {MAX_SUPERVISOR} characters"),
        );
    }
    if name.contains('\0') {
        return refuse(
            Code::InvalidArgument,
            "a supervisor name has no NUL character (\\u0000)",
        );
    }
    Ok(())
}

impl ClaimInput {
    /// Check the name and the request id (1 to 64 of `[A-Za-z0-9._-]`). A state
    /// `<workflow>/<state>` names a state of a child workflow.
    pub fn new(
        supervisor: String,
        states: Vec<String>,
        request: Option<String>,
    ) -> Step<ClaimInput> {
        check_supervisor(&supervisor)?;
        if let Some(request) = &request {
            let ok = (1..=64).contains(&request.len())
                && request
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !ok {
                return refuse(
                    Code::InvalidArgument,
                    "a claim's request id is 1 to 64 letters, digits, '.', '_' or '-'",
                );
            }
        }
        // A state with a NUL character is no state of any graph: it matches no
        // task, on either backend (Postgres text cannot even hold it).
        let states = states
            .into_iter()
            .filter(|name| !name.contains('\0'))
            .map(|name| match name.rsplit_once('/') {
                Some((workflow, state)) if !workflow.is_empty() => {
                    (Some(workflow.to_string()), state.to_string())
                }
                Some((_, state)) => (None, state.to_string()),
                None => (None, name),
            })
            .collect();
        Ok(ClaimInput {
            supervisor,
            states,
            request,
        })
    }
}

/// The oldest queued task of these states whose token is active, now claimed with
/// a lease; `None` when there is none. A repeat of the supervisor's last request id
/// gets the same grant again while it still holds that attempt.
pub fn claim(rules: &Rules, tx: &dyn Tx, input: ClaimInput) -> Step<Option<Grant>> {
    if input.states.is_empty() && input.request.is_none() {
        return Ok(None);
    }
    if let Some(request) = &input.request {
        if let Some(grant) = repeat(rules, tx, &input.supervisor, request)? {
            return Ok(Some(grant));
        }
    }
    let mut task = if input.states.is_empty() {
        None
    } else {
        first_free(tx, &input.states)?
    };
    if let Some(task) = task.as_mut() {
        task.status = TaskStatus::Claimed;
        task.claimed_by = Some(input.supervisor.clone());
        task.attempt += 1;
        task.lease_until = Some(tx.now().saturating_add(rules.lease));
        tx.update_task(task)?;
    }
    if let Some(request) = &input.request {
        tx.remember_claim(&ClaimRow {
            supervisor: input.supervisor.clone(),
            request: request.clone(),
            task_id: task.as_ref().map(|t| t.id),
            attempt: task.as_ref().map(|t| t.attempt),
        })?;
    }
    let Some(task) = task else {
        return Ok(None);
    };
    let data = json!({"task": task.id, "supervisor": input.supervisor, "attempt": task.attempt});
    append(tx, &task.token, "task_claimed", None, data)?;
    grant(tx, &task).map(Some)
}

/// The oldest queued task of these states whose token is active and whose family
/// no other request holds (a claim never waits for a token: it takes the next).
/// SQLite has one writer, so its first candidate is free; on Postgres a few
/// candidates may be held or taken by now.
fn first_free(tx: &dyn Tx, states: &[(Option<String>, String)]) -> Step<Option<TaskRow>> {
    // A candidate whose task another claim took just before (it committed after
    // this statement began) is left, and the queue looked at again: the next
    // statement sees that claim.
    for _ in 0..LOOKS {
        let Some(id) = tx.lock_queued(states)? else {
            if tx.serial() {
                return Ok(None);
            }
            break;
        };
        let task = tx
            .task(id)?
            .filter(|task| task.status == TaskStatus::Queued);
        if task.is_some() || tx.serial() {
            return Ok(task);
        }
    }
    // The tasks of child tokens (their lock is their top's), and a top token's
    // task that another claim took just before: one candidate at a time.
    for id in tx.queued_tasks(states, CANDIDATES)? {
        let Some(task) = lock_task(tx, id, false)? else {
            continue;
        };
        if task.status != TaskStatus::Queued {
            continue;
        }
        let active = tx
            .token(&task.token)?
            .is_some_and(|row| row.status == TokenStatus::Active);
        if active {
            return Ok(Some(task));
        }
    }
    Ok(None)
}

/// The grant of the supervisor's last claim again, with its lease renewed, if
/// `request` repeats it and the supervisor still holds that attempt.
fn repeat(rules: &Rules, tx: &dyn Tx, supervisor: &str, request: &str) -> Step<Option<Grant>> {
    let Some(last) = tx.last_claim(supervisor)? else {
        return Ok(None);
    };
    let Some(task_id) = last.task_id.filter(|_| last.request == request) else {
        return Ok(None);
    };
    let Some(mut task) = lock_task(tx, task_id, true)? else {
        return Ok(None);
    };
    let held = task.status == TaskStatus::Claimed
        && task.claimed_by.as_deref() == Some(supervisor)
        && Some(task.attempt) == last.attempt
        && task.lease_until.is_none_or(|until| until >= tx.now());
    if !held {
        return Ok(None);
    }
    task.lease_until = Some(tx.now().saturating_add(rules.lease));
    tx.update_task(&task)?;
    grant(tx, &task).map(Some)
}

/// The grant of a claimed task: the task with the token's context, the routine's
/// memory and the event that brought the token into the state.
pub fn grant(tx: &dyn Tx, task: &TaskRow) -> Step<Grant> {
    let row = existing(tx, &task.token)?;
    let entered_by = tx.last_accepted(&task.token)?.map(|entry| EventRecord {
        name: entry
            .data
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        payload: entry
            .data
            .get("payload")
            .and_then(Value::as_object)
            .cloned(),
    });
    let state = match &row.workflow {
        None => task.state.clone(),
        Some(workflow) => format!("{workflow}/{}", task.state),
    };
    Ok(Grant {
        task: task.id,
        token: task.token.clone(),
        state,
        visit: task.visit,
        attempt: task.attempt,
        context: Arc::unwrap_or_clone(row.context),
        memory: tx.memory(&task.token, &task.state)?,
        entered_by,
    })
}
