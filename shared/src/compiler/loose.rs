//! Transitions left out of a workflow for a mistake of their own (a misspelt end,
//! an undeclared event, a guard that does not parse), kept as far as they were
//! understood. The whole-graph checks read them so that one compile lists every
//! problem of the file but none that only follows from such a mistake: a state
//! reached only by a misspelt transition is not also called unreachable.

use super::declare::Flow;
use super::flow::RawTransition;
use crate::graph::{END, START};

/// A transition left out. An end is the state it names, or the state it most
/// likely means when it names none (`reviw` for `review`); `None` when no state is
/// near enough to tell. `event` is `None` when the event is the mistake.
#[derive(Debug, Clone)]
pub(crate) struct Loose {
    pub(crate) source: Option<String>,
    pub(crate) target: Option<String>,
    pub(crate) event: Option<String>,
}

/// How many edits (letters added, removed or changed) a misspelt name may be from
/// the state it is taken to mean.
const NEAR: usize = 2;

impl Loose {
    /// The rest of `raw`, with the ends found (`source`, `target`) or guessed.
    pub(crate) fn new(
        flow: &Flow,
        raw: &RawTransition,
        source: Option<String>,
        target: Option<String>,
        event: Option<String>,
    ) -> Loose {
        Loose {
            source: source.or_else(|| nearest(flow, &raw.from, START, "START")),
            target: target.or_else(|| nearest(flow, &raw.to, END, "END")),
            event,
        }
    }

    /// Whether this transition may leave `state` (its source is that or unknown).
    pub(crate) fn may_leave(&self, state: &str) -> bool {
        self.source.as_deref().is_none_or(|s| s == state)
    }

    /// Whether this transition may be taken on `event` (its event is that or unknown).
    pub(crate) fn may_take(&self, event: &str) -> bool {
        self.event.as_deref().is_none_or(|e| e == event)
    }

    /// Whether this transition may lead into `state` (its target is that or unknown).
    pub(crate) fn may_enter(&self, state: &str) -> bool {
        self.target.as_deref().is_none_or(|t| t == state)
    }
}

/// The one state of `flow` (or the graph's own end, `own`, written `written`)
/// within [`NEAR`] edits of `name`, ignoring case; none when there is none or
/// more than one at the least distance.
fn nearest(flow: &Flow, name: &str, own: &str, written: &str) -> Option<String> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, String)> = None;
    let mut tied = false;
    let candidates = flow
        .states
        .iter()
        .map(|s| (s.name.as_str(), s.name.as_str()))
        .chain([(written, own)]);
    for (spelled, graph_name) in candidates {
        let distance = strsim::levenshtein(&lower, &spelled.to_lowercase());
        if distance > NEAR {
            continue;
        }
        match &best {
            Some((least, _)) if distance > *least => {}
            Some((least, _)) if distance == *least => tied = true,
            _ => {
                best = Some((distance, graph_name.to_owned()));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, name)| name)
}
