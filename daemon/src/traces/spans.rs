//! The spans of a token, built from its committed ledger rows
//! (`docs/reference/traces.md`): a span for the token (started to ended), one for
//! each visit of a state (entered to left) and one for each attempt of a task
//! (claimed to ended), each given out when it ends; every ledger entry is an event
//! of the innermost span open when it was written.
//!
//! A [`Book`] holds the spans still open of one token. It reads rows in seq order
//! and does no I/O: the exporter (`traces/mod.rs`) feeds it the feed's rows, and
//! after a restart first the token's older rows with `quiet` set, so that spans
//! that ended before are not given out again while those still open get their
//! start and events back.
//!
//! The spans are OTLP's messages (`stateous_otlp::proto`), built here and encoded
//! once: each event as its row is read, each span as it ends ([`Encoded`]).

use serde_json::Value as Json;
use stateous_otlp::proto::common::v1::{any_value::Value, KeyValue};
use stateous_otlp::proto::trace::v1::{span, status::StatusCode, Span, SpanFlags, Status};
use stateous_otlp::{Encoded, Events};
use stateous_shared::trace_context::{SpanId, TokenTrace};
use stateous_shared::wire::Object;

use super::attributes::{
    self as names, entry_attributes, entry_name, kv, usage_attributes, value_of,
};
use crate::store::LedgerRow;

/// The most events a span keeps (OpenTelemetry's default limit); more are counted
/// as dropped.
const MAX_EVENTS: usize = 128;

/// The words of a lease end's `error` (`engine/lease.rs`): `SUPERVISOR stopped
/// answering: no heartbeat for LEASE`.
const LEASE_END: &str = " stopped answering: no heartbeat for ";

/// A span begun and not yet ended.
#[derive(Debug, Clone)]
struct Open {
    id: SpanId,
    parent: Option<SpanId>,
    name: String,
    start: i64,
    attributes: Vec<KeyValue>,
    /// Its events, encoded as they came.
    events: Events,
    dropped_events: u32,
}

impl Open {
    fn new(id: SpanId, parent: Option<SpanId>, name: String, start: i64) -> Open {
        Open {
            id,
            parent,
            name,
            start,
            attributes: Vec::new(),
            events: Events::default(),
            dropped_events: 0,
        }
    }

    fn event(&mut self, row: &LedgerRow) {
        if self.events.len() >= MAX_EVENTS {
            self.dropped_events += 1;
            return;
        }
        self.events.push(&span::Event {
            time_unix_nano: nanos(row.at),
            name: entry_name(&row.kind).into_owned(),
            attributes: entry_attributes(row),
            dropped_attributes_count: 0,
        });
    }

    fn add(&mut self, key: &str, value: Value) {
        self.attributes.push(kv(key, value));
    }
}

/// The open spans of one token, and what it ends them with.
#[derive(Debug, Clone)]
pub struct Book {
    token: String,
    trace: TokenTrace,
    /// The id of the token's span, the parent of its visits'.
    token_span: SpanId,
    whole: Option<Open>,
    visit: Option<Open>,
    /// The open attempts, by task: a task has at most one.
    attempts: Vec<(i64, Open)>,
    /// The last event that moved the token, and when: what its visit was left on
    /// and an attempt's outcome.
    moved_by: Option<(String, i64)>,
}

/// The spans a row ended, encoded.
type Ended = Vec<Encoded>;

/// How a span ended: OTLP's status code and its message (empty unless an error).
type Outcome = (StatusCode, String);

impl Book {
    /// The book of `token`, whose trace is `trace`, before its first row.
    pub fn new(token: &str, trace: TokenTrace) -> Book {
        Book {
            token: token.to_string(),
            trace,
            token_span: trace.token_span(token),
            whole: None,
            visit: None,
            attempts: Vec::new(),
            moved_by: None,
        }
    }

    /// Whether the token ended: nothing is open any more.
    pub fn ended(&self) -> bool {
        self.whole.is_none() && self.visit.is_none() && self.attempts.is_empty()
    }

    /// Read one row of the token (in seq order); the spans it ends, unless `quiet`
    /// or the trace is not sampled.
    pub fn read(&mut self, row: &LedgerRow, quiet: bool) -> Ended {
        let mut ended = Vec::new();
        // A row that begins a span is that span's first event; any other is an
        // event of the innermost span open.
        if !matches!(row.kind.as_str(), "started" | "entered" | "task_claimed") {
            self.note(row);
        }
        let data = &row.data;
        match row.kind.as_str() {
            "started" => self.start_token(row),
            "event_accepted" | "event_replayed" | "timer_fired" => {
                if let Some(event) = text(data, "event") {
                    self.moved_by = Some((event.to_string(), row.at));
                }
            }
            "entered" => {
                self.end_visit(row.at, &mut ended);
                self.enter(row);
            }
            "task_claimed" => self.claim(row),
            "task_done" => self.end_attempt(row, "done", None, &mut ended),
            "task_waiting" => self.end_attempt(row, "waiting", None, &mut ended),
            "task_cancelled" => self.end_attempt(row, "cancelled", None, &mut ended),
            "task_failed" => {
                let error = text(data, "error").unwrap_or_default().to_string();
                self.end_attempt(row, "failed", Some(error), &mut ended);
            }
            "completed" | "failed" | "cancelled" => self.end_token(row, &mut ended),
            _ => {}
        }
        if let Some(usage) = usage_attributes(&row.kind, data) {
            if let Some(open) = self.attempt_of(data) {
                add_usage(&mut open.attributes, usage);
            }
        }
        if quiet || !self.trace.sampled {
            ended.clear();
        }
        ended
    }

    /// The row as an event of the innermost span open: its task's attempt, else
    /// the visit, else the token's span.
    fn note(&mut self, row: &LedgerRow) {
        let data = &row.data;
        if let Some(open) = self.attempt_of(data) {
            open.event(row);
        } else if let Some(open) = self.visit.as_mut() {
            open.event(row);
        } else if let Some(open) = self.whole.as_mut() {
            open.event(row);
        }
    }

    fn attempt_of(&mut self, data: &Object) -> Option<&mut Open> {
        let task = data.get("task").and_then(Json::as_i64)?;
        self.attempts
            .iter_mut()
            .find(|(id, _)| *id == task)
            .map(|(_, open)| open)
    }

    fn start_token(&mut self, row: &LedgerRow) {
        let id = self.token_span;
        let mut open = Open::new(id, self.trace.parent, "token".into(), row.at);
        open.add(names::TOKEN, Value::StringValue(self.token.clone()));
        if let Some(parent) = text(&row.data, "parent") {
            open.add(names::PARENT, Value::StringValue(parent.to_string()));
        }
        open.event(row);
        self.whole = Some(open);
    }

    fn enter(&mut self, row: &LedgerRow) {
        let state = text(&row.data, "state").unwrap_or_default().to_string();
        let visit = row.data.get("visit").and_then(Json::as_i64).unwrap_or(1);
        let id = self.trace.visit_span(&self.token, &state, visit);
        let parent = Some(self.token_span);
        let mut open = Open::new(id, parent, format!("visit {state}"), row.at);
        open.add(names::TOKEN, Value::StringValue(self.token.clone()));
        open.add(names::STATE, Value::StringValue(state));
        open.add(names::VISIT, Value::IntValue(visit));
        open.event(row);
        self.visit = Some(open);
    }

    fn claim(&mut self, row: &LedgerRow) {
        let data = &row.data;
        let (Some(task), Some(attempt)) = (
            data.get("task").and_then(Json::as_i64),
            data.get("attempt").and_then(Json::as_i64),
        ) else {
            return;
        };
        let id = self.trace.attempt_span(&self.token, task, attempt);
        let parent = self.visit.as_ref().map(|visit| visit.id);
        let state = self.visit_state();
        let name = match &state {
            Some(state) => format!("attempt {state}"),
            None => "attempt".to_string(),
        };
        let mut open = Open::new(id, parent, name, row.at);
        open.add(names::TOKEN, Value::StringValue(self.token.clone()));
        open.add(names::TASK, Value::IntValue(task));
        open.add(names::ATTEMPT, Value::IntValue(attempt));
        let supervisor = text(data, "supervisor").unwrap_or_default().to_string();
        open.add(names::SUPERVISOR, Value::StringValue(supervisor));
        if let Some(state) = state {
            open.add(names::STATE, Value::StringValue(state));
        }
        open.event(row);
        self.attempts.retain(|(held, _)| *held != task);
        self.attempts.push((task, open));
    }

    /// The state of the open visit, as its attribute holds it.
    fn visit_state(&self) -> Option<String> {
        let visit = self.visit.as_ref()?;
        let held = visit.attributes.iter().find(|kv| kv.key == names::STATE)?;
        match value_of(held)? {
            Value::StringValue(state) => Some(state.clone()),
            _ => None,
        }
    }

    fn end_attempt(&mut self, row: &LedgerRow, how: &str, error: Option<String>, out: &mut Ended) {
        let Some(task) = row.data.get("task").and_then(Json::as_i64) else {
            return;
        };
        let Some(at) = self.attempts.iter().position(|(id, _)| *id == task) else {
            return;
        };
        let (_, mut open) = self.attempts.remove(at);
        let lease_end = error.as_deref().is_some_and(|e| e.contains(LEASE_END));
        let ended_by = match how {
            "cancelled" => "cancel",
            _ if lease_end => "lease_end",
            _ => "report",
        };
        open.add(names::OUTCOME, Value::StringValue(how.to_string()));
        open.add(names::ENDED_BY, Value::StringValue(ended_by.to_string()));
        if how == "done" {
            if let Some((event, _)) = self.moved_by.as_ref().filter(|(_, at)| *at == row.at) {
                open.add(names::EVENT, Value::StringValue(event.clone()));
            }
        }
        let status = match error {
            Some(error) => (StatusCode::Error, error),
            None => (StatusCode::Ok, String::new()),
        };
        out.push(self.finish(open, row.at, status));
    }

    fn end_visit(&mut self, at: i64, out: &mut Ended) {
        let Some(mut open) = self.visit.take() else {
            return;
        };
        if let Some((event, _)) = self.moved_by.as_ref().filter(|(_, when)| *when == at) {
            open.add(names::LEFT_ON, Value::StringValue(event.clone()));
        }
        out.push(self.finish(open, at, (StatusCode::Unset, String::new())));
    }

    fn end_token(&mut self, row: &LedgerRow, out: &mut Ended) {
        for (_, mut open) in std::mem::take(&mut self.attempts) {
            open.add(names::OUTCOME, Value::StringValue("cancelled".into()));
            open.add(names::ENDED_BY, Value::StringValue("token_end".into()));
            out.push(self.finish(open, row.at, (StatusCode::Unset, String::new())));
        }
        self.end_visit(row.at, out);
        let Some(mut open) = self.whole.take() else {
            return;
        };
        open.add(names::STATUS, Value::StringValue(row.kind.clone()));
        let status = match row.kind.as_str() {
            "failed" => {
                let reason = text(&row.data, "reason").unwrap_or_default();
                (StatusCode::Error, reason.to_string())
            }
            "completed" => (StatusCode::Ok, String::new()),
            _ => (StatusCode::Unset, String::new()),
        };
        out.push(self.finish(open, row.at, status));
    }

    /// The span of `open`, ended at `at`, encoded. Its flags are those
    /// OpenTelemetry's SDK gives a span whose parent is not remote: sampled or
    /// not, and "whether the parent is remote" known.
    fn finish(&self, open: Open, at: i64, (code, message): Outcome) -> Encoded {
        let sampled = u32::from(self.trace.sampled);
        let span = Span {
            trace_id: self.trace.trace.0.to_vec(),
            span_id: open.id.0.to_vec(),
            trace_state: String::new(),
            parent_span_id: open.parent.map_or_else(Vec::new, |id| id.0.to_vec()),
            flags: sampled | SpanFlags::ContextHasIsRemoteMask as u32,
            name: open.name,
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: nanos(open.start),
            end_time_unix_nano: nanos(at.max(open.start)),
            attributes: open.attributes,
            dropped_attributes_count: 0,
            events: Vec::new(),
            dropped_events_count: open.dropped_events,
            links: Vec::new(),
            dropped_links_count: 0,
            status: Some(Status {
                message,
                code: code as i32,
            }),
        };
        Encoded::new(&span, &open.events)
    }
}

/// Add usage to an attempt's attributes: a number already there is added to (a
/// number where the attempt holds another kind of value is left out).
fn add_usage(attributes: &mut Vec<KeyValue>, usage: Vec<KeyValue>) {
    for usage in usage {
        let Some(held) = attributes.iter_mut().find(|held| held.key == usage.key) else {
            attributes.push(usage);
            continue;
        };
        let had = held.value.as_mut().and_then(|value| value.value.as_mut());
        match (had, value_of(&usage)) {
            (Some(Value::IntValue(had)), Some(Value::IntValue(more))) => {
                *had = had.saturating_add(*more);
            }
            (Some(Value::DoubleValue(had)), Some(Value::DoubleValue(more))) => *had += more,
            (_, Some(Value::IntValue(_) | Value::DoubleValue(_))) => {}
            _ => held.value = usage.value,
        }
    }
}

fn text<'a>(data: &'a Object, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Json::as_str)
}

/// Microseconds since 1970 as nanoseconds (0 before 1970).
fn nanos(micros: i64) -> u64 {
    u64::try_from(micros).unwrap_or(0).saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rows of a token that retries `draft` after a lease end and completes,
    /// each with the number of its transaction (the rows of one share their `at`).
    fn rows() -> Vec<LedgerRow> {
        let lease = "box-a stopped answering: no heartbeat for 2 minutes";
        let entries = [
            (1, "started", json!({"context": {}})),
            (
                1,
                "event_accepted",
                json!({"event": "__started__", "state": "__start__"}),
            ),
            (1, "entered", json!({"state": "draft", "visit": 1})),
            (1, "task_queued", json!({"task": 1, "state": "draft"})),
            (
                2,
                "task_claimed",
                json!({"task": 1, "supervisor": "box-a", "attempt": 1}),
            ),
            (3, "task_failed", json!({"task": 1, "error": lease})),
            (3, "task_retrying", json!({"task": 1, "attempt": 2})),
            (
                4,
                "task_claimed",
                json!({"task": 1, "supervisor": "box-b", "attempt": 2}),
            ),
            (5, "usage", json!({"task": 1, "usage": {"input_tokens": 5}})),
            (
                6,
                "event_accepted",
                json!({"event": "submitted", "state": "draft"}),
            ),
            (6, "task_done", json!({"task": 1})),
            (6, "entered", json!({"state": "review", "visit": 1})),
            (7, "completed", json!({})),
        ];
        entries
            .into_iter()
            .enumerate()
            .map(|(n, (tx, kind, data))| LedgerRow {
                id: 100 + n as i64,
                token: "T-1".into(),
                seq: 1 + n as i64,
                at: 1_000_000 * tx,
                kind: kind.into(),
                key: None,
                data: data.as_object().unwrap().clone(),
                by: None,
            })
            .collect()
    }

    fn attribute(span: &Span, key: &str) -> Option<String> {
        let held = span.attributes.iter().find(|kv| kv.key == key)?;
        Some(match value_of(held)? {
            Value::StringValue(text) => text.clone(),
            Value::IntValue(n) => n.to_string(),
            other => format!("{other:?}"),
        })
    }

    /// The spans a book gives for `rows`, decoded.
    fn spans_of<'a>(book: &mut Book, rows: impl IntoIterator<Item = &'a LedgerRow>) -> Vec<Span> {
        rows.into_iter()
            .flat_map(|row| book.read(row, false))
            .map(|span| span.decode().unwrap())
            .collect()
    }

    #[test]
    fn a_retried_token_gives_its_spans_with_their_parents_in_one_trace() {
        let trace = TokenTrace::new([3; 16]);
        let mut book = Book::new("T-1", trace);
        let spans = spans_of(&mut book, &rows());
        assert!(book.ended());
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "attempt draft",
                "attempt draft",
                "visit draft",
                "visit review",
                "token"
            ]
        );
        let token = trace.token_span("T-1");
        let draft = trace.visit_span("T-1", "draft", 1);
        assert!(spans.iter().all(|s| s.trace_id == [3; 16]));
        assert!(
            spans.iter().all(|s| s.flags == 0x101),
            "sampled, parent not remote"
        );
        assert_eq!(spans[0].span_id, trace.attempt_span("T-1", 1, 1).0);
        assert_eq!(spans[0].parent_span_id, draft.0);
        let status = spans[0].status.clone().unwrap();
        assert_eq!(status.code, StatusCode::Error as i32);
        assert!(status.message.contains(LEASE_END));
        assert_eq!(
            attribute(&spans[0], names::ENDED_BY).as_deref(),
            Some("lease_end")
        );
        assert_eq!(
            attribute(&spans[0], names::SUPERVISOR).as_deref(),
            Some("box-a")
        );
        assert_eq!(
            attribute(&spans[1], names::SUPERVISOR).as_deref(),
            Some("box-b")
        );
        assert_eq!(
            attribute(&spans[1], names::EVENT).as_deref(),
            Some("submitted")
        );
        assert_eq!(
            attribute(&spans[1], "gen_ai.usage.input_tokens").as_deref(),
            Some("5")
        );
        assert_eq!(spans[2].parent_span_id, token.0);
        assert_eq!(
            attribute(&spans[2], names::LEFT_ON).as_deref(),
            Some("submitted")
        );
        assert!(spans[4].parent_span_id.is_empty());
        assert_eq!(spans[4].start_time_unix_nano, 1_000_000_000);
        assert_eq!(spans[4].end_time_unix_nano, 7_000_000_000);
        assert_eq!(spans[4].events[0].name, "started");
        assert_eq!(spans[4].events[0].time_unix_nano, 1_000_000_000);
        assert_eq!(
            attribute(&spans[4], names::STATUS).as_deref(),
            Some("completed")
        );
        // Every entry is an event of one span.
        let events: usize = spans.iter().map(|s| s.events.len()).sum();
        assert_eq!(events, rows().len());
    }

    #[test]
    fn rows_read_back_quietly_give_only_the_spans_that_end_later() {
        let trace = TokenTrace::new([4; 16]);
        let all = rows();
        let mut whole = Book::new("T-1", trace);
        let expected = spans_of(&mut whole, &all);
        let mut book = Book::new("T-1", trace);
        for row in &all[..8] {
            assert!(book.read(row, true).is_empty());
        }
        let later = spans_of(&mut book, &all[8..]);
        assert_eq!(later.len(), 4, "the second attempt, both visits, the token");
        assert_eq!(later[..], expected[1..]);
    }
}
