//! Evaluating a checked guard with the reference's semantics, which are Python's
//! on the values `json.loads` makes: booleans are the integers 0 and 1, integers
//! and floats compare exactly, lists compare item by item, and a comparison that
//! Python refuses with a TypeError (null < 3, 'a' < 1, 'x' in 5) is false.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::{CmpOp, Expr, GuardInput, Literal, Quantifier};

/// A value while a guard is evaluated: read from the data, or a literal.
#[derive(Debug, Clone)]
pub(super) enum Val<'a> {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a str),
    List(Vec<Val<'a>>),
    Object(&'a Map<String, Value>),
}

impl<'a> Val<'a> {
    /// The value as JSON (a float that JSON cannot hold is null).
    pub(super) fn to_json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(i.to_string())),
            Val::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Val::Str(s) => Value::String((*s).to_string()),
            Val::List(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Val::Object(map) => Value::Object((*map).clone()),
        }
    }

    pub(super) fn of_json(value: Option<&'a Value>) -> Val<'a> {
        match value {
            None | Some(Value::Null) => Val::Null,
            Some(Value::Bool(b)) => Val::Bool(*b),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Val::Int(i128::from(i)),
                (None, Some(u)) => Val::Int(i128::from(u)),
                (None, None) => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Some(Value::String(s)) => Val::Str(s),
            Some(Value::Array(items)) => {
                Val::List(items.iter().map(|v| Val::of_json(Some(v))).collect())
            }
            Some(Value::Object(map)) => Val::Object(map),
        }
    }

    pub(super) fn of_literal(literal: &'a Literal) -> Val<'a> {
        match literal {
            Literal::Null => Val::Null,
            Literal::Bool(b) => Val::Bool(*b),
            Literal::Int(i) => Val::Int(*i),
            Literal::Float(f) => Val::Float(*f),
            Literal::Str(s) => Val::Str(s),
        }
    }
}

/// The value of `expr`. `child`: the ended child that a branch condition reads now.
pub(super) fn value<'a>(
    expr: &'a Expr,
    input: &GuardInput<'a>,
    child: Option<&'a Value>,
) -> Val<'a> {
    match expr {
        Expr::Or(items) => Val::Bool(items.iter().any(|e| truthy(&value(e, input, child)))),
        Expr::And(items) => Val::Bool(items.iter().all(|e| truthy(&value(e, input, child)))),
        Expr::Not(inner) => Val::Bool(!truthy(&value(inner, input, child))),
        Expr::Compare { first, rest } => {
            let mut left = value(first, input, child);
            for (op, operand) in rest {
                let right = value(operand, input, child);
                if !compare(*op, &left, &right) {
                    return Val::Bool(false);
                }
                left = right;
            }
            Val::Bool(true)
        }
        Expr::Literal(literal) => Val::of_literal(literal),
        Expr::List(items) => Val::List(items.iter().map(|e| value(e, input, child)).collect()),
        Expr::Context(key) => Val::of_json(input.ctx.get(key)),
        Expr::Payload(field) => Val::of_json(input.payload.and_then(|p| p.get(field))),
        Expr::Count(event) => Val::Int(i128::from((input.count)(event))),
        Expr::Branches {
            quantifier,
            condition,
        } => {
            let children = input.branches.unwrap_or(&[]);
            let mut each = children
                .iter()
                .map(|c| truthy(&value(condition, input, Some(c))));
            Val::Bool(match quantifier {
                Quantifier::All => each.all(|held| held),
                Quantifier::Any => each.any(|held| held),
            })
        }
        Expr::ChildField(field) => Val::of_json(child.and_then(|c| c.get(field.key()))),
        Expr::ChildPayload(field) => {
            // A child whose event carried no payload reads as an empty payload.
            let payload = child
                .and_then(|c| c.get("payload"))
                .filter(|p| p.is_object());
            Val::of_json(payload.and_then(|p| p.get(field)))
        }
    }
}

/// Python's truth of a value: false for null, false, 0, 0.0, '', [] and {}.
pub(super) fn truthy(value: &Val<'_>) -> bool {
    match value {
        Val::Null => false,
        Val::Bool(b) => *b,
        Val::Int(i) => *i != 0,
        Val::Float(f) => *f != 0.0,
        Val::Str(s) => !s.is_empty(),
        Val::List(items) => !items.is_empty(),
        Val::Object(map) => !map.is_empty(),
    }
}

/// One comparison, as Python's would be; where Python raises a TypeError, false.
pub(super) fn compare(op: CmpOp, left: &Val<'_>, right: &Val<'_>) -> bool {
    match op {
        CmpOp::Eq => equal(left, right),
        CmpOp::Ne => !equal(left, right),
        CmpOp::Lt => order(op, left, right).unwrap_or(false),
        CmpOp::Le => order(op, left, right).unwrap_or(false),
        CmpOp::Gt => order(op, left, right).unwrap_or(false),
        CmpOp::Ge => order(op, left, right).unwrap_or(false),
        CmpOp::In => contains(right, left).unwrap_or(false),
        CmpOp::NotIn => contains(right, left).map(|found| !found).unwrap_or(false),
    }
}

/// A number as Python sees it: `True` is 1, `False` is 0.
enum Num {
    Int(i128),
    Float(f64),
}

fn number(value: &Val<'_>) -> Option<Num> {
    match value {
        Val::Bool(b) => Some(Num::Int(i128::from(*b))),
        Val::Int(i) => Some(Num::Int(*i)),
        Val::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

/// Compare two numbers exactly, as Python does (no rounding of large integers).
/// None when a float is NaN.
fn number_order(left: &Num, right: &Num) -> Option<Ordering> {
    match (left, right) {
        (Num::Int(a), Num::Int(b)) => Some(a.cmp(b)),
        (Num::Float(a), Num::Float(b)) => a.partial_cmp(b),
        (Num::Int(a), Num::Float(b)) => int_float_order(*a, *b),
        (Num::Float(a), Num::Int(b)) => int_float_order(*b, *a).map(Ordering::reverse),
    }
}

/// How the integer `int` orders against the float `float`, without rounding.
fn int_float_order(int: i128, float: f64) -> Option<Ordering> {
    if float.is_nan() {
        return None;
    }
    // Floats at or past 2^127 are beyond every i128; below, truncation is exact.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if float >= LIMIT {
        return Some(Ordering::Less);
    }
    if float < -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = float.trunc();
    #[allow(clippy::cast_possible_truncation)] // in range, and already whole
    let whole_int = whole as i128;
    match int.cmp(&whole_int) {
        Ordering::Equal => 0.0f64.partial_cmp(&(float - whole)),
        unequal => Some(unequal),
    }
}

/// Python's `==`.
fn equal(left: &Val<'_>, right: &Val<'_>) -> bool {
    if let (Some(a), Some(b)) = (number(left), number(right)) {
        return number_order(&a, &b) == Some(Ordering::Equal);
    }
    match (left, right) {
        (Val::Null, Val::Null) => true,
        (Val::Str(a), Val::Str(b)) => a == b,
        (Val::List(a), Val::List(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
        }
        (Val::Object(a), Val::Object(b)) => {
            a.len() == b.len()
                && a.iter().all(|(key, x)| {
                    b.get(key)
                        .is_some_and(|y| equal(&Val::of_json(Some(x)), &Val::of_json(Some(y))))
                })
        }
        _ => false,
    }
}

/// Python's `<`, `<=`, `>`, `>=`; None where Python raises a TypeError.
fn order(op: CmpOp, left: &Val<'_>, right: &Val<'_>) -> Option<bool> {
    let ordering = match (left, right) {
        (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
        (Val::List(a), Val::List(b)) => {
            // Python compares the first items that differ with the operator itself.
            match a.iter().zip(b).find(|(x, y)| !equal(x, y)) {
                Some((x, y)) => return order(op, x, y),
                None => Some(a.len().cmp(&b.len())),
            }
        }
        _ => {
            let (a, b) = (number(left)?, number(right)?);
            number_order(&a, &b)
        }
    };
    // With NaN there is no order, and every ordering comparison is false.
    let Some(ordering) = ordering else {
        return Some(false);
    };
    Some(match op {
        CmpOp::Lt => ordering == Ordering::Less,
        CmpOp::Le => ordering != Ordering::Greater,
        CmpOp::Gt => ordering == Ordering::Greater,
        _ => ordering != Ordering::Less,
    })
}

/// Python's `needle in haystack`; None where Python raises a TypeError, and for a
/// null haystack, where the reference answers false for `in` and `not in` alike.
fn contains(haystack: &Val<'_>, needle: &Val<'_>) -> Option<bool> {
    match haystack {
        Val::List(items) => Some(items.iter().any(|item| equal(item, needle))),
        Val::Str(text) => match needle {
            Val::Str(part) => Some(text.contains(part)),
            _ => None,
        },
        // An object's keys are strings; a list or an object cannot be a key.
        Val::Object(map) => match needle {
            Val::Str(key) => Some(map.contains_key(*key)),
            Val::List(_) | Val::Object(_) => None,
            _ => Some(false),
        },
        _ => None,
    }
}

/// Python's `==` on two JSON values, as the reference compares data: `1 == 1.0`,
/// `true == 1`, lists item by item, objects key by key.
pub fn python_eq(left: &Value, right: &Value) -> bool {
    equal(&Val::of_json(Some(left)), &Val::of_json(Some(right)))
}
