//! Parallel states: child tokens and their join (`docs/concepts/parallel.md` and
//! `docs/inside/workflows.md`, "Parallel states"): whether a parallel state can be
//! entered, the children it starts, and how a finished branch counts towards the join.
//!
//! A child is a normal token with a `parent` and a `workflow`. Its id is
//! `<parent>.<state>.<visit>.<workflow>`. Rows are re-read from the transaction
//! whenever a call below may have moved them: a child that ends can move its parent.

use serde_json::{json, Value};
use stateous_shared::graph::{Graph, StateSpec, Workflow, END, JOINED, START};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::trace_context::TokenTrace;
use stateous_shared::wire::Object;

use super::route::{fail, route};
use super::start::{create, start_transition};
use super::{append, existing, py, Fail, Rules, Step};
use crate::store::{EntryKind, TokenRow, TokenStatus, Tx};
use crate::validated::MAX_TOKEN as MAX_TOKEN_ID;

/// The id of the child that `parent` starts for `workflow` on visit `visit` of the
/// parallel state `state`: `TICKET-1.reviews.1.design-review`.
pub fn child_id(parent: &str, state: &str, visit: i64, workflow: &str) -> String {
    format!("{parent}.{state}.{visit}.{workflow}")
}

/// The parent's context keys that a parallel state copies to each child.
fn inputs_of(spec: &StateSpec, context: &Object) -> Object {
    spec.inputs
        .iter()
        .filter_map(|key| context.get(key).map(|v| (key.clone(), v.clone())))
        .collect()
}

/// A child workflow of `graph` (the parent's) by name.
fn child_workflow<'g>(graph: &'g Graph, name: &str) -> Step<&'g Workflow> {
    graph.children.get(name).ok_or_else(|| {
        Fail::Rollback(Refusal::new(
            Code::Unexpected,
            format!("the token's graph has no workflow {}", py(name)),
        ))
    })
}

/// Why `token` (of `workflow`, in `graph`) cannot enter `state` with this context
/// now: a child that the state would start cannot start. `None`: it can. The same
/// checks as a child's start, made before anything is written, down through
/// nested states.
pub fn cannot_enter(
    graph: &Graph,
    tx: &dyn Tx,
    token: &str,
    workflow: &Workflow,
    state: &str,
    context: &Object,
) -> Step<Option<String>> {
    let Some(spec) = workflow.states.get(state) else {
        return Ok(None);
    };
    if spec.parallel.is_empty() {
        return Ok(None);
    }
    let visit = tx.visits(token, state)? + 1;
    let inputs = inputs_of(spec, context);
    for name in &spec.parallel {
        let child = child_id(token, state, visit, name);
        if child.len() > MAX_TOKEN_ID {
            return Ok(Some(format!(
                "the child {} of {} would have an id longer than {MAX_TOKEN_ID} characters; \
                 use a shorter token id",
                py(&child),
                py(state)
            )));
        }
        if tx.token(&child)?.is_some() || tx.token_folded(&child)?.is_some() {
            return Ok(Some(format!(
                "the child id {} is taken by another token",
                py(&child)
            )));
        }
        let workflow = child_workflow(graph, name)?;
        if let Some(problem) = cannot_start(graph, tx, &child, workflow, &inputs)? {
            return Ok(Some(format!(
                "the child {} of {} cannot start: {problem}",
                py(name),
                py(state)
            )));
        }
    }
    Ok(None)
}

/// Why a new token `token` of `workflow` cannot start with this context, or `None`.
fn cannot_start(
    graph: &Graph,
    tx: &dyn Tx,
    token: &str,
    workflow: &Workflow,
    context: &Object,
) -> Step<Option<String>> {
    let values = workflow.with_defaults(context);
    let errors = workflow.context_errors(&values);
    if !errors.is_empty() {
        return Ok(Some(format!(
            "its context breaks the schema: {}",
            errors.join("; ")
        )));
    }
    let chosen = match start_transition(workflow, &values) {
        Ok(chosen) => chosen,
        Err(fail) => return Ok(Some(fail.refusal().error)),
    };
    if chosen.target == END {
        return Ok(None);
    }
    cannot_enter(graph, tx, token, workflow, &chosen.target, &values)
}

/// Start one child for each workflow of the parallel state `state` that `row` has
/// just entered on `visit`. A child that ends as it starts can meet the join and
/// move the parent; then no more children start.
pub fn start_children(
    rules: &Rules,
    tx: &dyn Tx,
    row: &mut TokenRow,
    spec: &StateSpec,
    visit: i64,
) -> Step<()> {
    let inputs = inputs_of(spec, &row.context);
    for name in &spec.parallel {
        if row.status != TokenStatus::Active || row.state != spec.name || row.visit != visit {
            return Ok(());
        }
        let child = child_id(&row.token, &spec.name, visit, name);
        let data = json!({"workflow": name, "token": child});
        append(tx, &row.token, EntryKind::BranchStarted, None, data)?;
        let graph = rules.graph_of(row);
        let workflow = child_workflow(graph, name)?;
        // A child's spans sit under its parent's visit of the parallel state.
        let trace = TokenTrace::of(&row.token, row.trace.as_deref());
        create(
            rules,
            tx,
            &child,
            &inputs,
            (graph, workflow),
            Some(&row.token),
            trace.child(&row.token, &spec.name, visit),
        )?;
        *row = existing(tx, &row.token)?;
    }
    Ok(())
}

/// The children that the token's current visit of a parallel state started, in the
/// order of the state's workflows; empty in any other state.
pub fn children(rules: &Rules, tx: &dyn Tx, row: &TokenRow) -> Step<Vec<TokenRow>> {
    if row.state == START || row.state == END {
        return Ok(Vec::new());
    }
    let spec = rules.state(row, &row.state)?;
    let mut found = Vec::with_capacity(spec.parallel.len());
    for name in &spec.parallel {
        if let Some(child) = tx.token(&child_id(&row.token, &row.state, row.visit, name))? {
            found.push(child);
        }
    }
    Ok(found)
}

/// The token, then each child of its current state and their children, depth first.
pub fn family(rules: &Rules, tx: &dyn Tx, row: &TokenRow) -> Step<Vec<TokenRow>> {
    let mut found = vec![row.clone()];
    for child in children(rules, tx, row)? {
        found.extend(family(rules, tx, &child)?);
    }
    Ok(found)
}

/// The top token of a family: the token itself, or its parent's top token.
pub fn top(tx: &dyn Tx, row: &TokenRow) -> Step<TokenRow> {
    let mut top = row.clone();
    while let Some(parent) = top.parent.clone() {
        top = existing(tx, &parent)?;
    }
    Ok(top)
}

/// A child ended (completed or failed): fire `joined` on its parent when the join
/// is met. `all` waits for every child and lists them all; `any` lists this one.
/// A join that no transition takes fails the parent.
pub fn branch_finished(rules: &Rules, tx: &dyn Tx, child: &TokenRow) -> Step<()> {
    let Some(parent) = &child.parent else {
        return Ok(());
    };
    let Some(mut parent) = tx.token(parent)? else {
        return Ok(());
    };
    // A paused parent's children are paused too: they do not end.
    if parent.status != TokenStatus::Active || parent.state == START || parent.state == END {
        return Ok(());
    }
    let spec = rules.state(&parent, &parent.state)?.clone();
    let prefix = child_id(&parent.token, &parent.state, parent.visit, "");
    if spec.parallel.is_empty() || !child.token.starts_with(&prefix) {
        return Ok(()); // the parent has left the state that started this child
    }
    let ended: Vec<TokenRow> = children(rules, tx, &parent)?
        .into_iter()
        .filter(|c| c.status.ended())
        .collect();
    let all = spec.join == "all";
    if all && ended.len() < spec.parallel.len() {
        return Ok(());
    }
    let chosen = if all { ended } else { vec![child.clone()] };
    let mut branches = Vec::with_capacity(chosen.len());
    for sibling in &chosen {
        branches.push(branch(tx, sibling)?);
    }
    let mut payload = Object::new();
    payload.insert("branches".into(), Value::Array(branches));
    if let Some(refusal) = route(
        rules,
        tx,
        &mut parent,
        JOINED,
        Some(&payload),
        super::Via::NONE,
    )? {
        let reason = format!(
            "the join of {} cannot move the token: {refusal}",
            py(&parent.state)
        );
        fail(rules, tx, &mut parent, &reason)?;
    }
    Ok(())
}

/// One entry of the `joined` payload: `final` and `payload` tell of the event that
/// brought the child into its last state.
fn branch(tx: &dyn Tx, child: &TokenRow) -> Step<Value> {
    Ok(json!({
        "workflow": child.workflow,
        "token": child.token,
        "status": child.status.as_str(),
        "final": child.state,
        "payload": arrival_payload(tx, &child.token)?,
    }))
}

/// The payload of the event that brought the token into the last state it entered
/// (reference store `arrival_payload`); null when there is none.
fn arrival_payload(tx: &dyn Tx, token: &str) -> Step<Value> {
    let entries = tx.entries(token)?;
    let entered = entries
        .iter()
        .rposition(|e| e.kind == "entered")
        .unwrap_or(0);
    let found = entries[..entered]
        .iter()
        .rev()
        .find(|e| e.kind == "event_accepted")
        .and_then(|e| e.data.get("payload").cloned());
    Ok(found.unwrap_or(Value::Null))
}
