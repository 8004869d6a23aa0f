//! Every request body, query and header of the API becomes a validated input here,
//! and only here; the handlers pass these to the control plane.
//!
//! The checks, their order, their codes and their limits are the reference's HTTP
//! layer (`docs/reference/http.md`, `docs/reference/limits.md`): a value of the wrong
//! JSON type or out of range is refused before the engine sees the request. Checks
//! that need the graph or the database (a token id's pattern, a payload's model, an
//! event's name) belong to the engine.

use std::collections::BTreeMap;

use serde_json::Value;
use stateous_shared::durations::parse_duration;
use stateous_shared::guards::filter::{parse_filter, Filter};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Object, Outcome, Schedule};

use super::fields::Fields;

/// The most tokens one `GET /tokens` lists.
pub const MAX_LIMIT: i64 = 1000;
/// The tokens `GET /tokens` lists when the query names no `limit`.
pub const DEFAULT_LIMIT: i64 = 100;
/// The longest idempotency key: the size of the ledger's `key` column.
pub const MAX_KEY: usize = 256;
/// The longest memory key.
pub const MAX_MEMORY_KEY: usize = 128;
/// The longest state name in a claim: `<workflow>/<state>`, 64 + 1 + 64.
pub const MAX_STATE: usize = 129;
/// The longest token id a listing's `parent` names.
pub const MAX_TOKEN: usize = 128;
/// The most state names in a claim, and task ids in a heartbeat.
pub const MAX_ITEMS: usize = 1000;
/// The longest supervisor name in a claim, a heartbeat or a report.
pub const MAX_SUPERVISOR: usize = 256;
/// The longest note, after the white space at its two ends is removed.
pub const MAX_NOTE: usize = 500;
/// The longest claim request id.
pub const MAX_REQUEST: usize = 64;

/// The statuses a listing may filter on.
pub use stateous_shared::wire::TOKEN_STATUSES as STATUSES;

fn refuse(code: Code, sentence: impl Into<String>) -> Refusal {
    Refusal::new(code, sentence)
}

/// `POST /tokens`.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInput {
    /// The new token's id; the engine checks its pattern.
    pub token: String,
    /// Its context; `{}` when the body names none.
    pub context: Object,
}

impl StartInput {
    /// The fields `parse` reads.
    pub const FIELDS: &'static [&'static str] = &["token", "context"];

    /// From the body: `token` must be a string (`invalid_token_id`), `context` an
    /// object or null (`invalid_context`).
    pub fn parse(body: &impl Fields) -> Result<StartInput, Refusal> {
        let Some(Value::String(token)) = body.field("token") else {
            return Err(refuse(
                Code::InvalidTokenId,
                "'token' must be the new token's id, as a string",
            ));
        };
        let context = object_or_null(body.field("context"), "context", Code::InvalidContext)?;
        Ok(StartInput {
            token: token.clone(),
            context: context.unwrap_or_default(),
        })
    }
}

/// `GET /tokens`: the query's filters.
#[derive(Debug, Clone, PartialEq)]
pub struct ListInput {
    /// Only tokens with this status.
    pub status: Option<String>,
    /// Only the children of this token.
    pub parent: Option<String>,
    /// At most this many tokens, 1 to 1000.
    pub limit: i64,
    /// `where`: only the tokens this filter matches (issue 11).
    pub filter: Option<Filter>,
    /// Only tokens in this state.
    pub state: Option<String>,
    /// Skip this many matching tokens first (paging); 0 by default.
    pub offset: i64,
}

impl ListInput {
    /// From the query pairs (the last value of a repeated name wins, as the
    /// reference reads queries). Each bad value is `invalid_argument`.
    pub fn parse(query: &[(String, String)]) -> Result<ListInput, Refusal> {
        let last = |name: &str| {
            query
                .iter()
                .rev()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        // The order of the checks, and each sentence word for word, are the
        // reference's: the token commands and its client show them to people.
        let status = last("status");
        if let Some(status) = &status {
            if !STATUSES.contains(&status.as_str()) {
                return Err(refuse(
                    Code::InvalidArgument,
                    format!("'status' is one of: {}", STATUSES.join(", ")),
                ));
            }
        }
        let limit = match last("limit") {
            None => DEFAULT_LIMIT,
            Some(text) => parse_limit(&text)?,
        };
        let parent = last("parent");
        if let Some(parent) = &parent {
            if !(1..=MAX_TOKEN).contains(&parent.chars().count()) {
                return Err(refuse(
                    Code::InvalidArgument,
                    format!("'parent' is a token id of 1 to {MAX_TOKEN} characters"),
                ));
            }
        }
        // Ours (issue 11), after the reference's checks.
        // A filter that does not parse is refused with the parser's sentence.
        let filter = last("where")
            .map(|text| parse_filter(&text))
            .transpose()
            .map_err(|error| refuse(Code::InvalidArgument, error.0))?;
        let state = last("state");
        if let Some(state) = &state {
            if !(1..=MAX_STATE).contains(&state.chars().count()) {
                return Err(refuse(
                    Code::InvalidArgument,
                    format!("'state' must be a state's name of 1 to {MAX_STATE} characters"),
                ));
            }
        }
        let offset = match last("offset") {
            None => 0,
            Some(text) => parse_offset(&text)?,
        };
        Ok(ListInput {
            status,
            parent,
            limit,
            filter,
            state,
            offset,
        })
    }
}

fn parse_offset(text: &str) -> Result<i64, Refusal> {
    if text.is_empty() || text.len() > 15 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(
            Code::InvalidArgument,
            "'offset' must be a whole number from 0, with at most 15 digits",
        ));
    }
    text.parse()
        .map_err(|_| refuse(Code::InvalidArgument, "'offset' must be a whole number"))
}

fn parse_limit(text: &str) -> Result<i64, Refusal> {
    let wrong = || {
        refuse(
            Code::InvalidArgument,
            format!("'limit' is a whole number from 1 to {MAX_LIMIT}"),
        )
    };
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(wrong());
    }
    let limit: i64 = text.parse().map_err(|_| wrong())?;
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(wrong())
    }
}

/// `POST /tokens/{id}/events/{event}`: the body and the `Idempotency-Key` header.
#[derive(Debug, Clone, PartialEq)]
pub struct FireInput {
    /// The payload, if the body names one.
    pub payload: Option<Object>,
    /// The idempotency key, if the header is there.
    pub key: Option<String>,
}

impl FireInput {
    /// `payload` must be an object or null (`invalid_payload`); the key, the
    /// header's bytes read as UTF-8 (the seed counts a key in characters, and keeps
    /// it as sent), must be UTF-8 and have 1 to 256 characters and no control
    /// characters (`invalid_payload`).
    pub fn parse(body: &Object, key: Option<&[u8]>) -> Result<FireInput, Refusal> {
        let payload = object_or_null(body.get("payload"), "payload", Code::InvalidPayload)?;
        let key = key.map(check_key).transpose()?;
        Ok(FireInput { payload, key })
    }
}

fn check_key(raw: &[u8]) -> Result<String, Refusal> {
    let Ok(key) = std::str::from_utf8(raw) else {
        return Err(refuse(
            Code::InvalidPayload,
            "an idempotency key must be UTF-8 text",
        ));
    };
    let key = key.to_string();
    if !(1..=MAX_KEY).contains(&key.chars().count()) {
        return Err(refuse(
            Code::InvalidPayload,
            format!("an idempotency key must have 1 to {MAX_KEY} characters"),
        ));
    }
    if key.chars().any(|c| (c as u32) < 32 || c as u32 == 127) {
        return Err(refuse(
            Code::InvalidPayload,
            "an idempotency key must not hold control characters",
        ));
    }
    Ok(key)
}

/// `POST /tasks/claim`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimInput {
    /// The supervisor's name, 1 to 256 characters.
    pub supervisor: String,
    /// The states it serves, at most 1000.
    pub states: Vec<String>,
    /// The request id, if any.
    pub request: Option<String>,
}

impl ClaimInput {
    /// The fields `parse` reads, and the `outbox` depth (`added::outbox_of`).
    pub const FIELDS: &'static [&'static str] = &["supervisor", "states", "request", "outbox"];

    /// In the reference's order: the supervisor, the states, the request id.
    pub fn parse(body: &impl Fields) -> Result<ClaimInput, Refusal> {
        let supervisor = supervisor(body.field("supervisor"))?;
        let states = state_names(body.field("states"))?;
        let request = request_id(body.field("request"))?;
        Ok(ClaimInput {
            supervisor,
            states,
            request,
        })
    }
}

/// `POST /tasks/heartbeat`.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatInput {
    /// The supervisor's name.
    pub supervisor: String,
    /// The tasks it runs, at most 1000 ids of 1 or more.
    pub tasks: Vec<i64>,
    /// Our addition: the attempt it runs of each task it names here (task id to
    /// attempt, at most 1000); empty when the body has no `attempts`, as the
    /// reference's supervisor sends it.
    pub attempts: BTreeMap<i64, i64>,
}

impl HeartbeatInput {
    /// The supervisor, then the task ids (`invalid_body` for a wrong list,
    /// `invalid_argument` for more than 1000), then `attempts` (absent or null:
    /// none; else an object whose keys are task ids as decimal strings and whose
    /// values are whole numbers of 1 or more, `invalid_body` otherwise, and
    /// `invalid_argument` for more than 1000 entries).
    pub fn parse(body: &Object) -> Result<HeartbeatInput, Refusal> {
        let supervisor = supervisor(body.get("supervisor"))?;
        let wrong = || refuse(Code::InvalidBody, "'tasks' must be a list of task ids");
        let Some(Value::Array(items)) = body.get("tasks") else {
            return Err(wrong());
        };
        let tasks = items
            .iter()
            .map(|item| item.as_i64().filter(|id| *id > 0))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(wrong)?;
        if tasks.len() > MAX_ITEMS {
            return Err(refuse(
                Code::InvalidArgument,
                format!("'tasks' may hold at most {MAX_ITEMS} task ids"),
            ));
        }
        let attempts = attempts_of(body.get("attempts"))?;
        Ok(HeartbeatInput {
            supervisor,
            tasks,
            attempts,
        })
    }
}

fn attempts_of(value: Option<&Value>) -> Result<BTreeMap<i64, i64>, Refusal> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err(wrong_attempts()),
    };
    if entries.len() > MAX_ITEMS {
        return Err(refuse(
            Code::InvalidArgument,
            format!("'attempts' may name at most {MAX_ITEMS} tasks"),
        ));
    }
    let mut attempts = BTreeMap::new();
    for (task, attempt) in entries {
        let task = decimal_id(task).ok_or_else(wrong_attempts)?;
        let attempt = whole(attempt)
            .filter(|a| *a >= 1)
            .ok_or_else(wrong_attempts)?;
        attempts.insert(task, attempt);
    }
    Ok(attempts)
}

fn wrong_attempts() -> Refusal {
    refuse(
        Code::InvalidBody,
        "'attempts' must map task ids, written as decimal strings, to attempts of 1 or more",
    )
}

/// A task id written as a decimal string without sign or leading zeros.
fn decimal_id(text: &str) -> Option<i64> {
    let plain = !text.is_empty()
        && !text.starts_with('0')
        && text.len() <= 19
        && text.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| text.parse().ok()).flatten()
}

/// `POST /tasks/{id}/report`: the outcome, with its supervisor.
pub struct ReportInput;

impl ReportInput {
    /// The fields `parse` reads.
    pub const FIELDS: &'static [&'static str] = &[
        "supervisor",
        "kind",
        "event",
        "error",
        "schedules",
        "attempt",
        "payload",
        "context",
    ];

    /// The supervisor (`invalid_argument` when named wrongly), then the outcome's
    /// shape (`invalid_body`), as the reference's wire format reads it.
    pub fn parse(body: &impl Fields) -> Result<Outcome, Refusal> {
        let named = match body.field("supervisor") {
            None | Some(Value::Null) => None,
            value => Some(supervisor(value)?),
        };
        let shape = |sentence: String| refuse(Code::InvalidBody, sentence);
        let kind = match body.field("kind") {
            Some(Value::String(kind))
                if ["event", "waiting", "failed"].contains(&kind.as_str()) =>
            {
                kind.clone()
            }
            other => {
                return Err(shape(format!(
                    "an outcome's 'kind' must be 'event', 'waiting' or 'failed', not {}",
                    shown(other)
                )))
            }
        };
        let text = |key: &str, what: &str| match body.field(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            _ => Err(shape(format!("{what} needs '{key}' as a string"))),
        };
        let event = (kind == "event")
            .then(|| text("event", "an 'event' outcome"))
            .transpose()?;
        let error = (kind == "failed")
            .then(|| text("error", "a 'failed' outcome"))
            .transpose()?;
        let schedules = match body.field("schedules") {
            None => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(schedule).collect::<Result<_, _>>()?,
            Some(_) => return Err(shape("an outcome's 'schedules' must be a list".into())),
        };
        let attempt = match body.field("attempt") {
            None | Some(Value::Null) => None,
            Some(value) => match whole(value) {
                Some(attempt) if attempt >= 1 => Some(attempt),
                _ => {
                    return Err(shape(
                        "an outcome's 'attempt' must be a whole number of 1 or more".into(),
                    ))
                }
            },
        };
        Ok(Outcome {
            kind,
            event,
            payload: object_or_null(body.field("payload"), "payload", Code::InvalidBody)?,
            error,
            context: object_or_null(body.field("context"), "context", Code::InvalidBody)?
                .unwrap_or_default(),
            schedules,
            attempt,
            supervisor: named,
        })
    }
}

fn schedule(item: &Value) -> Result<Schedule, Refusal> {
    let shape = |sentence: &str| refuse(Code::InvalidBody, sentence);
    let Value::Object(body) = item else {
        return Err(shape("a schedule must be a JSON object"));
    };
    let Some(Value::String(event)) = body.get("event") else {
        return Err(shape("a schedule needs 'event' as a string"));
    };
    let Some(Value::String(after)) = body.get("after") else {
        return Err(shape("a schedule needs 'after' as a string"));
    };
    if let Err(problem) = parse_duration(after) {
        return Err(refuse(
            Code::InvalidBody,
            format!("a schedule's 'after': {problem}"),
        ));
    }
    Ok(Schedule {
        event: event.clone(),
        payload: object_or_null(
            body.get("payload"),
            "a schedule's payload",
            Code::InvalidBody,
        )?,
        after: after.clone(),
    })
}

/// `POST /tasks/{id}/note`.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteInput {
    /// The note, without the white space at its two ends: 1 to 500 characters.
    pub text: String,
    /// The attempt it is for, if named.
    pub attempt: Option<i64>,
    /// The `Idempotency-Key` header, if any (ours: the supervisor sends one per
    /// note of its outbox, so that a note sent again after a lost answer is
    /// written once).
    pub key: Option<String>,
}

impl NoteInput {
    /// The text (`invalid_payload`), then the attempt (`invalid_argument`), then
    /// the key, as a fire's (`invalid_payload`).
    pub fn parse(body: &Object, key: Option<&[u8]>) -> Result<NoteInput, Refusal> {
        let text = match body.get("text") {
            Some(Value::String(text)) => text.trim().to_string(),
            _ => String::new(),
        };
        if !(1..=MAX_NOTE).contains(&text.chars().count()) {
            return Err(refuse(
                Code::InvalidPayload,
                format!("a note needs a 'text' of 1 to {MAX_NOTE} characters"),
            ));
        }
        let attempt = attempt(body.get("attempt"))?;
        let key = key.map(check_key).transpose()?;
        Ok(NoteInput { text, attempt, key })
    }
}

/// `POST /clock/advance` (ours, `serve --dev-clock`): how far to move the clock.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvanceInput {
    /// A workflow duration (`30s`, `10m`, `1h`, `1d`).
    pub by: std::time::Duration,
}

impl AdvanceInput {
    /// `by` must be a duration as a string (`invalid_argument`).
    pub fn parse(body: &Object) -> Result<AdvanceInput, Refusal> {
        let Some(Value::String(text)) = body.get("by") else {
            return Err(refuse(
                Code::InvalidArgument,
                "'by' must be a duration as a string, e.g. \"10m\"",
            ));
        };
        let by = parse_duration(text)
            .map_err(|problem| refuse(Code::InvalidArgument, format!("'by': {problem}")))?;
        Ok(AdvanceInput { by })
    }
}

/// `PUT /tasks/{id}/memory`.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryInput {
    /// The key: 1 to 128 characters.
    pub key: String,
    /// The value; `null` deletes the key.
    pub value: Value,
    /// The attempt it is for, if named.
    pub attempt: Option<i64>,
}

impl MemoryInput {
    /// The key (`invalid_payload`), the presence of `value` (`invalid_body`), then
    /// the attempt (`invalid_argument`).
    pub fn parse(body: &Object) -> Result<MemoryInput, Refusal> {
        let key = match body.get("key") {
            Some(Value::String(key)) if (1..=MAX_MEMORY_KEY).contains(&key.chars().count()) => {
                key.clone()
            }
            _ => {
                return Err(refuse(
                    Code::InvalidPayload,
                    format!("'key' must be a string of 1 to {MAX_MEMORY_KEY} characters"),
                ))
            }
        };
        let Some(value) = body.get("value") else {
            return Err(refuse(
                Code::InvalidBody,
                "a memory write needs a 'value'; null deletes the key",
            ));
        };
        let attempt = attempt(body.get("attempt"))?;
        Ok(MemoryInput {
            key,
            value: value.clone(),
            attempt,
        })
    }
}

/// A JSON object, or `None` for an absent or null value; else `code`.
fn object_or_null(
    value: Option<&Value>,
    what: &str,
    code: Code,
) -> Result<Option<Object>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object.clone())),
        Some(_) => Err(refuse(
            code,
            format!("'{what}' must be a JSON object, or null"),
        )),
    }
}

/// A JSON integer (never a float or a boolean) that fits in an `i64`.
fn whole(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        _ => None,
    }
}

fn supervisor(value: Option<&Value>) -> Result<String, Refusal> {
    match value {
        Some(Value::String(name)) if (1..=MAX_SUPERVISOR).contains(&name.chars().count()) => {
            Ok(name.clone())
        }
        _ => Err(refuse(
            Code::InvalidArgument,
            format!("'supervisor' must be a name of 1 to {MAX_SUPERVISOR} characters"),
        )),
    }
}

fn state_names(value: Option<&Value>) -> Result<Vec<String>, Refusal> {
    let wrong = || refuse(Code::InvalidBody, "'states' must be a list of state names");
    let Some(Value::Array(items)) = value else {
        return Err(wrong());
    };
    let names = items
        .iter()
        .map(|item| match item {
            Value::String(name) if (1..=MAX_STATE).contains(&name.chars().count()) => {
                Some(name.clone())
            }
            _ => None,
        })
        .collect::<Option<Vec<String>>>()
        .ok_or_else(wrong)?;
    if names.len() > MAX_ITEMS {
        return Err(refuse(
            Code::InvalidArgument,
            format!("'states' may hold at most {MAX_ITEMS} state names"),
        ));
    }
    Ok(names)
}

fn request_id(value: Option<&Value>) -> Result<Option<String>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id))
            if (1..=MAX_REQUEST).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
        {
            Ok(Some(id.clone()))
        }
        _ => Err(refuse(
            Code::InvalidArgument,
            format!("'request' must be 1 to {MAX_REQUEST} letters, digits, '.', '_' or '-'"),
        )),
    }
}

fn attempt(value: Option<&Value>) -> Result<Option<i64>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match whole(value) {
            Some(attempt) if attempt >= 1 => Ok(Some(attempt)),
            _ => Err(refuse(
                Code::InvalidArgument,
                "'attempt' must be a whole number of 1 or more",
            )),
        },
    }
}

/// A value as a refusal sentence names it: its JSON, or "nothing" when absent.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "nothing".to_string(),
        Some(value) => {
            let text = value.to_string();
            if text.chars().count() > 40 {
                format!("{}...", text.chars().take(40).collect::<String>())
            } else {
                text
            }
        }
    }
}

#[path = "inputs_operate.rs"]
pub mod operate;

#[cfg(test)]
#[path = "inputs_tests.rs"]
mod tests;
