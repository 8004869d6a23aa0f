//! The graph file (format 1): load it, check it, hash it, and answer the engine's
//! questions about it (reference `model/graph_file`, `control/graph`).
//!
//! INTERFACE STUB: the graph helper replaces the bodies; the signatures are the
//! contract the engine codes against.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::guards::Guard;
use crate::wire::Object;

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

/// A graph file that cannot be served, with one sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GraphError(pub String);

/// One state of a workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSpec {
    /// The state's name.
    pub name: String,
    /// The events its routine may emit.
    pub emits: Vec<String>,
    /// The timeout, as a duration text (`6h`).
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
    /// Its guard.
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

    /// The problems of a payload against the event's model, one sentence each.
    pub fn payload_errors(&self, _event: &str, _payload: Option<&Object>) -> Vec<String> {
        let _ = &self.schemas;
        Vec::new()
    }

    /// The problems of a context against the context model, one sentence each.
    pub fn context_errors(&self, _context: &Object) -> Vec<String> {
        Vec::new()
    }

    /// The context with each field whose schema gives a default filled in.
    pub fn with_defaults(&self, context: &Object) -> Object {
        context.clone()
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
    /// Load a graph file's text, with every check the reference makes.
    pub fn load(_text: &str) -> Result<Graph, GraphError> {
        Err(GraphError("graph files are not read yet".into()))
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

/// `sha256:` + hex SHA-256 of the document's canonical JSON (SPEC section 2).
pub fn checksum(_document: &Value) -> String {
    String::new()
}

/// The checksum of the document with `timeout` and `retries` removed from every
/// state of every workflow.
pub fn structure(_document: &Value) -> String {
    String::new()
}
