//! What a routine may ask of its supervisor while it runs (`docs/reference/files.md`): read
//! the context, write it, write notes and memory, set timers, and give the outcome.
//!
//! One [`RunCtx`] exists per running routine. A program routine reaches it through
//! the `stateous ctx` helper (see `ctx_socket`); an in-process routine calls it
//! directly (see `inprocess`). Both go through [`RunCtx::handle`], so the rules are
//! the same: a context write is kept for the report; a note or memory write is
//! committed to the outbox before the call answers; an outcome the contract does
//! not allow fails the attempt.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stateous_shared::wire::{Grant, Object, Outcome, Schedule};

use crate::contract::Contract;
use crate::outbox::Kind;

pub use stateous_shared::limits::{MAX_MEMORY_KEY, MAX_NOTE};

/// One request of the helper's protocol: one JSON object per line, `op` naming it.
/// A routine may speak it directly over the socket that `STATEOUS_CTX` names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// The whole context (with this routine's writes), or one key of it.
    Get {
        /// The key; none for the whole context.
        #[serde(default)]
        key: Option<String>,
    },
    /// Write one key of the context; sent with the outcome.
    Set {
        /// The key.
        key: String,
        /// The value, any JSON.
        value: Value,
    },
    /// One line of progress in the token's history, sent at once.
    Note {
        /// The text: at most 500 characters after trimming; empty does nothing.
        text: String,
    },
    /// The whole memory, or one key of it.
    MemoryGet {
        /// The key; none for the whole memory.
        #[serde(default)]
        key: Option<String>,
    },
    /// Save one key of the memory at once.
    MemorySet {
        /// The key: 1 to 128 characters.
        key: String,
        /// The value, any JSON but null.
        value: Value,
    },
    /// Delete one key of the memory at once.
    MemoryDel {
        /// The key.
        key: String,
    },
    /// A timer: the clock fires `event` after `after`, if the token is still here.
    Schedule {
        /// The event.
        event: String,
        /// Its payload.
        #[serde(default)]
        payload: Option<Value>,
        /// A duration: `30s`, `10m`, `6h`, `1d`.
        after: String,
    },
    /// The outcome: this event.
    Emit {
        /// The event.
        event: String,
        /// Its payload.
        #[serde(default)]
        payload: Option<Value>,
    },
    /// The outcome: the task waits for someone outside to report it.
    Wait,
    /// The events the state may emit, with their payloads, as one JSON Schema.
    OutcomeSchema,
    /// Ours: what the routine spent, sent at once (`docs/concepts/budgets.md`).
    Usage {
        /// Amounts by usage name: JSON numbers from 0 to 1e15, names of 1 to 64
        /// of `a-z 0-9 _ .`.
        usage: Object,
    },
}

/// What the routine said its outcome is.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// An event, checked against the contract.
    Event {
        /// The event.
        event: String,
        /// Its payload.
        payload: Option<Object>,
    },
    /// Waiting.
    Waiting,
}

/// The largest memory value the control plane takes in one request: its body is
/// at most 1 MiB (`docs/reference/bounds.md`), less room for the key and the attempt.
const MAX_MEMORY_VALUE: usize = 1024 * 1024 - 1024;

/// The deepest nesting the control plane takes in a body (64 levels), less the
/// body's own level.
const MAX_MEMORY_DEPTH: usize = 62;

/// Refuse, at once and to the routine, a memory value that the control plane would
/// refuse later: the write would otherwise be lost after the routine was told it
/// was saved.
fn fits_one_request(value: &Value) -> Result<(), String> {
    let size = serde_json::to_vec(value)
        .map(|bytes| bytes.len())
        .unwrap_or(usize::MAX);
    if size > MAX_MEMORY_VALUE {
        return Err(format!(
            "a memory value is at most {MAX_MEMORY_VALUE} bytes of JSON, not {size}"
        ));
    }
    if depth(value) > MAX_MEMORY_DEPTH {
        return Err(format!(
            "a memory value nests at most {MAX_MEMORY_DEPTH} levels deep"
        ));
    }
    Ok(())
}

/// The largest report the control plane takes in one request: its body is at most
/// 1 MiB, less room for the `attempt` and `supervisor` the sending adds (a name of
/// 256 characters, each escaped to at most 6 bytes).
const MAX_REPORT: usize = 1024 * 1024 - 2048;

/// The deepest a report's body may nest, counting the body's own level: one less
/// than the control plane's 64, as for memory values.
const MAX_REPORT_DEPTH: usize = MAX_MEMORY_DEPTH + 1;

/// Refuse, at once and to the routine, an outcome, context write or timer that
/// would make the report too large or too deep for the control plane: the attempt
/// would otherwise fail after the routine was told its outcome was taken.
fn report_fits(state: &RunState, said: Option<&Said>) -> Result<(), String> {
    let mut body = json!({
        "kind": "event",
        "context": state.writes,
        "schedules": state.schedules,
    });
    if let Some(Said::Event { event, payload }) = said.or(state.said.as_ref()) {
        body["event"] = json!(event);
        body["payload"] = json!(payload);
    }
    let size = serde_json::to_vec(&body)
        .map(|bytes| bytes.len())
        .unwrap_or(usize::MAX);
    if size > MAX_REPORT {
        return Err(format!(
            "the report would be {size} bytes of JSON, and the control plane takes at \
             most {MAX_REPORT}: make the payload or the context writes smaller"
        ));
    }
    if depth(&body) > MAX_REPORT_DEPTH {
        return Err(format!(
            "the report would nest more than {MAX_REPORT_DEPTH} levels deep, which the \
             control plane refuses"
        ));
    }
    Ok(())
}

/// How deep a JSON value nests: 0 for a scalar, 1 for a flat list or object.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Where a routine's notes and memory writes go: committed to the outbox, then
/// queued for sending. An error is the sentence the routine gets.
pub trait Sink: Send + Sync {
    /// Commit one message of `kind` with `body` to the outbox and queue it.
    fn put(&self, kind: Kind, body: Value) -> Result<(), String>;
}

#[derive(Debug, Default)]
struct RunState {
    context: Object,
    writes: Object,
    memory: Object,
    schedules: Vec<Schedule>,
    said: Option<Said>,
    /// The first outcome the contract refused: the attempt fails with it.
    wrong: Option<String>,
}

/// The context of one running routine.
pub struct RunCtx {
    grant: Grant,
    contract: Arc<Contract>,
    sink: Arc<dyn Sink>,
    state: Mutex<RunState>,
}

impl RunCtx {
    /// The context of the routine of `grant`.
    pub fn new(grant: Grant, contract: Arc<Contract>, sink: Arc<dyn Sink>) -> RunCtx {
        let state = RunState {
            context: grant.context.clone(),
            memory: grant.memory.clone(),
            ..RunState::default()
        };
        RunCtx {
            grant,
            contract,
            sink,
            state: Mutex::new(state),
        }
    }

    /// The grant the routine runs for.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        // A panic while holding this lock cannot leave the state half-changed in a
        // way that matters more than losing the routine, so take it anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answer one request: the value to give back, or the sentence of the refusal.
    pub fn handle(&self, request: Request) -> Result<Value, String> {
        match request {
            Request::Get { key } => {
                let state = self.lock();
                lookup(&state.context, key.as_deref(), "the context")
            }
            Request::Set { key, value } => {
                if key.is_empty() {
                    return Err("a context key cannot be empty".into());
                }
                let mut state = self.lock();
                let before = state.writes.insert(key.clone(), value.clone());
                if let Err(why) = report_fits(&state, None) {
                    match before {
                        Some(old) => state.writes.insert(key, old),
                        None => state.writes.remove(&key),
                    };
                    return Err(why);
                }
                state.context.insert(key, value);
                Ok(Value::Null)
            }
            Request::Note { text } => self.note(&text),
            Request::MemoryGet { key } => {
                let state = self.lock();
                lookup(&state.memory, key.as_deref(), "the memory")
            }
            Request::MemorySet { key, value } => {
                if value.is_null() {
                    return Err("a memory value is not null; use `memory del KEY`".into());
                }
                self.memory(key, value)
            }
            Request::MemoryDel { key } => self.memory(key, Value::Null),
            Request::Schedule {
                event,
                payload,
                after,
            } => self.schedule(event, payload, after),
            Request::Emit { event, payload } => self.emit(event, payload),
            Request::Wait => self.say(Said::Waiting),
            Request::OutcomeSchema => self
                .contract
                .outcome_schema(&self.grant.state)
                .map_err(|e| e.0),
            Request::Usage { usage } => self.usage(usage),
        }
    }

    /// What the routine spent: checked by the control plane's rule, then
    /// committed to the outbox and sent at once. It counts even if the attempt
    /// then fails or is lost.
    fn usage(&self, usage: Object) -> Result<Value, String> {
        if usage.is_empty() {
            return Err("a usage report names at least one NAME=NUMBER".into());
        }
        stateous_shared::usage::amounts_of(&usage, "usage", false)?;
        self.sink.put(Kind::Usage, json!({ "usage": usage }))?;
        Ok(Value::Null)
    }

    fn note(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Value::Null);
        }
        let length = text.chars().count();
        if length > MAX_NOTE {
            return Err(format!(
                "a note has at most {MAX_NOTE} characters, not {length}"
            ));
        }
        self.sink.put(Kind::Note, json!({ "text": text }))?;
        Ok(Value::Null)
    }

    fn memory(&self, key: String, value: Value) -> Result<Value, String> {
        if let Some(problem) = stateous_shared::limits::memory_key_problem(&key) {
            return Err(problem);
        }
        fits_one_request(&value)?;
        self.sink
            .put(Kind::Memory, json!({ "key": key, "value": value }))?;
        let mut state = self.lock();
        if value.is_null() {
            state.memory.remove(&key);
        } else {
            state.memory.insert(key, value);
        }
        Ok(Value::Null)
    }

    fn schedule(
        &self,
        event: String,
        payload: Option<Value>,
        after: String,
    ) -> Result<Value, String> {
        stateous_shared::durations::parse_duration(&after)?;
        let payload = as_object(payload, &event)?;
        let known = match self.grant.state.split_once('/') {
            Some((workflow, _)) => format!("{workflow}/{event}"),
            None => event.clone(),
        };
        if !self.contract.events.contains_key(&known) {
            return Err(format!("'{event}' is not an event of the workflow"));
        }
        let shown = payload.clone().map(Value::Object);
        self.contract
            .check_payload(&self.grant.state, &event, shown.as_ref())
            .map_err(|e| e.0)?;
        let mut state = self.lock();
        state.schedules.push(Schedule {
            event,
            payload,
            after,
        });
        if let Err(why) = report_fits(&state, None) {
            state.schedules.pop();
            return Err(why);
        }
        Ok(Value::Null)
    }

    fn emit(&self, event: String, payload: Option<Value>) -> Result<Value, String> {
        let checked = self
            .contract
            .check_emit(&self.grant.state, &event, payload.as_ref())
            .map_err(|e| e.0)
            .and_then(|()| as_object(payload, &event));
        match checked {
            Ok(payload) => self.say(Said::Event { event, payload }),
            Err(why) => {
                let mut state = self.lock();
                state.wrong.get_or_insert(why.clone());
                Err(why)
            }
        }
    }

    fn say(&self, said: Said) -> Result<Value, String> {
        let mut state = self.lock();
        if let Some(before) = &state.said {
            let before = match before {
                Said::Event { event, .. } => format!("'{event}'"),
                Said::Waiting => "waiting".to_string(),
            };
            return Err(format!("the outcome is given already: {before}"));
        }
        report_fits(&state, Some(&said))?;
        state.said = Some(said);
        Ok(Value::Null)
    }

    /// Whether the routine gave an outcome (or one the contract refused).
    pub fn has_outcome(&self) -> bool {
        let state = self.lock();
        state.said.is_some() || state.wrong.is_some()
    }

    /// The report of the routine, once it ended: `failure` is why it failed
    /// (an exit status, an error), or `None` when it ended well. The context
    /// writes and timers go with an event or waiting, never with a failure.
    pub fn outcome(&self, failure: Option<String>) -> Outcome {
        let state = self.lock();
        let failed = |error: String| Outcome {
            kind: "failed".into(),
            event: None,
            payload: None,
            error: Some(error),
            context: Object::new(),
            schedules: Vec::new(),
            attempt: None,
            supervisor: None,
        };
        if let Some(why) = &state.wrong {
            return failed(why.clone());
        }
        if let Some(why) = failure {
            return failed(why);
        }
        let (kind, event, payload) = match &state.said {
            None => {
                return failed(
                    "the routine ended without an outcome: call `stateous ctx emit EVENT` \
                     or `stateous ctx wait` before it exits"
                        .into(),
                )
            }
            Some(Said::Waiting) => ("waiting", None, None),
            Some(Said::Event { event, payload }) => ("event", Some(event.clone()), payload.clone()),
        };
        Outcome {
            kind: kind.into(),
            event,
            payload,
            error: None,
            context: state.writes.clone(),
            schedules: state.schedules.clone(),
            attempt: None,
            supervisor: None,
        }
    }
}

fn lookup(map: &Object, key: Option<&str>, what: &str) -> Result<Value, String> {
    match key {
        None => Ok(Value::Object(map.clone())),
        Some(key) => map
            .get(key)
            .cloned()
            .ok_or_else(|| format!("{what} has no key '{key}'")),
    }
}

fn as_object(payload: Option<Value>, event: &str) -> Result<Option<Object>, String> {
    match payload {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(format!("the payload of '{event}' is a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Kept(Mutex<Vec<(Kind, Value)>>);

    impl Sink for Kept {
        fn put(&self, kind: Kind, body: Value) -> Result<(), String> {
            self.0.lock().unwrap().push((kind, body));
            Ok(())
        }
    }

    fn run_ctx(state: &str) -> (RunCtx, Arc<Kept>) {
        let doc = json!({"workflow": "sdlc",
            "states": {"testing": {"emits": ["passed", "failed"]}, "coding": {"emits": ["done"]}},
            "events": {"passed": {"payload": "Tests"}, "failed": {"payload": "Tests"}, "done": {}},
            "schemas": {"Tests": {"type": "object", "required": ["passed"],
                                  "properties": {"passed": {"type": "integer"}}}}});
        let contract = Arc::new(Contract::from_graph(&doc, "sha256:0").unwrap());
        let grant: Grant = serde_json::from_value(json!({"task": 2, "token": "T-1",
            "state": state, "visit": 1, "attempt": 1, "context": {"repo": "r"},
            "memory": {"dev": "s1"}}))
        .unwrap();
        let sink = Arc::new(Kept(Mutex::new(Vec::new())));
        (RunCtx::new(grant, contract, sink.clone()), sink)
    }

    fn ask(ctx: &RunCtx, request: Value) -> Result<Value, String> {
        ctx.handle(serde_json::from_value(request).unwrap())
    }

    #[test]
    fn an_outcome_too_large_for_one_request_is_refused_at_once() {
        let (ctx, _) = run_ctx("testing");
        let blob = "x".repeat(1024 * 1024);
        let big = json!({"op": "emit", "event": "passed",
                         "payload": {"passed": 1, "failed": 0, "log": blob}});
        let why = ask(&ctx, big).unwrap_err();
        assert!(why.starts_with("the report would be "), "{why}");
        let half = "x".repeat(600 * 1024);
        ask(&ctx, json!({"op": "set", "key": "a", "value": half})).unwrap();
        let why = ask(&ctx, json!({"op": "set", "key": "b", "value": half})).unwrap_err();
        assert!(why.contains("at most"), "{why}");
        let small = json!({"op": "emit", "event": "passed", "payload": {"passed": 1, "failed": 0}});
        ask(&ctx, small).unwrap();
        assert_eq!(ctx.outcome(None).kind, "event");
        assert!(!ctx.outcome(None).context.contains_key("b"));
    }

    #[test]
    fn an_event_carries_the_context_writes_and_timers() {
        let (ctx, sink) = run_ctx("testing");
        assert_eq!(ask(&ctx, json!({"op": "get", "key": "repo"})).unwrap(), "r");
        ask(&ctx, json!({"op": "set", "key": "n", "value": 3})).unwrap();
        assert_eq!(
            ask(&ctx, json!({"op": "get"})).unwrap(),
            json!({"repo": "r", "n": 3})
        );
        ask(&ctx, json!({"op": "note", "text": "  step 1 "})).unwrap();
        ask(&ctx, json!({"op": "note", "text": "   "})).unwrap();
        ask(
            &ctx,
            json!({"op": "memory_set", "key": "dev", "value": "s2"}),
        )
        .unwrap();
        assert_eq!(
            ask(&ctx, json!({"op": "memory_get", "key": "dev"})).unwrap(),
            "s2"
        );
        ask(
            &ctx,
            json!({"op": "schedule", "event": "done", "after": "10m"}),
        )
        .unwrap();
        ask(
            &ctx,
            json!({"op": "emit", "event": "passed", "payload": {"passed": 1}}),
        )
        .unwrap();
        let kept = sink.0.lock().unwrap().clone();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0], (Kind::Note, json!({"text": "step 1"})));
        let outcome = ctx.outcome(None);
        assert_eq!(outcome.kind, "event");
        assert_eq!(outcome.event.as_deref(), Some("passed"));
        assert_eq!(
            outcome.context,
            json!({"n": 3}).as_object().unwrap().clone()
        );
        assert_eq!(outcome.schedules.len(), 1);
    }

    #[test]
    fn a_wrong_outcome_fails_the_attempt() {
        let (ctx, _) = run_ctx("testing");
        let err = ask(&ctx, json!({"op": "emit", "event": "done"})).unwrap_err();
        assert!(err.contains("may not emit"), "{err}");
        let outcome = ctx.outcome(None);
        assert_eq!(outcome.kind, "failed");
        assert!(outcome.error.unwrap().contains("may not emit"));
        let (ctx, _) = run_ctx("coding");
        assert_eq!(ctx.outcome(None).kind, "failed");
        ask(&ctx, json!({"op": "wait"})).unwrap();
        assert!(ask(&ctx, json!({"op": "emit", "event": "done"})).is_err());
        assert_eq!(ctx.outcome(None).kind, "waiting");
        let failed = ctx.outcome(Some("the routine exited with status 1".into()));
        assert_eq!(
            failed.error.as_deref(),
            Some("the routine exited with status 1")
        );
    }

    #[test]
    fn bad_requests_get_sentences() {
        let (ctx, _) = run_ctx("coding");
        assert!(ask(&ctx, json!({"op": "get", "key": "nope"})).is_err());
        assert!(ask(&ctx, json!({"op": "note", "text": "x".repeat(501)})).is_err());
        assert!(ask(&ctx, json!({"op": "memory_set", "key": "", "value": 1})).is_err());
        // What the control plane would refuse later is refused now, to the routine.
        let nul = ask(&ctx, json!({"op": "memory_set", "key": "a\0b", "value": 1}));
        assert_eq!(
            nul.unwrap_err(),
            "a memory key has no NUL character (\\u0000)"
        );
        assert!(ask(&ctx, json!({"op": "memory_set", "key": "k", "value": null})).is_err());
        let big = "x".repeat(2 * 1024 * 1024);
        let refused = ask(&ctx, json!({"op": "memory_set", "key": "k", "value": big}));
        assert!(refused.unwrap_err().contains("at most"));
        assert!(ask(
            &ctx,
            json!({"op": "schedule", "event": "done", "after": "soon"})
        )
        .is_err());
        assert!(ask(
            &ctx,
            json!({"op": "schedule", "event": "nope", "after": "1m"})
        )
        .is_err());
        let schema = ask(&ctx, json!({"op": "outcome_schema"})).unwrap();
        assert_eq!(schema["oneOf"][0]["properties"]["event"]["const"], "done");
    }

    #[test]
    fn usage_goes_to_the_outbox_when_every_name_and_amount_is_right() {
        let (ctx, sink) = run_ctx("coding");
        let spent = json!({"op": "usage", "usage": {"cost_usd": 0.12, "input_tokens": 1200}});
        ask(&ctx, spent).unwrap();
        for bad in [
            json!({}),
            json!({"Cost": 1}),
            json!({"cost_usd": -1}),
            json!({"cost_usd": "1"}),
        ] {
            let asked = ask(&ctx, json!({"op": "usage", "usage": bad}));
            assert!(asked.is_err(), "{bad}");
        }
        let kept = sink.0.lock().unwrap().clone();
        assert_eq!(
            kept,
            [(
                Kind::Usage,
                json!({"usage": {"cost_usd": 0.12, "input_tokens": 1200}})
            )]
        );
    }
}
