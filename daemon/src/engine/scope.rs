//! The scope of a scoped access key against the graph and the token
//! (`docs/how-to/approve-with-keys.md`): when the key is made, every name it gives
//! must be the served graph's; when it fires, the token must be in one of its
//! states and match its filter, as the token is in the fire's own transaction.

use std::collections::BTreeSet;

use stateous_shared::refusal::{Code, Refusal};

use super::select::{facts, unknown_name, Selection};
use super::{py, Rules, OWN_EVENTS};
use crate::store::TokenRow;
use crate::validated::FireScope;

/// Why `scope` cannot mean what it says: it names an event that no workflow of
/// the served graphs declares (or one of Stateous's own), a state no workflow has,
/// or a filter that names such a state or workflow. 422 `invalid_argument`;
/// `None` when every name is the graph's.
pub fn unknown_names(rules: &Rules, scope: &FireScope) -> Option<Refusal> {
    let workflows: Vec<_> = rules
        .graphs()
        .into_iter()
        .flat_map(|graph| std::iter::once(&graph.main).chain(graph.children.values()))
        .collect();
    let events: BTreeSet<&str> = workflows
        .iter()
        .flat_map(|workflow| workflow.events.keys())
        .map(String::as_str)
        .collect();
    if let Some(event) = scope
        .events
        .iter()
        .find(|event| OWN_EVENTS.contains(&event.as_str()) || !events.contains(event.as_str()))
    {
        let known: Vec<&str> = events.into_iter().collect();
        let sentence = format!(
            "no workflow of the served graph has an event {} that a key may fire (its events: {})",
            py(event),
            known.join(", ")
        );
        return Some(Refusal::new(Code::InvalidArgument, sentence));
    }
    let mut named = scope.states.iter().map(|state| Selection {
        filter: None,
        status: None,
        state: Some(state.clone()),
        parent: None,
        live_only: false,
    });
    if let Some(refused) = named.find_map(|selection| unknown_name(rules, &selection)) {
        return Some(refused);
    }
    let filter = Selection {
        filter: scope.filter.clone(),
        status: None,
        state: None,
        parent: None,
        live_only: false,
    };
    unknown_name(rules, &filter)
}

/// Why the scoped key may not fire `event` at the token `row` as it is now (at
/// `now`): the event is not the scope's, the token is in none of its states, or
/// the filter does not match it; `None` when it may. A fire refused for this
/// writes nothing: it was never the key's to try.
pub fn out_of_scope(
    rules: &Rules,
    row: &TokenRow,
    event: &str,
    scope: &FireScope,
    now: i64,
) -> Option<String> {
    if let Some(refused) = scope.refuses_event(event) {
        return Some(refused.error);
    }
    let outside = if !scope.states.is_empty() && !scope.states.contains(&row.state) {
        format!("{} is in {}", py(&row.token), row.state)
    } else if scope
        .filter
        .as_ref()
        .is_some_and(|filter| !filter.matches(&facts(rules, row, now)))
    {
        format!("{} does not match the filter", py(&row.token))
    } else {
        return None;
    };
    Some(format!(
        "the access key {} may fire only {}; {outside}",
        scope.key, scope.words
    ))
}
