//! Black-box: every refusal the HTTP layer makes before the engine decides, with the
//! reference's codes and statuses (`docs/reference/http.md`, `limits.md`), and the
//! two routes that only read the graph (`/health`, `/workflow`).

mod harness;

use harness::{test_graph, Daemon, Setup};
use serde_json::{json, Value};

const JSON: (&str, &str) = ("content-type", "application/json");

#[test]
fn health_names_the_workflow_and_the_graph_checksum() {
    let daemon = Daemon::tickets();
    let health = daemon.get("/health").expect(200);
    assert_eq!(health["workflow"], "tickets");
    let checksum = health["checksum"].as_str().unwrap_or_default();
    assert!(
        checksum.starts_with("sha256:") && checksum.len() == 71,
        "{health}"
    );
    assert_eq!(health.as_object().map(|o| o.len()), Some(2));
}

#[test]
fn workflow_answers_the_graph_file_as_json() {
    let daemon = Daemon::tickets();
    let served = daemon.get("/workflow").expect(200);
    let text = std::fs::read_to_string(test_graph("tickets")).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(served, file);
    let reply = daemon.get("/workflow");
    assert_eq!(reply.header("content-type"), Some("application/json"));
}

#[test]
fn an_unknown_path_is_404_not_found_and_names_the_path() {
    let daemon = Daemon::tickets();
    for path in [
        "/nothing",
        "/",
        "//health",
        "/tasks/abc/report",
        "/tasks/-1/note",
        "/tokens/T%2F1",
    ] {
        let sentence = daemon.get(path).refused(404, "not_found");
        assert!(!sentence.is_empty());
    }
    let sentence = daemon
        .request("DELETE", "/nothing", &[], b"")
        .refused(404, "not_found");
    assert!(sentence.contains("/nothing"), "{sentence}");
}

#[test]
fn a_wrong_method_is_405_method_not_allowed_and_names_it() {
    let daemon = Daemon::tickets();
    let cases = [
        ("GET", "/tokens/T-1/pause"),
        ("DELETE", "/tokens"),
        ("POST", "/health"),
        ("PUT", "/workflow"),
        ("OPTIONS", "/health"),
        ("GET", "/tasks/claim"),
        ("POST", "/tasks/5/memory"),
        ("GET", "/tasks/5/report"),
        ("PATCH", "/tokens/T-1/events/done"),
    ];
    for (method, path) in cases {
        let sentence = daemon
            .request(method, path, &[], b"")
            .refused(405, "method_not_allowed");
        assert!(sentence.contains(method), "{sentence}");
    }
}

#[test]
fn a_path_with_a_trailing_slash_redirects_to_the_route() {
    let daemon = Daemon::tickets();
    let reply = daemon.get("/tokens/?limit=5");
    assert_eq!(reply.status, 307, "{reply}");
    assert_eq!(reply.header("location"), Some("/tokens?limit=5"));
    daemon.get("/nothing/").refused(404, "not_found");
}

#[test]
fn head_answers_like_get_without_a_body() {
    let daemon = Daemon::tickets();
    let reply = daemon.request("HEAD", "/health", &[], b"");
    assert_eq!(reply.status, 200, "{reply}");
    assert!(reply.body.is_empty(), "{reply}");
}

#[test]
fn a_body_over_1_mib_is_413_bad_request_on_every_path() {
    let daemon = Daemon::tickets();
    let big = vec![b' '; 1024 * 1024 + 1];
    for (method, path) in [
        ("POST", "/tokens"),
        ("POST", "/health"),
        ("GET", "/health"),
        ("POST", "/nothing"),
    ] {
        let sentence = daemon
            .request(method, path, &[JSON], &big)
            .refused(413, "bad_request");
        assert!(sentence.contains("1 MiB"), "{sentence}");
    }
}

#[test]
fn a_chunked_body_over_1_mib_is_413_bad_request() {
    let daemon = Daemon::tickets();
    let mut chunked = Vec::new();
    for _ in 0..3 {
        chunked.extend_from_slice(format!("{:x}\r\n", 512 * 1024).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 512 * 1024));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let headers = [JSON, ("transfer-encoding", "chunked")];
    daemon
        .request("POST", "/tokens", &headers, &chunked)
        .refused(413, "bad_request");
}

#[test]
fn a_body_of_exactly_1_mib_is_read() {
    let daemon = Daemon::tickets();
    let blank = vec![b' '; 1024 * 1024];
    // Blank reads as {}: the request gets as far as the token id.
    daemon
        .request("POST", "/tokens", &[JSON], &blank)
        .refused(422, "invalid_token_id");
}

fn nested(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

#[test]
fn json_nested_deeper_than_64_levels_is_400_bad_request() {
    let daemon = Daemon::tickets();
    let deep = nested(65);
    daemon
        .request("POST", "/tokens", &[JSON], deep.as_bytes())
        .refused(400, "bad_request");
    let very_deep = nested(200_000);
    daemon
        .request("POST", "/tasks/claim", &[JSON], very_deep.as_bytes())
        .refused(400, "bad_request");
    let at_the_limit = format!("{{\"token\": \"T-1\", \"context\": {}}}", nested(63));
    daemon
        .request("POST", "/tokens", &[JSON], at_the_limit.as_bytes())
        .refused(422, "invalid_context");
}

#[test]
fn text_that_is_not_strict_json_is_400_bad_request() {
    let daemon = Daemon::tickets();
    let bad: [&[u8]; 6] = [
        b"{",
        b"{not json",
        b"{\"token\": NaN}",
        b"{\"token\": Infinity}",
        b"{\"token\": \"a\"} x",
        b"\xff",
    ];
    for raw in bad {
        daemon
            .request("POST", "/tokens", &[JSON], raw)
            .refused(400, "bad_request");
    }
}

#[test]
fn json_that_is_not_an_object_is_422_invalid_body() {
    let daemon = Daemon::tickets();
    for raw in ["[1, 2]", "\"x\"", "null", "7"] {
        daemon
            .request("POST", "/tokens", &[JSON], raw.as_bytes())
            .refused(422, "invalid_body");
    }
}

#[test]
fn an_empty_body_reads_as_an_empty_object() {
    let daemon = Daemon::tickets();
    daemon
        .post_empty("/tokens")
        .refused(422, "invalid_token_id");
    daemon
        .post_empty("/tasks/claim")
        .refused(422, "invalid_argument");
    daemon
        .post_empty("/tasks/heartbeat")
        .refused(422, "invalid_argument");
}

#[test]
fn wrong_shapes_and_values_are_refused_with_the_reference_codes() {
    let daemon = Daemon::tickets();
    let long = "k".repeat(129);
    let cases: Vec<(&str, &str, Value, u16, &str)> = vec![
        (
            "POST",
            "/tokens",
            json!({"token": 7}),
            422,
            "invalid_token_id",
        ),
        (
            "POST",
            "/tokens",
            json!({"token": null}),
            422,
            "invalid_token_id",
        ),
        (
            "POST",
            "/tokens",
            json!({"token": "T-1", "context": [1]}),
            422,
            "invalid_context",
        ),
        (
            "POST",
            "/tokens/T-1/events/done",
            json!({"payload": 1}),
            422,
            "invalid_payload",
        ),
        (
            "POST",
            "/tasks/claim",
            json!({"supervisor": "", "states": []}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/claim",
            json!({"supervisor": "b", "states": [], "request": "no spaces"}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/claim",
            json!({"supervisor": "b"}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/claim",
            json!({"supervisor": "b", "states": vec!["s"; 1001]}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/heartbeat",
            json!({"supervisor": "b"}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/heartbeat",
            json!({"supervisor": "b", "tasks": [true]}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/heartbeat",
            json!({"supervisor": "b", "tasks": vec![1; 1001]}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/1/report",
            json!({"kind": "nope"}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/1/report",
            json!({"event": "done"}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/1/report",
            json!({"kind": "event", "event": "x", "supervisor": 3}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/1/report",
            json!({"kind": "waiting", "schedules": [{"event": "x", "after": "soon"}]}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/1/report",
            json!({"kind": "waiting", "attempt": 0}),
            422,
            "invalid_body",
        ),
        (
            "POST",
            "/tasks/1/note",
            json!({"text": " "}),
            422,
            "invalid_payload",
        ),
        (
            "POST",
            "/tasks/1/note",
            json!({"text": "x", "attempt": 0}),
            422,
            "invalid_argument",
        ),
        (
            "POST",
            "/tasks/1/note",
            json!({"text": "x", "attempt": 1.5}),
            422,
            "invalid_argument",
        ),
        (
            "PUT",
            "/tasks/1/memory",
            json!({"key": long, "value": 1}),
            422,
            "invalid_payload",
        ),
        (
            "PUT",
            "/tasks/1/memory",
            json!({"key": "k"}),
            422,
            "invalid_body",
        ),
        (
            "PUT",
            "/tasks/1/memory",
            json!({"key": "k", "value": 1, "attempt": "1"}),
            422,
            "invalid_argument",
        ),
    ];
    for (method, path, body, status, code) in cases {
        daemon
            .request(method, path, &[JSON], body.to_string().as_bytes())
            .refused(status, code);
    }
}

#[test]
fn bad_listing_queries_are_422_invalid_argument() {
    let daemon = Daemon::tickets();
    let long_parent = format!("/tokens?parent={}", "x".repeat(129));
    let long_limit = format!("/tokens?limit={}", "9".repeat(30));
    for path in [
        "/tokens?status=asleep",
        "/tokens?status=",
        "/tokens?limit=0",
        "/tokens?limit=1001",
        "/tokens?limit=abc",
        "/tokens?limit=",
        "/tokens?limit=5&limit=0",
        "/tokens?parent=",
        long_parent.as_str(),
        long_limit.as_str(),
    ] {
        daemon.get(path).refused(422, "invalid_argument");
    }
}

#[test]
fn a_bad_idempotency_key_is_422_invalid_payload() {
    let daemon = Daemon::tickets();
    let long = "k".repeat(257);
    for key in ["", long.as_str(), "a\tb"] {
        let headers = [JSON, ("Idempotency-Key", key)];
        daemon
            .request("POST", "/tokens/T-1/events/done", &headers, b"{}")
            .refused(422, "invalid_payload");
    }
}

#[test]
fn a_task_id_larger_than_a_database_integer_is_404_task_not_found() {
    let daemon = Daemon::tickets();
    let big = format!("/tasks/{}/note", "9".repeat(25));
    daemon
        .post(&big, &json!({"text": "x"}))
        .refused(404, "task_not_found");
    let big = format!("/tasks/{}/memory", 2u128.pow(70));
    daemon
        .put(&big, &json!({"key": "k", "value": 1}))
        .refused(404, "task_not_found");
}

#[test]
fn a_write_while_another_process_holds_the_database_is_503_database_busy() {
    let daemon = Setup::new(test_graph("tickets"))
        .args(&["--busy-timeout", "100ms"])
        .start();
    let start = json!({"token": "T-1", "context": {"repo": "r"}});
    let other = rusqlite::Connection::open(&daemon.db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    daemon.post("/tokens", &start).refused(503, "database_busy");
    other.execute_batch("ROLLBACK").unwrap();
    daemon.post("/tokens", &start).expect(201);
}
