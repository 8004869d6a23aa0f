//! The guard language (`docs/concepts/guards.md`): parse a guard's text once,
//! then evaluate it against a token's data.
//!
//! INTERFACE STUB: the guard helper replaces the bodies; the signatures are the
//! contract the engine and the compiler code against.

use serde_json::Value;

use crate::wire::Object;

/// A guard that cannot be parsed, with one sentence saying why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GuardError(pub String);

/// A parsed guard: its text and its syntax tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Guard {
    /// The guard as written, e.g. `count('failed') < 3`.
    pub text: String,
}

/// The data a guard reads.
pub struct GuardInput<'a> {
    /// The token's context, with the routine's changes applied.
    pub ctx: &'a Object,
    /// The event's payload; `None` reads every `payload.field` as null.
    pub payload: Option<&'a Object>,
    /// How many times the token accepted an event, this one included.
    pub count: &'a dyn Fn(&str) -> i64,
    /// On `joined`: the payload's `branches` list.
    pub branches: Option<&'a [Value]>,
}

/// Parse a guard's text.
pub fn parse_guard(text: &str) -> Result<Guard, GuardError> {
    Err(GuardError(format!("guards are not parsed yet: {text}")))
}

/// Whether the guard holds for this data. A missing value reads as null; null
/// compared with a number is false.
pub fn evaluate(_guard: &Guard, _input: &GuardInput<'_>) -> bool {
    false
}
