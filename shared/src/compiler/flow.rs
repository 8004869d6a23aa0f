//! Reading `flow.yaml` (`docs/reference/files.md`) into plain structs, in the order the file
//! writes them. Only the YAML's shape is checked here; a mistake in it names its line.
//! What the shape means is checked by `declare` and `validate`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::Deserialize as DeriveDeserialize;
use serde_json::Value;

/// A YAML mapping kept in the file's order, its keys unique.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ordered<T>(pub(crate) Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OrderedVisitor<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of names")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Ordered::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<(String, T)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("'{key}' is written twice")));
                    }
                    let value = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(OrderedVisitor(PhantomData))
    }
}

/// The whole file: the main workflow, its schemas and its child workflows.
#[derive(Debug, DeriveDeserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a workflow: workflow, context, states, events, transitions, schemas, workflows"
)]
pub(crate) struct RawFlow {
    /// The workflow's name.
    pub(crate) workflow: String,
    /// The name of the context's schema.
    #[serde(default)]
    pub(crate) context: Option<String>,
    /// The states, as in `RawBody`.
    #[serde(default)]
    pub(crate) states: Ordered<Option<RawState>>,
    /// The events, as in `RawBody`.
    #[serde(default)]
    pub(crate) events: Ordered<Option<RawEvent>>,
    /// The transitions, in order.
    #[serde(default)]
    pub(crate) transitions: Vec<RawTransition>,
    /// The models, as JSON Schema, by name.
    #[serde(default)]
    pub(crate) schemas: Ordered<Value>,
    /// The child workflows that parallel states run, by name.
    #[serde(default)]
    pub(crate) workflows: Ordered<RawBody>,
}

impl RawFlow {
    /// The main workflow's body, taken out of the file (no flatten: serde cannot
    /// flatten with `deny_unknown_fields`, and line numbers would suffer).
    pub(crate) fn take_body(&mut self) -> RawBody {
        RawBody {
            context: self.context.take(),
            states: std::mem::take(&mut self.states),
            events: std::mem::take(&mut self.events),
            transitions: std::mem::take(&mut self.transitions),
        }
    }
}

/// One workflow's body: the main one's, or a child's.
#[derive(Debug, Default, DeriveDeserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a workflow's body: context, states, events, transitions"
)]
pub(crate) struct RawBody {
    /// The name of the context's schema.
    #[serde(default)]
    pub(crate) context: Option<String>,
    /// The states; a state without settings is written `name: {}` or `name:`.
    #[serde(default)]
    pub(crate) states: Ordered<Option<RawState>>,
    /// The events; an event without a payload is written `name: {}` or `name:`.
    #[serde(default)]
    pub(crate) events: Ordered<Option<RawEvent>>,
    /// The transitions, in order.
    #[serde(default)]
    pub(crate) transitions: Vec<RawTransition>,
}

/// A state's settings.
#[derive(Debug, Default, Clone, DeriveDeserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a state's settings: timeout, retries, parallel, join, inputs"
)]
pub(crate) struct RawState {
    /// A duration text, e.g. `6h`.
    pub(crate) timeout: Option<String>,
    /// How many more times a failed task runs.
    pub(crate) retries: Option<i64>,
    /// The child workflows of a parallel state.
    pub(crate) parallel: Option<Vec<String>>,
    /// `all` or `any`.
    pub(crate) join: Option<String>,
    /// The context keys each child starts with.
    pub(crate) inputs: Option<Vec<String>>,
}

/// An event's settings.
#[derive(Debug, Default, Clone, DeriveDeserialize)]
#[serde(deny_unknown_fields, expecting = "an event's settings: payload")]
pub(crate) struct RawEvent {
    /// The name of its payload's schema.
    pub(crate) payload: Option<String>,
}

/// One transition.
#[derive(Debug, Clone, DeriveDeserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a transition: from, to, on, when, otherwise"
)]
pub(crate) struct RawTransition {
    /// The state it leaves, or `START`.
    pub(crate) from: String,
    /// The state it enters, or `END`.
    pub(crate) to: String,
    /// The event it is taken on; none from START.
    pub(crate) on: Option<String>,
    /// A guard.
    pub(crate) when: Option<String>,
    /// Whether it is the fallback.
    #[serde(default)]
    pub(crate) otherwise: bool,
}

/// The file's text as a `RawFlow`, or a sentence that names the line of the mistake:
/// `flow.yaml, line 4: states.coding: unknown field ...`.
pub(crate) fn parse(text: &str, source: &str) -> Result<RawFlow, String> {
    serde_norway::from_str(text).map_err(|error| yaml_problem(&error, source))
}

/// A YAML file (`source` names it in the error) as JSON, each mapping's keys
/// written once: the error is one sentence that leads with the line.
pub(crate) fn yaml_value(text: &str, source: &str) -> Result<Value, String> {
    keys_once(text).map_err(|error| yaml_problem(&error, source))?;
    serde_norway::from_str(text).map_err(|error| yaml_problem(&error, source))
}

/// Whether each mapping of a YAML text writes its keys once (serde_norway's own
/// mapping refuses a key written twice, where its readers into JSON keep the last
/// silently): the error names the key and where, in our words
/// ([`yaml_problem`], `'max' is written twice`).
pub fn keys_once(text: &str) -> Result<(), serde_norway::Error> {
    serde_norway::from_str::<serde_norway::Value>(text).map(|_| ())
}

/// serde_norway's sentence for a key written twice, in ours: `duplicate entry
/// with key "max"` is `'max' is written twice`; any other sentence as it is.
pub fn twice_words(message: &str) -> String {
    let Some((head, rest)) = message.split_once("duplicate entry with key \"") else {
        return message.to_string();
    };
    match rest.split_once('"') {
        Some((key, tail)) => format!("{head}'{key}' is written twice{tail}"),
        None => message.to_string(),
    }
}

/// A YAML file's mistake as one sentence that names the line:
/// `SOURCE, line 4: MESSAGE` (flow.yaml, the hooks file).
pub(crate) fn yaml_problem(error: &serde_norway::Error, source: &str) -> String {
    let full = twice_words(&error.to_string());
    // serde_norway appends " at line L column C"; the line leads the sentence instead.
    let message = full.split(" at line ").next().unwrap_or(&full).to_owned();
    match error.location() {
        Some(at) => format!("{source}, line {}: {message}", at.line()),
        None => format!("{source}: {message}"),
    }
}
