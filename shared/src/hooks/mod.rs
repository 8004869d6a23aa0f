//! Webhooks in: the hooks file of `stateous serve --hooks FILE`
//! (`docs/reference/files.md`, "The hooks file"). Each top-level key is a hook,
//! served at `POST /hooks/NAME`: how it checks a delivery's signature, and the
//! templates that make a token, an event, an idempotency key and a payload of it.
//!
//! Here: reading the file with every problem at once ([`parse`]), checking it
//! against a graph ([`check_against`]) and the environment ([`keys`]), the
//! templates (`template.rs`) and the signatures (`sign.rs`). No environment is read
//! and no clock: the caller passes them in.

pub mod sign;
pub mod template;

use serde_json::{Map, Value};

use crate::graph::Graph;
pub use sign::{BadSignature, Verify};
pub use template::{Delivery, Missing, Template};

/// The longest hook name; names are letters, digits, `-` and `_`.
pub const MAX_NAME: usize = 64;

/// One hook of the file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    /// Its name: the last segment of its path.
    pub name: String,
    /// How a delivery is checked.
    pub verify: Verify,
    /// The environment variable that holds the secret (none for `verify: none`).
    pub secret_env: Option<String>,
    /// A second variable, the secret being rotated out: a delivery signed with
    /// either is accepted.
    pub secret_env_previous: Option<String>,
    /// The idempotency key: by default the delivery id of the kind
    /// (`{header.X-GitHub-Delivery}`, `{header.webhook-id}`).
    pub key: Template,
    /// The token's id.
    pub token: Template,
    /// The event, before `events`.
    pub event: Template,
    /// Renames: an event the template gives, and the event fired for it; `None`
    /// (null in the file) means the hook ignores it (202).
    pub events: Vec<(String, Option<String>)>,
    /// The payload; none fires without one.
    pub payload: Option<Template>,
    /// The context of a token started when the delivery's token is missing.
    pub start: Option<Shape>,
}

/// A JSON value whose strings may be templates (the `start.context` of a hook).
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A value without templates.
    Literal(Value),
    /// A string with placeholders.
    Text(Template),
    /// An object.
    Object(Vec<(String, Shape)>),
    /// A list.
    List(Vec<Shape>),
}

impl Shape {
    fn of(value: &Value, problems: &mut Vec<String>, at: &str) -> Shape {
        match value {
            Value::String(text) if text.contains(['{', '}']) => match Template::parse(text) {
                Ok(template) => Shape::Text(template),
                Err(problem) => {
                    problems.push(format!("{at}: {problem}"));
                    Shape::Literal(Value::Null)
                }
            },
            Value::Object(map) => Shape::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Shape::of(v, problems, &format!("{at}.{k}"))))
                    .collect(),
            ),
            Value::Array(items) => Shape::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Shape::of(v, problems, &format!("{at}.{i}")))
                    .collect(),
            ),
            other => Shape::Literal(other.clone()),
        }
    }

    /// The value for `delivery`.
    pub fn render(&self, delivery: &Delivery) -> Result<Value, Missing> {
        Ok(match self {
            Shape::Literal(value) => value.clone(),
            Shape::Text(template) => template.render(delivery)?,
            Shape::Object(fields) => {
                let mut map = Map::new();
                for (name, shape) in fields {
                    map.insert(name.clone(), shape.render(delivery)?);
                }
                Value::Object(map)
            }
            Shape::List(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.render(delivery))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

impl HookSpec {
    /// The event fired for `event` as the template gave it: `Some(name)`, or
    /// `None` when the hook ignores it.
    pub fn mapped<'a>(&'a self, event: &'a str) -> Option<&'a str> {
        match self.events.iter().find(|(from, _)| from == event) {
            Some((_, to)) => to.as_deref(),
            None => Some(event),
        }
    }
}

const FIELDS: [&str; 10] = [
    "verify",
    "secret_env",
    "secret_env_previous",
    "key",
    "token",
    "event",
    "events",
    "payload",
    "start",
    "description",
];

/// Read a hooks file. Every problem is listed, one sentence each, prefixed with
/// `source` (and a YAML mistake's line).
pub fn parse(text: &str, source: &str) -> Result<Vec<HookSpec>, Vec<String>> {
    let (hooks, problems) = parse_partly(text, source);
    if problems.is_empty() {
        Ok(hooks)
    } else {
        Err(problems)
    }
}

/// As [`parse`], but also the hooks that could be read despite their problems
/// (a template that cannot be read stands as empty text), so that the checks
/// against a graph and the environment still run on them and every problem is
/// listed at once: `(hooks, problems)`.
pub fn parse_partly(text: &str, source: &str) -> (Vec<HookSpec>, Vec<String>) {
    let document = match crate::compiler::flow::yaml_value(text, source) {
        Ok(document) => document,
        Err(problem) => return (Vec::new(), vec![problem]),
    };
    let Value::Object(top) = document else {
        let problem = format!("{source}: the file must map each hook's name to its settings");
        return (Vec::new(), vec![problem]);
    };
    let mut problems = Vec::new();
    let mut hooks = Vec::new();
    for (name, settings) in &top {
        let mut own = Vec::new();
        let hook = one(name, settings, &mut own);
        problems.extend(
            own.into_iter()
                .map(|p| format!("{source}: hook {name:?}: {p}")),
        );
        hooks.extend(hook);
    }
    (hooks, problems)
}

fn one(name: &str, settings: &Value, problems: &mut Vec<String>) -> Option<HookSpec> {
    let ok_name = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok_name {
        problems.push(format!(
            "a hook's name has 1 to {MAX_NAME} letters, digits, '-' and '_'"
        ));
    }
    let Value::Object(map) = settings else {
        problems.push("its settings must be a mapping".into());
        return None;
    };
    for field in map.keys() {
        if !FIELDS.contains(&field.as_str()) {
            problems.push(format!(
                "unknown field {field:?} (known: {})",
                FIELDS.join(", ")
            ));
        }
    }
    let text = |field: &str, problems: &mut Vec<String>| -> Option<String> {
        match map.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => {
                problems.push(format!("{field}: must be text"));
                None
            }
        }
    };
    let verify = match text("verify", problems) {
        None => {
            problems.push("verify: missing (github, standard or none)".into());
            None
        }
        Some(kind) => {
            let found = Verify::parse(&kind);
            if found.is_none() {
                problems.push(format!("verify: {kind:?} is not github, standard or none"));
            }
            found
        }
    };
    let secret_env = text("secret_env", problems);
    let secret_env_previous = text("secret_env_previous", problems);
    if secret_env.is_none() && verify.is_some_and(|v| v != Verify::None) {
        problems.push("secret_env: missing (the variable that holds the secret)".into());
    }
    let template = |field: &str, default: Option<&str>, problems: &mut Vec<String>| {
        let written = text(field, problems).or_else(|| default.map(str::to_string))?;
        match Template::parse(&written) {
            Ok(template) => Some(template),
            Err(problem) => {
                problems.push(format!("{field}: {problem}"));
                // Stands in, so that the other checks still run on the hook.
                Template::parse("").ok()
            }
        }
    };
    let empty = || Template::parse("").ok();
    let default_key = match verify {
        Some(Verify::Github) => Some("{header.X-GitHub-Delivery}"),
        Some(Verify::Standard) => Some("{header.webhook-id}"),
        _ => None,
    };
    let key = template("key", default_key, problems);
    if key.is_none() && !map.contains_key("key") && verify == Some(Verify::None) {
        problems.push("key: missing (verify: none has no delivery id of its own)".into());
    }
    let token = template("token", None, problems);
    if !map.contains_key("token") {
        problems.push("token: missing".into());
    }
    let event = template("event", None, problems);
    if !map.contains_key("event") {
        problems.push("event: missing".into());
    }
    let payload = template("payload", None, problems);
    let events = renames(map.get("events"), problems);
    let start = match map.get("start") {
        None | Some(Value::Null) => None,
        Some(Value::Object(start)) => {
            for field in start.keys().filter(|f| *f != "context") {
                problems.push(format!("start: unknown field {field:?} (known: context)"));
            }
            match start.get("context") {
                None | Some(Value::Null) => Some(Shape::Literal(Value::Object(Map::new()))),
                Some(context @ Value::Object(_)) => {
                    Some(Shape::of(context, problems, "start.context"))
                }
                Some(_) => {
                    problems.push("start.context: must be a mapping".into());
                    None
                }
            }
        }
        Some(_) => {
            problems.push("start: must be a mapping (context: ...)".into());
            None
        }
    };
    Some(HookSpec {
        name: name.to_string(),
        verify: verify?,
        secret_env,
        secret_env_previous,
        key: key.or_else(empty)?,
        token: token.or_else(empty)?,
        event: event.or_else(empty)?,
        events,
        payload,
        start,
    })
}

fn renames(events: Option<&Value>, problems: &mut Vec<String>) -> Vec<(String, Option<String>)> {
    match events {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(from, to)| match to {
                Value::String(to) => Some((from.clone(), Some(to.clone()))),
                Value::Null => Some((from.clone(), None)),
                _ => {
                    problems.push(format!(
                        "events.{from}: must be an event's name, or null to ignore it"
                    ));
                    None
                }
            })
            .collect(),
        Some(_) => {
            problems.push("events: must map an event to the event fired, or to null".into());
            Vec::new()
        }
    }
}

/// What the hooks ask of `graph` that it does not have: each rename's event,
/// and the event of a template without placeholders, must be declared by one of
/// its workflows. One sentence each.
pub fn check_against(hooks: &[HookSpec], graph: &Graph) -> Vec<String> {
    let declared = |event: &str| {
        std::iter::once(&graph.main)
            .chain(graph.children.values())
            .any(|workflow| workflow.declares(event))
    };
    let mut problems = Vec::new();
    for hook in hooks {
        let mut fired: Vec<&str> = hook
            .events
            .iter()
            .filter_map(|(_, to)| to.as_deref())
            .collect();
        if let Some(event) = hook.event.literal() {
            fired.extend(hook.mapped(event));
        }
        for event in fired {
            if !declared(event) {
                problems.push(format!(
                    "hook {:?}: the workflow {:?} has no event {event:?}",
                    hook.name, graph.main.name
                ));
            }
        }
    }
    problems
}

/// The HMAC keys of each hook, in the order of `hooks` (the current secret's,
/// then the previous one's), from the variables `env` reads. Every problem is
/// listed: a variable that is unset, a secret that cannot be a key, and
/// `verify: none` without `insecure`. No sentence shows a secret.
pub fn keys(
    hooks: &[HookSpec],
    env: impl Fn(&str) -> Option<String>,
    insecure: bool,
) -> Result<Vec<Vec<Vec<u8>>>, Vec<String>> {
    let mut problems = Vec::new();
    let mut all = Vec::new();
    for hook in hooks {
        let mut keys = Vec::new();
        if hook.verify == Verify::None && !insecure {
            problems.push(format!(
                "hook {:?}: verify: none checks no signature; it needs --insecure",
                hook.name
            ));
        }
        let variables = [&hook.secret_env, &hook.secret_env_previous];
        for (i, variable) in variables.into_iter().enumerate() {
            let Some(variable) = variable else { continue };
            if hook.verify == Verify::None {
                continue;
            }
            match env(variable) {
                None if i == 0 => problems.push(format!(
                    "hook {:?}: the variable {variable} is not set",
                    hook.name
                )),
                // A previous secret is optional: once rotated out, it is unset.
                None => {}
                Some(secret) => match hook.verify.key(&secret) {
                    Ok(key) => keys.push(key),
                    Err(why) => problems.push(format!(
                        "hook {:?}: the variable {variable} {why}",
                        hook.name
                    )),
                },
            }
        }
        all.push(keys);
    }
    if problems.is_empty() {
        Ok(all)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests;
