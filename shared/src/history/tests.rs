//! Each ledger kind renders as the reference renders it (the cases mirror the
//! reference's own tests of its token lines, with the data shapes its engine
//! writes: `docs/inside/data.md`).

use chrono::FixedOffset;
use serde_json::{json, Value};

use super::*;

fn entry(kind: &str, data: Value) -> HistoryEntry {
    HistoryEntry {
        seq: 7,
        at: "2026-10-06T10:00:00Z".into(),
        kind: kind.into(),
        data: data.as_object().cloned().expect("an object"),
        by: None,
    }
}

fn plus_two() -> FixedOffset {
    FixedOffset::east_opt(2 * 3600).expect("a valid offset")
}

fn token(state: &str, status: &str, visit: i64) -> TokenView {
    TokenView {
        token: "T-1".into(),
        state: state.into(),
        status: status.into(),
        visit,
        context: Object::new(),
        entered_at: "2026-10-06T10:00:00Z".into(),
        parent: None,
    }
}

#[test]
fn a_token_line_names_the_id_the_state_and_the_status() {
    assert_eq!(
        token_line(&token("coding", "active", 1)),
        "T-1: coding, active"
    );
    assert_eq!(
        token_line(&token("coding", "active", 2)),
        "T-1: coding (visit 2), active"
    );
    assert_eq!(
        token_line(&token("__end__", "completed", 1)),
        "T-1: END, completed"
    );
    assert_eq!(
        token_line(&token("__start__", "active", 1)),
        "T-1: START, active"
    );
}

#[test]
fn every_kind_says_what_happened() {
    let cases = [
        ("started", json!({"context": {"repo": "a"}}), "started"),
        (
            "started",
            json!({"context": {}, "parent": "T-1"}),
            "started by T-1",
        ),
        (
            "branch_started",
            json!({"workflow": "security", "token": "T-1.reviews.1.security"}),
            "started the child T-1.reviews.1.security",
        ),
        (
            "cancelled",
            json!({"reason": "the parent left 'reviews'"}),
            "cancelled: the parent left 'reviews'",
        ),
        ("cancelled", json!({}), "cancelled"),
        (
            "entered",
            json!({"state": "coding", "visit": 2}),
            "entered coding (visit 2)",
        ),
        (
            "entered",
            json!({"state": "coding", "visit": 1}),
            "entered coding",
        ),
        (
            "entered",
            json!({"state": "__end__", "visit": 1}),
            "entered END",
        ),
        (
            "task_queued",
            json!({"task": 4, "state": "coding"}),
            "task 4 queued for coding",
        ),
        (
            "task_claimed",
            json!({"task": 4, "supervisor": "box-1", "attempt": 1}),
            "box-1 took task 4 (attempt 1)",
        ),
        (
            "task_waiting",
            json!({"task": 4}),
            "task 4 waits: the work goes on outside",
        ),
        ("task_done", json!({"task": 4}), "task 4 done"),
        (
            "task_failed",
            json!({"task": 4, "error": "RuntimeError: no"}),
            "task 4 failed: RuntimeError: no",
        ),
        (
            "task_retrying",
            json!({"task": 4, "attempt": 2}),
            "task 4 is tried again (attempt 2)",
        ),
        ("task_cancelled", json!({"task": 4}), "task 4 cancelled"),
        (
            "event_accepted",
            json!({"event": "passed", "payload": {"passed": 3}, "state": "testing"}),
            r#"passed in testing: {"passed": 3}"#,
        ),
        (
            "event_accepted",
            json!({"event": "__started__", "payload": null, "state": "__start__"}),
            "__started__ in START",
        ),
        (
            "event_accepted",
            json!({"event": "done", "payload": {}, "state": "coding"}),
            "done in coding",
        ),
        (
            "event_accepted",
            json!({"event": "done", "payload": null, "state": "coding",
                   "hook": {"name": "github", "delivery": "d-1"}}),
            "done in coding (via hook github, delivery d-1)",
        ),
        (
            "event_deferred",
            json!({"event": "done", "payload": null, "arrival": 1,
                   "hook": {"name": "github", "delivery": "d-2"}}),
            "done held while paused (via hook github, delivery d-2)",
        ),
        (
            "event_rejected",
            json!({"event": "passed", "reason": "not allowed"}),
            "passed refused: not allowed",
        ),
        (
            "timer_fired",
            json!({"event": "stuck"}),
            "timer fired: stuck",
        ),
        ("note", json!({"task": 4, "text": "tests run"}), "tests run"),
        (
            "memory_set",
            json!({"state": "coding", "memory_key": "dev"}),
            "memory set: dev (in coding)",
        ),
        (
            "memory_deleted",
            json!({"state": "coding", "memory_key": "dev"}),
            "memory deleted: dev (in coding)",
        ),
        (
            "context_changed",
            json!({"keys": ["repo", "branch"]}),
            "context changed: repo, branch",
        ),
        ("context_changed", json!({}), "context changed: ?"),
        ("paused", json!({}), "paused"),
        ("resumed", json!({}), "resumed"),
        ("completed", json!({}), "completed"),
        (
            "event_deferred",
            json!({"key": null, "event": "done", "payload": null}),
            "done held while paused",
        ),
        (
            "event_replayed",
            json!({"event": "done"}),
            "done applied on resume",
        ),
        (
            "event_dropped",
            json!({"event": "done", "reason": "the token left that state"}),
            "done dropped on resume: the token left that state",
        ),
        (
            "failed",
            json!({"reason": "no transition on timeout"}),
            "failed: no transition on timeout",
        ),
        (
            "retried",
            json!({"state": "coding", "from": "coding", "by": "ann", "reason": "the API is back"}),
            "retried by ann in coding: the API is back",
        ),
        (
            "retried",
            json!({"state": "review", "from": "coding", "by": "operator"}),
            "retried by operator in review",
        ),
        (
            "operator",
            json!({"action": "cancel", "by": "ann", "reason": "incident 42"}),
            "ann asked to cancel it: incident 42",
        ),
        (
            "operator",
            json!({"action": "fire", "event": "reviewed", "by": "ann", "reason": "backlog"}),
            "ann asked to fire reviewed: backlog",
        ),
        (
            "something_new",
            json!({"a": 1}),
            r#"something_new {"a": 1}"#,
        ),
        (
            "usage_reported",
            json!({"task": 7, "attempt": 2, "supervisor": "box-1",
                   "usage": {"cost_usd": 0.12, "input_tokens": 1200}}),
            "task 7 (attempt 2) reported usage: cost_usd 0.12, input_tokens 1200",
        ),
        (
            "budget_exceeded",
            json!({"reason": "over budget: cost_usd 5.12 of 5", "task": 7, "attempt": 2,
                   "over": {"cost_usd": {"used": 5.12, "budget": 5}},
                   "stopped": [{"token": "T-1", "task": 7, "attempt": 2}]}),
            "over budget: cost_usd 5.12 of 5; task 7 (attempt 2) stopped, not counted \
             as a retry",
        ),
        (
            "budget_set",
            json!({"budget": {"cost_usd": 8}}),
            "budget set: cost_usd 8",
        ),
        ("budget_set", json!({"budget": {}}), "budget set: none"),
    ];
    for (kind, data, text) in cases {
        let line = entry_line_in(&entry(kind, data), &plus_two());
        assert_eq!(line, format!("12:00:00  #7  {text}"), "{kind}");
        assert!(line.is_ascii());
    }
}

#[test]
fn an_entry_line_shows_local_time() {
    let at = chrono::DateTime::parse_from_rfc3339("2026-10-06T10:00:00Z").expect("a time");
    let local = at.with_timezone(&Local).format("%H:%M:%S").to_string();
    assert_eq!(
        entry_line(&entry("paused", json!({}))),
        format!("{local}  #7  paused")
    );
}

#[test]
fn a_timer_set_entry_shows_the_local_due_time_with_its_date() {
    let line = entry_line_in(
        &entry(
            "timer_set",
            json!({"event": "stuck", "due_at": "2026-10-06T23:00:00Z"}),
        ),
        &plus_two(),
    );
    assert_eq!(
        line,
        "12:00:00  #7  timer set: stuck at 2026-10-07 01:00:00"
    );
}

#[test]
fn missing_or_odd_data_does_not_fail() {
    let zone = plus_two();
    assert_eq!(
        what("task_claimed", &Object::new(), &zone),
        "? took task ? (attempt ?)"
    );
    let odd = json!({"task": null, "error": ["a", 1], "due_at": "soon", "event": "e"});
    let odd = odd.as_object().cloned().expect("an object");
    assert_eq!(
        what("task_failed", &odd, &zone),
        "task None failed: ['a', 1]"
    );
    assert_eq!(what("timer_set", &odd, &zone), "timer set: e at soon");
    let mut strange = entry("paused", json!({}));
    strange.at = "not a time".into();
    assert_eq!(entry_line_in(&strange, &zone), "not a time  #7  paused");
}

#[test]
fn long_payloads_are_cut_at_80_characters() {
    let payload = json!({"note": "x".repeat(200)});
    let data = json!({"event": "reviewed", "payload": payload, "state": "review"});
    let text = what(
        "event_accepted",
        data.as_object().expect("an object"),
        &plus_two(),
    );
    let shown = text
        .strip_prefix("reviewed in review: ")
        .expect("the prefix");
    assert_eq!(shown.len(), 80);
    assert!(shown.ends_with("xx..."));
    assert!(shown.starts_with(r#"{"note": "xxx"#));
}

#[test]
fn naive_and_microsecond_times_are_read() {
    let zone = plus_two();
    let mut fine = entry("paused", json!({}));
    fine.at = "2026-10-16T20:48:44.845389Z".into();
    assert!(entry_line_in(&fine, &zone).starts_with("22:48:44  "));
    // A time without an offset is already local, as Python's `astimezone` reads it.
    fine.at = "2026-10-16 20:48:44.845389".into();
    assert!(entry_line_in(&fine, &zone).starts_with("20:48:44  "));
}
