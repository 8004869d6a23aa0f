//! The validated inputs: every limit and refusal sentence of a request's values,
//! defined once, and the validated types the engine takes as its parameters.
//!
//! A value of one of these types has passed its check, so the engine never checks
//! it again. The HTTP layer (`api/parse/`) reads a body's JSON fields in their
//! order and builds each value here; a caller of `Control` in Rust builds the same
//! types with the same checks. What needs the graph or the database (an event's
//! name, a payload's schema, whether a task is held, whether a token exists) is
//! the engine's to judge.

use std::collections::BTreeMap;

use stateous_shared::durations::parse_duration;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Object, Outcome, Schedule};

/// The most tokens one `GET /tokens` lists.
pub const MAX_LIMIT: i64 = 1000;
/// The tokens `GET /tokens` lists when the query names no `limit`.
pub const DEFAULT_LIMIT: i64 = 100;
/// The longest idempotency key: the size of the ledger's `key` column.
pub const MAX_KEY: usize = 256;
/// The longest memory key.
pub use stateous_shared::limits::MAX_MEMORY_KEY;
/// The longest state name in a claim: `<workflow>/<state>`, 64 + 1 + 64.
pub const MAX_STATE: usize = 129;
/// The longest token id.
pub use stateous_shared::limits::MAX_TOKEN_ID as MAX_TOKEN;
/// The most state names in a claim, and task ids in a heartbeat.
pub const MAX_ITEMS: usize = 1000;
/// The longest supervisor name in a claim, a heartbeat or a report.
pub const MAX_SUPERVISOR: usize = 256;
/// The longest note, after the white space at its two ends is removed.
pub use stateous_shared::limits::MAX_NOTE;
/// The longest claim request id.
pub const MAX_REQUEST: usize = 64;
/// The longest name a retry's `by` may give.
pub const MAX_BY: usize = 256;

fn refuse(code: Code, sentence: impl Into<String>) -> Refusal {
    Refusal::new(code, sentence)
}

pub use stateous_shared::limits::is_token_id as token_id_ok;

pub mod access;
pub mod budgets;
pub mod claim_limits;

pub use access::{FireScope, NewKeyInput, MAX_KEY_NAME, MAX_SCOPE_NAMES};

/// A supervisor's name: 1 to 256 characters, none of them NUL (Postgres text
/// cannot keep it, so both backends refuse it); 422 `invalid_argument`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Supervisor(String);

impl Supervisor {
    /// Check `name`.
    pub fn new(name: String) -> Result<Supervisor, Refusal> {
        if !(1..=MAX_SUPERVISOR).contains(&name.chars().count()) {
            return Err(Supervisor::wrong());
        }
        if name.contains('\0') {
            return Err(refuse(
                Code::InvalidArgument,
                "a supervisor name has no NUL character (\\u0000)",
            ));
        }
        Ok(Supervisor(name))
    }

    /// The refusal of a name that is not 1 to 256 characters (or not text).
    pub fn wrong() -> Refusal {
        refuse(
            Code::InvalidArgument,
            format!("'supervisor' must be a name of 1 to {MAX_SUPERVISOR} characters"),
        )
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A claim's request id: 1 to 64 of `[A-Za-z0-9._-]`; 422 `invalid_argument`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    /// Check `id`.
    pub fn new(id: String) -> Result<RequestId, Refusal> {
        let ok = (1..=MAX_REQUEST).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(RequestId(id))
        } else {
            Err(RequestId::wrong())
        }
    }

    /// The refusal of a request id that breaks the pattern (or is not text).
    pub fn wrong() -> Refusal {
        refuse(
            Code::InvalidArgument,
            format!("'request' must be 1 to {MAX_REQUEST} letters, digits, '.', '_' or '-'"),
        )
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The states a claim serves: at most 1000 names of 1 to 129 characters, each
/// `<state>` of the main workflow or `<workflow>/<state>` of a child workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct States {
    names: Vec<String>,
    pairs: Vec<(Option<String>, String)>,
}

impl States {
    /// Check the names: a wrong name is `invalid_body`, too many
    /// `invalid_argument`.
    pub fn new(names: Vec<String>) -> Result<States, Refusal> {
        if !names
            .iter()
            .all(|name| (1..=MAX_STATE).contains(&name.chars().count()))
        {
            return Err(States::wrong());
        }
        if names.len() > MAX_ITEMS {
            return Err(refuse(
                Code::InvalidArgument,
                format!("'states' may hold at most {MAX_ITEMS} state names"),
            ));
        }
        // A state with a NUL character is no state of any graph: it matches no
        // task, on either backend (Postgres text cannot even hold it).
        let pairs = names
            .iter()
            .filter(|name| !name.contains('\0'))
            .map(|name| match name.rsplit_once('/') {
                Some((workflow, state)) if !workflow.is_empty() => {
                    (Some(workflow.to_string()), state.to_string())
                }
                Some((_, state)) => (None, state.to_string()),
                None => (None, name.clone()),
            })
            .collect();
        Ok(States { names, pairs })
    }

    /// The refusal of a list that is not a list of state names.
    pub fn wrong() -> Refusal {
        refuse(Code::InvalidBody, "'states' must be a list of state names")
    }

    /// The names as the claim gave them.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Each state as `(workflow, state)`, `None` for the main workflow.
    pub fn pairs(&self) -> &[(Option<String>, String)] {
        &self.pairs
    }
}

/// An idempotency key: UTF-8 text of 1 to 256 characters (counted in characters,
/// not bytes, and kept as sent), no control characters; 422 `invalid_payload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(String);

impl Key {
    /// Check `key`.
    pub fn new(key: String) -> Result<Key, Refusal> {
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
        Ok(Key(key))
    }

    /// Check a header's bytes, which must be UTF-8.
    pub fn from_bytes(raw: &[u8]) -> Result<Key, Refusal> {
        let Ok(key) = std::str::from_utf8(raw) else {
            return Err(refuse(
                Code::InvalidPayload,
                "an idempotency key must be UTF-8 text",
            ));
        };
        Key::new(key.to_string())
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `POST /tokens`: the new token's id (checked against the pattern; 422
/// `invalid_token_id`) and its context.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInput {
    /// The id.
    pub token: String,
    /// The context.
    pub context: Object,
    /// The trace the token continues (a caller's `traceparent`); `None`: a trace
    /// of its own (`docs/reference/traces.md`).
    pub trace: Option<stateous_shared::trace_context::TokenTrace>,
}

impl StartInput {
    /// Check the id.
    pub fn new(token: String, context: Object) -> Result<StartInput, Refusal> {
        if !token_id_ok(&token) {
            return Err(refuse(
                Code::InvalidTokenId,
                stateous_shared::limits::TOKEN_ID_RULE,
            ));
        }
        Ok(StartInput {
            token,
            context,
            trace: None,
        })
    }

    /// The same start, continuing the trace of a caller's `traceparent`.
    pub fn in_trace(self, trace: Option<stateous_shared::trace_context::TokenTrace>) -> Self {
        StartInput { trace, ..self }
    }
}

/// `POST /hooks/{name}` of a hook that starts tokens: what a delivery whose token
/// is missing does. Whether the token is missing is the engine's to judge, in the
/// transaction of the event, so a delivery for a token that exists never needs
/// the start.
#[derive(Debug, Clone, PartialEq)]
pub enum HookStart {
    /// Start the missing token with this input.
    Start(StartInput),
    /// The delivery cannot start the token (its `start.context` template finds
    /// nothing): refused with this when the token is missing, unused otherwise.
    Cannot(Refusal),
}

/// `POST /tokens/{id}/events/{event}`. The token and the event are judged by the
/// engine (a token that is not there, an event the state does not know).
#[derive(Debug, Clone, PartialEq)]
pub struct FireInput {
    /// The token.
    pub token: String,
    /// The event.
    pub event: String,
    /// The payload, if any.
    pub payload: Option<Object>,
    /// The idempotency key, if any.
    pub key: Option<Key>,
    /// The hook the event came through, if any (`POST /hooks/{name}`).
    pub hook: Option<HookMark>,
    /// The scope of the scoped access key that fires it, if any: the fire is
    /// refused 403 `forbidden` unless the token is in one of its states and
    /// matches its filter, judged in the fire's own transaction.
    pub scope: Option<std::sync::Arc<FireScope>>,
}

/// The hook an event came through and its delivery id, recorded on the event's
/// ledger entry as `"hook": {"name": NAME, "delivery": ID}` (`docs/inside/data.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMark {
    /// The hook's name.
    pub name: String,
    /// The delivery id: the event's idempotency key.
    pub delivery: String,
}

impl HookMark {
    /// The entry's `hook` value.
    pub fn value(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name, "delivery": self.delivery})
    }
}

impl FireInput {
    /// Check the key.
    pub fn new(
        token: String,
        event: String,
        payload: Option<Object>,
        key: Option<String>,
    ) -> Result<FireInput, Refusal> {
        Ok(FireInput {
            token,
            event,
            payload,
            key: key.map(Key::new).transpose()?,
            hook: None,
            scope: None,
        })
    }
}

/// `POST /tasks/claim`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimInput {
    /// The supervisor.
    pub supervisor: Supervisor,
    /// The states it serves.
    pub states: States,
    /// The request id: a claim that repeats the supervisor's last one gets the
    /// same grant again while it holds that attempt.
    pub request: Option<RequestId>,
}

impl ClaimInput {
    /// Check each value, in this order: the supervisor, the states, the request id.
    pub fn new(
        supervisor: String,
        states: Vec<String>,
        request: Option<String>,
    ) -> Result<ClaimInput, Refusal> {
        Ok(ClaimInput {
            supervisor: Supervisor::new(supervisor)?,
            states: States::new(states)?,
            request: request.map(RequestId::new).transpose()?,
        })
    }
}

/// `POST /tasks/heartbeat`.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatInput {
    /// The supervisor.
    pub supervisor: Supervisor,
    /// The tasks it runs, at most 1000.
    pub tasks: Vec<i64>,
    /// The attempt it runs of each task it names here (task id to attempt, at
    /// most 1000); empty when the body has none.
    pub attempts: BTreeMap<i64, i64>,
}

impl HeartbeatInput {
    /// Check the supervisor, then how many tasks and attempts it names.
    pub fn new(
        supervisor: String,
        tasks: Vec<i64>,
        attempts: BTreeMap<i64, i64>,
    ) -> Result<HeartbeatInput, Refusal> {
        let supervisor = Supervisor::new(supervisor)?;
        if tasks.len() > MAX_ITEMS {
            return Err(refuse(
                Code::InvalidArgument,
                format!("'tasks' may hold at most {MAX_ITEMS} task ids"),
            ));
        }
        if attempts.len() > MAX_ITEMS {
            return Err(refuse(
                Code::InvalidArgument,
                format!("'attempts' may name at most {MAX_ITEMS} tasks"),
            ));
        }
        Ok(HeartbeatInput {
            supervisor,
            tasks,
            attempts,
        })
    }
}

/// A note's text, without the white space at its two ends: 1 to 500 characters;
/// 422 `invalid_payload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteText(String);

impl NoteText {
    /// Trim `text`, then check it.
    pub fn new(text: &str) -> Result<NoteText, Refusal> {
        if let Some(problem) = stateous_shared::limits::note_problem(text) {
            return Err(refuse(Code::InvalidPayload, problem));
        }
        Ok(NoteText(text.trim().to_string()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `POST /tasks/{id}/note`.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteInput {
    /// The task it is about.
    pub task: i64,
    /// The text.
    pub text: NoteText,
    /// The attempt it is for, when named.
    pub attempt: Option<i64>,
    /// Its idempotency key, when given: a key already on the token's ledger
    /// writes nothing (the same note sent again after its answer was lost).
    pub key: Option<Key>,
}

impl NoteInput {
    /// Check the text, then the key.
    pub fn new(
        task: i64,
        text: String,
        attempt: Option<i64>,
        key: Option<String>,
    ) -> Result<NoteInput, Refusal> {
        Ok(NoteInput {
            task,
            text: NoteText::new(&text)?,
            attempt,
            key: key.map(Key::new).transpose()?,
        })
    }
}

/// A key of a routine's memory: 1 to 128 characters, none of them NUL; 422
/// `invalid_payload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryKey(String);

impl MemoryKey {
    /// Check `key`.
    pub fn new(key: String) -> Result<MemoryKey, Refusal> {
        match stateous_shared::limits::memory_key_problem(&key) {
            Some(problem) => Err(refuse(Code::InvalidPayload, problem)),
            None => Ok(MemoryKey(key)),
        }
    }

    /// The refusal of a key that is not 1 to 128 characters (or not text).
    pub fn wrong() -> Refusal {
        refuse(
            Code::InvalidPayload,
            stateous_shared::limits::memory_key_length(),
        )
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `PUT /tasks/{id}/memory`.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryInput {
    /// The task whose token and state own the memory.
    pub task: i64,
    /// The key.
    pub key: MemoryKey,
    /// The value; null deletes the key.
    pub value: serde_json::Value,
    /// The attempt it is for, when named.
    pub attempt: Option<i64>,
}

impl MemoryInput {
    /// Check the key.
    pub fn new(
        task: i64,
        key: String,
        value: serde_json::Value,
        attempt: Option<i64>,
    ) -> Result<MemoryInput, Refusal> {
        Ok(MemoryInput {
            task,
            key: MemoryKey::new(key)?,
            value,
            attempt,
        })
    }
}

/// What a report says happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportKind {
    /// The routine's outcome is this event.
    Event(String),
    /// The routine waits for an event from outside.
    Waiting,
    /// The routine failed, with this error.
    Failed(String),
}

/// `POST /tasks/{id}/report`: a task's outcome, its shape checked (422
/// `invalid_body`), its supervisor as every supervisor name is (422
/// `invalid_argument`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportInput {
    /// The task.
    pub task: i64,
    /// What happened.
    pub kind: ReportKind,
    /// The event's payload, if any.
    pub payload: Option<Object>,
    /// Keys to merge into the token's context.
    pub context: Object,
    /// Timers to set with the outcome.
    pub schedules: Vec<Schedule>,
    /// The attempt it reports, when named: 1 or more.
    pub attempt: Option<i64>,
    /// The supervisor that claimed the task; `None`: a report from outside.
    pub supervisor: Option<Supervisor>,
}

impl ReportInput {
    /// Check the supervisor, then `kind` (`event` with `event`, `waiting`, or
    /// `failed` with `error`), each schedule's `after` (a duration), and `attempt`.
    pub fn new(task: i64, outcome: Outcome) -> Result<ReportInput, Refusal> {
        let body = |sentence: String| Err(refuse(Code::InvalidBody, sentence));
        let supervisor = outcome.supervisor.map(Supervisor::new).transpose()?;
        let kind = match outcome.kind.as_str() {
            "event" => match outcome.event {
                Some(event) => ReportKind::Event(event),
                None => return body("an 'event' outcome needs 'event' as a string".into()),
            },
            "waiting" => ReportKind::Waiting,
            "failed" => match outcome.error {
                Some(error) => ReportKind::Failed(error),
                None => return body("a 'failed' outcome needs 'error' as a string".into()),
            },
            other => {
                let shown = serde_json::Value::String(other.to_string()).to_string();
                return Err(ReportInput::wrong_kind(&shown));
            }
        };
        for schedule in &outcome.schedules {
            if let Err(problem) = parse_duration(&schedule.after) {
                return body(format!("a schedule's 'after': {problem}"));
            }
        }
        if outcome.attempt.is_some_and(|a| a < 1) {
            return Err(ReportInput::wrong_attempt());
        }
        Ok(ReportInput {
            task,
            kind,
            payload: outcome.payload,
            context: outcome.context,
            schedules: outcome.schedules,
            attempt: outcome.attempt,
            supervisor,
        })
    }

    /// The refusal of a `kind` that is none of the three; `shown` is the value
    /// as the body had it.
    pub fn wrong_kind(shown: &str) -> Refusal {
        refuse(
            Code::InvalidBody,
            format!("an outcome's 'kind' must be 'event', 'waiting' or 'failed', not {shown}"),
        )
    }

    /// The refusal of an `attempt` that is not a whole number of 1 or more.
    pub fn wrong_attempt() -> Refusal {
        refuse(
            Code::InvalidBody,
            "an outcome's 'attempt' must be a whole number of 1 or more",
        )
    }
}

/// `POST /tokens/{id}/retry`: its values are free text the history keeps, each
/// within its limit when read from a body.
#[derive(Debug, Clone)]
pub struct RetryInput {
    /// The token.
    pub token: String,
    /// The state to enter; `None`: the state where it failed.
    pub state: Option<String>,
    /// Why, for the history.
    pub reason: Option<String>,
    /// Who retries it.
    pub by: String,
}
