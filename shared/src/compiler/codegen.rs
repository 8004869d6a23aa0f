//! The graph document of a valid workflow, key for key and in the reference's
//! order (`docs/reference/files.md`, "The graph file"), so that the checksum matches.

use serde_json::{json, Value};

use super::declare::{Declared, Edge, Flow, State};
use crate::graph::{ERROR, FORMAT, JOINED, START, STARTED, TIMEOUT};
use crate::wire::Object;

/// The document: `stateous`, `workflow`, the main body, `workflows` (when a parallel
/// state runs any), and `schemas` sorted by name.
pub(crate) fn document(declared: &Declared, children: &[&Flow]) -> Value {
    let mut doc = Object::new();
    doc.insert("stateous".into(), json!(FORMAT));
    doc.insert("workflow".into(), json!(declared.main.name));
    doc.extend(body(&declared.main));
    if !children.is_empty() {
        let bodies: Object = children
            .iter()
            .map(|child| (child.name.clone(), Value::Object(body(child))))
            .collect();
        doc.insert("workflows".into(), Value::Object(bodies));
    }
    let mut names: Vec<&String> = declared.schemas.keys().collect();
    names.sort();
    let schemas: Object = names
        .into_iter()
        .map(|name| (name.clone(), keyword_order(&declared.schemas[name], name)))
        .collect();
    doc.insert("schemas".into(), Value::Object(schemas));
    Value::Object(doc)
}

/// One workflow: `context` (when it has one), `states`, `events`, `transitions`.
fn body(flow: &Flow) -> Object {
    let mut out = Object::new();
    if let Some(context) = &flow.context {
        out.insert("context".into(), json!(context));
    }
    let states: Object = flow
        .states
        .iter()
        .map(|s| (s.name.clone(), Value::Object(state(flow, s))))
        .collect();
    out.insert("states".into(), Value::Object(states));
    let events: Object = flow
        .events
        .iter()
        .map(|e| {
            let spec = match &e.payload {
                Some(model) => json!({"payload": model}),
                None => json!({}),
            };
            (e.name.clone(), spec)
        })
        .collect();
    out.insert("events".into(), Value::Object(events));
    let transitions = flow.transitions.iter().map(transition).collect();
    out.insert("transitions".into(), Value::Array(transitions));
    out
}

/// A state: `timeout`, `retries` (when not 0), then `parallel`, `join`, `inputs` for
/// a parallel state, or `emits` for a state with a task.
fn state(flow: &Flow, state: &State) -> Object {
    let mut out = Object::new();
    if let Some(timeout) = &state.timeout {
        out.insert("timeout".into(), json!(timeout));
    }
    if state.retries > 0 {
        out.insert("retries".into(), json!(state.retries));
    }
    if state.parallel.is_empty() {
        out.insert("emits".into(), json!(emits(flow, &state.name)));
    } else {
        out.insert("parallel".into(), json!(state.parallel));
        out.insert("join".into(), json!(state.join));
        if !state.inputs.is_empty() {
            out.insert("inputs".into(), json!(state.inputs));
        }
    }
    out
}

/// The declared events the state has a way out on, in the order of the transitions;
/// Stateous's own events are not emitted by routines.
fn emits(flow: &Flow, state: &str) -> Vec<String> {
    let mut emitted: Vec<String> = Vec::new();
    for edge in flow.transitions.iter().filter(|e| e.source == state) {
        let own = [TIMEOUT, ERROR, JOINED, STARTED].contains(&edge.event.as_str());
        if !own && !emitted.contains(&edge.event) {
            emitted.push(edge.event.clone());
        }
    }
    emitted
}

/// A transition: `from`, `to`, `on` (not from START), `when`, `otherwise` (when true).
fn transition(edge: &Edge) -> Value {
    let mut out = Object::new();
    out.insert("from".into(), json!(edge.source));
    out.insert("to".into(), json!(edge.target));
    if edge.source != START {
        out.insert("on".into(), json!(edge.event));
    }
    if let Some(guard) = &edge.when {
        out.insert("when".into(), json!(guard.text));
    }
    if edge.otherwise {
        out.insert("otherwise".into(), json!(true));
    }
    Value::Object(out)
}

/// A schema with its keys in the order pydantic writes them, so that the graph file
/// is the reference's byte for byte however the YAML orders them: sorted, except the
/// keys of an object that is the value of `properties` or `default`, which keep the
/// order written (field order). `parent` is the key that holds `value`.
fn keyword_order(value: &Value, parent: &str) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            if parent != "properties" && parent != "default" {
                keys.sort();
            }
            let sorted = keys
                .into_iter()
                .map(|key| (key.clone(), keyword_order(&map[key], key)))
                .collect();
            Value::Object(sorted)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| keyword_order(i, parent)).collect())
        }
        other => other.clone(),
    }
}
