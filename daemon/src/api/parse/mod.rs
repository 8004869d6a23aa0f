//! Every request body, query and header of the API is read here, and only here:
//! each JSON field's type in a fixed order (the first wrong field is the one
//! refused, so a client always hears of the same one first), each
//! value built with its check by the inputs layer (`crate::validated`, where every
//! limit and value sentence is defined), so the handlers pass validated inputs to
//! the control plane. Checks that need the graph or the database (a payload's
//! model, an event's name) belong to the engine.

use std::collections::BTreeMap;

use serde_json::Value;
use stateous_shared::access::Scope;
use stateous_shared::durations::parse_duration;
use stateous_shared::guards::filter::{parse_filter, Filter};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Object, Outcome, Schedule};

use super::fields::Fields;
pub use crate::validated::{
    ClaimInput, FireInput, HeartbeatInput, MemoryInput, NoteInput, ReportInput, StartInput,
    DEFAULT_LIMIT, MAX_ITEMS, MAX_KEY, MAX_LIMIT, MAX_MEMORY_KEY, MAX_NOTE, MAX_REQUEST, MAX_STATE,
    MAX_SUPERVISOR, MAX_TOKEN,
};
use crate::validated::{FireScope, Key, MemoryKey, NewKeyInput, RequestId, States, Supervisor};

/// The statuses a listing may filter on.
pub use stateous_shared::wire::TOKEN_STATUSES as STATUSES;

fn refuse(code: Code, sentence: impl Into<String>) -> Refusal {
    Refusal::new(code, sentence)
}

impl StartInput {
    /// The fields `parse` reads, and ours, `budget` (`budgets::start_budget`) and
    /// `priority` (`docs/limits.md`).
    pub const FIELDS: &'static [&'static str] = &["token", "context", "budget", "priority"];

    /// From the body: `token` must be a string (`invalid_token_id`), `context` an
    /// object or null (`invalid_context`), then the id must match the pattern
    /// (`invalid_token_id`).
    pub fn parse(body: &impl Fields) -> Result<StartInput, Refusal> {
        let Some(Value::String(token)) = body.field("token") else {
            return Err(refuse(
                Code::InvalidTokenId,
                "'token' must be the new token's id, as a string",
            ));
        };
        let context = object_or_null(body.field("context"), "context", Code::InvalidContext)?;
        StartInput::new(token.clone(), context.unwrap_or_default())
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
    /// `where`: only the tokens this filter matches.
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
        let last = |name: &str| last_value(query, name);
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
        sized(&parent, MAX_TOKEN, || {
            format!("'parent' is a token id of 1 to {MAX_TOKEN} characters")
        })?;
        // Ours, after the reference's checks. A filter that does not parse is refused
        // with the parser's sentence.
        let filter = last("where")
            .map(|text| parse_filter(&text))
            .transpose()
            .map_err(|error| refuse(Code::InvalidArgument, error.0))?;
        let state = last("state");
        sized(&state, MAX_STATE, || {
            format!("'state' must be a state's name of 1 to {MAX_STATE} characters")
        })?;
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

/// `GET /journal`: which entries of the journal, a page at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalQuery {
    /// The subject (`limit`, `schedule`, ...): 1 to 64 of `a-z` and `_`.
    pub subject: String,
    /// Only the entries of the one with this name.
    pub name: Option<String>,
    /// Only the entries with an id above this; 0 by default.
    pub after: i64,
    /// At most this many entries, 1 to 1000; 100 by default.
    pub limit: i64,
}

impl JournalQuery {
    /// From the query pairs (the last value of a repeated name wins). Each bad
    /// value is `invalid_argument`.
    pub fn parse(query: &[(String, String)]) -> Result<JournalQuery, Refusal> {
        let last = |name: &str| last_value(query, name);
        let subject = last("subject").unwrap_or_default();
        let subject_ok = (1..=64).contains(&subject.len())
            && subject.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if !subject_ok {
            return Err(refuse(
                Code::InvalidArgument,
                "'subject' is 1 to 64 of a-z and _, such as limit or schedule",
            ));
        }
        let name = last("name");
        sized(&name, MAX_TOKEN, || {
            format!("'name' is a name of 1 to {MAX_TOKEN} characters")
        })?;
        let after = match last("after") {
            None => 0,
            Some(text) => parse_offset(&text)
                .map_err(|_| refuse(Code::InvalidArgument, "'after' is an entry's id, from 0"))?,
        };
        let limit = match last("limit") {
            None => stateous_shared::journal::DEFAULT_ENTRIES,
            Some(text) => parse_limit(&text)?,
        };
        Ok(JournalQuery {
            subject,
            name,
            after,
            limit,
        })
    }
}

/// The last value of `name` in the query pairs: a repeated name's last value wins,
/// as the reference reads queries.
fn last_value(query: &[(String, String)], name: &str) -> Option<String> {
    query
        .iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.clone())
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

impl FireInput {
    /// The body and the `Idempotency-Key` header of an event for `token`:
    /// `payload` must be an object or null (`invalid_payload`), then the key is
    /// checked (`Key::from_bytes`).
    pub fn parse(
        token: String,
        event: String,
        body: &Object,
        key: Option<&[u8]>,
    ) -> Result<FireInput, Refusal> {
        let payload = object_or_null(body.get("payload"), "payload", Code::InvalidPayload)?;
        let key = key.map(Key::from_bytes).transpose()?;
        Ok(FireInput {
            token,
            event,
            payload,
            key,
            hook: None,
            scope: None,
        })
    }
}

impl ClaimInput {
    /// The fields `parse` reads, and the `outbox` depth (`supervisors::outbox_of`).
    pub const FIELDS: &'static [&'static str] =
        &["supervisor", "states", "request", "outbox", "wait"];

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

/// A claim's `wait` (ours, `docs/reference/http.md`): how long a claim with no
/// free task waits for one, a number of seconds from 0 to 60 (fractions
/// allowed); absent or null is 0, an answer at once. Anything else is 422
/// `invalid_argument`.
pub fn claim_wait(body: &impl Fields) -> Result<std::time::Duration, Refusal> {
    let most = crate::control::claim_wait::MOST_WAIT.as_secs_f64();
    match body.field("wait") {
        None | Some(Value::Null) => Ok(std::time::Duration::ZERO),
        Some(value) => value
            .as_f64()
            .filter(|seconds| (0.0..=most).contains(seconds))
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| {
                refuse(
                    Code::InvalidArgument,
                    "'wait' must be a number of seconds from 0 to 60",
                )
            }),
    }
}

impl HeartbeatInput {
    /// The supervisor, then the task ids (`invalid_body` for a wrong list), then
    /// `attempts` (absent or null: none; else an object whose keys are task ids as
    /// decimal strings and whose values are whole numbers of 1 or more,
    /// `invalid_body` otherwise); then how many each names (`HeartbeatInput::new`).
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
        let attempts = attempts_of(body.get("attempts"))?;
        HeartbeatInput::new(supervisor.as_str().to_string(), tasks, attempts)
    }
}

fn attempts_of(value: Option<&Value>) -> Result<BTreeMap<i64, i64>, Refusal> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err(wrong_attempts()),
    };
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

    /// The outcome of `task`: the supervisor (`invalid_argument` when named
    /// wrongly), then each field's type (`invalid_body`), then the outcome's shape
    /// (`ReportInput::new`).
    pub fn parse(task: i64, body: &impl Fields) -> Result<ReportInput, Refusal> {
        let named = match body.field("supervisor") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(Supervisor::wrong()),
        };
        let shape = |sentence: String| refuse(Code::InvalidBody, sentence);
        let kind = match body.field("kind") {
            Some(Value::String(kind)) => kind.clone(),
            other => return Err(ReportInput::wrong_kind(&shown(other))),
        };
        let text = |key: &str| match body.field(key) {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        };
        let schedules = match body.field("schedules") {
            None => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(schedule).collect::<Result<_, _>>()?,
            Some(_) => return Err(shape("an outcome's 'schedules' must be a list".into())),
        };
        let attempt = match body.field("attempt") {
            None | Some(Value::Null) => None,
            Some(value) => Some(whole(value).ok_or_else(ReportInput::wrong_attempt)?),
        };
        let outcome = Outcome {
            event: (kind == "event").then(|| text("event")).flatten(),
            error: (kind == "failed").then(|| text("error")).flatten(),
            kind,
            payload: object_or_null(body.field("payload"), "payload", Code::InvalidBody)?,
            context: object_or_null(body.field("context"), "context", Code::InvalidBody)?
                .unwrap_or_default(),
            schedules,
            attempt,
            supervisor: named,
        };
        ReportInput::new(task, outcome)
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

impl NoteInput {
    /// The note of `task`: the text (`invalid_payload`), then the attempt
    /// (`invalid_argument`), then the key, as a fire's (`invalid_payload`).
    pub fn parse(task: i64, body: &Object, key: Option<&[u8]>) -> Result<NoteInput, Refusal> {
        let text = match body.get("text") {
            Some(Value::String(text)) => text.as_str(),
            _ => "",
        };
        let text = crate::validated::NoteText::new(text)?;
        let attempt = attempt(body.get("attempt"))?;
        let key = key.map(Key::from_bytes).transpose()?;
        Ok(NoteInput {
            task,
            text,
            attempt,
            key,
        })
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

impl MemoryInput {
    /// The memory write of `task`: the key (`invalid_payload`), the presence of
    /// `value` (`invalid_body`), then the attempt (`invalid_argument`).
    pub fn parse(task: i64, body: &Object) -> Result<MemoryInput, Refusal> {
        let key = match body.get("key") {
            Some(Value::String(key)) => MemoryKey::new(key.clone())?,
            _ => return Err(MemoryKey::wrong()),
        };
        let Some(value) = body.get("value") else {
            return Err(refuse(
                Code::InvalidBody,
                "a memory write needs a 'value'; null deletes the key",
            ));
        };
        let attempt = attempt(body.get("attempt"))?;
        Ok(MemoryInput {
            task,
            key,
            value: value.clone(),
            attempt,
        })
    }
}

impl NewKeyInput {
    /// From the body: `name` (422 `invalid_argument` unless 1 to 64 of
    /// `[A-Za-z0-9._-]`), `role` (one of the four), `supervisor` (a supervisor's
    /// name, given exactly when the role is `supervise`); any other key, or a
    /// value that is not a string, is 422 `invalid_body`.
    pub fn parse(body: &Object) -> Result<NewKeyInput, Refusal> {
        use stateous_shared::access::Role;
        if let Some(other) = body
            .keys()
            .find(|key| !["name", "role", "supervisor", "scope"].contains(&key.as_str()))
        {
            let sentence =
                format!("POST /access takes name, role, supervisor and scope, not {other:?}");
            return Err(refuse(Code::InvalidBody, sentence));
        }
        let text = |field: &str| match body.get(field) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(refuse(
                Code::InvalidBody,
                format!("'{field}' must be a string"),
            )),
        };
        let name = text("name")?.unwrap_or_default();
        if !stateous_shared::access::is_key_name(&name) {
            let sentence = stateous_shared::access::KEY_NAME_RULE;
            return Err(refuse(Code::InvalidArgument, sentence));
        }
        let role = text("role")?.unwrap_or_default();
        let Some(role) = Role::parse(&role) else {
            let sentence = "'role' is one of: read, operate, supervise, admin";
            return Err(refuse(Code::InvalidArgument, sentence));
        };
        let supervisor = text("supervisor")?.map(Supervisor::new).transpose()?;
        let scope = match body.get("scope") {
            None | Some(serde_json::Value::Null) => None,
            Some(value) => {
                let scope: Scope = serde_json::from_value(value.clone()).map_err(|_| {
                    refuse(
                        Code::InvalidBody,
                        "'scope' is an object: events (a list of event names), and \
                         optionally states (a list of state names) and where (a filter)",
                    )
                })?;
                if role != Role::Operate {
                    return Err(refuse(
                        Code::InvalidArgument,
                        "only an operate key takes a scope: it limits what the key may change",
                    ));
                }
                let checked = FireScope::new(&name, &scope)?;
                Some((scope, std::sync::Arc::new(checked)))
            }
        };
        match (role, &supervisor) {
            (Role::Supervise, None) => Err(refuse(
                Code::InvalidArgument,
                "a supervise key needs the supervisor it acts for ('supervisor')",
            )),
            (Role::Supervise, Some(_)) | (_, None) => Ok(NewKeyInput {
                name,
                role,
                supervisor,
                scope,
            }),
            (_, Some(_)) => Err(refuse(
                Code::InvalidArgument,
                "only a supervise key names a supervisor",
            )),
        }
    }
}

/// Nothing when `value` is absent or has 1 to `most` characters; else
/// `invalid_argument` with the sentence `says` writes.
fn sized(
    value: &Option<String>,
    most: usize,
    says: impl FnOnce() -> String,
) -> Result<(), Refusal> {
    match value {
        Some(text) if !(1..=most).contains(&text.chars().count()) => {
            Err(refuse(Code::InvalidArgument, says()))
        }
        _ => Ok(()),
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

fn supervisor(value: Option<&Value>) -> Result<Supervisor, Refusal> {
    match value {
        Some(Value::String(name)) => Supervisor::new(name.clone()),
        _ => Err(Supervisor::wrong()),
    }
}

fn state_names(value: Option<&Value>) -> Result<States, Refusal> {
    let Some(Value::Array(items)) = value else {
        return Err(States::wrong());
    };
    let names = items
        .iter()
        .map(|item| item.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(States::wrong)?;
    States::new(names)
}

fn request_id(value: Option<&Value>) -> Result<Option<RequestId>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => RequestId::new(id.clone()).map(Some),
        _ => Err(RequestId::wrong()),
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

pub mod bulk;
// Usage and budgets (`docs/concepts/budgets.md`).
pub mod budgets;
pub mod schedule;
pub mod subscription;

#[cfg(test)]
mod tests;
