//! Reading a graph file's text into checked workflows: every check the reference
//! makes when it loads a graph file (`model/graph_file.load_graph`) and when it
//! serves one (`control/graph.Graph`, `cli/serving._load`), plus the checks that
//! keep a hand-edited file from failing later, at request time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::schemas::Models;
use super::{
    GraphError, StateSpec, TransitionSpec, Workflow, END, ERROR, FORMAT, JOINED, START, STARTED,
    TIMEOUT,
};
use crate::durations::parse_duration;
use crate::guards::parse_guard;
use crate::wire::Object;

/// The keys every graph document has (reference `REQUIRED`).
const REQUIRED: [&str; 6] = [
    "stateous",
    "workflow",
    "states",
    "events",
    "transitions",
    "schemas",
];

/// The keys every child workflow's body has.
const CHILD_REQUIRED: [&str; 3] = ["states", "events", "transitions"];

fn fail<T>(sentence: impl Into<String>) -> Result<T, GraphError> {
    Err(GraphError(sentence.into()))
}

/// The document in a graph file's text, with the file-level checks: JSON, an object,
/// the required keys, format 1.
pub(crate) fn document(text: &str) -> Result<Object, GraphError> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        let full = error.to_string();
        // serde_json appends " at line L column C"; the sentence names the line only.
        let message = full.split(" at line ").next().unwrap_or(&full);
        GraphError(format!(
            "the graph file is not valid JSON: {message} at line {}",
            error.line()
        ))
    })?;
    let Value::Object(document) = value else {
        return fail("the graph file is not a JSON object");
    };
    for key in REQUIRED {
        if !document.contains_key(key) {
            return fail(format!(
                "the graph file has no '{key}'; compile the workflow again"
            ));
        }
    }
    if document["stateous"].as_u64() != Some(FORMAT) {
        return fail(format!(
            "the graph file is in format {}, and this Stateous reads format {FORMAT}; \
             compile the workflow again",
            document["stateous"]
        ));
    }
    Ok(document)
}

/// The bodies of the child workflows, by name, each with its required keys.
pub(crate) fn child_bodies(document: &Object) -> Result<Vec<(String, &Object)>, GraphError> {
    let Some(children) = document.get("workflows") else {
        return Ok(Vec::new());
    };
    let Value::Object(children) = children else {
        return fail("the graph file's 'workflows' is not an object");
    };
    let mut bodies = Vec::new();
    for (name, body) in children {
        let Value::Object(body) = body else {
            return fail(format!(
                "the graph file's workflow '{name}' is not an object"
            ));
        };
        for key in CHILD_REQUIRED {
            if !body.contains_key(key) {
                return fail(format!("the graph file's workflow '{name}' has no '{key}'"));
            }
        }
        bodies.push((name.clone(), body));
    }
    Ok(bodies)
}

/// One workflow of the document, checked; its models are compiled into `models`.
pub(crate) fn workflow(
    name: &str,
    body: &Object,
    schemas: &Object,
    children: &[String],
    models: &mut Models,
) -> Result<Workflow, GraphError> {
    let context = optional_text(body, "context", &format!("workflow '{name}'"))?;
    if let Some(model) = &context {
        models
            .add(model, schemas)
            .map_err(|why| GraphError(format!("the context of workflow '{name}': {why}")))?;
    }
    let events = events(name, body, schemas, models)?;
    let Value::Object(raw_states) = &body["states"] else {
        return fail("the graph file's 'states' is not an object");
    };
    let mut states = BTreeMap::new();
    for (state, spec) in raw_states {
        states.insert(state.clone(), self::state(state, spec, children)?);
    }
    let Value::Array(raw_transitions) = &body["transitions"] else {
        return fail(format!(
            "the graph file's 'transitions' of workflow '{name}' is not a list"
        ));
    };
    let mut transitions = Vec::new();
    for (index, spec) in raw_transitions.iter().enumerate() {
        let edge = transition(name, index, spec)?;
        check_ends(name, &edge, &states, &events)?;
        transitions.push(edge);
    }
    Ok(Workflow {
        name: name.to_owned(),
        context,
        states,
        events,
        transitions,
        models: Arc::default(),
        schemas: Arc::default(),
    })
}

fn events(
    workflow: &str,
    body: &Object,
    schemas: &Object,
    models: &mut Models,
) -> Result<BTreeMap<String, Option<String>>, GraphError> {
    let Value::Object(raw) = &body["events"] else {
        return fail(format!(
            "the graph file's 'events' of workflow '{workflow}' is not an object"
        ));
    };
    let mut events = BTreeMap::new();
    for (event, spec) in raw {
        let Value::Object(spec) = spec else {
            return fail(format!("the graph file's event '{event}' is not an object"));
        };
        let payload = optional_text(spec, "payload", &format!("event '{event}'"))?;
        if let Some(model) = &payload {
            models
                .add(model, schemas)
                .map_err(|why| GraphError(format!("the payload of event '{event}': {why}")))?;
        }
        events.insert(event.clone(), payload);
    }
    Ok(events)
}

/// One state's settings, checked with the compiler's rules.
fn state(name: &str, spec: &Value, children: &[String]) -> Result<StateSpec, GraphError> {
    let Value::Object(spec) = spec else {
        return fail(format!("the graph file's state '{name}' is not an object"));
    };
    let bad = |why: String| GraphError(format!("the graph file's state '{name}': {why}"));
    let timeout = match spec.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            parse_duration(text).map_err(bad)?;
            Some(text.clone())
        }
        Some(other) => {
            return Err(bad(format!(
                "{other} is not a duration; write e.g. '30s', '10m', '2h', '1d'"
            )))
        }
    };
    let retries = match spec.get("retries") {
        None => 0,
        Some(value) => value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                bad(format!(
                    "retries must be a whole number, 0 or more, not {value}"
                ))
            })?,
    };
    let inputs = text_list(spec.get("inputs"))
        .ok_or_else(|| bad("'inputs' must be a list of context field names".into()))?;
    let emits = text_list(spec.get("emits"))
        .ok_or_else(|| bad("'emits' must be a list of event names".into()))?;
    let parallel = match spec.get("parallel") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => text_list(Some(value))
            .filter(|named| !named.is_empty() && named.iter().all(|c| children.contains(c)))
            .ok_or_else(|| bad("'parallel' must name workflows that 'workflows' holds".into()))?,
    };
    let join = match spec.get("join") {
        None => "all".to_owned(),
        Some(Value::String(join)) if join == "all" || join == "any" => join.clone(),
        Some(_) => return Err(bad("'join' must be 'all' or 'any'".into())),
    };
    Ok(StateSpec {
        name: name.to_owned(),
        emits,
        timeout,
        retries,
        parallel,
        join,
        inputs,
    })
}

/// One transition: `from`, `to`, `on` (absent from START), `when`, `otherwise`.
fn transition(workflow: &str, index: usize, spec: &Value) -> Result<TransitionSpec, GraphError> {
    let at = format!("transition {} of workflow '{workflow}'", index + 1);
    let Value::Object(spec) = spec else {
        return fail(format!("the graph file's {at} is not an object"));
    };
    let end = |key: &str| match spec.get(key) {
        Some(Value::String(name)) => Ok(name.clone()),
        _ => fail(format!("the graph file's {at} has no '{key}' state")),
    };
    let (source, target) = (end("from")?, end("to")?);
    let event = optional_text(spec, "on", &at)?.unwrap_or_else(|| STARTED.to_owned());
    let when = match optional_text(spec, "when", &at)? {
        Some(text) => Some(parse_guard(&text).map_err(|error| {
            GraphError(format!("the graph file's {at} has a bad guard: {error}"))
        })?),
        None => None,
    };
    let otherwise = match spec.get("otherwise") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return fail(format!(
                "the graph file's {at}: 'otherwise' must be true or false"
            ))
        }
    };
    Ok(TransitionSpec {
        source,
        target,
        event,
        when,
        otherwise,
    })
}

/// A transition leaves START or a state, enters END or a state, and is taken on a
/// declared event or one of Stateous's own (`__started__` exactly from START).
fn check_ends(
    workflow: &str,
    edge: &TransitionSpec,
    states: &BTreeMap<String, StateSpec>,
    events: &BTreeMap<String, Option<String>>,
) -> Result<(), GraphError> {
    let at = format!(
        "the graph file's transition {} --{}--> {} of workflow '{workflow}'",
        edge.source, edge.event, edge.target
    );
    if edge.source != START && !states.contains_key(&edge.source) {
        return fail(format!("{at} leaves a state the workflow does not have"));
    }
    if edge.target != END && !states.contains_key(&edge.target) {
        return fail(format!("{at} enters a state the workflow does not have"));
    }
    let own = [TIMEOUT, ERROR, JOINED].contains(&edge.event.as_str());
    let from_start = edge.source == START;
    if from_start != (edge.event == STARTED)
        || !(from_start || own || events.contains_key(&edge.event))
    {
        return fail(format!(
            "{at} is taken on an event the workflow does not have"
        ));
    }
    Ok(())
}

/// A key that is absent, null or a string.
fn optional_text(spec: &Object, key: &str, what: &str) -> Result<Option<String>, GraphError> {
    match spec.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => fail(format!("the graph file's {what}: '{key}' must be a string")),
    }
}

/// A list of strings; absent is empty; `None` when it is something else.
fn text_list(value: Option<&Value>) -> Option<Vec<String>> {
    match value {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Some(_) => None,
    }
}
