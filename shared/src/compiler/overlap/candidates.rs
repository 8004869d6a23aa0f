//! The values worth trying for one operand (`docs/concepts/guards.md`):
//! the literals a guard compares an operand with divide its domain into regions
//! where every value behaves alike, so one value from each region (each literal, a
//! point just past it on each side, one beyond them all) stands for all of them.

use serde_json::{json, Number, Value};

use super::domain::{Domain, Kind};
use crate::guards::python_eq;
use crate::pyrepr::repr_json;

/// Stands for any object value: equal to no literal, ordered with none.
pub(super) fn any_object() -> Value {
    json!({"__object__": true})
}

/// What a guard compares an operand with.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Compared {
    /// A literal the operand is compared with; a list literal is one value.
    Literal(Value),
    /// The operand is searched by `in` for these members.
    Searched(Vec<Value>),
}

/// The most members `in` may search an operand for: every subset of them is tried.
pub(super) const MAX_MEMBERS: usize = 12;

/// A number, keeping Python's line between integers and floats.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(value: &Value) -> Option<Num> {
        match value {
            Value::Number(n) => n
                .as_i64()
                .map(Num::Int)
                .or_else(|| n.as_f64().map(Num::Float)),
            _ => None,
        }
    }

    fn float(self) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)] // only to order and halve
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn shifted(self, by: i64) -> Num {
        match self {
            Num::Int(i) => Num::Int(i.saturating_add(by)),
            #[allow(clippy::cast_precision_loss)]
            Num::Float(f) => Num::Float(f + by as f64),
        }
    }

    fn value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }
}

/// Saturating float-to-integer conversion, for the integers around a literal.
fn saturate(f: f64) -> i64 {
    #[allow(clippy::cast_possible_truncation)] // `as` saturates, which is the intent
    let whole = f as i64;
    whole
}

/// One value from each region that the compared literals divide the domain into,
/// in the reference's order, without repeats.
pub(super) fn candidates(domain: &Domain, compared: &[Compared]) -> Vec<Value> {
    let literals: Vec<&Value> = compared
        .iter()
        .filter_map(|c| match c {
            Compared::Literal(v) => Some(v),
            Compared::Searched(_) => None,
        })
        .collect();
    let mut tries: Vec<Value> = Vec::new();
    if let Some(values) = &domain.values {
        tries.extend(values.iter().cloned());
    } else {
        let numbers = numbers(&literals);
        if domain.allows(Kind::Int) {
            tries.extend(integers(&numbers, domain.minimum));
        }
        if domain.allows(Kind::Number) {
            tries.extend(reals(&numbers));
        }
        if domain.allows(Kind::String) {
            tries.extend(strings(&literals));
        }
        if domain.allows(Kind::Bool) {
            tries.extend([Value::Bool(false), Value::Bool(true)]);
        }
        if domain.allows(Kind::Object) {
            tries.extend([any_object(), json!({})]);
        }
        if domain.allows(Kind::Array) {
            let members: Vec<Value> = compared
                .iter()
                .filter_map(|c| match c {
                    Compared::Searched(members) => Some(members.iter().cloned()),
                    Compared::Literal(_) => None,
                })
                .flatten()
                .collect();
            let lists: Vec<&Value> = literals.iter().copied().filter(|v| v.is_array()).collect();
            tries.extend(list_tries(&distinct(members), &lists));
        }
    }
    if domain.allows(Kind::Null) {
        tries.push(Value::Null);
    }
    distinct(tries)
}

/// The number literals (not booleans), each value once (the first written wins,
/// so `1` and `1.0` stay one point), sorted.
fn numbers(literals: &[&Value]) -> Vec<Num> {
    let mut found: Vec<Num> = Vec::new();
    for num in literals.iter().filter_map(|v| Num::of(v)) {
        if !found.iter().any(|seen| seen.float() == num.float()) {
            found.push(num);
        }
    }
    found.sort_by(|a, b| a.float().total_cmp(&b.float()));
    found
}

/// Integers: each literal's floor and ceiling with one on each side, and 0.
fn integers(numbers: &[Num], minimum: Option<i64>) -> Vec<Value> {
    let mut ints: Vec<i64> = vec![0];
    for number in numbers {
        let (low, high) = match *number {
            Num::Int(i) => (i, i),
            Num::Float(f) => (saturate(f.floor()), saturate(f.ceil())),
        };
        ints.extend([low.saturating_sub(1), low, high, high.saturating_add(1)]);
    }
    ints.sort_unstable();
    ints.dedup();
    if let Some(minimum) = minimum {
        ints.retain(|i| *i >= minimum);
        if ints.is_empty() {
            ints.push(minimum);
        }
    }
    ints.into_iter().map(Value::from).collect()
}

/// Reals: each literal (and 0), each midpoint between two, one below and one above.
fn reals(numbers: &[Num]) -> Vec<Value> {
    let mut points = numbers.to_vec();
    if !points.iter().any(|p| p.float() == 0.0) {
        points.push(Num::Int(0));
        points.sort_by(|a, b| a.float().total_cmp(&b.float()));
    }
    let mut tries: Vec<Num> = points.clone();
    tries.extend(
        points
            .windows(2)
            .map(|pair| Num::Float((pair[0].float() + pair[1].float()) / 2.0)),
    );
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        tries.extend([first.shifted(-1), last.shifted(1)]);
    }
    tries.sort_by(|a, b| a.float().total_cmp(&b.float()));
    tries.dedup_by(|a, b| a.float() == b.float());
    tries.into_iter().map(Num::value).collect()
}

/// Strings: the empty one, each literal, and each literal followed by `\0`, the
/// next string after it; `"x"` when no string is compared.
fn strings(literals: &[&Value]) -> Vec<Value> {
    let mut texts: Vec<&str> = literals.iter().filter_map(|v| v.as_str()).collect();
    texts.sort_unstable();
    texts.dedup();
    let mut tries = vec![Value::from("")];
    tries.extend(texts.iter().map(|s| Value::from(*s)));
    tries.extend(texts.iter().map(|s| Value::from(format!("{s}\0"))));
    if texts.is_empty() {
        tries.push(Value::from("x"));
    }
    tries
}

/// Lists that `in` and `==` tell apart: each list literal; for each set of the
/// searched members, a list of just those that equals no literal; and a list that
/// holds no member and equals no literal.
fn list_tries(members: &[Value], literals: &[&Value]) -> Vec<Value> {
    let known: Vec<&Value> = members
        .iter()
        .chain(literals.iter().filter_map(|l| l.as_array()).flatten())
        .collect();
    let mut filler = "~".to_owned();
    while known
        .iter()
        .any(|k| python_eq(k, &Value::from(filler.as_str())))
    {
        filler.push('~');
    }
    let mut tries: Vec<Value> = literals.iter().map(|l| (*l).clone()).collect();
    for size in 0..=members.len() {
        for chosen in combinations(members, size) {
            let mut list = Value::Array(chosen);
            if literals.iter().any(|l| python_eq(l, &list)) {
                if let Value::Array(items) = &mut list {
                    items.push(Value::from(filler.as_str()));
                }
            }
            tries.push(list);
        }
    }
    tries.push(json!([filler]));
    tries
}

/// Every choice of `size` items of `items`, in Python's `itertools.combinations` order.
fn combinations(items: &[Value], size: usize) -> Vec<Vec<Value>> {
    if size == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        for mut rest in combinations(&items[i + 1..], size - 1) {
            rest.insert(0, first.clone());
            out.push(rest);
        }
    }
    out
}

/// Without repeats, keeping 1 apart from `true` and 1 from 1.0, as the reference
/// does by type and representation.
pub(super) fn distinct(values: Vec<Value>) -> Vec<Value> {
    let mut seen: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for value in values {
        let kind = match &value {
            Value::Number(n) if n.is_f64() => "float",
            Value::Number(_) => "int",
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::String(_) => "str",
            Value::Array(_) => "list",
            Value::Object(_) => "dict",
        };
        let key = format!("{kind}:{}", repr_json(&value));
        if !seen.contains(&key) {
            seen.push(key);
            kept.push(value);
        }
    }
    kept
}
