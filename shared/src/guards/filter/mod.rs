//! The filter language (`docs/concepts/guards.md`, "Filters"): which tokens an
//! operator means, written in the guard language's grammar over a token's own fields. The API's
//! `GET /tokens?where=...` and `POST /tokens/bulk`, `stateous token list --where`
//! and the TUI's `/` all read it through [`parse_filter`].
//!
//! A filter reads `token`, `state`, `status`, `visit`, `workflow`, `parent`,
//! `moved` (whole seconds since the token's last move), `graph` (the checksum of
//! the graph it runs on; `==`, `!=`, `in` and `not in` with text take a prefix:
//! `graph == 'sha256:3f2a'`, or the hex digits alone) and `ctx['key']`, with
//! deeper paths such as `ctx['customer']['name']` or `ctx['items'][0]`, e.g.
//! `state == 'review' and status == 'active' and moved > 600`. The text is lexed and
//! parsed by the guard language's own lexer and parser, so the grammar, the
//! literals and the refusals of Python's other forms are the guards'; it is then
//! checked against the names above, and evaluated with the guards' semantics
//! (Python's: `1 == 1.0`, a missing value reads as null, null compared with a
//! number is false). A filter never reads the ledger or an event's payload.
//!
//! [`Filter::pushdown`] names what a database can select by itself (state,
//! status, moved), so that a filter over 100,000 tokens reads only the rows that
//! can match.

use serde_json::Value;

use super::eval::{compare, truthy, Val};
use super::parse::Node;
use super::{lex, parse, CmpOp, Literal};
use crate::pyrepr::repr_str;
use crate::wire::Object;

mod pushdown;
#[cfg(test)]
mod tests;

pub use pushdown::Pushdown;

/// A filter outside the filter language, with the parser's or the checker's
/// sentence, e.g. `filter 'x == 1': unknown name 'x'; ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FilterError(pub String);

/// A parsed and checked filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// The filter as written.
    pub text: String,
    tree: Term,
}

/// A token's own fields, as a filter names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `token`: the token's id.
    Token,
    /// `state`: its state (`__start__` before its first state).
    State,
    /// `status`: `active`, `paused`, `completed`, `failed` or `cancelled`.
    Status,
    /// `visit`: how many times it entered its state.
    Visit,
    /// `workflow`: the workflow it runs (a child's own workflow, else the main one).
    Workflow,
    /// `parent`: the token whose parallel state started it; null for a top token.
    Parent,
    /// `moved`: whole seconds since it entered its state.
    Moved,
    /// `graph`: the checksum of the graph it runs on (compared by prefix).
    Graph,
}

impl Field {
    /// Every field, by its name in the language.
    pub const ALL: [(&'static str, Field); 8] = [
        ("token", Field::Token),
        ("state", Field::State),
        ("status", Field::Status),
        ("visit", Field::Visit),
        ("workflow", Field::Workflow),
        ("parent", Field::Parent),
        ("moved", Field::Moved),
        ("graph", Field::Graph),
    ];
}

/// One step of a context path: `['key']` of an object or `[0]` of a list.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(i128),
}

/// A node of a checked filter.
#[derive(Debug, Clone, PartialEq)]
enum Term {
    Or(Vec<Term>),
    And(Vec<Term>),
    Not(Box<Term>),
    Compare(Box<Term>, Vec<(CmpOp, Term)>),
    Literal(Literal),
    List(Vec<Term>),
    Field(Field),
    /// `ctx['a']['b']...`: the steps below the context.
    Context(Vec<Step>),
}

/// What a filter reads of one token.
#[derive(Debug, Clone, Copy)]
pub struct TokenFacts<'a> {
    /// The id.
    pub token: &'a str,
    /// The state.
    pub state: &'a str,
    /// The status, as the API writes it.
    pub status: &'a str,
    /// The visit of the state.
    pub visit: i64,
    /// The workflow's name.
    pub workflow: &'a str,
    /// The parent, for a child.
    pub parent: Option<&'a str>,
    /// Whole seconds since the token entered its state (see [`moved_seconds`]).
    pub moved: i64,
    /// The checksum of the graph it runs on (empty when it names none).
    pub graph: &'a str,
    /// The context.
    pub context: &'a Object,
}

/// Whether the checksum `graph` is named by `prefix`: it starts with it, or its
/// hex digits do (`sha256:` left out). An empty prefix names nothing.
pub fn graph_named(graph: &str, prefix: &str) -> bool {
    !prefix.is_empty()
        && (graph.starts_with(prefix)
            || graph
                .strip_prefix("sha256:")
                .is_some_and(|hex| hex.starts_with(prefix)))
}

/// `graph` compared by prefix with text, or a list of texts: `Some(result)`;
/// `None` for any other comparison, which goes as the guards' do.
fn by_prefix(op: CmpOp, left: &Term, right: &Term, facts: &TokenFacts<'_>) -> Option<bool> {
    let other = match (left, right) {
        (Term::Field(Field::Graph), other) => other,
        (other, Term::Field(Field::Graph)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => other,
        _ => return None,
    };
    let named = |term: &Term| match term {
        Term::Literal(Literal::Str(text)) => Some(graph_named(facts.graph, text)),
        _ => None,
    };
    let any = match (op, other) {
        (CmpOp::Eq | CmpOp::Ne, term) => named(term)?,
        (CmpOp::In | CmpOp::NotIn, Term::List(items)) => {
            let found: Option<Vec<bool>> = items.iter().map(named).collect();
            found?.into_iter().any(|hit| hit)
        }
        _ => return None,
    };
    Some(if matches!(op, CmpOp::Ne | CmpOp::NotIn) {
        !any
    } else {
        any
    })
}

/// Whole seconds from `entered_at` to `now` (both microseconds), rounded down, as
/// `moved` reads them.
pub fn moved_seconds(entered_at: i64, now: i64) -> i64 {
    now.saturating_sub(entered_at).div_euclid(1_000_000)
}

/// Parse a filter and check it against the filter language.
///
/// Errors: a [`FilterError`] reading `filter 'TEXT': REASON`: the guard parser's
/// sentence for text that is not an expression, or why a name, index, call or
/// dot is not part of a filter.
pub fn parse_filter(text: &str) -> Result<Filter, FilterError> {
    let fail = |reason: String| FilterError(format!("filter {}: {reason}", repr_str(text)));
    // Python strips the text before parsing it, as the guards' parser does.
    let trimmed = text.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
    let tokens = lex::tokens(trimmed).map_err(|r| fail(format!("not a valid expression: {r}")))?;
    let node = parse::parse(tokens).map_err(|r| fail(format!("not a valid expression: {r}")))?;
    let tree = check(&node).map_err(fail)?;
    Ok(Filter {
        text: text.to_owned(),
        tree,
    })
}

impl Filter {
    /// Whether the token matches: the truth of the filter's value, in Python's
    /// sense.
    pub fn matches(&self, facts: &TokenFacts<'_>) -> bool {
        truthy(&value(&self.tree, facts))
    }

    /// Whether the filter reads the context (a caller may then skip reading it).
    pub fn reads_context(&self) -> bool {
        fn reads(term: &Term) -> bool {
            match term {
                Term::Context(_) => true,
                Term::Or(items) | Term::And(items) | Term::List(items) => items.iter().any(reads),
                Term::Not(inner) => reads(inner),
                Term::Compare(first, rest) => reads(first) || rest.iter().any(|(_, t)| reads(t)),
                Term::Literal(_) | Term::Field(_) => false,
            }
        }
        reads(&self.tree)
    }

    /// What a database can select by itself; see [`Pushdown`].
    pub fn pushdown(&self) -> Pushdown {
        pushdown::of(&self.tree)
    }

    /// The state names the filter compares `state` with by `==`, `!=`, `in` or
    /// `not in` (a list), anywhere in it, in the order written: the names that
    /// must be states of the graph. The filter does not know the graph; the
    /// control plane checks them, so that a misspelt state is refused rather than
    /// matching nothing. An ordering (`state < 'm'`) names no state.
    pub fn states_named(&self) -> Vec<&str> {
        self.names_compared(Field::State)
    }

    /// The workflow names the filter compares `workflow` with, as
    /// [`Filter::states_named`] finds states: the names that must be workflows of
    /// the graph (`workflow == 'nope'` matched nothing without a word).
    pub fn workflows_named(&self) -> Vec<&str> {
        self.names_compared(Field::Workflow)
    }

    /// The status names the filter compares `status` with (`status ==
    /// 'failed'`): a filter that names one chooses the statuses itself, so a bulk
    /// action does not leave its ended tokens out.
    pub fn statuses_named(&self) -> Vec<&str> {
        self.names_compared(Field::Status)
    }

    /// The strings compared with `field` by `==`, `!=`, `in` or `not in` (a list),
    /// in the order written.
    fn names_compared(&self, field: Field) -> Vec<&str> {
        fn walk<'a>(term: &'a Term, field: Field, found: &mut Vec<&'a str>) {
            match term {
                Term::Or(items) | Term::And(items) | Term::List(items) => {
                    items.iter().for_each(|t| walk(t, field, found));
                }
                Term::Not(inner) => walk(inner, field, found),
                Term::Compare(first, rest) => {
                    let mut left = &**first;
                    for (op, right) in rest {
                        named(left, *op, right, field, found);
                        left = right;
                    }
                }
                Term::Literal(_) | Term::Field(_) | Term::Context(_) => {}
            }
        }
        fn named<'a>(
            left: &'a Term,
            op: CmpOp,
            right: &'a Term,
            field: Field,
            found: &mut Vec<&'a str>,
        ) {
            let is_field = |term: &Term| matches!(term, Term::Field(f) if *f == field);
            match (op, left, right) {
                (CmpOp::Eq | CmpOp::Ne, l, Term::Literal(Literal::Str(name))) if is_field(l) => {
                    found.push(name)
                }
                (CmpOp::Eq | CmpOp::Ne, Term::Literal(Literal::Str(name)), r) if is_field(r) => {
                    found.push(name)
                }
                (CmpOp::In | CmpOp::NotIn, l, Term::List(items)) if is_field(l) => {
                    for item in items {
                        if let Term::Literal(Literal::Str(name)) = item {
                            found.push(name);
                        }
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(&self.tree, field, &mut found);
        found
    }
}

fn value<'a>(term: &'a Term, facts: &TokenFacts<'a>) -> Val<'a> {
    match term {
        Term::Or(items) => Val::Bool(items.iter().any(|t| truthy(&value(t, facts)))),
        Term::And(items) => Val::Bool(items.iter().all(|t| truthy(&value(t, facts)))),
        Term::Not(inner) => Val::Bool(!truthy(&value(inner, facts))),
        Term::Compare(first, rest) => {
            let mut left = value(first, facts);
            let mut left_term: &Term = first;
            for (op, operand) in rest {
                let right = value(operand, facts);
                let holds = by_prefix(*op, left_term, operand, facts)
                    .unwrap_or_else(|| compare(*op, &left, &right));
                if !holds {
                    return Val::Bool(false);
                }
                left = right;
                left_term = operand;
            }
            Val::Bool(true)
        }
        Term::Literal(literal) => Val::of_literal(literal),
        Term::List(items) => Val::List(items.iter().map(|t| value(t, facts)).collect()),
        Term::Field(field) => match field {
            Field::Token => Val::Str(facts.token),
            Field::State => Val::Str(facts.state),
            Field::Status => Val::Str(facts.status),
            Field::Visit => Val::Int(i128::from(facts.visit)),
            Field::Workflow => Val::Str(facts.workflow),
            Field::Parent => facts.parent.map_or(Val::Null, Val::Str),
            Field::Moved => Val::Int(i128::from(facts.moved)),
            Field::Graph => Val::Str(facts.graph),
        },
        Term::Context(steps) => Val::of_json(follow(facts.context, steps)),
    }
}

/// The value at `steps` below the context; `None` (null) where a step finds nothing.
/// A negative index counts from the end of a list, as in Python.
fn follow<'a>(context: &'a Object, steps: &[Step]) -> Option<&'a Value> {
    let (first, rest) = steps.split_first()?;
    let Step::Key(key) = first else {
        return None;
    };
    let mut at = context.get(key)?;
    for step in rest {
        at = match (step, at) {
            (Step::Key(key), Value::Object(map)) => map.get(key)?,
            (Step::Index(index), Value::Array(items)) => {
                let length = i128::try_from(items.len()).ok()?;
                let from_start = if *index < 0 { length + index } else { *index };
                items.get(usize::try_from(from_start).ok()?)?
            }
            _ => return None,
        };
    }
    Some(at)
}

/// Check a parsed filter; the error is the reason, without the filter's text.
fn check(node: &Node) -> Result<Term, String> {
    match node {
        Node::Or(items) => Ok(Term::Or(all(items)?)),
        Node::And(items) => Ok(Term::And(all(items)?)),
        Node::Not(inner) => Ok(Term::Not(Box::new(check(inner)?))),
        Node::Neg(_) => node
            .negative_number()
            .map(Term::Literal)
            .ok_or_else(|| "a minus sign may stand only before a number, as in -5".to_owned()),
        Node::Compare(first, rest) => {
            for (op, searched) in rest {
                let searchable = matches!(searched, Node::List(_) | Node::Subscript(..))
                    || matches!(searched, Node::Name(name) if field(name).is_some());
                if matches!(op, CmpOp::In | CmpOp::NotIn) && !searchable {
                    return Err("`in` must search a list literal, a field such as token, \
                                or ctx['key'], not a string or a number"
                        .to_owned());
                }
            }
            let first = Box::new(check(first)?);
            let rest: Vec<(CmpOp, Term)> = rest
                .iter()
                .map(|(op, operand)| Ok((*op, check(operand)?)))
                .collect::<Result<_, String>>()?;
            let mut left = &*first;
            for (op, right) in &rest {
                can_hold(left, *op, right)?;
                left = right;
            }
            Ok(Term::Compare(first, rest))
        }
        Node::Int(value) => Ok(Term::Literal(Literal::Int(*value))),
        Node::Float(value) => Ok(Term::Literal(Literal::Float(*value))),
        Node::Str(text) => Ok(Term::Literal(Literal::Str(text.clone()))),
        Node::OtherConst(what) => Err(match *what {
            "True" => "True is not a literal of the filter language; write true".to_owned(),
            "False" => "False is not a literal of the filter language; write false".to_owned(),
            "None" => "None is not a literal of the filter language; write null".to_owned(),
            other => format!("{other} is not a literal of the filter language"),
        }),
        Node::List(items) => list(items),
        Node::Name(name) => name_term(name),
        Node::Subscript(..) => context_path(node).map(Term::Context),
        Node::Attribute(owner, _) => Err(match &**owner {
            Node::Name(name) if name == "ctx" => {
                "the context is read as ctx['key'], not with a dot".to_owned()
            }
            Node::Name(name) if name == "payload" => PAYLOAD.to_owned(),
            _ => "a filter reads no field with a dot; write ctx['key']['deeper']".to_owned(),
        }),
        Node::Call(function, ..) => Err(match &**function {
            Node::Name(name) if name == "count" => {
                "count() reads a token's ledger, which a filter does not; \
                 filter on state, visit or ctx['key']"
                    .to_owned()
            }
            _ => "a filter calls no function".to_owned(),
        }),
    }
}

const PAYLOAD: &str = "a filter reads tokens, not the payload of an event";

use crate::wire::TOKEN_STATUSES as STATUSES;

/// Refuse a comparison that no token can satisfy by the kind of its field: a
/// status that is not one (`status == 'activ'`), or a number field against a
/// string (`moved > '600'`). Such a filter matched nothing without a word, and a
/// bulk action over it did nothing; the `--status` flag already refused the first.
fn can_hold(left: &Term, op: CmpOp, right: &Term) -> Result<(), String> {
    let searched = matches!(op, CmpOp::In | CmpOp::NotIn);
    let pairs: Vec<(Field, &Literal)> = match (left, right) {
        (Term::Field(field), Term::Literal(literal)) if !searched => vec![(*field, literal)],
        (Term::Literal(literal), Term::Field(field)) if !searched => vec![(*field, literal)],
        (Term::Field(field), Term::List(items)) if searched => items
            .iter()
            .filter_map(|item| match item {
                Term::Literal(literal) => Some((*field, literal)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for (field, literal) in pairs {
        let Literal::Str(text) = literal else {
            continue;
        };
        match field {
            Field::Status if !STATUSES.contains(&text.as_str()) => {
                return Err(format!(
                    "{} is not a status; a status is one of: {}",
                    repr_str(text),
                    STATUSES.join(", ")
                ))
            }
            Field::Moved | Field::Visit => {
                let name = if field == Field::Moved {
                    "moved"
                } else {
                    "visit"
                };
                return Err(format!(
                    "{name} is a number, and no number equals or is ordered with the \
                     string {}; write it without quotes",
                    repr_str(text)
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn all(items: &[Node]) -> Result<Vec<Term>, String> {
    items.iter().map(check).collect()
}

fn field(name: &str) -> Option<Field> {
    Field::ALL
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, field)| *field)
}

fn name_term(name: &str) -> Result<Term, String> {
    match name {
        "true" => return Ok(Term::Literal(Literal::Bool(true))),
        "false" => return Ok(Term::Literal(Literal::Bool(false))),
        "null" => return Ok(Term::Literal(Literal::Null)),
        "ctx" => return Err("read one key of the context, e.g. ctx['key']".to_owned()),
        "payload" => return Err(PAYLOAD.to_owned()),
        _ => {}
    }
    field(name).map(Term::Field).ok_or_else(|| {
        format!(
            "unknown name {}; a filter reads token, state, status, visit, workflow, \
             parent, moved, graph and ctx['key']",
            repr_str(name)
        )
    })
}

/// The steps of `ctx['a']['b'][0]`, first step a key.
fn context_path(node: &Node) -> Result<Vec<Step>, String> {
    const ONLY: &str = "only the context can be indexed, as ctx['key'] or ctx['key'][0]";
    let Node::Subscript(owner, index) = node else {
        return Err(ONLY.to_owned());
    };
    let mut steps = match &**owner {
        Node::Name(name) if name == "ctx" => Vec::new(),
        Node::Subscript(..) => context_path(owner)?,
        _ => return Err(ONLY.to_owned()),
    };
    let step = match (&**index, index.negative_number()) {
        (Node::Str(key), _) => Step::Key(key.clone()),
        (Node::Int(at), _) if !steps.is_empty() => Step::Index(*at),
        (_, Some(Literal::Int(at))) if !steps.is_empty() => Step::Index(at),
        _ if steps.is_empty() => {
            return Err("the context's keys are strings, as in ctx['key']".to_owned())
        }
        _ => return Err("a path below ctx['key'] takes strings and whole numbers".to_owned()),
    };
    steps.push(step);
    Ok(steps)
}

fn list(items: &[Node]) -> Result<Term, String> {
    let mut checked = Vec::with_capacity(items.len());
    for item in items {
        let literal = matches!(
            item,
            Node::Int(_) | Node::Float(_) | Node::Str(_) | Node::OtherConst(_)
        ) || matches!(item, Node::Name(n) if ["true", "false", "null"].contains(&n.as_str()));
        if !literal && item.negative_number().is_none() {
            return Err("a list may hold only literals, such as ['review', 'draft']".to_owned());
        }
        checked.push(check(item)?);
    }
    Ok(Term::List(checked))
}
