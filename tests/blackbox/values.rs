//! Black-box, on both backends: values that Postgres text cannot keep (the NUL
//! character, `\u0000`) get the same answer on SQLite and on Postgres: stored and
//! read back equal where they sit inside JSON (a context, a payload, a note, a
//! memory value), refused with one sentence where they would be a column of their
//! own (a memory key, a supervisor's name), and never a 500 or a stuck token. A
//! raw NUL in a request's path or a header is a 400 with the refusal's sentence.

use crate::harness;

use harness::{asset_graph, Setup};
use serde_json::{json, Value};

fn kinds(history: &Value) -> Vec<String> {
    history
        .as_array()
        .expect("a history")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn nul_inside_json_is_stored_and_read_back_equal() {
    let daemon = Setup::new(asset_graph("orders")).start();
    let title = "a\u{0}b";
    let started = daemon
        .post(
            "/tokens",
            &json!({"token": "N-1", "context": {"title": title, "k\u{0}ey": 1}}),
        )
        .expect(201);
    assert_eq!(started["context"]["title"], title);
    assert_eq!(
        daemon.get("/tokens/N-1").expect(200)["context"]["k\u{0}ey"],
        1
    );
    let claim = json!({"supervisor": "box-1", "states": ["draft"]});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    let task = grant["task"].as_i64().expect("a task id");
    let attempt = &grant["attempt"];
    daemon
        .post(
            &format!("/tasks/{task}/note"),
            &json!({"text": "half\u{0}way", "attempt": attempt}),
        )
        .expect(204);
    daemon
        .put(
            &format!("/tasks/{task}/memory"),
            &json!({"key": "session", "value": "s\u{0}1", "attempt": attempt}),
        )
        .expect(204);
    let report = json!({"kind": "event", "event": "submitted", "supervisor": "box-1",
        "attempt": attempt, "context": {"title": "c\u{0}d"}});
    daemon
        .post(&format!("/tasks/{task}/report"), &report)
        .expect(200);
    // The next routine's grant carries what was kept; the token moves on.
    let claim = json!({"supervisor": "box-1", "states": ["review"]});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    assert_eq!(grant["context"]["title"], "c\u{0}d");
    let task = grant["task"].as_i64().expect("a task id");
    let payload = json!({"approved": true, "note": "ok\u{0}"});
    let report = json!({"kind": "event", "event": "reviewed", "supervisor": "box-1",
        "attempt": grant["attempt"], "payload": payload});
    daemon
        .post(&format!("/tasks/{task}/report"), &report)
        .expect(200);
    let history = daemon.get("/tokens/N-1/history").expect(200);
    assert_eq!(
        kinds(&history).last().map(String::as_str),
        Some("completed")
    );
    let note = history
        .as_array()
        .and_then(|h| h.iter().find(|e| e["kind"] == "note"))
        .expect("the note");
    assert_eq!(note["data"]["text"], "half\u{0}way");
    let reviewed = history
        .as_array()
        .and_then(|h| {
            h.iter()
                .find(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "reviewed")
        })
        .expect("the review");
    assert_eq!(reviewed["data"]["payload"]["note"], "ok\u{0}");
    // A fired event's payload and a refused event's name too.
    daemon
        .post(
            "/tokens",
            &json!({"token": "N-2", "context": {"title": "t"}}),
        )
        .expect(201);
    daemon
        .post_empty("/tokens/N-2/events/nope%00x")
        .refused(409, "event_not_allowed");
    daemon
        .post_empty("/tokens/N-2/events/submitted")
        .expect(200);
}

fn nul_where_a_column_would_hold_it_is_refused_with_one_sentence() {
    let daemon = Setup::new(asset_graph("orders")).start();
    daemon
        .post(
            "/tokens",
            &json!({"token": "N-1", "context": {"title": "t"}}),
        )
        .expect(201);
    let refused = daemon
        .post(
            "/tasks/claim",
            &json!({"supervisor": "box\u{0}1", "states": ["draft"]}),
        )
        .refused(422, "invalid_argument");
    assert!(refused.contains("NUL"), "{refused}");
    let grant = daemon
        .post(
            "/tasks/claim",
            &json!({"supervisor": "box-1", "states": ["draft"]}),
        )
        .expect(200);
    let task = grant["task"].as_i64().expect("a task id");
    let refused = daemon
        .put(
            &format!("/tasks/{task}/memory"),
            &json!({"key": "se\u{0}ssion", "value": 1}),
        )
        .refused(422, "invalid_payload");
    assert!(refused.contains("NUL"), "{refused}");
    // Reads of ids that no token can have: nothing found, the same on both.
    daemon.get("/tokens/a%00b").refused(404, "token_not_found");
    daemon
        .post_empty("/tokens/a%00b/pause")
        .refused(404, "token_not_found");
    daemon
        .get("/tokens/a%00b/history")
        .refused(404, "token_not_found");
    let none = daemon.get("/tokens?parent=a%00b").expect(200);
    assert_eq!(none, json!([]));
    // The token was never harmed: it moves on.
    let report = json!({"kind": "event", "event": "submitted", "supervisor": "box-1",
        "attempt": grant["attempt"]});
    daemon
        .post(&format!("/tasks/{task}/report"), &report)
        .expect(200);
}

/// A raw NUL (or another control character) in the path or a header breaks HTTP's
/// grammar: 400 `bad_request` with the refusal's sentence, as any refusal, over
/// TCP and the Unix socket, and the server serves on.
#[test]
fn a_raw_nul_in_the_path_or_a_header_is_a_400_with_the_refusals_sentence() {
    let daemon = Setup::new(asset_graph("orders")).start();
    let line = daemon
        .request("GET", "/tokens/a\0b", &[], b"")
        .refused(400, "bad_request");
    assert!(line.starts_with("the request line holds a byte"), "{line}");
    let unix = daemon
        .request_unix("GET", "/tokens/a\u{1}b", &[], b"")
        .refused(400, "bad_request");
    assert_eq!(unix, line);
    let header = daemon
        .request("GET", "/health", &[("x-trace", "a\0b")], b"")
        .refused(400, "bad_request");
    assert!(
        header.starts_with("a header of the request holds a byte"),
        "{header}"
    );
    let name = daemon
        .request("GET", "/health", &[("x\0trace", "a")], b"")
        .refused(400, "bad_request");
    assert_eq!(name, header);
    daemon.get("/health").expect(200);
}

both!(
    nul_inside_json_is_stored_and_read_back_equal,
    nul_where_a_column_would_hold_it_is_refused_with_one_sentence,
);
