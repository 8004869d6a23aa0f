//! A usage report (`docs/inside/workflows.md`, "Usage"; `docs/concepts/budgets.md`):
//! what an attempt of a task spent, sent at once through the supervisor's outbox.
//!
//! Spent is spent: a report is taken for any attempt of the task that started,
//! also one that is over (it failed, its lease ended, its supervisor crashed),
//! unlike a report of an outcome. An idempotency key (the supervisor sends
//! `stateous-usage/<task>/<attempt>/<outbox id>`) records it once when the outbox
//! sends it again. It is recorded on the task's token (`usage_reported`) and added
//! to the sums of that token and of each token above it, so a top token's sums
//! are its family's.
//!
//! When the top token's sums are then over its budget ([`super::budget`]), and the
//! token is active or one of its family's tasks is claimed, the same transaction
//! stops spending: each claimed attempt of the family is given back to the queue
//! (its supervisor hears at its next heartbeat that the task is lost, and stops
//! the routine), one `budget_exceeded` entry says why and which attempts stopped,
//! and an active token is paused. A stopped attempt does not use up a retry
//! ([`spared_attempts`]). A token over its budget is not resumed
//! (`budget::refuse_over_budget`) until its budget is raised.

use serde_json::{json, Value};
use stateous_shared::refusal::Code;
use stateous_shared::usage::{number, over_reason, Amounts, UsageAnswer};
use stateous_shared::wire::Object;

use super::budget::overspent;
use super::join::family;
use super::{append, existing, refuse, Rules, Step};
use crate::store::{EntryKind, TaskRow, TaskStatus, TokenRow, TokenStatus, Tx};
use crate::validated::budgets::UsageInput;
use crate::validated::{Key, Supervisor};

/// Record what an attempt of a task spent, and stop the family's spending if
/// that took its top token over its budget.
///
/// Refusals: 404 `task_not_found`; 409 `task_not_held` for an attempt that did
/// not start.
pub fn report_usage(rules: &Rules, tx: &dyn Tx, input: &UsageInput) -> Step<UsageAnswer> {
    let Some(task) = tx.lock_task(input.task, true)? else {
        return refuse(
            Code::TaskNotFound,
            format!("there is no task {}", input.task),
        );
    };
    let attempt = input.attempt.unwrap_or(task.attempt);
    if !(1..=task.attempt).contains(&attempt) {
        return refuse(
            Code::TaskNotHeld,
            format!(
                "task {} is at attempt {}; attempt {attempt} did not start, so it spent nothing",
                task.id, task.attempt
            ),
        );
    }
    let row = existing(tx, &task.token)?;
    let key = input.key.as_ref().map(Key::as_str);
    let mut answer = UsageAnswer {
        token: row.token.clone(),
        recorded: false,
        stopped: Vec::new(),
    };
    if let Some(key) = key {
        if tx.has_key(&row.token, key)? {
            return Ok(answer);
        }
    }
    let mut data = json!({"task": task.id, "attempt": attempt, "usage": input.usage.given()});
    if let (Some(supervisor), Some(map)) = (&input.supervisor, data.as_object_mut()) {
        map.insert("supervisor".into(), json!(Supervisor::as_str(supervisor)));
    }
    append(tx, &row.token, EntryKind::UsageReported, key, data)?;
    let mut top = add_to_sums(tx, row, input.usage.amounts())?;
    answer.recorded = true;
    answer.stopped = enforce(rules, tx, &mut top, (task.id, attempt))?;
    Ok(answer)
}

/// Add `amounts` to the sums of `row` and of each token above it; the top token.
/// The one place where usage is summed: a sum by another key (a pool of a limit)
/// is added here too.
fn add_to_sums(tx: &dyn Tx, row: TokenRow, amounts: &Amounts) -> Step<TokenRow> {
    let mut member = row;
    loop {
        tx.add_usage(&member.token, amounts)?;
        match &member.parent {
            Some(parent) => member = existing(tx, parent)?,
            None => return Ok(member),
        }
    }
}

/// If the top token `top` is over its budget and still spends (it is active, or
/// a task of its family is claimed): give back every claimed attempt of the
/// family, write `budget_exceeded`, and pause it if it is active. The tasks
/// whose attempts stopped. `reported` is the task and attempt whose report took
/// it over.
fn enforce(rules: &Rules, tx: &dyn Tx, top: &mut TokenRow, reported: (i64, i64)) -> Step<Vec<i64>> {
    if top.status.ended() {
        return Ok(Vec::new());
    }
    let spent = overspent(rules, tx, top)?;
    if spent.is_empty() {
        return Ok(Vec::new());
    }
    let mut claimed: Vec<TaskRow> = Vec::new();
    for member in family(rules, tx, top)? {
        let open = tx.open_tasks(&member.token)?;
        claimed.extend(open.into_iter().filter(|t| t.status == TaskStatus::Claimed));
    }
    if top.status != TokenStatus::Active && claimed.is_empty() {
        return Ok(Vec::new());
    }
    let mut stopped = Vec::new();
    for task in &mut claimed {
        stopped.push(json!({"token": task.token, "task": task.id, "attempt": task.attempt}));
        give_back(tx, task)?;
    }
    let over: Object = spent
        .iter()
        .map(|(name, used, most)| {
            let amounts = json!({"used": number(*used), "budget": number(*most)});
            (name.clone(), amounts)
        })
        .collect();
    let data = json!({
        "reason": over_reason(&spent),
        "over": over,
        "task": reported.0,
        "attempt": reported.1,
        "stopped": stopped,
    });
    append(tx, &top.token, EntryKind::BudgetExceeded, None, data)?;
    if top.status == TokenStatus::Active {
        super::pause::pause_row(rules, tx, top)?;
    }
    Ok(claimed.iter().map(|task| task.id).collect())
}

/// Give a claimed attempt back to the queue without failing it: its holder's
/// next heartbeat hears the task is lost, its late report is refused
/// (`task_not_held`), and the next claim, once the token is resumed, starts the
/// next attempt. Nothing else ends an attempt this way, so a pool of slots that
/// a claim takes is given back here too.
fn give_back(tx: &dyn Tx, task: &mut TaskRow) -> Step<()> {
    task.status = TaskStatus::Queued;
    task.claimed_by = None;
    task.lease_until = None;
    tx.update_task(task)?;
    Ok(())
}

/// How many attempts of `task` a budget stopped (`budget_exceeded` entries of its
/// top token that name it): they do not count against the state's retries. Read
/// only when an attempt fails with no retries left otherwise, so it costs the
/// ledger's read only then.
pub fn spared_attempts(tx: &dyn Tx, row: &TokenRow, task: i64) -> Step<i64> {
    let top = super::join::top(tx, row)?;
    let names = |entry_data: &Object| {
        entry_data
            .get("stopped")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().any(|one| one["task"] == json!(task)))
    };
    Ok(tx
        .entries(&top.token)?
        .iter()
        .filter(|entry| entry.kind == EntryKind::BudgetExceeded.as_str() && names(&entry.data))
        .count() as i64)
}
