//! The guard language (`docs/concepts/guards.md`): the
//! `when` conditions of transitions. A guard's text is parsed once into a checked
//! syntax tree ([`parse_guard`]), then evaluated against a token's data
//! ([`evaluate`]) with the reference's semantics, which are Python's: `1 == 1.0`,
//! `true == 1`, a missing value reads as null, and a comparison Python would
//! refuse (null with a number, a string with a list) is simply false.
//!
//! The grammar is Python's expression syntax, narrowed to: `ctx['key']`,
//! `payload.field`, `count('event')`, `< <= > >= == != in not in` (chained as in
//! Python), `and or not`, parentheses, numbers (a minus sign only before a
//! number), strings, `true false null`, lists of these, and on `joined`
//! `branches.all(...)` / `branches.any(...)`, whose condition may also read
//! `workflow`, `token`, `status`, `final` and `payload.field` of each ended child
//! (`docs/concepts/parallel.md`).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::pyrepr::repr_str;
use crate::wire::Object;

/// Python's hard keywords (`keyword.kwlist`): in a guard none may be a name, or
/// follow a dot; the compiler refuses them as the names `contract.py` writes.
pub(crate) const PYTHON_KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

mod check;
mod eval;
pub mod filter;
mod lex;
mod parse;
#[cfg(test)]
mod tests;

pub use eval::python_eq;

/// A JSON value as the guard language writes it: `true`, `false` and `null` in
/// lower case, strings quoted as a guard quotes them, lists in brackets (an object,
/// which a guard cannot write, as `{'key': value}`). Used where the compiler shows
/// data that makes a guard true.
pub fn literal(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(key, value)| format!("{}: {}", repr_str(key), literal(value)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        number_or_string => crate::pyrepr::repr_json(number_or_string),
    }
}

/// A guard outside the guard language, with one sentence saying why, e.g.
/// `guard 'x == 1': unknown name 'x'; ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GuardError(pub String);

/// A parsed and checked guard: its text, its syntax tree, and what it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Guard {
    /// The guard as written, e.g. `count('failed') < 3`.
    pub text: String,
    /// The checked syntax tree that [`evaluate`] walks.
    pub tree: Expr,
    /// What the guard reads, for the compiler's checks against the models.
    pub reads: Reads,
}

/// What a guard reads, so that the compiler can check each against the models
/// (`docs/concepts/guards.md`, "What the compiler proves").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// The keys of each `ctx['key']`, inside `branches` conditions too.
    pub context_keys: BTreeSet<String>,
    /// The fields of each `payload.field` of the routed event; a child's payload,
    /// read inside `branches.all(...)`/`branches.any(...)`, is not among them.
    pub payload_fields: BTreeSet<String>,
    /// The events of each `count('event')`.
    pub events: BTreeSet<String>,
    /// Whether the guard uses `branches.all(...)` or `branches.any(...)`.
    pub branches: bool,
}

/// A node of a checked guard.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `a or b or ...`: true when one operand is truthy.
    Or(Vec<Expr>),
    /// `a and b and ...`: true when every operand is truthy.
    And(Vec<Expr>),
    /// `not a`.
    Not(Box<Expr>),
    /// `first OP value OP value ...`: Python's chained comparison, true when each
    /// adjacent pair compares true.
    Compare {
        /// The leftmost operand.
        first: Box<Expr>,
        /// Each operator with the operand on its right.
        rest: Vec<(CmpOp, Expr)>,
    },
    /// A literal value.
    Literal(Literal),
    /// A list display; its items are literals or, in a branch condition, child fields.
    List(Vec<Expr>),
    /// `ctx['key']`: a key of the token's context.
    Context(String),
    /// `payload.field`: a field of the routed event's payload.
    Payload(String),
    /// `count('event')`: how many times the token accepted the event.
    Count(String),
    /// `branches.all(condition)` or `branches.any(condition)`.
    Branches {
        /// Whether every child or one child must meet the condition.
        quantifier: Quantifier,
        /// The condition, read once for each ended child.
        condition: Box<Expr>,
    },
    /// Inside a branch condition: `workflow`, `token`, `status` or `final`.
    ChildField(ChildField),
    /// Inside a branch condition: `payload.field` of the child.
    ChildPayload(String),
}

impl Expr {
    /// Call `visit` on this node and every node below it, parents first.
    pub fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Expr)) {
        visit(self);
        match self {
            Expr::Or(items) | Expr::And(items) | Expr::List(items) => {
                items.iter().for_each(|item| item.walk(visit));
            }
            Expr::Not(inner) => inner.walk(visit),
            Expr::Branches { condition, .. } => condition.walk(visit),
            Expr::Compare { first, rest } => {
                first.walk(visit);
                rest.iter().for_each(|(_, operand)| operand.walk(visit));
            }
            Expr::Literal(_)
            | Expr::Context(_)
            | Expr::Payload(_)
            | Expr::Count(_)
            | Expr::ChildField(_)
            | Expr::ChildPayload(_) => {}
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `in`: membership in a list, a key of an object, or a substring.
    In,
    /// `not in`
    NotIn,
}

/// A literal of the guard language.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `null`
    Null,
    /// `true`, `false`
    Bool(bool),
    /// An integer, e.g. `3`, `-2`, `0x1f`.
    Int(i128),
    /// A float, e.g. `2.5`, `-1e3`.
    Float(f64),
    /// A string in single or double quotes.
    Str(String),
}

/// Which children `branches` asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    /// `branches.all(...)`: every ended child (true when there is none).
    All,
    /// `branches.any(...)`: at least one ended child.
    Any,
}

/// A field of one ended child, as the `joined` payload's `branches` entries hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildField {
    /// `workflow`: the child's workflow.
    Workflow,
    /// `token`: the child token's id.
    Token,
    /// `status`: how the child ended (`completed`, `failed`, `cancelled`).
    Status,
    /// `final`: the state the child ended in.
    Final,
}

impl ChildField {
    /// The key of the field in a `branches` entry.
    pub fn key(self) -> &'static str {
        match self {
            ChildField::Workflow => "workflow",
            ChildField::Token => "token",
            ChildField::Status => "status",
            ChildField::Final => "final",
        }
    }
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

/// Parse a guard's text, and check it against the guard language.
///
/// Errors: a [`GuardError`] reading `guard 'TEXT': REASON`, for text that is not
/// an expression and for every construct the reference refuses (`ctx.key`, a
/// string on the right of `in`, unknown names and calls, arithmetic, ...).
pub fn parse_guard(text: &str) -> Result<Guard, GuardError> {
    let fail = |reason: String| GuardError(format!("guard {}: {reason}", repr_str(text)));
    // Python strips the text before parsing it; its whitespace includes \x1c-\x1f.
    let trimmed = text.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
    let tokens = lex::tokens(trimmed).map_err(|r| fail(format!("not a valid expression: {r}")))?;
    let node = parse::parse(tokens).map_err(|r| fail(format!("not a valid expression: {r}")))?;
    let (tree, reads) = check::check(&node).map_err(fail)?;
    Ok(Guard {
        text: text.to_owned(),
        tree,
        reads,
    })
}

/// Whether the guard holds for this data: the truth of its value, in Python's
/// sense (a non-zero number, a non-empty string, list or object is true). A
/// missing value reads as null; null compared with a number is false.
pub fn evaluate(guard: &Guard, input: &GuardInput<'_>) -> bool {
    eval::truthy(&eval::value(&guard.tree, input, None))
}

/// The value of the guard's expression for this data, not its truth: a limit's
/// `per` key (`docs/limits.md`). A missing value reads as null.
pub fn value_of(guard: &Guard, input: &GuardInput<'_>) -> Value {
    eval::value(&guard.tree, input, None).to_json()
}
