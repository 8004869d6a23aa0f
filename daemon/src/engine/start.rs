//! Start a token (`docs/inside/workflows.md`, "Start").

use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::graph::{Graph, TransitionSpec, Workflow, END, START, STARTED};
use stateous_shared::guards::GuardInput;
use stateous_shared::refusal::Code;
use stateous_shared::trace_context::TokenTrace;
use stateous_shared::wire::{Object, TokenView};

use super::join::cannot_enter;
use super::route::{choose, end, enter};
use super::{append, py, refuse, view, Rules, Step};
use crate::store::{EntryKind, TokenRow, TokenStatus, Tx};
use crate::validated::StartInput;

/// Start the token, or find it: `(token, created)`. Nothing is written for a
/// token that exists or for a refusal.
pub fn start(rules: &Rules, tx: &dyn Tx, input: &StartInput) -> Step<(TokenView, bool)> {
    // A new token is its own family: held from here, two starts of one id take
    // turns, and the new token's rows are written under its lock.
    tx.lock_family(&input.token, true)?;
    if let Some(row) = tx.token(&input.token)? {
        return Ok((view(&row), false));
    }
    if let Some(taken) = tx.token_folded(&input.token)? {
        return refuse(
            Code::InvalidTokenId,
            format!(
                "a token {} already exists; token ids are compared without regard to case",
                py(&taken)
            ),
        );
    }
    let graph = (&*rules.graph, &rules.graph.main);
    let trace = (input.trace).unwrap_or_else(|| TokenTrace::started(&input.token, tx.now()));
    let row = create(rules, tx, &input.token, &input.context, graph, None, trace)?;
    Ok((view(&row), true))
}

/// A new token of `workflow` (of `graph`, which the token then runs on), moved out
/// of START to where its context leads. With `parent`, it is a child of that
/// token's parallel state (reference `_create`). It keeps `trace` for good.
pub fn create(
    rules: &Rules,
    tx: &dyn Tx,
    token: &str,
    context: &Object,
    (graph, workflow): (&Graph, &Workflow),
    parent: Option<&str>,
    trace: TokenTrace,
) -> Step<TokenRow> {
    let values = workflow.with_defaults(context);
    let errors = workflow.context_errors(&values);
    if !errors.is_empty() {
        let sentence = format!("{}: {}", workflow.name, errors.join("; "));
        return refuse(Code::InvalidContext, sentence);
    }
    let chosen = start_transition(workflow, &values)?;
    let mut row = TokenRow {
        token: token.to_string(),
        state: START.to_string(),
        status: TokenStatus::Active,
        visit: 0,
        context: Arc::new(values.clone()),
        entered_at: tx.now(),
        parent: parent.map(str::to_string),
        workflow: parent.map(|_| workflow.name.clone()),
        graph: Some(Arc::from(graph.checksum.as_str())),
        trace: Some(Arc::from(trace.stored())),
    };
    if chosen.target != END {
        if let Some(problem) = cannot_enter(graph, tx, token, workflow, &chosen.target, &values)? {
            return refuse(Code::InvalidContext, problem);
        }
    }
    let started = match parent {
        None => json!({"context": values}),
        Some(parent) => json!({"context": values, "parent": parent}),
    };
    append(tx, token, EntryKind::Started, None, started)?;
    tx.insert_token(&row)?;
    // Recorded as any other move, so the first routine is told `__started__`
    // brought the token there.
    let data = json!({"event": STARTED, "payload": Value::Null, "state": START});
    append(tx, token, EntryKind::EventAccepted, None, data)?;
    if chosen.target == END {
        end(rules, tx, &mut row, TokenStatus::Completed, json!({}))?;
    } else {
        enter(rules, tx, &mut row, &chosen.target)?;
    }
    Ok(row)
}

/// The transition from START for this context; its guards read only the context.
pub fn start_transition<'w>(workflow: &'w Workflow, context: &Object) -> Step<&'w TransitionSpec> {
    let none = |_: &str| 0;
    let input = GuardInput {
        ctx: context,
        payload: None,
        count: &none,
        branches: None,
    };
    let starts: Vec<&TransitionSpec> = workflow.starts().collect();
    match choose(&starts, &input) {
        Err(targets) => refuse(
            Code::InvalidContext,
            format!(
                "more than one transition from START holds ({}); compile the workflow again, \
                 which refuses such guards",
                targets.join(", ")
            ),
        ),
        Ok(Some(chosen)) => Ok(chosen),
        Ok(None) => refuse(
            Code::InvalidContext,
            "no transition from START holds on this context, and there is no otherwise",
        ),
    }
}
