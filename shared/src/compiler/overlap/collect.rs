//! What two guards read, and the literals each value is compared with
//! (reference `compiler/exclusive.py`): the input of the overlap search.

use std::collections::BTreeMap;

use serde_json::Value;

use super::candidates::Compared;
use super::{Atom, BRANCHES};
use crate::guards::{CmpOp, Expr, Guard, Literal};

/// What a pair of guards reads.
pub(super) struct Reads {
    /// Each value read, with what it is compared with.
    pub(super) atoms: BTreeMap<Atom, Vec<Compared>>,
    /// Whether a comparison or boolean operation stands as an operand of a
    /// comparison (`(ctx['a'] > 1) == true`): the reference does not look inside it.
    pub(super) compound: bool,
}

/// What `first` and `second` read. `deep`: also look inside compound operands,
/// which the reference does not. Err with the reason the pair cannot be decided.
pub(super) fn reads(first: &Guard, second: &Guard, deep: bool) -> Result<Reads, String> {
    let mut collector = Collector {
        reads: Reads {
            atoms: BTreeMap::new(),
            compound: false,
        },
        deep,
    };
    collector.node(&first.tree)?;
    collector.node(&second.tree)?;
    Ok(collector.reads)
}

struct Collector {
    reads: Reads,
    deep: bool,
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
                    // A value read as true or false is compared with 0 at heart.
                    let entry = self.reads.atoms.entry(atom).or_default();
                    entry.extend(truth_values().map(Compared::Literal));
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
                self.reads.compound = true;
                if self.deep {
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
            let entry = self.reads.atoms.entry(atom).or_default();
            entry.extend(literals.iter().cloned().map(Compared::Literal));
        }
        if let Some(atom) = right_atom {
            let entry = self.reads.atoms.entry(atom).or_default();
            if searching {
                entry.push(Compared::Searched(literals));
            } else {
                entry.extend(literals.into_iter().map(Compared::Literal));
            }
        }
        Ok(())
    }
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
