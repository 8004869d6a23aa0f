//! Whole-graph checks: the mistakes seen only when the workflow is complete
//! (`docs/reference/cli.md`, `compile`): nesting, START and END, reachability,
//! fallbacks, overlapping guards, guards against the context, parallel states'
//! inputs and exits, counted events, a child's START, token-id room and schemas.

use std::collections::BTreeSet;

use serde_json::Value;

use super::declare::{Declared, Edge, Flow};
use super::overlap_check;
use crate::graph::{END, ERROR, JOINED, START, TIMEOUT};
use crate::pyrepr::repr_str;
use crate::wire::Object;

pub use crate::limits::MAX_TOKEN_ID;

/// A child's id holds its parent's visit of the parallel state; the id-length check
/// counts visits of up to this many digits.
const VISIT_DIGITS: usize = 3;

/// The characters of a top token's id that each nesting must leave room for.
const TOP_ID_ROOM: usize = 64;

/// Every whole-graph problem of the declared file, in the reference's order.
pub(crate) fn validate(declared: &Declared) -> Vec<String> {
    let mut problems = nesting(declared);
    if !problems.is_empty() {
        // A workflow that runs itself would make the checks below loop.
        return problems;
    }
    let children = nested(declared);
    for unused in declared
        .children
        .iter()
        .filter(|c| !children.iter().any(|n| n.name == c.name))
    {
        problems.push(format!(
            "the workflow '{}' under 'workflows' is run by no parallel state; run it or remove it",
            unused.name
        ));
    }
    problems.extend(flow_problems(declared, &declared.main));
    for child in &children {
        let mut own = flow_problems(declared, child);
        own.extend(start_fallback(child));
        problems.extend(
            own.into_iter()
                .map(|p| format!("in child workflow '{}': {p}", child.name)),
        );
    }
    problems.extend(id_length(declared));
    problems.extend(json_schemas(&declared.schemas));
    problems
}

/// The child workflows the main workflow's parallel states run, and theirs: each
/// once, in the order first named. Only for a file whose nesting is valid.
pub(crate) fn nested(declared: &Declared) -> Vec<&Flow> {
    fn visit<'a>(declared: &'a Declared, current: &Flow, found: &mut Vec<&'a Flow>) {
        for state in &current.states {
            for name in &state.parallel {
                if let Some(child) = declared.flow(name) {
                    if !found.iter().any(|f| f.name == child.name) {
                        found.push(child);
                        visit(declared, child, found);
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    visit(declared, &declared.main, &mut found);
    found
}

/// Whether no workflow runs itself further down, so that [`nested`] ends.
pub(crate) fn nests(declared: &Declared) -> bool {
    nesting(declared).is_empty()
}

/// No workflow runs itself further down.
fn nesting(declared: &Declared) -> Vec<String> {
    fn visit(declared: &Declared, current: &Flow, path: &mut Vec<String>, out: &mut Vec<String>) {
        for state in &current.states {
            for name in &state.parallel {
                if path.contains(name) {
                    out.push(format!(
                        "state '{}' of '{}' runs '{name}', which runs '{}' in turn; a \
                         workflow cannot run itself",
                        state.name, current.name, current.name
                    ));
                } else if let Some(child) = declared.flow(name) {
                    path.push(name.clone());
                    visit(declared, child, path, out);
                    path.pop();
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut path = vec![declared.main.name.clone()];
    visit(declared, &declared.main, &mut path, &mut out);
    out
}

/// The checks each workflow gets, main or child.
fn flow_problems(declared: &Declared, flow: &Flow) -> Vec<String> {
    let name = &flow.name;
    if flow.states.is_empty() {
        return vec![format!("workflow '{name}' has no states")];
    }
    let mut problems = Vec::new();
    // A transition left out for its own mistake may be the one each check looks for.
    let loose_from_start = flow.loose.iter().any(|l| l.may_leave(START));
    let loose_into_end = flow.loose.iter().any(|l| l.may_enter(END));
    if !flow.transitions.iter().any(|e| e.source == START) && !loose_from_start {
        problems.push(format!(
            "workflow '{name}' has no transition from START; add one to the state each \
             token begins in, e.g. {{from: START, to: <state>}}"
        ));
    }
    if !flow.transitions.iter().any(|e| e.target == END) && !loose_into_end {
        problems.push(format!(
            "workflow '{name}' has no transition into END, so none of its tokens can \
             complete; add one, e.g. {{from: <state>, to: END, on: <event>}}"
        ));
    }
    problems.extend(unreachable(flow));
    problems.extend(fallbacks(flow));
    problems.extend(overlap_check(declared, flow));
    problems.extend(context_keys(declared, flow));
    problems.extend(inputs(declared, flow));
    problems.extend(parallel_exits(flow));
    problems.extend(counted_events(flow));
    problems
}

/// The states no transition leads to from START. A transition left out counts with
/// the ends it names or most likely means; one whose target cannot be told may have
/// meant any state, so then none is called unreachable.
fn unreachable(flow: &Flow) -> Vec<String> {
    if flow.loose.iter().any(|l| l.target.is_none()) {
        return Vec::new();
    }
    let known = flow
        .transitions
        .iter()
        .map(|e| (Some(e.source.as_str()), e.target.as_str()));
    let loose = flow
        .loose
        .iter()
        .filter_map(|l| Some((l.source.as_deref(), l.target.as_deref()?)));
    let edges: Vec<(Option<&str>, &str)> = known.chain(loose).collect();
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    // A transition whose source cannot be told is taken to be reached.
    let mut frontier: Vec<&str> = edges
        .iter()
        .filter(|(source, _)| source.is_none())
        .map(|(_, target)| *target)
        .chain([START])
        .collect();
    reached.extend(frontier.iter().copied());
    while let Some(current) = frontier.pop() {
        for (_, target) in edges.iter().filter(|(s, _)| *s == Some(current)) {
            if reached.insert(target) {
                frontier.push(target);
            }
        }
    }
    flow.states
        .iter()
        .filter(|s| !reached.contains(s.name.as_str()))
        .map(|s| format!("state '{}' cannot be reached from START", s.name))
        .collect()
}

/// Beside guarded transitions, an unguarded one must be the marked fallback.
fn fallbacks(flow: &Flow) -> Vec<String> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for edge in &flow.transitions {
        let key = (edge.source.as_str(), edge.event.as_str());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut problems = Vec::new();
    for (source, event) in groups {
        if flow
            .loose
            .iter()
            .any(|l| l.may_leave(source) && l.may_take(event))
        {
            // A member was left out for its own mistake; whether it was guarded is
            // part of what is unknown.
            continue;
        }
        let members: Vec<&Edge> = flow
            .transitions
            .iter()
            .filter(|e| e.source == source && e.event == event)
            .collect();
        let guarded = members.iter().any(|e| e.when.is_some());
        let unmarked = members.iter().any(|e| e.when.is_none() && !e.otherwise);
        if guarded && unmarked {
            problems.push(format!(
                "{} has guarded transitions and an unguarded one; mark the unguarded one \
                 otherwise: true",
                group(source, event)
            ));
        }
    }
    problems
}

fn context_keys(declared: &Declared, flow: &Flow) -> Vec<String> {
    let Some(model) = known_context(declared, flow) else {
        return Vec::new();
    };
    let fields = properties_of(&declared.schemas, model);
    let mut problems = Vec::new();
    for edge in flow.transitions.iter().filter(|e| e.when.is_some()) {
        for key in edge
            .reads
            .context_keys
            .iter()
            .filter(|k| !fields.contains(*k))
        {
            problems.push(format!(
                "{} reads ctx['{key}'], which {model} does not have",
                place(edge)
            ));
        }
    }
    problems
}

/// The name of `flow`'s context schema when it has one that is known; an unknown one
/// is listed where it is declared, and what it would hold is not checked against.
fn known_context<'a>(declared: &Declared, flow: &'a Flow) -> Option<&'a str> {
    let model = flow.context.as_deref()?;
    super::declare::known_object(&declared.schemas, model).map(|_| model)
}

/// A parallel state's inputs are keys of the parent's context, and give each child
/// every field its context requires.
fn inputs(declared: &Declared, flow: &Flow) -> Vec<String> {
    let mut problems = Vec::new();
    for state in &flow.states {
        if let Some(model) = known_context(declared, flow) {
            let fields = properties_of(&declared.schemas, model);
            for key in state.inputs.iter().filter(|k| !fields.contains(*k)) {
                problems.push(format!(
                    "state '{}' hands on '{key}', which {model} does not have",
                    state.name
                ));
            }
        }
        for child in state.parallel.iter().filter_map(|n| declared.flow(n)) {
            let Some(model) = known_context(declared, child) else {
                continue;
            };
            for key in required_of(&declared.schemas, model) {
                if !state.inputs.contains(&key) {
                    problems.push(format!(
                        "state '{}' does not hand on '{key}', which '{}' requires; add it \
                         to inputs",
                        state.name, child.name
                    ));
                }
            }
        }
    }
    problems
}

/// A parallel state has no task: it leaves on `joined`, never on `error`.
fn parallel_exits(flow: &Flow) -> Vec<String> {
    let mut problems = Vec::new();
    for state in flow.states.iter().filter(|s| !s.parallel.is_empty()) {
        if flow.loose.iter().any(|l| l.may_leave(&state.name)) {
            continue;
        }
        let leaves_on = |event: &str| {
            flow.transitions
                .iter()
                .any(|e| e.source == state.name && e.event == event)
        };
        if !leaves_on(JOINED) {
            problems.push(format!(
                "parallel state '{}' needs a transition on '{JOINED}'",
                state.name
            ));
        }
        if leaves_on(ERROR) {
            problems.push(format!(
                "parallel state '{}' has no task, so '{ERROR}' can never fire; check \
                 'branches' on '{JOINED}'",
                state.name
            ));
        }
    }
    problems
}

fn counted_events(flow: &Flow) -> Vec<String> {
    let known = |event: &str| {
        [TIMEOUT, ERROR, JOINED].contains(&event) || flow.events.iter().any(|e| e.name == event)
    };
    let mut problems = Vec::new();
    for edge in &flow.transitions {
        let Some(guard) = &edge.when else { continue };
        for event in edge.reads.events.iter().filter(|e| !known(e)) {
            problems.push(format!(
                "guard {} counts '{event}', which is not an event",
                repr_str(&guard.text)
            ));
        }
    }
    problems
}

/// A child's start is never refused to anyone, so one transition from START holds
/// always.
fn start_fallback(child: &Flow) -> Option<String> {
    if child.loose.iter().any(|l| l.may_leave(START)) {
        return None;
    }
    let mut starts = child
        .transitions
        .iter()
        .filter(|e| e.source == START)
        .peekable();
    starts.peek()?;
    starts.all(|e| e.when.is_some()).then(|| {
        "START has no fallback: the parent's state starts a child workflow, and no one \
         hears when no guard holds; leave one transition from START without a guard, or \
         mark one otherwise: true"
            .to_owned()
    })
}

/// A child's id is `<parent>.<state>.<visit>.<workflow>`; the nesting must leave
/// room for a top id of `TOP_ID_ROOM` characters.
fn id_length(declared: &Declared) -> Option<String> {
    fn suffix(declared: &Declared, flow: &Flow) -> usize {
        let mut longest = 0;
        for state in &flow.states {
            for child in state.parallel.iter().filter_map(|n| declared.flow(n)) {
                let own = 1 + state.name.len() + 1 + VISIT_DIGITS + 1 + child.name.len();
                longest = longest.max(own + suffix(declared, child));
            }
        }
        longest
    }
    let longest = suffix(declared, &declared.main);
    (longest > MAX_TOKEN_ID - TOP_ID_ROOM).then(|| {
        format!(
            "the child token ids can be {longest} characters longer than the top token's \
             id, so with a top id of {TOP_ID_ROOM} characters they can pass {MAX_TOKEN_ID}; \
             use shorter state and workflow names, or nest less"
        )
    })
}

/// Each schema compiles as JSON Schema (Draft 2020-12), its `$ref`s resolved.
fn json_schemas(schemas: &Object) -> Vec<String> {
    schemas
        .keys()
        .filter_map(|name| crate::graph::compile_model(name, schemas).err())
        .collect()
}

/// How a message names a state and event whose transitions are checked together.
pub(crate) fn group(source: &str, event: &str) -> String {
    if source == START {
        "START".to_owned()
    } else {
        format!("'{event}' from '{source}'")
    }
}

/// How a message names one transition.
pub(crate) fn place(edge: &Edge) -> String {
    let target = if edge.target == END {
        "END".to_owned()
    } else {
        format!("'{}'", edge.target)
    };
    if edge.source == START {
        format!("transition START --> {target}")
    } else {
        format!("transition '{}' --{}--> {target}", edge.source, edge.event)
    }
}

/// The field names a model's schema declares in `properties`.
pub(crate) fn properties_of(schemas: &Object, model: &str) -> BTreeSet<String> {
    schemas
        .get(model)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The field names a model's schema lists in `required`, in order.
pub(crate) fn required_of(schemas: &Object, model: &str) -> Vec<String> {
    schemas
        .get(model)
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
