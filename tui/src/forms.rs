//! The forms of `f` (pick an event, type its payload and an idempotency key) and
//! `s` (a token id and its context). Each JSON field is checked as it is typed,
//! against the workflow's schema, so a mistake shows before anything is sent.

use crossterm::event::{KeyCode, KeyEvent};
use stateous_shared::graph::{Workflow, END, OWN_EVENTS};
use stateous_shared::wire::Object;

use crate::keys::selected_or_say;
use crate::line_edit::LineEdit;
use crate::message::Command;
use crate::model::{FireForm, Mode, Model, StartForm};

/// `f`: the events the selected token's state has transitions for; with marks,
/// every event of the main workflow, for a bulk fire (the picker's token is then
/// empty: the marked tokens).
pub fn open_pick(model: &mut Model) {
    if crate::marks::has_marks(model) {
        let events: Vec<String> = model.graph.as_ref().map_or_else(Vec::new, |graph| {
            graph.main.events.keys().cloned().collect()
        });
        if events.is_empty() {
            model.say("the workflow is not read yet, or has no event", true);
            return;
        }
        model.mode = Mode::Pick {
            token: String::new(),
            events,
            at: 0,
        };
        return;
    }
    let Some(token) = selected_or_say(model) else {
        return;
    };
    let Some(graph) = &model.graph else {
        model.say("the workflow is not read yet; try again in a moment", true);
        return;
    };
    let Some((state, status)) = model
        .shown()
        .into_iter()
        .find(|t| t.token == token)
        .map(|t| (t.state.clone(), t.status.clone()))
    else {
        return;
    };
    if status != "active" && status != "paused" {
        model.say(format!("{token} is {status}: no event moves it"), true);
        return;
    }
    let mut events: Vec<String> = std::iter::once(&graph.main)
        .chain(graph.children.values())
        .find(|w| w.states.contains_key(&state))
        .map(|w| events_of(w, &state))
        .unwrap_or_default();
    if let Some((name, scope)) = model
        .own_key
        .as_ref()
        .and_then(|own| Some((own.name.clone()?, own.scope.as_ref()?)))
    {
        let here = scope.states.is_empty() || scope.states.contains(&state);
        events.retain(|event| here && scope.events.contains(event));
        if events.is_empty() {
            let sentence = format!(
                "the access key {name} may fire only {}: none of those moves {token} from {state}",
                scope.describe()
            );
            model.say(sentence, true);
            return;
        }
    }
    if events.is_empty() {
        let shown = if state == END { "END" } else { state.as_str() };
        model.say(format!("no event moves {token} from {shown}"), true);
        return;
    }
    model.mode = Mode::Pick {
        token,
        events,
        at: 0,
    };
}

/// The events with a transition from `state`, once each, in the graph's order;
/// Stateous's own events (`timeout`, `error`, ...) are left out, since only the
/// engine fires them.
pub fn events_of(workflow: &Workflow, state: &str) -> Vec<String> {
    let mut events: Vec<String> = Vec::new();
    for transition in workflow.transitions.iter().filter(|t| t.source == state) {
        let own = OWN_EVENTS.contains(&transition.event.as_str());
        if !own && !events.contains(&transition.event) {
            events.push(transition.event.clone());
        }
    }
    events
}

/// A key in the event picker.
pub fn pick(
    model: &mut Model,
    token: String,
    events: Vec<String>,
    at: usize,
    key: KeyEvent,
) -> Vec<Command> {
    let last = events.len().saturating_sub(1);
    let at = match key.code {
        KeyCode::Esc => return Vec::new(),
        KeyCode::Down | KeyCode::Char('j') => (at + 1).min(last),
        KeyCode::Up | KeyCode::Char('k') => at.saturating_sub(1),
        KeyCode::Enter => {
            let event = events.get(at).cloned().unwrap_or_default();
            model.mode = Mode::Fire(FireForm {
                token,
                event,
                payload: LineEdit::suggested("{}"),
                key: LineEdit::default(),
                on_key: false,
            });
            return Vec::new();
        }
        _ => at,
    };
    model.mode = Mode::Pick { token, events, at };
    Vec::new()
}

/// A key in the payload form: Tab switches field, Enter sends when the payload
/// fits its schema, Esc gives up.
pub fn fire(model: &mut Model, mut form: FireForm, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Esc => return Vec::new(),
        KeyCode::Tab | KeyCode::BackTab => form.on_key = !form.on_key,
        KeyCode::Enter => match payload_check(model, &form) {
            Ok(payload) if form.token.is_empty() => {
                let key = form.key.text().trim();
                let key = (!key.is_empty()).then(|| key.to_string());
                return crate::marks::open_fire(model, form.event, payload, key);
            }
            Ok(payload) => {
                let key = form.key.text().trim();
                model.say(format!("firing {} on {}...", form.event, form.token), false);
                return vec![Command::Fire {
                    token: form.token,
                    event: form.event,
                    payload,
                    key: (!key.is_empty()).then(|| key.to_string()),
                }];
            }
            Err(problem) => model.say(format!("not sent: {problem}"), true),
        },
        _ if form.on_key => {
            form.key.key(key);
        }
        _ => {
            form.payload.key(key);
        }
    }
    model.mode = Mode::Fire(form);
    Vec::new()
}

/// The payload to send, or why it cannot be sent: not a JSON object, or not what
/// the event's schema asks (the first of its problems).
pub fn payload_check(model: &Model, form: &FireForm) -> Result<Option<Object>, String> {
    let payload = json_field(form.payload.text(), "the payload")?;
    let workflow = model.graph.as_ref().and_then(|graph| {
        std::iter::once(&graph.main)
            .chain(graph.children.values())
            .find(|w| w.declares(&form.event))
    });
    if let Some(workflow) = workflow {
        if let Some(problem) = workflow
            .payload_errors(&form.event, payload.as_ref())
            .first()
        {
            return Err(problem.clone());
        }
    }
    Ok(payload)
}

/// An empty `s` form: the cursor in the id field, the context `{}`.
pub fn new_start() -> StartForm {
    StartForm {
        id: LineEdit::default(),
        context: LineEdit::suggested("{}"),
        on_context: false,
    }
}

/// A key in the start form.
pub fn start(model: &mut Model, mut form: StartForm, key: KeyEvent) -> Vec<Command> {
    match key.code {
        KeyCode::Esc => return Vec::new(),
        KeyCode::Tab | KeyCode::BackTab => form.on_context = !form.on_context,
        KeyCode::Enter => match start_check(model, &form) {
            Ok((token, context)) => {
                model.say(format!("starting {token}..."), false);
                return vec![Command::Start { token, context }];
            }
            Err(problem) => model.say(format!("not sent: {problem}"), true),
        },
        _ if form.on_context => {
            form.context.key(key);
        }
        _ => {
            form.id.key(key);
        }
    }
    model.mode = Mode::Start(form);
    Vec::new()
}

/// The token id and context to send, or why they cannot be sent. The id's own
/// rules are the daemon's to check; its refusal shows in the status line.
pub fn start_check(model: &Model, form: &StartForm) -> Result<(String, Object), String> {
    let id = form.id.text().trim();
    if id.is_empty() {
        return Err("type the new token's id".into());
    }
    let context = json_field(form.context.text(), "the context")?.unwrap_or_default();
    if let Some(graph) = &model.graph {
        let filled = graph.main.with_defaults(&context);
        if let Some(problem) = graph.main.context_errors(&filled).first() {
            return Err(problem.clone());
        }
    }
    Ok((id.to_string(), context))
}

/// A typed JSON field: nothing for an empty one, else a JSON object.
fn json_field(text: &str, name: &str) -> Result<Option<Object>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err(format!("{name} must be a JSON object")),
        Err(error) => Err(format!("{name} is not valid JSON: {error}")),
    }
}
