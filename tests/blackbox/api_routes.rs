//! Black-box: every route of the HTTP API against the real daemon, with the answer
//! shapes and statuses of the reference (`docs/reference/http.md`).

use crate::harness;

use harness::{Daemon, Reply};
use serde_json::{json, Value};

fn start(daemon: &Daemon, token: &str) -> Value {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"repo": "acme/api"}}),
        )
        .expect(201)
}

fn claim(daemon: &Daemon, supervisor: &str) -> Reply {
    daemon.post(
        "/tasks/claim",
        &json!({"supervisor": supervisor, "states": ["coding", "testing"]}),
    )
}

fn kinds(daemon: &Daemon, token: &str) -> Vec<String> {
    let history = daemon.get(&format!("/tokens/{token}/history")).expect(200);
    history
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_start_answers_201_with_the_token_then_200_with_it_unchanged() {
    let daemon = Daemon::tickets();
    let token = start(&daemon, "T-1");
    let keys: Vec<&String> = token.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["token", "state", "status", "visit", "context", "entered_at"]
    );
    assert_eq!(
        (&token["state"], &token["status"], &token["visit"]),
        (&json!("coding"), &json!("active"), &json!(1))
    );
    assert!(token["entered_at"].as_str().unwrap().ends_with('Z'));
    let again = daemon
        .post(
            "/tokens",
            &json!({"token": "T-1", "context": {"repo": "other"}}),
        )
        .expect(200);
    assert_eq!(again, token);
    daemon
        .post(
            "/tokens",
            &json!({"token": "t-1", "context": {"repo": "x"}}),
        )
        .refused(422, "invalid_token_id");
    daemon
        .post("/tokens", &json!({"token": "T-2", "context": {}}))
        .refused(422, "invalid_context");
}

#[test]
fn a_listing_filters_by_status_and_limit_and_parent() {
    let daemon = Daemon::tickets();
    for token in ["T-1", "T-2", "T-3"] {
        start(&daemon, token);
    }
    daemon.post_empty("/tokens/T-2/cancel").expect(200);
    let active = daemon.get("/tokens?status=active").expect(200);
    let mut names: Vec<&str> = active
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["T-1", "T-3"]);
    assert_eq!(
        daemon
            .get("/tokens?limit=1")
            .expect(200)
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        daemon.get("/tokens").expect(200).as_array().unwrap().len(),
        3
    );
    assert_eq!(daemon.get("/tokens?parent=T-1").expect(200), json!([]));
}

#[test]
fn a_token_and_its_history_are_read_and_an_unknown_one_is_404() {
    let daemon = Daemon::tickets();
    let token = start(&daemon, "T-1");
    assert_eq!(daemon.get("/tokens/T-1").expect(200), token);
    let history = daemon.get("/tokens/T-1/history").expect(200);
    let entries = history.as_array().unwrap();
    assert_eq!(entries[0]["kind"], "started");
    for (at, entry) in entries.iter().enumerate() {
        let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["seq", "at", "kind", "data"]);
        assert_eq!(entry["seq"], json!(at + 1));
    }
    daemon.get("/tokens/NOPE").refused(404, "token_not_found");
    daemon
        .get("/tokens/NOPE/history")
        .refused(404, "token_not_found");
}

#[test]
fn an_event_moves_the_token_and_a_repeated_key_answers_duplicate() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let key = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "gh-delivery-1"),
    ];
    let first = daemon
        .request("POST", "/tokens/T-1/events/done", &key, b"{}")
        .expect(200);
    assert_eq!(first["state"], "testing");
    let second = daemon
        .request("POST", "/tokens/T-1/events/done", &key, b"{}")
        .expect(200);
    assert_eq!(second, json!({"duplicate": true, "token": first}));
    daemon
        .post(
            "/tokens/T-1/events/passed",
            &json!({"payload": {"passed": 1}}),
        )
        .refused(422, "invalid_payload");
    daemon
        .post("/tokens/T-1/events/done", &json!({}))
        .refused(409, "event_not_allowed");
    daemon
        .post("/tokens/T-1/events/timeout", &json!({}))
        .refused(409, "event_not_allowed");
    let done = daemon
        .post(
            "/tokens/T-1/events/passed",
            &json!({"payload": {"passed": 3, "failed": 0}}),
        )
        .expect(200);
    assert_eq!(
        (&done["state"], &done["status"]),
        (&json!("testing"), &json!("completed"))
    );
    daemon
        .post_empty("/tokens/NOPE/events/done")
        .refused(404, "token_not_found");
}

#[test]
fn pause_resume_and_cancel_steer_a_token() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    assert_eq!(
        daemon.post_empty("/tokens/T-1/pause").expect(200)["status"],
        "paused"
    );
    daemon
        .post_empty("/tokens/T-1/pause")
        .refused(409, "token_not_active");
    assert_eq!(
        daemon.post_empty("/tokens/T-1/resume").expect(200)["status"],
        "active"
    );
    assert_eq!(
        daemon.post_empty("/tokens/T-1/cancel").expect(200)["status"],
        "cancelled"
    );
    daemon
        .post_empty("/tokens/T-1/events/done")
        .refused(409, "token_not_active");
    daemon
        .post_empty("/tokens/NOPE/pause")
        .refused(404, "token_not_found");
}

#[test]
fn a_claim_grants_the_oldest_task_or_answers_204() {
    let daemon = Daemon::tickets();
    let none = claim(&daemon, "box-1");
    assert_eq!((none.status, none.body.len()), (204, 0), "{none}");
    start(&daemon, "T-1");
    let mut grant = claim(&daemon, "box-1").expect(200);
    // Our addition `traceparent`: the attempt's span, in the token's trace.
    let traceparent = grant["traceparent"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        traceparent.starts_with("00-") && traceparent.ends_with("-01"),
        "{grant}"
    );
    grant.as_object_mut().unwrap().remove("traceparent");
    // The reference's fields, and our addition `lease_seconds` (the harness serves
    // with leases of 2 s), which the reference's supervisor ignores.
    assert_eq!(
        grant,
        json!({"task": 1, "token": "T-1", "state": "coding", "visit": 1, "attempt": 1,
               "context": {"repo": "acme/api"}, "memory": {}, "entered_by": {"name": "__started__"},
               "lease_seconds": 2.0})
    );
    assert_eq!(claim(&daemon, "box-2").status, 204);
}

#[test]
fn a_heartbeat_answers_the_tasks_the_supervisor_lost() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let task = claim(&daemon, "box-1").expect(200)["task"].clone();
    let beat = json!({"supervisor": "box-1", "tasks": [task]});
    assert_eq!(
        daemon.post("/tasks/heartbeat", &beat).expect(200),
        json!({"lost": []})
    );
    daemon.post_empty("/tokens/T-1/cancel").expect(200);
    assert_eq!(
        daemon.post("/tasks/heartbeat", &beat).expect(200),
        json!({"lost": [task]})
    );
}

#[test]
fn a_report_moves_the_token_and_a_waiting_task_takes_a_report_from_outside() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let task = claim(&daemon, "box-1").expect(200)["task"]
        .as_i64()
        .unwrap();
    let path = format!("/tasks/{task}/report");
    daemon
        .post(
            &path,
            &json!({"kind": "event", "event": "done", "supervisor": "box-2"}),
        )
        .refused(409, "task_not_held");
    daemon
        .post(
            &path,
            &json!({"kind": "event", "event": "passed", "supervisor": "box-1"}),
        )
        .refused(409, "event_not_allowed");
    let waiting = daemon
        .post(&path, &json!({"kind": "waiting", "supervisor": "box-1"}))
        .expect(200);
    assert_eq!(waiting["state"], "coding");
    let moved = daemon
        .post(&path, &json!({"kind": "event", "event": "done"}))
        .expect(200);
    assert_eq!(moved["state"], "testing");
    daemon
        .post(
            "/tasks/999/report",
            &json!({"kind": "event", "event": "done"}),
        )
        .refused(404, "task_not_found");
}

#[test]
fn a_note_and_a_memory_write_answer_204_and_the_memory_value_stays_out_of_history() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let task = claim(&daemon, "box-1").expect(200)["task"]
        .as_i64()
        .unwrap();
    let note = daemon.post(
        &format!("/tasks/{task}/note"),
        &json!({"text": "  building  "}),
    );
    assert_eq!((note.status, note.body.len()), (204, 0), "{note}");
    let memory = daemon.put(
        &format!("/tasks/{task}/memory"),
        &json!({"key": "session", "value": "secret-123"}),
    );
    assert_eq!(memory.status, 204, "{memory}");
    let history = daemon.get("/tokens/T-1/history");
    let text = String::from_utf8_lossy(&history.body);
    assert!(
        text.contains("\"text\":\"building\"") && !text.contains("secret-123"),
        "{history}"
    );
    daemon
        .post("/tasks/999/note", &json!({"text": "x"}))
        .refused(404, "task_not_found");
    daemon
        .put("/tasks/999/memory", &json!({"key": "k", "value": 1}))
        .refused(404, "task_not_found");
    assert!(kinds(&daemon, "T-1").contains(&"memory_set".to_string()));
}

#[test]
fn a_note_sent_again_with_its_idempotency_key_is_written_once() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let task = claim(&daemon, "box-1").expect(200)["task"]
        .as_i64()
        .unwrap();
    let path = format!("/tasks/{task}/note");
    let note = |key: &str, text: &str| {
        let body = json!({"text": text, "attempt": 1}).to_string();
        daemon.request(
            "POST",
            &path,
            &[
                ("content-type", "application/json"),
                ("idempotency-key", key),
            ],
            body.as_bytes(),
        )
    };
    for _ in 0..3 {
        let answer = note("stateous-note/1/1/7", "built");
        assert_eq!(answer.status, 204, "{answer}");
    }
    assert_eq!(note("stateous-note/1/1/8", "built").status, 204);
    let notes = kinds(&daemon, "T-1")
        .iter()
        .filter(|kind| *kind == "note")
        .count();
    assert_eq!(notes, 2, "one note per key");
    note(&"k".repeat(257), "built").refused(422, "invalid_payload");
    // Without a key (the reference's supervisor), each note is written.
    for _ in 0..2 {
        daemon.post(&path, &json!({"text": "plain"})).expect(204);
    }
    let notes = kinds(&daemon, "T-1")
        .iter()
        .filter(|kind| *kind == "note")
        .count();
    assert_eq!(notes, 4);
}

#[test]
fn a_request_for_an_attempt_that_is_over_is_409_attempt_over() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let task = claim(&daemon, "box-1").expect(200)["task"]
        .as_i64()
        .unwrap();
    let failed = json!({"kind": "failed", "error": "boom", "supervisor": "box-1", "attempt": 1});
    daemon
        .post(&format!("/tasks/{task}/report"), &failed)
        .expect(200);
    assert_eq!(claim(&daemon, "box-1").expect(200)["attempt"], 2);
    let late = json!({"kind": "event", "event": "done", "supervisor": "box-1", "attempt": 1});
    daemon
        .post(&format!("/tasks/{task}/report"), &late)
        .refused(409, "attempt_over");
    daemon
        .post(
            &format!("/tasks/{task}/note"),
            &json!({"text": "late", "attempt": 1}),
        )
        .refused(409, "attempt_over");
    daemon
        .put(
            &format!("/tasks/{task}/memory"),
            &json!({"key": "k", "value": 1, "attempt": 1}),
        )
        .refused(409, "attempt_over");
}

/// The routes this product adds are routed as the reference's are: `HEAD` as
/// `GET` without the body, another method 405, a trailing slash a 307.
#[test]
fn the_added_routes_answer_head_another_method_and_a_trailing_slash_as_the_others() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    for path in ["/metrics", "/states", "/supervisors", "/tokens/T-1/detail"] {
        let head = daemon.request("HEAD", path, &[], b"");
        assert_eq!(
            (head.status, head.body.len()),
            (200, 0),
            "HEAD {path}: {head}"
        );
        daemon
            .request("POST", path, &[], b"{}")
            .refused(405, "method_not_allowed");
        let slash = daemon.request("GET", &format!("{path}/"), &[], b"");
        assert_eq!(slash.status, 307, "{path}/: {slash}");
        assert_eq!(slash.header("location"), Some(path), "{slash}");
    }
    for (path, other) in [("/tokens/T-1/why", "POST"), ("/tokens/T-1/retry", "GET")] {
        daemon
            .request(other, path, &[], b"")
            .refused(405, "method_not_allowed");
        let slash = daemon.request("GET", &format!("{path}/"), &[], b"");
        assert_eq!(slash.status, 307, "{path}/: {slash}");
        assert_eq!(slash.header("location"), Some(path), "{slash}");
    }
    daemon
        .request("GET", "/nothing/", &[], b"")
        .refused(404, "not_found");
}

#[test]
fn the_journal_is_read_a_page_at_a_time_and_a_bad_query_is_refused() {
    let daemon = Daemon::tickets();
    let page = daemon.get("/journal?subject=limit").expect(200);
    assert_eq!(page, json!({"entries": []}));
    let page = daemon
        .get("/journal?subject=schedule&name=nightly&after=3&limit=10")
        .expect(200);
    assert_eq!(page, json!({"entries": []}));
    daemon.get("/journal").refused(422, "invalid_argument");
    daemon
        .get("/journal?subject=Limit")
        .refused(422, "invalid_argument");
    daemon
        .get("/journal?subject=limit&limit=0")
        .refused(422, "invalid_argument");
}
