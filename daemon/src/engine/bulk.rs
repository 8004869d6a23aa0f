//! One token of a bulk action: what the action would do to it (a preview, on a read),
//! and the action itself (its own write transaction, so that a refusal for one token
//! never touches another, and so that a bulk action over 10,000 tokens is 10,000 short
//! requests between which others are served).
//!
//! Each action is the single-token workflow (`pause`, `resume`, `cancel`, `fire`,
//! `retry`), which takes the token family's lock first. Before it, the token is
//! checked against the selection again under that lock: a token that no longer
//! matches is skipped. The operator's reason goes into the history as an
//! `operator` entry before the action's own entries (a retry's own `retried`
//! entry carries it); a refused action rolls it back with everything else.

use serde_json::{json, Value};
use stateous_shared::bulk::{bulk_key, BulkAction, Outcome, TokenOutcome};
use stateous_shared::graph::{END, START};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

use super::fire::fire;
use super::migrate::{self, MigrateStep};
use super::prune::PruneStep;
use super::retry::retry;
use super::route::{decide, Decision};
use super::select::Selection;
use super::{append, cancel, lock, pause, py, refuse_child, Fail, Rules, Step, OWN_EVENTS};
use crate::store::{EntryKind, TokenRow, TokenStatus, Tx};
use crate::validated::{FireInput, Key, RetryInput};

/// A bulk action as each token meets it.
#[derive(Debug, Clone)]
pub struct BulkStep {
    /// What to do.
    pub action: BulkAction,
    /// What a token must still match when its turn comes.
    pub selection: Selection,
    /// `fire`: the event.
    pub event: String,
    /// `fire`: its payload.
    pub payload: Option<Object>,
    /// `fire`: the key that each token's key is derived from.
    pub key: Option<String>,
    /// `retry`: the state to enter.
    pub state: Option<String>,
    /// `priority`: the priority to set.
    pub priority: i64,
    /// `migrate`: the state map, and whether to move back.
    pub migrate: MigrateStep,
    /// Why (a preview may have none).
    pub reason: Option<String>,
    /// Who asks.
    pub by: String,
}

/// An outcome for `row` as it is.
pub fn outcome(row: &TokenRow, outcome: Outcome, detail: String) -> TokenOutcome {
    TokenOutcome {
        token: row.token.clone(),
        outcome,
        state: row.state.clone(),
        status: row.status.as_str().to_string(),
        detail,
        code: None,
    }
}

/// A refused outcome for `row` as it was before the refusal.
pub fn refused(row: &TokenRow, refusal: &Refusal) -> TokenOutcome {
    TokenOutcome {
        code: Some(refusal.code.as_str().to_string()),
        ..outcome(row, Outcome::Refused, refusal.error.clone())
    }
}

/// What the action would do to `row` now. Changes nothing.
pub fn preview(rules: &Rules, tx: &dyn Tx, step: &BulkStep, row: &TokenRow) -> Step<TokenOutcome> {
    match step.action {
        BulkAction::Migrate => return preview_migrate(rules, tx, step, row),
        BulkAction::Fire => return preview_fire(rules, tx, step, row),
        BulkAction::Priority => return preview_priority(rules, tx, step, row),
        _ => {}
    }
    match why_not(rules, tx, step, row)? {
        Some(refusal) => Ok(refused(row, &refusal)),
        None => {
            let state = py(stateous_shared::history::named(&row.state));
            let detail = match step.action {
                BulkAction::Pause => format!("pauses it in {state}"),
                BulkAction::Resume => format!("resumes it in {state}; what it holds applies"),
                BulkAction::Cancel => format!("cancels it in {state}"),
                BulkAction::Prune => "deletes it with its history, tasks, timers, memory \
                                      and keys"
                    .to_string(),
                _ => {
                    let target = step.state.as_deref().unwrap_or(&row.state);
                    let visit = tx.visits(&row.token, target)? + 1;
                    format!("enters {} again (visit {visit})", py(target))
                }
            };
            Ok(outcome(row, Outcome::Applied, detail))
        }
    }
}

/// Why the action would be refused for `row` before any routing, as the
/// single-token workflow would say it; `None` when it passes those checks.
fn why_not(rules: &Rules, tx: &dyn Tx, step: &BulkStep, row: &TokenRow) -> Step<Option<Refusal>> {
    let verb = step.action.as_str();
    if step.action == BulkAction::Prune {
        return super::prune::why_not(tx, row);
    }
    // A child's priority changes as a top token's does (`PUT /tokens/{id}/priority`).
    if !matches!(step.action, BulkAction::Fire | BulkAction::Priority) {
        if let Err(fail) = refuse_child(tx, row, verb) {
            return Ok(Some(fail.refusal()));
        }
    }
    let (allowed, only) = match step.action {
        BulkAction::Pause => (
            row.status == TokenStatus::Active,
            "only an active token can be paused",
        ),
        BulkAction::Resume => (
            row.status == TokenStatus::Paused,
            "only a paused token can be resumed",
        ),
        BulkAction::Cancel => (
            row.status.live(),
            "only an active or paused token can be cancelled",
        ),
        BulkAction::Retry => (
            row.status == TokenStatus::Failed,
            "only a failed token can be retried",
        ),
        BulkAction::Fire => (row.status.live(), "it takes no events"),
        BulkAction::Migrate => (row.status.live(), "only a live token can be migrated"),
        BulkAction::Prune => (row.status.ended(), "only an ended token can be pruned"),
        BulkAction::Priority => (row.status.live(), "only a live token's priority can change"),
    };
    if !allowed {
        return Ok(Some(super::not_now(row, only)));
    }
    if step.action == BulkAction::Retry {
        let workflow = rules.workflow(row)?;
        let target = step.state.as_deref().unwrap_or(&row.state);
        if target == START || target == END || !workflow.states.contains_key(target) {
            let sentence = format!(
                "the workflow {} has no state {} to enter",
                py(&workflow.name),
                py(target)
            );
            return Ok(Some(Refusal::new(Code::InvalidArgument, sentence)));
        }
    }
    Ok(None)
}

/// A bulk priority's outcome at `row`: refused for an ended token, a duplicate
/// where the token has that priority already, else what it changes.
fn preview_priority(
    rules: &Rules,
    tx: &dyn Tx,
    step: &BulkStep,
    row: &TokenRow,
) -> Step<TokenOutcome> {
    if let Some(refusal) = why_not(rules, tx, step, row)? {
        return Ok(refused(row, &refusal));
    }
    priority_outcome(tx, step, row)
}

/// What a bulk priority does to `row`, a token it may change: nothing where the
/// token has that priority already.
fn priority_outcome(tx: &dyn Tx, step: &BulkStep, row: &TokenRow) -> Step<TokenOutcome> {
    let now = tx.priority(&row.token)?;
    Ok(if now == step.priority {
        let detail = format!("its priority is {now} already");
        outcome(row, Outcome::Duplicate, detail)
    } else {
        let detail = format!("sets its priority from {now} to {}", step.priority);
        outcome(row, Outcome::Applied, detail)
    })
}

fn preview_migrate(
    rules: &Rules,
    tx: &dyn Tx,
    step: &BulkStep,
    row: &TokenRow,
) -> Step<TokenOutcome> {
    Ok(match migrate::plan(rules, tx, &step.migrate, row)? {
        Err(refusal) => refused(row, &refusal),
        Ok(None) => outcome(row, Outcome::Duplicate, already(step)),
        Ok(Some(plan)) => outcome(row, Outcome::Applied, migrate::describe(tx, &plan)?),
    })
}

/// A migration's duplicate, in words.
fn already(step: &BulkStep) -> String {
    let graph = if step.migrate.undo {
        "the graph it was migrated from"
    } else {
        "the served graph"
    };
    format!("it already runs on {graph}")
}

/// What stops a bulk fire at `row` before anything is written.
enum Stop {
    /// The token already took this bulk fire's key: its outcome, as it is now.
    Duplicate(TokenOutcome),
    /// The fire is refused.
    Refused(Refusal),
}

/// Whether a bulk fire goes on at `row` (`Ok` with the token's key) or stops, in
/// the single fire's order (`fire::fire`): a key the token already took answers
/// `duplicate` whatever its status now, as `POST /tokens/{id}/events/{event}`
/// with that key does; then a token that takes no events, or an event its own
/// workflow lacks, is refused. The preview and the run both ask this, so that the
/// preview says what the run will do.
fn fire_gate(
    rules: &Rules,
    tx: &dyn Tx,
    step: &BulkStep,
    row: &TokenRow,
) -> Step<Result<String, Stop>> {
    let event = step.event.as_str();
    let key = bulk_key(
        step.key.as_deref(),
        event,
        step.payload.as_ref(),
        &row.token,
    );
    if tx.has_key(&row.token, &key)? {
        let detail = format!("it already took {} from this bulk fire", py(event));
        return Ok(Err(Stop::Duplicate(outcome(
            row,
            Outcome::Duplicate,
            detail,
        ))));
    }
    // An ended token is refused before anything is written, so that a wide
    // filter leaves no `event_rejected` entry in the histories of ended tokens.
    if let Some(refusal) = why_not(rules, tx, step, row)? {
        return Ok(Err(Stop::Refused(refusal)));
    }
    // Nor does an event that the token's own workflow lacks (one of a child
    // workflow fired at main tokens): the single fire would record it as
    // refused, two entries per token for a wrong name.
    if let Some(refusal) = not_its_event(rules, row, event)? {
        return Ok(Err(Stop::Refused(refusal)));
    }
    Ok(Ok(key))
}

fn preview_fire(rules: &Rules, tx: &dyn Tx, step: &BulkStep, row: &TokenRow) -> Step<TokenOutcome> {
    match fire_gate(rules, tx, step, row)? {
        Ok(_) => {}
        Err(Stop::Duplicate(duplicate)) => return Ok(duplicate),
        Err(Stop::Refused(refusal)) => return Ok(refused(row, &refusal)),
    }
    let event = step.event.as_str();
    let workflow = rules.workflow(row)?;
    let no = |code: Code, sentence: String| Ok(refused(row, &Refusal::new(code, sentence)));
    let errors = workflow.payload_errors(event, step.payload.as_ref());
    if !errors.is_empty() {
        return no(
            Code::InvalidPayload,
            format!("{event}: {}", errors.join("; ")),
        );
    }
    if row.status == TokenStatus::Paused {
        let detail = format!("holds {} until it is resumed", py(event));
        return Ok(outcome(row, Outcome::Applied, detail));
    }
    let from = py(&row.state);
    match decide(rules, tx, row, event, step.payload.as_ref(), &row.context)? {
        Decision::Take(chosen) if chosen.target == END => Ok(outcome(
            row,
            Outcome::Applied,
            format!("moves it from {from} to END: it completes"),
        )),
        Decision::Take(chosen) => {
            let detail = format!("moves it from {from} to {}", py(&chosen.target));
            Ok(outcome(row, Outcome::Applied, detail))
        }
        Decision::Refuse { reason, fail: true } => Ok(outcome(
            row,
            Outcome::Applied,
            format!("fails it: {reason}"),
        )),
        Decision::Refuse { reason, .. } => no(Code::EventNotAllowed, reason),
    }
}

/// Why `row` cannot take `event` whatever its state: Stateous's own event, or
/// one that the token's workflow does not declare; `None` when it may.
fn not_its_event(rules: &Rules, row: &TokenRow, event: &str) -> Step<Option<Refusal>> {
    let workflow = rules.workflow(row)?;
    let sentence = if OWN_EVENTS.contains(&event) {
        format!(
            "{} is Stateous's own event; only Stateous fires it",
            py(event)
        )
    } else if !workflow.declares(event) {
        format!(
            "the workflow {} has no event {}",
            py(&workflow.name),
            py(event)
        )
    } else {
        return Ok(None);
    };
    Ok(Some(Refusal::new(Code::EventNotAllowed, sentence)))
}

/// Why no token at all can take this bulk action, whatever the filter matches:
/// a fire of an event that no workflow of the graph declares (a typo,
/// `invalid_argument`), or whose payload breaks the event's schema in every
/// workflow that declares it (`invalid_payload`, with the single fire's
/// sentence), or a retry into a state that none has (`invalid_argument`). The
/// whole request is refused then, before any token is read, rather than each
/// match being walked and refused.
pub fn refuse_whole(rules: &Rules, step: &BulkStep) -> Option<Refusal> {
    let graphs = rules.graphs();
    let mut workflows = graphs
        .into_iter()
        .flat_map(|graph| std::iter::once(&graph.main).chain(graph.children.values()));
    let sentence = match step.action {
        BulkAction::Fire => {
            let event = step.event.as_str();
            if OWN_EVENTS.contains(&event) {
                return None;
            }
            let declaring: Vec<_> = workflows.filter(|w| w.declares(event)).collect();
            if declaring.is_empty() {
                let sentence =
                    format!("no workflow of the served graph has an event {}", py(event));
                return Some(Refusal::new(Code::InvalidArgument, sentence));
            }
            // Refused whole only when no workflow takes the payload: where one
            // does, its tokens may take the fire.
            let mut errors = declaring
                .iter()
                .map(|w| w.payload_errors(event, step.payload.as_ref()));
            let first = errors.next().unwrap_or_default();
            if first.is_empty() || errors.any(|e| e.is_empty()) {
                return None;
            }
            let sentence = format!("{event}: {}", first.join("; "));
            return Some(Refusal::new(Code::InvalidPayload, sentence));
        }
        BulkAction::Retry => {
            let state = step.state.as_deref()?;
            let known =
                state != START && state != END && workflows.any(|w| w.states.contains_key(state));
            if known {
                return None;
            }
            format!(
                "no workflow of the served graph has a state {} to enter",
                py(state)
            )
        }
        BulkAction::Migrate if !step.migrate.undo => {
            let served = &rules.graph;
            let mut all = std::iter::once(&served.main).chain(served.children.values());
            let states: Vec<&String> = all.by_ref().flat_map(|w| w.states.keys()).collect();
            let unknown = step
                .migrate
                .map
                .values()
                .find(|new| !states.contains(new))?;
            format!(
                "no workflow of the served graph has a state {} to migrate to",
                py(unknown)
            )
        }
        _ => return None,
    };
    Some(Refusal::new(Code::InvalidArgument, sentence))
}

/// Apply the action to `token`, in the transaction of this one token.
pub fn apply(rules: &Rules, tx: &dyn Tx, step: &BulkStep, token: &str) -> Step<TokenOutcome> {
    let row = lock(tx, token)?;
    if !step.selection.matches(rules, &row, tx.now()) {
        let detail = "it no longer matched the filter when its turn came".to_string();
        return Ok(outcome(&row, Outcome::Skipped, detail));
    }
    let view = match step.action {
        BulkAction::Retry => {
            let input = RetryInput {
                token: row.token.clone(),
                state: step.state.clone(),
                reason: step.reason.clone(),
                by: step.by.clone(),
            };
            retry(rules, tx, &input)?
        }
        BulkAction::Fire => {
            let key = match fire_gate(rules, tx, step, &row)? {
                Ok(key) => key,
                Err(Stop::Duplicate(duplicate)) => return Ok(duplicate),
                Err(Stop::Refused(refusal)) => return Err(Fail::Rollback(refusal)),
            };
            let event = step.event.clone();
            operator_entry(tx, step, &row)?;
            // The key is derived from the operator's, so it may break the key's
            // limit even though theirs did not.
            let input = FireInput {
                token: row.token.clone(),
                event,
                payload: step.payload.clone(),
                key: Some(Key::new(key)?),
                hook: None,
                scope: None,
            };
            fire(rules, tx, &input)?.0
        }
        BulkAction::Pause => {
            operator_entry(tx, step, &row)?;
            pause::pause(rules, tx, token)?
        }
        BulkAction::Resume => {
            operator_entry(tx, step, &row)?;
            pause::resume(rules, tx, token)?
        }
        BulkAction::Cancel => {
            operator_entry(tx, step, &row)?;
            cancel::cancel(rules, tx, token)?
        }
        BulkAction::Migrate => {
            let plan = match migrate::plan(rules, tx, &step.migrate, &row)? {
                Err(refusal) => return Err(Fail::Rollback(refusal)),
                Ok(None) => return Ok(outcome(&row, Outcome::Duplicate, already(step))),
                Ok(Some(plan)) => plan,
            };
            let detail = migrate::describe(tx, &plan)?;
            let reason = step.reason.as_deref().unwrap_or_default();
            migrate::apply(tx, &step.migrate, plan, reason, &step.by)?;
            let row = lock(tx, token)?;
            return Ok(outcome(&row, Outcome::Applied, detail));
        }
        BulkAction::Priority => {
            if let Some(refusal) = why_not(rules, tx, step, &row)? {
                return Err(Fail::Rollback(refusal));
            }
            let done = priority_outcome(tx, step, &row)?;
            if done.outcome != Outcome::Applied {
                return Ok(done);
            }
            operator_entry(tx, step, &row)?;
            super::priority::keep(tx, &row.token, step.priority)?;
            return Ok(done);
        }
        BulkAction::Prune => {
            let prune = PruneStep {
                selection: Some(step.selection.clone()),
                ..PruneStep::default()
            };
            return super::prune::prune(rules, tx, token, &prune);
        }
    };
    let detail = match step.action {
        BulkAction::Fire => format!(
            "fired {}: it is {} in {}",
            py(&step.event),
            view.status,
            py(stateous_shared::history::named(&view.state))
        ),
        action => format!("{} it", action.done()),
    };
    Ok(TokenOutcome {
        token: view.token,
        outcome: Outcome::Applied,
        state: view.state,
        status: view.status,
        detail,
        code: None,
    })
}

/// The `operator` entry: who asked for what, and why.
fn operator_entry(tx: &dyn Tx, step: &BulkStep, row: &TokenRow) -> Step<()> {
    let mut data = json!({"action": step.action.as_str(), "by": step.by});
    if let Some(map) = data.as_object_mut() {
        if step.action == BulkAction::Fire {
            map.insert("event".into(), Value::String(step.event.clone()));
        }
        if step.action == BulkAction::Priority {
            map.insert("priority".into(), Value::from(step.priority));
        }
        if let Some(reason) = &step.reason {
            map.insert("reason".into(), Value::String(reason.clone()));
        }
    }
    append(tx, &row.token, EntryKind::Operator, None, data)
}
