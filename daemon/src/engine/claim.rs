//! Claim a task: the oldest queued task of the states a supervisor serves, with a
//! lease.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::trace_context::TokenTrace;
use stateous_shared::wire::{EventRecord, Grant};

use super::claim_limits::{self, Slots, LOOK_PAST};
use super::{append, existing, Rules, Step};
use crate::store::{ClaimFacts, ClaimRow, EntryKind, Head, TaskRow, TaskStatus, TokenStatus, Tx};
use crate::validated::ClaimInput;

/// How many queued tasks one claim looks at (reference `CANDIDATES`).
pub const CANDIDATES: i64 = 20;
/// How many times a claim looks at the head of the queue (`Tasks::lock_queued`)
/// before it takes candidates one at a time.
const LOOKS: usize = 3;

/// The oldest queued task of these states whose token is active, now claimed with
/// a lease; `None` when there is none. A repeat of the supervisor's last request id
/// gets the same grant again while it still holds that attempt.
pub fn claim(rules: &Rules, tx: &dyn Tx, input: &ClaimInput) -> Step<Option<Grant>> {
    let supervisor = input.supervisor.as_str();
    let states = input.states.pairs();
    if states.is_empty() && input.request.is_none() {
        return Ok(None);
    }
    if let Some(request) = &input.request {
        if let Some(grant) = repeat(rules, tx, supervisor, request.as_str())? {
            return Ok(Some(grant));
        }
    }
    // Ours (`docs/limits.md`): the pools of slots that cover these states, the
    // priorities, and the tasks whose retry policy's pause is not over; none set,
    // one statement read. With limits only, the limits alone are asked for
    // (`claim_limits::admission`, none found: a claim as without them).
    let switch = crate::store::claim_switch::switch_of(tx);
    let facts = if states.is_empty() || !switch.may_apply() {
        ClaimFacts::default()
    } else if !switch.must_be_read() {
        ClaimFacts {
            limits: true,
            ..ClaimFacts::default()
        }
    } else {
        // A limit may be on its way (its fact turns on before its commit): read
        // under the slots' lock, not judged absent by a read without it.
        let mut facts = tx.claim_facts(tx.now())?;
        facts.limits |= switch.applies(crate::store::claim_switch::ClaimFact::Limits);
        facts
    };
    let mut admission = if facts.limits {
        claim_limits::admission(tx, states)?
    } else {
        None
    };
    let order = Order {
        prioritized: facts.priorities,
        delayed: facts.delayed.into_iter().collect(),
    };
    let plain = !order.prioritized && order.delayed.is_empty();
    let (mut task, slots) = match &admission {
        _ if states.is_empty() => (None, Vec::new()),
        None if plain => (first_free(tx, states)?, Vec::new()),
        None => ranked(tx, states, None, &order)?,
        Some(admission) => first_admitted(tx, states, admission, &order)?,
    };
    if let Some(task) = task.as_mut() {
        task.status = TaskStatus::Claimed;
        task.claimed_by = Some(supervisor.to_string());
        task.attempt += 1;
        task.lease_until = Some(tx.now().saturating_add(rules.lease));
        tx.update_task(task)?;
        if let Some(admission) = admission.as_mut() {
            admission.take(tx, task, slots)?;
        }
    }
    if let Some(request) = &input.request {
        tx.remember_claim(&ClaimRow {
            supervisor: supervisor.to_string(),
            request: request.as_str().to_string(),
            task_id: task.as_ref().map(|t| t.id),
            attempt: task.as_ref().map(|t| t.attempt),
        })?;
    }
    let Some(task) = task else {
        return Ok(None);
    };
    let data = json!({"task": task.id, "supervisor": supervisor, "attempt": task.attempt});
    append(tx, &task.token, EntryKind::TaskClaimed, None, data)?;
    grant(tx, &task).map(Some)
}

/// The oldest queued task of these states whose token is active and whose family
/// no other request holds (a claim never waits for a token: it takes the next).
/// The head of the queue is taken at once when it can be; otherwise (the store is
/// not sure it saw every free task) candidates are looked at one at a time.
fn first_free(tx: &dyn Tx, states: &[(Option<String>, String)]) -> Step<Option<TaskRow>> {
    // A candidate whose task another claim took just before (it committed after
    // this statement began) is left, and the queue looked at again: the next
    // statement sees that claim.
    for _ in 0..LOOKS {
        let id = match tx.lock_queued(states)? {
            Head::Task(id) => id,
            Head::Empty => return Ok(None),
            Head::Unsure => break,
        };
        let task = tx
            .task(id)?
            .filter(|task| task.status == TaskStatus::Queued);
        if task.is_some() {
            return Ok(task);
        }
    }
    // The tasks of child tokens (their lock is their top's), and a top token's
    // task that another claim took just before: one candidate at a time.
    for id in tx.queued_tasks(states, CANDIDATES)? {
        let Some(task) = tx.lock_task(id, false)? else {
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

/// The oldest queued task of these states that can take a slot of each pool that
/// covers it, with those slots: the states whose pool is full (or whose rate is
/// spent) are left out, and a task whose key is full is passed over for the next
/// (a full key never holds back another key's tasks): among the first task of
/// each key that is not full and the head of each state's queue
/// ([`ranked`]).
fn first_admitted(
    tx: &dyn Tx,
    states: &[(Option<String>, String)],
    admission: &claim_limits::Admission,
    order: &Order,
) -> Step<(Option<TaskRow>, Slots)> {
    let open = admission.open_states(tx.now(), states);
    if open.is_empty() {
        return Ok((None, Vec::new()));
    }
    if !admission.keyed(&open) && !order.prioritized && order.delayed.is_empty() {
        let Some(task) = first_free(tx, &open)? else {
            return Ok((None, Vec::new()));
        };
        let row = existing(tx, &task.token)?;
        // Its pools have room (`open_states`); were one full, nothing is claimed.
        return Ok(match admission.slots_for(&task, &row) {
            Some(slots) => (Some(task), slots),
            None => (None, Vec::new()),
        });
    }
    ranked(tx, &open, Some(admission), order)
}

/// What orders a claim besides the queue: priorities, and the tasks that may not
/// be claimed yet.
struct Order {
    prioritized: bool,
    delayed: HashSet<i64>,
}

/// The queued task a claim takes in turn: the highest priority first; within a
/// priority, the task whose keys hold the fewest slots, then whose keys took a
/// slot longest ago (keys with queued tasks take turns); then the oldest. Candidates are read without locks; the one
/// taken is locked and judged again (another claim may have taken it).
fn ranked(
    tx: &dyn Tx,
    states: &[(Option<String>, String)],
    admission: Option<&claim_limits::Admission>,
    order: &Order,
) -> Step<(Option<TaskRow>, Slots)> {
    // With a pool with `per`, the first task of each key that is not full is read
    // from the keys (`task_keys`), and only the head of the queue besides: the
    // claim would otherwise read and judge up to [`LOOK_PAST`] tasks of a full key
    // for nothing, at every claim.
    let keyed = admission.is_some_and(|admission| admission.keyed(states));
    let look = if keyed { CANDIDATES } else { LOOK_PAST };
    let mut candidates = tx.queued_candidates(states, look, order.prioritized)?;
    if let Some(admission) = admission.filter(|_| keyed) {
        let seen: HashSet<i64> = candidates.iter().map(|c| c.task).collect();
        let heads = admission.key_heads(tx, states, order.prioritized)?;
        candidates.extend(heads.into_iter().filter(|head| !seen.contains(&head.task)));
    }
    let mut ranks = Vec::new();
    for candidate in candidates {
        if order.delayed.contains(&candidate.task) {
            continue;
        }
        let served = states.iter().any(|(workflow, state)| {
            workflow.as_deref() == candidate.workflow.as_deref() && *state == candidate.state
        });
        if !served {
            continue;
        }
        let (load, turn) = match admission {
            None => (0, 0),
            Some(admission) => {
                let context = crate::store::json::object(&candidate.context)?;
                let workflow = candidate.workflow.as_deref();
                match admission.slots_of(workflow, &candidate.state, &context) {
                    Some(slots) => (admission.load(&slots), admission.last_turn(&slots)),
                    None => continue,
                }
            }
        };
        ranks.push((-candidate.priority, load, turn, candidate.task));
    }
    ranks.sort_unstable();
    for (_, _, _, id) in ranks {
        let Some(task) = tx.lock_task(id, false)? else {
            continue;
        };
        if task.status != TaskStatus::Queued {
            continue;
        }
        let Some(row) = tx.token(&task.token)? else {
            continue;
        };
        if row.status != TokenStatus::Active {
            continue;
        }
        let slots = match admission {
            None => Vec::new(),
            Some(admission) => match admission.slots_for(&task, &row) {
                Some(slots) => slots,
                None => continue,
            },
        };
        return Ok((Some(task), slots));
    }
    Ok((None, Vec::new()))
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
    let Some(mut task) = tx.lock_task(task_id, true)? else {
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
    let trace = TokenTrace::of(&task.token, row.trace.as_deref());
    Ok(Grant {
        traceparent: Some(trace.attempt_header(&task.token, task.id, task.attempt)),
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
