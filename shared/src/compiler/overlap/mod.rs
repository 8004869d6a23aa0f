//! The overlap check (`docs/concepts/guards.md`):
//! two guards on one state and event must never both be true, so that an event
//! takes at most one transition. The language is small enough to decide it: each
//! value a guard reads is tried at one point of each region its literals cut its
//! domain into ([`candidates`]), and the guards' own evaluator judges each case, so
//! an example found is a real one. A pair that cannot be decided this way (two
//! values compared with each other, a list ordered, `branches` read) is refused
//! too: a guard that cannot be proven exclusive is not.
//!
//! The reference's search runs first and its examples stand as they are. Where it
//! would call a pair exclusive, its gaps are closed, so that no pair that can both
//! be true is accepted: a comparison or boolean operation used as an operand
//! (`(ctx['a'] > 1) == true`) has the values inside it tried too; a boolean literal
//! counts as its number too, so that numbers on both sides of it are tried
//! (`2.5 >= True` and `2.5 != True` both hold); a value read as true or false is
//! cut at the empty string too (`'0'` is true and `< 'a'`); and a pair where `in`
//! searches a value that may be a string or an object (a substring or key test,
//! which the values tried do not cover) is not proven. And a field that may be
//! missing from the data reads as null, so null is tried for it: a payload field
//! the model does not require, and a context field it neither requires nor gives a
//! default (see [`domain::Domain::of_field_among`]).

mod candidates;
mod collect;
pub mod domain;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::graph::START;
use crate::guards::{evaluate, Guard, GuardInput};
use crate::pyrepr::repr_str;
use candidates::{candidates, Compared, MAX_MEMBERS};
use collect::Reads;
use domain::{Domain, Kind};

/// How many combinations of values are tried before a pair is called undecidable.
pub const MAX_TRIES: usize = 200_000;

/// Why a pair that reads `branches` cannot be decided: it reads a list of children
/// of any length.
const BRANCHES: &str = "a guard with branches.all or branches.any cannot be proven exclusive";

/// Why a pair with too many combinations of values to try is not decided.
const TOO_MANY: &str = "they read too many values to try every case";

/// What a guard reads, in the reference's order: counts, then context, then payload.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Atom {
    /// `count('event')`
    Count(String),
    /// `ctx['key']`
    Ctx(String),
    /// `payload.field`
    Payload(String),
}

impl Atom {
    /// The atom as a message writes it: `count('e')`, `ctx['key']`, `payload.field`.
    pub fn label(&self) -> String {
        match self {
            Atom::Count(event) => format!("count({})", repr_str(event)),
            Atom::Ctx(key) => format!("ctx[{}]", repr_str(key)),
            Atom::Payload(field) => format!("payload.{field}"),
        }
    }
}

/// Where a pair of guards sits: the event they share and the schemas they read.
#[derive(Debug, Clone, Copy)]
pub struct Where<'a> {
    /// The event being routed (`__started__` from START).
    pub event: &'a str,
    /// The JSON Schema of the workflow's context model, if it has one.
    pub context: Option<&'a Value>,
    /// The JSON Schema of the event's payload model, if it has one.
    pub payload: Option<&'a Value>,
    /// The workflow's schemas by name, for a `$ref` to another schema.
    pub schemas: Option<&'a Map<String, Value>>,
}

impl Where<'_> {
    /// The values `atom` can take here.
    pub fn domain(&self, atom: &Atom) -> Domain {
        match atom {
            Atom::Ctx(key) => Domain::of_field_among(self.context, key, self.schemas, true),
            Atom::Payload(field) => {
                Domain::of_field_among(self.payload, field, self.schemas, false)
            }
            Atom::Count(event) => Domain::count(event == self.event),
        }
    }
}

/// Whether two guards can both be true.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// They can never both be true.
    Exclusive,
    /// Both are true for these values, by what each reads (in the reference's order).
    Overlap(Vec<(Atom, Value)>),
    /// It cannot be decided, for this reason.
    Undecidable(String),
}

/// Whether `first` and `second` can never both be true at `place`.
pub fn check(first: &Guard, second: &Guard, place: &Where<'_>) -> Verdict {
    // The reference's search comes first, so that its examples stand as they are;
    // only where it would call a pair exclusive are its gaps looked into.
    let reference = match collect::reads(first, second, false) {
        Ok(reads) => reads,
        Err(problem) => return Verdict::Undecidable(problem),
    };
    match search(first, second, place, &reference) {
        Verdict::Exclusive => {}
        decided => return decided,
    }
    let closed = match collect::reads(first, second, true) {
        Ok(reads) => reads,
        Err(problem) => return Verdict::Undecidable(problem),
    };
    if closed != reference {
        match search(first, second, place, &closed) {
            Verdict::Exclusive => {}
            decided => return decided,
        }
    }
    let gap = closed
        .iter()
        .find_map(|(atom, compared)| substring_or_key(atom, &place.domain(atom), compared));
    gap.map_or(Verdict::Exclusive, Verdict::Undecidable)
}

/// Try every combination of the values worth trying for what the guards read.
fn search(first: &Guard, second: &Guard, place: &Where<'_>, reads: &Reads) -> Verdict {
    let mut choices: Vec<(Atom, Vec<Value>)> = Vec::with_capacity(reads.len());
    for (atom, compared) in reads {
        let domain = place.domain(atom);
        if let Some(problem) = unsearchable(atom, &domain, compared) {
            return Verdict::Undecidable(problem);
        }
        choices.push((atom.clone(), candidates(&domain, compared)));
    }
    let total = choices.iter().try_fold(1usize, |product, (_, values)| {
        product.checked_mul(values.len())
    });
    if total.is_none_or(|total| total > MAX_TRIES) {
        return Verdict::Undecidable(TOO_MANY.to_owned());
    }
    match first_overlap(first, second, &choices) {
        Some(example) => Verdict::Overlap(example),
        None => Verdict::Exclusive,
    }
}

/// Why `in` searching `atom` cannot be decided, if it cannot (the reference's
/// rule: it must be able to hold a list), or every subset of the members searched
/// for would be too many lists to try.
fn unsearchable(atom: &Atom, domain: &Domain, compared: &[Compared]) -> Option<String> {
    let members = searched_members(compared)?;
    if !domain.allows(Kind::Array) {
        return Some(format!(
            "`in` searches {}, which is not a list",
            atom.label()
        ));
    }
    (members > MAX_MEMBERS).then(|| TOO_MANY.to_owned())
}

/// Not in the reference: `in` on a string tests for a substring and on an object
/// for a key, which the values tried do not cover, so a pair found exclusive is
/// not proven so when `atom`, searched, may be one.
fn substring_or_key(atom: &Atom, domain: &Domain, compared: &[Compared]) -> Option<String> {
    searched_members(compared)?;
    (domain.allows(Kind::String) || domain.allows(Kind::Object)).then(|| {
        format!(
            "`in` searches {}, which may be a string or an object, not only a list",
            atom.label()
        )
    })
}

/// How many members `in` searches the atom for, all searches together; None when
/// it is never searched.
fn searched_members(compared: &[Compared]) -> Option<usize> {
    let counts: Vec<usize> = compared
        .iter()
        .filter_map(|c| match c {
            Compared::Searched(members) => Some(members.len()),
            Compared::Literal(_) => None,
        })
        .collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

/// The first combination of candidate values (the first atom varying slowest,
/// as Python's `itertools.product`) that makes both guards true.
fn first_overlap(
    first: &Guard,
    second: &Guard,
    choices: &[(Atom, Vec<Value>)],
) -> Option<Vec<(Atom, Value)>> {
    let mut index = vec![0usize; choices.len()];
    if choices.iter().any(|(_, values)| values.is_empty()) {
        return None;
    }
    loop {
        let picked: Vec<(Atom, Value)> = choices
            .iter()
            .zip(&index)
            .map(|((atom, values), i)| (atom.clone(), values[*i].clone()))
            .collect();
        if both_hold(first, second, &picked) {
            return Some(picked);
        }
        // Advance the odometer: the last atom turns fastest.
        let mut position = choices.len();
        loop {
            if position == 0 {
                return None;
            }
            position -= 1;
            index[position] += 1;
            if index[position] < choices[position].1.len() {
                break;
            }
            index[position] = 0;
        }
    }
}

fn both_hold(first: &Guard, second: &Guard, picked: &[(Atom, Value)]) -> bool {
    let mut ctx = Map::new();
    let mut payload = Map::new();
    let mut counts: Vec<(&str, i64)> = Vec::new();
    for (atom, value) in picked {
        match atom {
            Atom::Ctx(key) => {
                ctx.insert(key.clone(), value.clone());
            }
            Atom::Payload(field) => {
                payload.insert(field.clone(), value.clone());
            }
            Atom::Count(event) => counts.push((event, value.as_i64().unwrap_or(0))),
        }
    }
    let count = |event: &str| {
        counts
            .iter()
            .find(|(name, _)| *name == event)
            .map_or(0, |(_, n)| *n)
    };
    let input = GuardInput {
        ctx: &ctx,
        payload: Some(&payload),
        count: &count,
        branches: None,
    };
    evaluate(first, &input) && evaluate(second, &input)
}

/// The problems of one group of guarded transitions (one source state and event),
/// each pair in order, phrased as the reference's compile errors. `source` is the
/// state's name (`__start__` or `START` for START), `guards` the guards in the
/// order the transitions are written.
pub fn check_group(source: &str, guards: &[&Guard], place: &Where<'_>) -> Vec<String> {
    let group = if source == START || source == "START" {
        "START".to_owned()
    } else {
        format!("{} from {}", repr_str(place.event), repr_str(source))
    };
    let mut problems = Vec::new();
    for (i, first) in guards.iter().enumerate() {
        for second in &guards[i + 1..] {
            let (a, b) = (repr_str(&first.text), repr_str(&second.text));
            match check(first, second, place) {
                Verdict::Exclusive => {}
                Verdict::Overlap(example) => {
                    let shown: Vec<String> = example
                        .iter()
                        .map(|(atom, value)| {
                            format!("{} = {}", atom.label(), crate::guards::literal(value))
                        })
                        .collect();
                    problems.push(format!(
                        "{group}: the guards {a} and {b} can both be true, e.g. when {}; \
                         make them exclusive, or make one the fallback (otherwise: true)",
                        shown.join(", ")
                    ));
                }
                Verdict::Undecidable(reason) => problems.push(format!(
                    "{group}: cannot prove the guards {a} and {b} are never both true: \
                     {reason}; compare values with literals, or make one the fallback \
                     (otherwise: true)"
                )),
            }
        }
    }
    problems
}
