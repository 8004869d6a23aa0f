//! From the YAML's shape to a workflow model: every check the reference makes as a
//! workflow is declared (`docs/reference/cli.md`, `compile`): names, durations, retries, parallel
//! settings, events, and each transition's ends, event and guard. Problems are
//! collected, not raised, so that one compile lists them all.

use std::cell::Cell;

use super::flow::{Ordered, RawBody, RawEvent, RawFlow, RawState, RawTransition};
use crate::durations::parse_duration;
use crate::graph::{END, ERROR, JOINED, START, STARTED, TIMEOUT};
use crate::guards::{parse_guard, Guard, Reads};
use crate::pyrepr::repr_str;
use crate::wire::Object;

pub(crate) use super::loose::Loose;

/// A state of a workflow.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) name: String,
    pub(crate) timeout: Option<String>,
    pub(crate) retries: u32,
    pub(crate) parallel: Vec<String>,
    pub(crate) join: String,
    pub(crate) inputs: Vec<String>,
}

/// A declared event and the name of its payload's schema.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) name: String,
    pub(crate) payload: Option<String>,
}

/// A transition; START and END are `__start__` and `__end__`, and a transition from
/// START is taken on `__started__`.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub(crate) source: String,
    pub(crate) target: String,
    pub(crate) event: String,
    pub(crate) when: Option<Guard>,
    /// What the guard reads; empty without a guard.
    pub(crate) reads: Reads,
    pub(crate) otherwise: bool,
}

/// One workflow, as declared.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub(crate) name: String,
    pub(crate) context: Option<String>,
    pub(crate) states: Vec<State>,
    pub(crate) events: Vec<Event>,
    pub(crate) transitions: Vec<Edge>,
    /// The transitions left out for a mistake of their own, kept as far as they were
    /// understood so that the whole-graph checks do not report what follows from them.
    pub(crate) loose: Vec<Loose>,
}

impl Flow {
    /// The state called `name`.
    pub(crate) fn state(&self, name: &str) -> Option<&State> {
        self.states.iter().find(|s| s.name == name)
    }

    /// The payload schema of `event`: none for Stateous's own events.
    pub(crate) fn payload(&self, event: &str) -> Option<&str> {
        let declared = self.events.iter().find(|e| e.name == event)?;
        declared.payload.as_deref()
    }
}

/// The whole file, declared: the main workflow, the child workflows in the file's
/// order, and the schemas by name in the file's order.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub(crate) main: Flow,
    pub(crate) children: Vec<Flow>,
    pub(crate) schemas: Object,
    /// False when a parallel state names no child workflow it may run: which
    /// workflows nest is then unknown, and the whole-graph checks would report what
    /// follows from that mistake rather than mistakes of their own. Other mistakes
    /// leave the graph checkable: a transition left out is kept as a [`Loose`] one,
    /// and a context or payload that is no schema is read as unknown.
    pub(crate) complete: bool,
}

impl Declared {
    /// The workflow called `name`: the main one or a child.
    pub(crate) fn flow(&self, name: &str) -> Option<&Flow> {
        std::iter::once(&self.main)
            .chain(&self.children)
            .find(|f| f.name == name)
    }
}

/// The rule for a workflow, state or event name (reference `model/workflow.NAME`).
pub(crate) fn name_problem(what: &str, name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if first_ok && rest_ok && name.len() <= 64 {
        return None;
    }
    Some(format!(
        "the {what} name '{name}' is not a name: a letter a-z first, then a-z, 0-9, '_' \
         or '-', 64 characters at most"
    ))
}

/// Declare the file's workflows; the problems found, in the file's order.
pub(crate) fn declare(mut raw: RawFlow) -> (Declared, Vec<String>) {
    let mut problems = Vec::new();
    problems.extend(name_problem("workflow", &raw.workflow));
    let body = raw.take_body();
    let schemas: Object = raw.schemas.0.drain(..).collect();
    let child_names: Vec<String> = raw.workflows.0.iter().map(|(n, _)| n.clone()).collect();
    let scope = Scope {
        main: &raw.workflow,
        children: &child_names,
        schemas: &schemas,
        complete: Cell::new(true),
    };
    let main = scope.flow(&raw.workflow, body, &mut problems);
    let mut children = Vec::new();
    for (name, body) in std::mem::take(&mut raw.workflows.0) {
        let mut own = Vec::new();
        if name == raw.workflow {
            own.push(format!(
                "two different workflows are named '{name}'; give the child its own name"
            ));
        }
        own.extend(name_problem("workflow", &name));
        let flow = scope.flow(&name, body, &mut own);
        problems.extend(
            own.into_iter()
                .map(|p| format!("in child workflow '{name}': {p}")),
        );
        children.push(flow);
    }
    let complete = scope.complete.get();
    let declared = Declared {
        main,
        children,
        schemas,
        complete,
    };
    (declared, problems)
}

/// What a workflow's declarations may name, and whether all of it was kept.
struct Scope<'a> {
    main: &'a str,
    children: &'a [String],
    schemas: &'a Object,
    /// Set to false by a mistake that leaves part of the graph out
    /// ([`Declared::complete`]).
    complete: Cell<bool>,
}

impl Scope<'_> {
    /// A problem that also leaves part of the graph out or unknown.
    fn left_out(&self, problem: String, problems: &mut Vec<String>) {
        self.complete.set(false);
        problems.push(problem);
    }

    fn flow(&self, name: &str, body: RawBody, problems: &mut Vec<String>) -> Flow {
        if let Some(model) = &body.context {
            match self.schemas.get(model) {
                None => problems.push(format!(
                    "the context '{model}' is not a schema under 'schemas'"
                )),
                Some(schema) if !describes_an_object(schema) => problems.push(format!(
                    "the context '{model}' must be a schema of an object (type: object)"
                )),
                Some(_) => {}
            }
        }
        let states = self.states(name, body.states, problems);
        let events = self.events(body.events, problems);
        let mut flow = Flow {
            name: name.to_owned(),
            context: body.context,
            states,
            events,
            transitions: Vec::new(),
            loose: Vec::new(),
        };
        for (index, raw) in body.transitions.into_iter().enumerate() {
            match transition(self, &flow, index + 1, raw, problems) {
                Ok(edge) => flow.transitions.push(edge),
                Err(loose) => flow.loose.push(loose),
            }
        }
        flow
    }

    fn states(
        &self,
        workflow: &str,
        raw: Ordered<Option<RawState>>,
        problems: &mut Vec<String>,
    ) -> Vec<State> {
        let mut states = Vec::new();
        for (name, spec) in raw.0 {
            if ["START", "END", START, END].contains(&name.as_str()) {
                problems.push(format!(
                    "state '{name}' is Stateous's own: transitions name START and END \
                     without declaring them"
                ));
                continue;
            }
            problems.extend(name_problem("state", &name));
            let spec = spec.unwrap_or_default();
            let mut own = Vec::new();
            let state = self.state(workflow, &name, spec, &mut own);
            problems.extend(own.into_iter().map(|p| format!("state '{name}': {p}")));
            states.push(state);
        }
        states
    }

    /// One state's settings, with the rules for timeouts, retries and parallel states.
    fn state(
        &self,
        workflow: &str,
        name: &str,
        spec: RawState,
        problems: &mut Vec<String>,
    ) -> State {
        if let Some(timeout) = &spec.timeout {
            if let Err(why) = parse_duration(timeout) {
                problems.push(why);
            }
        }
        let retries = spec.retries.unwrap_or(0);
        let retries = u32::try_from(retries).unwrap_or_else(|_| {
            problems.push(format!(
                "retries is a whole number, 0 or more, not {retries}"
            ));
            0
        });
        let parallel = spec.parallel.unwrap_or_default();
        for (i, child) in parallel.iter().enumerate() {
            if child == workflow || child == self.main {
                self.left_out(
                    format!("it runs '{child}': a workflow cannot run itself"),
                    problems,
                );
            } else if !self.children.contains(child) {
                self.left_out(
                    format!("it runs '{child}', which is not a workflow under 'workflows'"),
                    problems,
                );
            } else if parallel[..i].contains(child) {
                self.left_out(
                    format!(
                        "it runs the workflow '{child}' twice; each child needs a workflow \
                         of its own"
                    ),
                    problems,
                );
            }
        }
        if !parallel.is_empty() && retries > 0 {
            problems.push("a parallel state has no task, and so no retries".into());
        }
        let join = spec.join.unwrap_or_else(|| "all".into());
        if join != "all" && join != "any" {
            problems.push(format!("join is 'all' or 'any', not '{join}'"));
        }
        let inputs = spec.inputs.unwrap_or_default();
        if inputs.iter().any(String::is_empty) {
            problems.push("inputs is a list of context keys, e.g. inputs: [repo]".into());
        }
        if parallel.is_empty() && (join != "all" || !inputs.is_empty()) {
            problems.push("join and inputs belong to a parallel state; add parallel: [...]".into());
        }
        State {
            name: name.to_owned(),
            timeout: spec.timeout,
            retries,
            parallel,
            join,
            inputs,
        }
    }

    fn events(&self, raw: Ordered<Option<RawEvent>>, problems: &mut Vec<String>) -> Vec<Event> {
        let mut events = Vec::new();
        for (name, spec) in raw.0 {
            if [TIMEOUT, ERROR, JOINED, STARTED].contains(&name.as_str()) {
                problems.push(format!(
                    "event '{name}' is Stateous's own: transitions name it without declaring it"
                ));
                continue;
            }
            problems.extend(name_problem("event", &name));
            let payload = spec.unwrap_or_default().payload;
            if let Some(model) = &payload {
                match self.schemas.get(model) {
                    None => problems.push(format!(
                        "event '{name}': the payload '{model}' is not a schema under 'schemas'"
                    )),
                    Some(schema) if !describes_an_object(schema) => problems.push(format!(
                        "event '{name}': the payload '{model}' must be a schema of an object \
                         (type: object)"
                    )),
                    Some(_) => {}
                }
            }
            events.push(Event { name, payload });
        }
        events
    }
}

/// One transition, or the [`Loose`] rest of it when its ends, its event or its
/// guard's text are wrong (the problem is listed). A guard's other problems are
/// listed and it is kept.
fn transition(
    scope: &Scope<'_>,
    flow: &Flow,
    number: usize,
    raw: RawTransition,
    problems: &mut Vec<String>,
) -> Result<Edge, Loose> {
    let at = format!("transition {number} ({} -> {})", raw.from, raw.to);
    let source = end_name(flow, &raw.from, true, &at, problems);
    let target = end_name(flow, &raw.to, false, &at, problems);
    let (Some(source), Some(target)) = (source.clone(), target.clone()) else {
        return Err(Loose::new(flow, &raw, source, target, raw.on.clone()));
    };
    let Some(event) = taken_on(flow, &source, &target, raw.on.as_deref(), &at, problems) else {
        return Err(Loose::new(flow, &raw, Some(source), Some(target), None));
    };
    if raw.when.is_some() && raw.otherwise {
        problems.push(format!(
            "{at}: a fallback (otherwise: true) has no guard; drop 'when'"
        ));
    }
    let mut edge = Edge {
        source,
        target,
        event,
        when: None,
        reads: Reads::default(),
        otherwise: raw.otherwise,
    };
    match raw.when.as_deref().map(parse_guard) {
        Some(Ok(guard)) => {
            edge.reads = guard.reads.clone();
            guard_problems(scope, flow, &edge, &guard.text, problems);
            edge.when = Some(guard);
        }
        Some(Err(error)) => {
            // Kept, it would look unguarded to the checks of the next transitions.
            problems.push(format!("{at}: {error}"));
            let (source, target, event) = (edge.source, edge.target, edge.event);
            return Err(Loose::new(
                flow,
                &raw,
                Some(source),
                Some(target),
                Some(event),
            ));
        }
        None => {
            let twin = flow.transitions.iter().any(|other| {
                other.source == edge.source && other.event == edge.event && other.when.is_none()
            });
            if twin {
                let group = super::validate::group(&edge.source, &edge.event);
                problems.push(format!(
                    "{group} is ambiguous: two transitions have no guard; give one a \
                     'when', and mark the fallback otherwise: true"
                ));
            }
        }
    }
    Ok(edge)
}

/// The graph name of a transition's end: a state of the flow, START as a source or
/// END as a target.
fn end_name(
    flow: &Flow,
    name: &str,
    is_source: bool,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let mut refuse = |why: String| {
        problems.push(format!("{at}: {why}"));
        None
    };
    match (name, is_source) {
        ("START", true) => Some(START.to_owned()),
        ("END", false) => Some(END.to_owned()),
        ("START", false) => {
            refuse("nothing may lead into START; a token is there only as it starts".into())
        }
        ("END", true) => refuse("nothing may leave END; entering it completes the token".into()),
        _ if flow.state(name).is_some() => Some(name.to_owned()),
        _ => refuse(format!(
            "'{name}' is not a state of workflow '{}' (write START and END in capitals)",
            flow.name
        )),
    }
}

/// The event a transition is taken on, after the rules for START and `on`.
fn taken_on(
    flow: &Flow,
    source: &str,
    target: &str,
    on: Option<&str>,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let mut refuse = |why: String| {
        problems.push(format!("{at}: {why}"));
        None
    };
    if source == START {
        if target == END {
            return refuse(
                "a token cannot go from START straight to END; it needs a state to be in".into(),
            );
        }
        if on.is_some() {
            return refuse(
                "a transition from START has no 'on': the engine takes it as the token \
                 starts; choose among several with 'when' and 'otherwise: true'"
                    .into(),
            );
        }
        return Some(STARTED.to_owned());
    }
    let Some(event) = on else {
        return refuse(format!(
            "a transition from '{source}' needs 'on': the event that takes it"
        ));
    };
    if event == STARTED {
        return refuse(format!(
            "'{STARTED}' is Stateous's own; only START's transitions are taken on it"
        ));
    }
    let own = [TIMEOUT, ERROR, JOINED].contains(&event);
    if !own && !flow.events.iter().any(|e| e.name == event) {
        return refuse(format!(
            "event '{event}' is not declared in workflow '{}'",
            flow.name
        ));
    }
    let parallel = flow.state(source).is_some_and(|s| !s.parallel.is_empty());
    if event == JOINED && !parallel {
        return refuse(format!(
            "only a parallel state is left on '{JOINED}', and '{source}' has no parallel: [...]"
        ));
    }
    Some(event.to_owned())
}

/// The guard's reads against its event: `branches` only on `joined`, payload fields
/// that the payload's schema has, and START's guards read the context only.
fn guard_problems(
    scope: &Scope<'_>,
    flow: &Flow,
    edge: &Edge,
    text: &str,
    problems: &mut Vec<String>,
) {
    let reads = &edge.reads;
    let shown = repr_str(text);
    if reads.branches && edge.event != JOINED {
        problems.push(format!(
            "guard {shown}: branches.all() and branches.any() belong to transitions on '{JOINED}'"
        ));
    }
    if edge.source == START {
        if !reads.payload_fields.is_empty() {
            problems.push(format!(
                "guard {shown}: START's guards read the context only; a starting token \
                 has no event, and so no payload"
            ));
        }
        if !reads.events.is_empty() {
            problems.push(format!(
                "guard {shown}: START's guards cannot count events; nothing has happened yet"
            ));
        }
        return;
    }
    let payload = flow.payload(&edge.event);
    if payload.is_some_and(|model| known_object(scope.schemas, model).is_none()) {
        // The payload's schema is listed as missing or wrong; what it would have is
        // unknown, so its fields are not checked against it.
        return;
    }
    let fields = payload.map(|model| super::validate::properties_of(scope.schemas, model));
    for field in &reads.payload_fields {
        if !fields.as_ref().is_some_and(|f| f.contains(field)) {
            problems.push(format!(
                "guard {shown}: the payload of '{}' has no field '{field}'",
                edge.event
            ));
        }
    }
}

/// The schema called `model`, when there is one and it can describe an object; a
/// context or payload without one is listed as a problem where it is declared.
pub(crate) fn known_object<'a>(schemas: &'a Object, model: &str) -> Option<&'a serde_json::Value> {
    schemas
        .get(model)
        .filter(|schema| describes_an_object(schema))
}

/// Whether a schema can describe a JSON object, as every context and payload is:
/// its `type`, if it names one, is or includes `object`. A `$ref`, a schema
/// without `type`, or a `type` that is not JSON Schema (reported by the schema
/// check) is taken as it is.
fn describes_an_object(schema: &serde_json::Value) -> bool {
    match schema.get("type") {
        Some(serde_json::Value::String(kind)) => kind == "object",
        Some(serde_json::Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
        _ => true,
    }
}
