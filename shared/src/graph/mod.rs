//! The graph file (format 1): load it, check it, hash it, and answer the engine's
//! questions about it (`docs/reference/files.md`; the reference's `model/graph_file`
//! and `control/graph`).
//!
//! A graph is loaded once, when it is served: guards are parsed again from their
//! text and each model's JSON Schema validator is compiled then, never per request.

mod canonical;
mod load;
mod schemas;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::guards::Guard;
use crate::wire::Object;

pub use canonical::{canonical, pretty};
pub(crate) use schemas::compile as compile_model;

/// The graph file's own layout version, its `stateous` key.
pub const FORMAT: u64 = 1;
/// START's name in a graph file.
pub const START: &str = "__start__";
/// END's name in a graph file.
pub const END: &str = "__end__";
/// The event on which a token leaves START; only the engine fires it.
pub const STARTED: &str = "__started__";
/// Fired by the clock when a state's timeout ends.
pub const TIMEOUT: &str = "timeout";
/// Fired when a task fails with no retries left.
pub const ERROR: &str = "error";
/// Fired on a parent when its parallel state's join is met.
pub const JOINED: &str = "joined";
/// Stateous's own events: only the engine fires them, and no workflow declares them.
pub const OWN_EVENTS: [&str; 4] = [STARTED, TIMEOUT, ERROR, JOINED];
/// A state's settings that change how its work is done, not where a token can go;
/// `structure` leaves them out.
pub const OPERATIONAL: [&str; 2] = ["timeout", "retries"];

/// A graph file that cannot be served, with one sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GraphError(pub String);

/// One state of a workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSpec {
    /// The state's name.
    pub name: String,
    /// The events its routine may emit (empty for a parallel state).
    pub emits: Vec<String>,
    /// The timeout, as a duration text (`6h`); checked at load.
    pub timeout: Option<String>,
    /// How many times a failed task runs again.
    pub retries: u32,
    /// A parallel state's child workflows; empty for a state with a task.
    pub parallel: Vec<String>,
    /// `all` or `any`.
    pub join: String,
    /// The context fields copied to each child.
    pub inputs: Vec<String>,
}

/// One transition.
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionSpec {
    /// The state it leaves (`__start__` for START).
    pub source: String,
    /// The state it enters (`__end__` for END).
    pub target: String,
    /// The event that takes it (`__started__` from START).
    pub event: String,
    /// Its guard, parsed at load.
    pub when: Option<Guard>,
    /// Whether it is the fallback.
    pub otherwise: bool,
}

/// One workflow of a graph document: the main one or a child.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// The workflow's name.
    pub name: String,
    /// The name of the context schema, if any.
    pub context: Option<String>,
    /// The states, by name.
    pub states: BTreeMap<String, StateSpec>,
    /// The declared events and the name of each one's payload schema.
    pub events: BTreeMap<String, Option<String>>,
    /// The transitions, in declaration order.
    pub transitions: Vec<TransitionSpec>,
    /// The compiled validators of the document's models, shared by its workflows.
    models: Arc<schemas::Models>,
    /// The document's `schemas`, for `with_defaults`.
    schemas: Arc<Object>,
}

impl Workflow {
    /// START's transitions, in declaration order.
    pub fn starts(&self) -> impl Iterator<Item = &TransitionSpec> {
        self.transitions.iter().filter(|t| t.source == START)
    }

    /// The transitions `event` can take from `state`, in declaration order.
    pub fn candidates<'a>(
        &'a self,
        state: &'a str,
        event: &'a str,
    ) -> impl Iterator<Item = &'a TransitionSpec> + 'a {
        self.transitions
            .iter()
            .filter(move |t| t.source == state && t.event == event)
    }

    /// Whether the workflow declares `event` (Stateous's own events are not declared).
    pub fn declares(&self, event: &str) -> bool {
        self.events.contains_key(event)
    }

    /// The problems of a payload against the event's model, one sentence each
    /// (`<path or model>: <message>`). An event without a payload model refuses a
    /// non-empty payload; a missing payload is checked as `{}` (reference
    /// `control/graph.payload_errors`).
    pub fn payload_errors(&self, event: &str, payload: Option<&Object>) -> Vec<String> {
        match self.events.get(event).and_then(Option::as_ref) {
            None => match payload {
                Some(payload) if !payload.is_empty() => {
                    vec![format!("'{event}' carries no payload")]
                }
                _ => Vec::new(),
            },
            Some(model) => {
                let value = Value::Object(payload.cloned().unwrap_or_default());
                self.models.errors(model, &value)
            }
        }
    }

    /// The problems of a context against the context model, one sentence each; none
    /// when the workflow has no context model.
    pub fn context_errors(&self, context: &Object) -> Vec<String> {
        match &self.context {
            None => Vec::new(),
            Some(model) => self.models.errors(model, &Value::Object(context.clone())),
        }
    }

    /// The context with each field whose schema gives a `default` filled in: only the
    /// context model's own top-level `properties`, as the reference does.
    pub fn with_defaults(&self, context: &Object) -> Object {
        let mut filled = Object::new();
        let properties = self
            .context
            .as_ref()
            .and_then(|model| self.schemas.get(model))
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object);
        for (field, spec) in properties.into_iter().flatten() {
            if let Some(default) = spec.get("default") {
                filled.insert(field.clone(), default.clone());
            }
        }
        for (key, value) in context {
            filled.insert(key.clone(), value.clone());
        }
        filled
    }
}

/// A loaded and checked graph document.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The document as the file holds it (`GET /workflow` answers it).
    pub document: Value,
    /// `sha256:` + hex of the canonical JSON.
    pub checksum: String,
    /// The same hash without each state's `timeout` and `retries`.
    pub structure: String,
    /// The main workflow.
    pub main: Workflow,
    /// The child workflows, by name.
    pub children: BTreeMap<String, Workflow>,
}

impl Graph {
    /// Load a graph file's text, with every check the reference makes when it reads
    /// and serves one: JSON (a mistake names its line), an object, the required keys,
    /// format 1, each state's `timeout`, `retries`, `inputs`, `parallel` and `join`,
    /// each child workflow's keys, the guards (parsed again), and the models (compiled).
    pub fn load(text: &str) -> Result<Graph, GraphError> {
        let document = load::document(text)?;
        let Value::String(name) = &document["workflow"] else {
            return Err(GraphError(
                "the graph file's 'workflow' is not a name".into(),
            ));
        };
        let Value::Object(schemas) = &document["schemas"] else {
            return Err(GraphError(
                "the graph file's 'schemas' is not an object".into(),
            ));
        };
        let bodies = load::child_bodies(&document)?;
        let names: Vec<String> = bodies.iter().map(|(name, _)| name.clone()).collect();
        let mut models = schemas::Models::default();
        let mut main = load::workflow(name, &document, schemas, &names, &mut models)?;
        let mut children = BTreeMap::new();
        for (child, body) in &bodies {
            let workflow = load::workflow(child, body, schemas, &names, &mut models)?;
            children.insert(child.clone(), workflow);
        }
        let (models, schemas) = (Arc::new(models), Arc::new(schemas.clone()));
        for workflow in std::iter::once(&mut main).chain(children.values_mut()) {
            workflow.models = Arc::clone(&models);
            workflow.schemas = Arc::clone(&schemas);
        }
        let document = Value::Object(document);
        Ok(Graph {
            checksum: checksum(&document),
            structure: structure(&document),
            document,
            main,
            children,
        })
    }

    /// The workflow by name: the main one, or a child.
    pub fn workflow(&self, name: &str) -> Option<&Workflow> {
        if name == self.main.name {
            Some(&self.main)
        } else {
            self.children.get(name)
        }
    }
}

/// `sha256:` + hex SHA-256 of the document's canonical JSON (`docs/reference/files.md`):
/// Python's `json.dumps(doc, sort_keys=True, separators=(",", ":"))`.
pub fn checksum(document: &Value) -> String {
    canonical::hash(document)
}

/// The checksum of the document with `timeout` and `retries` removed from every
/// state of every workflow: two graph files with the same structure differ only in
/// how work is done, not in where a token can go.
pub fn structure(document: &Value) -> String {
    let mut shape = document.clone();
    strip_operational(shape.get_mut("states"));
    if let Some(Value::Object(children)) = shape.get_mut("workflows") {
        for body in children.values_mut() {
            strip_operational(body.get_mut("states"));
        }
    }
    canonical::hash(&shape)
}

fn strip_operational(states: Option<&mut Value>) {
    let Some(Value::Object(states)) = states else {
        return;
    };
    for spec in states.values_mut() {
        if let Value::Object(spec) = spec {
            for key in OPERATIONAL {
                spec.shift_remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests;
