//! What of a filter a database can select by itself: conditions on `state`,
//! `status` and `moved` joined by `and` at the top of the filter. The rest is
//! evaluated row by row; [`Pushdown::exact`] says when there is no rest, so that a
//! count needs no row at all.
//!
//! Each condition pushed is a necessary condition of the filter (a token that
//! fails it cannot match), so selecting by it never loses a token; with `exact`,
//! it is also sufficient.

use super::{Field, Term};
use crate::guards::{CmpOp, Literal};

/// The largest number of seconds a `moved` condition is pushed with: beyond it
/// (some 31,000 years) the conversion to microseconds could overflow, and such a
/// condition is left to the row-by-row evaluation.
const MOST_SECONDS: f64 = 1e12;

/// The conditions of a filter that a database can select by itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pushdown {
    /// The token's state is one of these; `None`: any state. Empty: no token.
    pub states: Option<Vec<String>>,
    /// The token's state is none of these.
    pub not_states: Vec<String>,
    /// The token's status (as the API writes it) is one of these; `None`: any.
    pub statuses: Option<Vec<String>>,
    /// The token's status is none of these.
    pub not_statuses: Vec<String>,
    /// `moved` (whole seconds since the last move) is at least this.
    pub moved_at_least: Option<i64>,
    /// `moved` is below this.
    pub moved_below: Option<i64>,
    /// True when a token that meets these conditions matches the filter.
    pub exact: bool,
}

/// The pushdown of a checked filter.
pub(super) fn of(tree: &Term) -> Pushdown {
    let mut found = Pushdown {
        exact: true,
        ..Pushdown::default()
    };
    found.exact = found.take(tree);
    found
}

impl Pushdown {
    /// Whether a token with this state, status and `moved` meets the conditions:
    /// what a database selects, written once more for the tests.
    pub fn admits(&self, state: &str, status: &str, moved: i64) -> bool {
        let state_ok = self
            .states
            .as_ref()
            .is_none_or(|s| s.iter().any(|x| x == state))
            && !self.not_states.iter().any(|x| x == state);
        let status_ok = self
            .statuses
            .as_ref()
            .is_none_or(|s| s.iter().any(|x| x == status))
            && !self.not_statuses.iter().any(|x| x == status);
        let moved_ok = self.moved_at_least.is_none_or(|least| moved >= least)
            && self.moved_below.is_none_or(|below| moved < below);
        state_ok && status_ok && moved_ok
    }

    /// No token can match.
    fn nothing(&mut self) {
        self.states = Some(Vec::new());
    }

    /// Push what `term` (a conjunct of the filter) says; true when all of it was.
    fn take(&mut self, term: &Term) -> bool {
        match term {
            // Every item is taken, even after one that could not be.
            Term::And(items) => {
                let mut whole = true;
                for item in items {
                    whole &= self.take(item);
                }
                whole
            }
            Term::Literal(literal) => {
                let holds = match literal {
                    Literal::Null => false,
                    Literal::Bool(b) => *b,
                    Literal::Int(i) => *i != 0,
                    Literal::Float(f) => *f != 0.0,
                    Literal::Str(s) => !s.is_empty(),
                };
                if !holds {
                    self.nothing();
                }
                true
            }
            Term::Compare(first, rest) => {
                let mut whole = true;
                let mut left = &**first;
                for (op, right) in rest {
                    whole = self.pair(left, *op, right) && whole;
                    left = right;
                }
                whole
            }
            _ => false,
        }
    }

    /// One comparison of a chain, a field on either side.
    fn pair(&mut self, left: &Term, op: CmpOp, right: &Term) -> bool {
        match (left, right) {
            (Term::Field(field), other) => self.constrain(*field, op, other),
            (other, Term::Field(field)) => match flipped(op) {
                Some(op) => self.constrain(*field, op, other),
                None => false,
            },
            _ => false,
        }
    }

    fn constrain(&mut self, field: Field, op: CmpOp, other: &Term) -> bool {
        match field {
            Field::State => {
                let (only, not) = (&mut self.states, &mut self.not_states);
                text_condition(only, not, op, other)
            }
            Field::Status => {
                let (only, not) = (&mut self.statuses, &mut self.not_statuses);
                text_condition(only, not, op, other)
            }
            Field::Moved => self.moved(op, other),
            _ => false,
        }
    }

    /// `moved OP number`, with `moved` a whole number of seconds.
    fn moved(&mut self, op: CmpOp, other: &Term) -> bool {
        let number = match other {
            Term::Literal(Literal::Int(i)) => *i as f64,
            Term::Literal(Literal::Float(f)) => *f,
            Term::Literal(Literal::Bool(b)) => f64::from(u8::from(*b)),
            _ => return false,
        };
        if !number.is_finite() || number.abs() > MOST_SECONDS {
            return false;
        }
        // In range and whole after floor or ceil: the casts are exact.
        #[allow(clippy::cast_possible_truncation)]
        let (floor, ceil) = (number.floor() as i64, number.ceil() as i64);
        match op {
            CmpOp::Gt => self.at_least(floor + 1),
            CmpOp::Ge => self.at_least(ceil),
            CmpOp::Lt => self.below(ceil),
            CmpOp::Le => self.below(floor + 1),
            CmpOp::Eq if floor == ceil => {
                self.at_least(floor);
                self.below(floor + 1);
            }
            CmpOp::Eq => self.nothing(),
            _ => return false,
        }
        true
    }

    fn at_least(&mut self, seconds: i64) {
        self.moved_at_least = Some(self.moved_at_least.map_or(seconds, |s| s.max(seconds)));
    }

    fn below(&mut self, seconds: i64) {
        self.moved_below = Some(self.moved_below.map_or(seconds, |s| s.min(seconds)));
    }
}

/// `state` or `status` compared with a literal: `==`, `!=`, `in [...]`, `not in
/// [...]`. A literal that is not a string never equals the field.
fn text_condition(
    only: &mut Option<Vec<String>>,
    not: &mut Vec<String>,
    op: CmpOp,
    other: &Term,
) -> bool {
    let strings = |items: &[Term]| -> Vec<String> {
        items
            .iter()
            .filter_map(|item| match item {
                Term::Literal(Literal::Str(s)) => Some(s.clone()),
                _ => None,
            })
            .collect()
    };
    let (allowed, excluded) = match (op, other) {
        (CmpOp::Eq, Term::Literal(Literal::Str(s))) => (Some(vec![s.clone()]), Vec::new()),
        (CmpOp::Eq, Term::Literal(_)) => (Some(Vec::new()), Vec::new()),
        (CmpOp::Ne, Term::Literal(Literal::Str(s))) => (None, vec![s.clone()]),
        (CmpOp::Ne, Term::Literal(_)) => (None, Vec::new()),
        (CmpOp::In, Term::List(items)) => (Some(strings(items)), Vec::new()),
        (CmpOp::NotIn, Term::List(items)) => (None, strings(items)),
        _ => return false,
    };
    if let Some(allowed) = allowed {
        *only = Some(match only.take() {
            None => allowed,
            Some(before) => before.into_iter().filter(|s| allowed.contains(s)).collect(),
        });
    }
    not.extend(excluded);
    true
}

/// `a OP b` as `b OP' a`; `None` for `in`, which does not turn around.
fn flipped(op: CmpOp) -> Option<CmpOp> {
    Some(match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        CmpOp::Eq => CmpOp::Eq,
        CmpOp::Ne => CmpOp::Ne,
        CmpOp::In | CmpOp::NotIn => return None,
    })
}
