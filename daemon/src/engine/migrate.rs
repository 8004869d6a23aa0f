//! Move a live token, with its children, to another kept graph: the served one, or
//! with `undo` back to the graph its last migration moved it from
//! (`docs/how-to/change-a-workflow.md`). One token family is one transaction,
//! all or nothing:
//! - each live member's state (mapped with `OLD=NEW` first) must be a state of its
//!   workflow in the target graph, and a parallel state must start the same child
//!   workflows there; its context (with the target's defaults) must meet the
//!   target's context schema;
//! - an open task is cancelled and queued anew for the target state; a held one's
//!   attempt ends with it (its attempt moves on, so the holder's late report is
//!   refused `attempt_over`);
//! - a timeout keeps its time left when the state keeps its name and the target
//!   state has one, and is set anew otherwise; a routine's own timers stay when
//!   the state keeps its name, and go otherwise; held events stay held, in order;
//! - each member gets a ledger entry `migrated`: from, to (checksums), its states,
//!   the map, the reason, who, and `undo` for a move back.
//!
//! A token already on the target graph is a duplicate: running the same migration
//! again moves each token once.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::durations::{parse_duration, span_words};
use stateous_shared::graph::{Graph, StateSpec, END, START, TIMEOUT};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::watch::short_checksum;
use stateous_shared::wire::Object;

use super::join::family;
use super::route::{set_timer, settle_task};
use super::{append, py, refuse_child, Rules, Step};
use crate::store::{EntryKind, TaskStatus, TimerKind, TimerStatus, TokenRow, Tx};
use crate::time_source::micros;

/// What a migration asks of each token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MigrateStep {
    /// `OLD=NEW`: the state a token in OLD takes in the target graph.
    pub map: BTreeMap<String, String>,
    /// Move back to the graph of the token's last migration instead.
    pub undo: bool,
}

/// One member of a family, as the migration would leave it.
struct Member {
    row: TokenRow,
    state: String,
    context: Object,
    spec: Option<StateSpec>,
}

/// The plan for one token: where it goes, and what that does to each member.
pub struct Plan {
    target: Arc<Graph>,
    map: BTreeMap<String, String>,
    members: Vec<Member>,
}

/// What the migration of `row` would be: `Ok(None)` when it already runs on the
/// target graph (a duplicate), the refusal when it cannot move. Writes nothing.
pub fn plan(
    rules: &Rules,
    tx: &dyn Tx,
    step: &MigrateStep,
    row: &TokenRow,
) -> Step<Result<Option<Plan>, Refusal>> {
    if let Err(fail) = refuse_child(tx, row, "migrate") {
        return Ok(Err(fail.refusal()));
    }
    if !row.status.live() {
        let only = "only an active or paused token can be migrated";
        return Ok(Err(super::not_now(row, only)));
    }
    let (target, map) = match target(rules, tx, step, row)? {
        Ok(found) => found,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if rules.graph_of(row).structure == target.structure {
        return Ok(Ok(None));
    }
    let mut members = Vec::new();
    for member in family(rules, tx, row)? {
        match place(rules, &target, &map, member)? {
            Ok(member) => members.push(member),
            Err(sentence) => return Ok(Err(Refusal::new(Code::InvalidArgument, sentence))),
        }
    }
    Ok(Ok(Some(Plan {
        target,
        map,
        members,
    })))
}

/// The graph a migration moves to, and its state map.
type Target = (Arc<Graph>, BTreeMap<String, String>);

/// The graph to move to and the state map: the served graph and the step's map,
/// or for an undo the graph and states of the token's last migration, reversed.
fn target(
    rules: &Rules,
    tx: &dyn Tx,
    step: &MigrateStep,
    row: &TokenRow,
) -> Step<Result<Target, Refusal>> {
    if !step.undo {
        return Ok(Ok((Arc::clone(&rules.graph), step.map.clone())));
    }
    let entries = tx.entries(&row.token)?;
    let last = entries
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::Migrated.as_str() && e.data.get("undo").is_none());
    let Some(last) = last else {
        let sentence = format!("token {} was never migrated", py(&row.token));
        return Ok(Err(Refusal::new(Code::InvalidArgument, sentence)));
    };
    let text = |key: &str| last.data.get(key).and_then(Value::as_str).unwrap_or("");
    let Some(graph) = rules.structure(text("from")) else {
        let sentence = format!(
            "the graph {} that token {} ran on is not kept",
            short_checksum(text("from")),
            py(&row.token)
        );
        return Ok(Err(Refusal::new(Code::InvalidArgument, sentence)));
    };
    let mut map = BTreeMap::new();
    if let Some(Value::Object(moved)) = last.data.get("map") {
        for (old, new) in moved {
            if let Some(new) = new.as_str() {
                map.insert(new.to_string(), old.clone());
            }
        }
    }
    Ok(Ok((Arc::clone(graph), map)))
}

/// Where `row` goes in `target`, or why it cannot.
fn place(
    rules: &Rules,
    target: &Graph,
    map: &BTreeMap<String, String>,
    row: TokenRow,
) -> Step<Result<Member, String>> {
    let workflow = match &row.workflow {
        None => &target.main,
        Some(name) => match target.children.get(name) {
            Some(workflow) => workflow,
            None => {
                return Ok(Err(format!(
                    "its child {} runs the workflow {}, which the target graph lacks",
                    py(&row.token),
                    py(name)
                )))
            }
        },
    };
    let state = map.get(&row.state).cloned().unwrap_or(row.state.clone());
    let context = workflow.with_defaults(&row.context);
    if !row.status.live() || state == START || state == END {
        let spec = None;
        return Ok(Ok(Member {
            row,
            state,
            context,
            spec,
        }));
    }
    let Some(spec) = workflow.states.get(&state) else {
        return Ok(Err(format!(
            "the workflow {} of the target graph has no state {}; map it with --map {}=STATE",
            py(&workflow.name),
            py(&state),
            row.state
        )));
    };
    let errors = workflow.context_errors(&context);
    if !errors.is_empty() {
        return Ok(Err(format!(
            "the context of {} breaks the target graph's schema: {}",
            py(&row.token),
            errors.join("; ")
        )));
    }
    let before = rules.state(&row, &row.state)?;
    if before.parallel != spec.parallel {
        return Ok(Err(format!(
            "{} starts other child workflows in the target graph than the children {} has",
            py(&state),
            py(&row.token)
        )));
    }
    let spec = Some(spec.clone());
    Ok(Ok(Member {
        row,
        state,
        context,
        spec,
    }))
}

/// What the plan does to the top token, in words: its state, task and timer.
pub fn describe(tx: &dyn Tx, plan: &Plan) -> Step<String> {
    let Some(top) = plan.members.first() else {
        return Ok(String::new());
    };
    let mut words = format!(
        "moves it to graph {} in {}",
        short_checksum(&plan.target.checksum),
        py(&top.state)
    );
    if !tx.open_tasks(&top.row.token)?.is_empty() {
        words.push_str(&format!("; its task is queued anew for {}", py(&top.state)));
    }
    if let Some(timeout) = top.spec.as_ref().and_then(|spec| spec.timeout.as_deref()) {
        let kept = tx
            .pending_timers(&top.row.token)?
            .into_iter()
            .find(|t| t.kind == TimerKind::Timeout && top.state == top.row.state);
        match kept {
            Some(timer) => {
                let left = ((timer.due_at - tx.now()).max(0) / 1_000_000) as u64;
                let left = if left < 120 {
                    format!("{left} seconds")
                } else {
                    span_words(left)
                };
                words.push_str(&format!("; its timeout keeps {left} left"));
            }
            None => words.push_str(&format!("; its timeout is set anew ({timeout})")),
        }
    }
    let children = plan.members.len() - 1;
    if children > 0 {
        words.push_str(&format!(" (and its {children} child token(s))"));
    }
    Ok(words)
}

/// Carry the plan out; `reason` and `by` go into each member's `migrated` entry.
pub fn apply(tx: &dyn Tx, step: &MigrateStep, plan: Plan, reason: &str, by: &str) -> Step<()> {
    let checksum: Arc<str> = Arc::from(plan.target.checksum.as_str());
    for member in plan.members {
        let mut row = member.row.clone();
        let from = row.graph.as_deref().unwrap_or_default().to_string();
        let from_state = row.state.clone();
        row.graph = Some(Arc::clone(&checksum));
        if let Some(spec) = &member.spec {
            row.state = member.state.clone();
            row.context = Arc::new(member.context.clone());
            move_work(tx, &member.row, &mut row, spec)?;
        }
        tx.update_token(&row)?;
        let mut data = json!({
            "from": from,
            "to": &*checksum,
            "state_from": from_state,
            "state_to": row.state,
            "map": plan.map,
            "reason": reason,
            "by": by,
        });
        if step.undo {
            data["undo"] = Value::Bool(true);
        }
        append(tx, &row.token, EntryKind::Migrated, None, data)?;
    }
    Ok(())
}

/// The tasks and timers of `before` moved to `after`'s state.
fn move_work(tx: &dyn Tx, before: &TokenRow, after: &mut TokenRow, spec: &StateSpec) -> Step<()> {
    let renamed = before.state != after.state;
    let mut requeue = false;
    for mut task in tx.open_tasks(&before.token)? {
        if matches!(task.status, TaskStatus::Claimed | TaskStatus::Waiting) {
            // The held attempt is over: its holder's late report names it.
            task.attempt += 1;
        }
        let (status, kind) = (TaskStatus::Cancelled, EntryKind::TaskCancelled);
        settle_task(tx, &before.token, &mut task, status, kind)?;
        requeue = true;
    }
    if requeue && spec.parallel.is_empty() {
        let task = tx.queue_task(&after.token, &after.state, after.visit)?;
        let data = json!({"task": task, "state": after.state});
        append(tx, &after.token, EntryKind::TaskQueued, None, data)?;
    }
    let mut timed = false;
    for mut timer in tx.pending_timers(&before.token)? {
        let keep = !renamed && (timer.kind == TimerKind::Timer || spec.timeout.is_some());
        if keep {
            timed |= timer.kind == TimerKind::Timeout;
            continue;
        }
        timer.status = TimerStatus::Cancelled;
        tx.update_timer(&timer)?;
    }
    if let (Some(timeout), false) = (&spec.timeout, timed) {
        let after_micros = match parse_duration(timeout) {
            Ok(span) => micros(span),
            Err(problem) => return super::refuse(Code::Unexpected, problem),
        };
        set_timer(tx, after, TIMEOUT, None, after_micros, TimerKind::Timeout)?;
    }
    Ok(())
}
