//! What two guards read, and the literals each value is compared with
//! (`docs/concepts/guards.md`): the input of the overlap search.

use std::collections::BTreeMap;

use serde_json::Value;

use super::candidates::Compared;
use super::{Atom, BRANCHES};
use crate::guards::{CmpOp, Expr, Guard, Literal};

/// Each value a pair of guards reads, with what it is compared with.
pub(super) type Reads = BTreeMap<Atom, Vec<Compared>>;

/// What `first` and `second` read. Err with the reason the pair cannot be decided.
///
/// `closed`: read as the reference does not, to close its gaps. A comparison or
/// boolean operation used as an operand (`(ctx['a'] > 1) == true`) has the values
/// inside it read too; a boolean literal a value is compared with counts as its
/// number as well (Python's `True` is 1, so `2.5 >= True` holds and `2.5 != True`
/// too); and a value read as true or false is also cut at the empty string, so a
/// string between `''` and the least literal it is compared with is tried.
pub(super) fn reads(first: &Guard, second: &Guard, closed: bool) -> Result<Reads, String> {
    let mut collector = Collector {
        reads: BTreeMap::new(),
        closed,
    };
    collector.node(&first.tree)?;
    collector.node(&second.tree)?;
    Ok(collector.reads)
}

struct Collector {
    reads: Reads,
    closed: bool,
}

impl Collector {
    /// Record each value a guard reads and the literals it is compared with.
    fn node(&mut self, node: &Expr) -> Result<(), String> {
        match node {
            Expr::Or(items) | Expr::And(items) => items.iter().try_for_each(|i| self.node(i)),
            Expr::Not(inner) => self.node(inner),
            Expr::Compare { first, rest } => {
                let mut left: &Expr = first;
                for (op, right) in rest {
                    self.pair(left, *op, right)?;
                    left = right;
                }
                Ok(())
            }
            Expr::Branches { .. } => Err(BRANCHES.to_owned()),
            _ => {
                if let Some(atom) = atom(node) {
                    // A value read as true or false is compared with 0 at heart;
                    // closing a gap of the reference, a string is cut at ''.
                    let entry = self.reads.entry(atom).or_default();
                    entry.extend(truth_values().map(Compared::Literal));
                    if self.closed {
                        entry.push(Compared::Literal(Value::from("")));
                    }
                }
                Ok(())
            }
        }
    }

    /// Record one comparison `left op right`.
    fn pair(&mut self, left: &Expr, op: CmpOp, right: &Expr) -> Result<(), String> {
        if matches!(left, Expr::Branches { .. }) || matches!(right, Expr::Branches { .. }) {
            return Err(BRANCHES.to_owned());
        }
        let (left_atom, right_atom) = (atom(left), atom(right));
        if left_atom.is_some() && right_atom.is_some() {
            return Err("a guard compares two values with each other".to_owned());
        }
        let searching = matches!(op, CmpOp::In | CmpOp::NotIn);
        let equality = matches!(op, CmpOp::Eq | CmpOp::Ne) || searching;
        let mut literals: Vec<Value> = Vec::new();
        for (side, is_right) in [(left, false), (right, true)] {
            if atom(side).is_some() {
                continue;
            }
            if is_compound(side) {
                if self.closed {
                    // Its value is a boolean, decided by the values inside it.
                    self.node(side)?;
                    literals.extend(truth_values());
                }
                continue;
            }
            match literal(side)? {
                Some(Value::Array(items)) if searching && is_right => literals.extend(items),
                Some(Value::Array(_)) if !equality => {
                    return Err("a guard orders a list".to_owned())
                }
                Some(value) => literals.push(value),
                None => {}
            }
        }
        if let Some(atom) = left_atom {
            let entry = self.reads.entry(atom).or_default();
            entry.extend(with_numbers(&literals, self.closed).map(Compared::Literal));
        }
        if let Some(atom) = right_atom {
            let entry = self.reads.entry(atom).or_default();
            if searching {
                // A list holding `True` or 1 answers `in` alike: members stay as written.
                entry.push(Compared::Searched(literals));
            } else {
                entry.extend(with_numbers(&literals, self.closed).map(Compared::Literal));
            }
        }
        Ok(())
    }
}

/// The literals a value is compared with; when closing the reference's gaps
/// (`closed`), each boolean is followed by its number (`True` orders and equals
/// as 1), so that numbers on both sides of it are tried.
fn with_numbers(literals: &[Value], closed: bool) -> impl Iterator<Item = Value> + '_ {
    literals.iter().flat_map(move |literal| {
        let number = match literal {
            Value::Bool(b) if closed => Some(Value::from(i64::from(*b))),
            _ => None,
        };
        std::iter::once(literal.clone()).chain(number)
    })
}

/// What a value read as true or false is compared with.
fn truth_values() -> [Value; 3] {
    [Value::Bool(true), Value::Bool(false), Value::from(0)]
}

/// Whether a node is a comparison or a boolean operation: its value is a boolean.
fn is_compound(node: &Expr) -> bool {
    matches!(
        node,
        Expr::Or(_) | Expr::And(_) | Expr::Not(_) | Expr::Compare { .. }
    )
}

/// The atom a node reads, if it is one.
fn atom(node: &Expr) -> Option<Atom> {
    match node {
        Expr::Context(key) => Some(Atom::Ctx(key.clone())),
        Expr::Payload(field) => Some(Atom::Payload(field.clone())),
        Expr::Count(event) => Some(Atom::Count(event.clone())),
        _ => None,
    }
}

/// A literal node's value, a list literal as a list; None for anything else.
/// Err for a number no JSON value can hold (an integer past 64 bits, `1e999`).
fn literal(node: &Expr) -> Result<Option<Value>, String> {
    match node {
        Expr::Literal(literal) => literal_value(literal).map(Some),
        Expr::List(items) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                match literal(item)? {
                    Some(value) => values.push(value),
                    None => return Ok(None),
                }
            }
            Ok(Some(Value::Array(values)))
        }
        _ => Ok(None),
    }
}

fn literal_value(literal: &Literal) -> Result<Value, String> {
    let too_large = || "a guard compares with a number too large to try".to_owned();
    match literal {
        Literal::Null => Ok(Value::Null),
        Literal::Bool(b) => Ok(Value::Bool(*b)),
        Literal::Str(s) => Ok(Value::from(s.as_str())),
        Literal::Int(i) => i64::try_from(*i)
            .map(Value::from)
            .or_else(|_| u64::try_from(*i).map(Value::from))
            .map_err(|_| too_large()),
        Literal::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(too_large),
    }
}
