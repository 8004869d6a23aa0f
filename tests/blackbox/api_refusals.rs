//! Black-box: every refusal the HTTP layer makes before the engine decides, with the
//! reference's codes and statuses (`docs/reference/http.md`, `limits.md`), and the
//! two routes that only read the graph (`/health`, `/workflow`).

use crate::harness;
use crate::reference;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, exchange, read_reply, test_graph, Daemon, Reply, Setup, Timed};
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
        // A name that ends with an encoded slash: no redirect (it pointed to
        // the same path, without end).
        "/tokens/T-1%2F",
        "/notify/a%2F",
    ] {
        let sentence = daemon.get(path).refused(404, "not_found");
        assert!(!sentence.is_empty());
    }
    let sentence = daemon
        .request("DELETE", "/nothing", &[], b"")
        .refused(404, "not_found");
    assert!(sentence.contains("/nothing"), "{sentence}");
}

/// A 405 names the method it refused, and its `Allow` header lists every method
/// the path takes (RFC 9110), ours included, `HEAD` wherever `GET`. The
/// reference's 405 has no `Allow`; a header more breaks none of its clients.
#[test]
fn a_wrong_method_is_405_method_not_allowed_and_names_it() {
    let daemon = Daemon::tickets();
    let cases = [
        ("GET", "/tokens/T-1/pause", "POST"),
        ("DELETE", "/tokens", "GET, HEAD, POST"),
        ("PUT", "/tokens", "GET, HEAD, POST"),
        ("POST", "/health", "GET, HEAD"),
        ("DELETE", "/health", "GET, HEAD"),
        ("PUT", "/workflow", "GET, HEAD"),
        ("OPTIONS", "/health", "GET, HEAD"),
        ("GET", "/tasks/claim", "POST"),
        ("POST", "/tasks/5/memory", "PUT"),
        ("GET", "/tasks/5/report", "POST"),
        ("PATCH", "/tokens/T-1/events/done", "POST"),
        ("GET", "/clock/advance", "POST"),
        // Ours: the added routes and those of operating many tokens.
        ("POST", "/watch", "GET, HEAD"),
        ("PUT", "/metrics", "GET, HEAD"),
        ("POST", "/tokens/T-1/detail", "GET, HEAD"),
        ("DELETE", "/tokens/T-1/why", "GET, HEAD"),
        ("GET", "/tokens/T-1/retry", "POST"),
        // A token may be named `bulk`: GET reads it, POST is the bulk action.
        ("PUT", "/tokens/bulk", "GET, HEAD, POST"),
    ];
    for (method, path, allow) in cases {
        let reply = daemon.request(method, path, &[], b"");
        let sentence = reply.refused(405, "method_not_allowed");
        assert!(sentence.contains(method), "{sentence}");
        assert_eq!(
            reply.header("allow"),
            Some(allow),
            "{method} {path}: {reply}"
        );
    }
    let head = daemon.request("HEAD", "/tokens/T-1/pause", &[], b"");
    assert_eq!(head.status, 405, "{head}");
    assert_eq!(head.header("allow"), Some("POST"), "{head}");
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

/// The reference's control plane on `orders`, killed when dropped.
struct ReferencePlane {
    child: Child,
    authority: String,
    _dir: tempfile::TempDir,
}

impl ReferencePlane {
    fn start() -> ReferencePlane {
        let stateous = reference::reference_stateous();
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let authority = format!("127.0.0.1:{port}");
        let child = Command::new(stateous)
            .arg("serve")
            .arg(asset_graph("orders"))
            .arg("--db")
            .arg(format!("sqlite:///{}", dir.path().join("ref.db").display()))
            .args(["--listen", &authority])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(&authority).is_err() {
            assert!(Instant::now() < deadline, "the reference did not serve");
            std::thread::sleep(Duration::from_millis(100));
        }
        ReferencePlane {
            child,
            authority,
            _dir: dir,
        }
    }

    fn get(&self, path: &str) -> Reply {
        let stream = TcpStream::connect(&self.authority).unwrap();
        exchange(stream.timed(), "GET", path, &[], b"").unwrap()
    }
}

impl Drop for ReferencePlane {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn each_refusal_of_a_listing_query_says_the_references_sentence_word_for_word() {
    let ours = Daemon::orders();
    let theirs = ReferencePlane::start();
    let long_parent = "x".repeat(129);
    let queries = [
        "status=asleep".to_string(),
        "status=".to_string(),
        "limit=0".to_string(),
        "limit=1001".to_string(),
        "limit=abc".to_string(),
        "limit=".to_string(),
        format!("limit={}", "9".repeat(30)),
        "parent=".to_string(),
        format!("parent={long_parent}"),
        format!("limit=0&parent={long_parent}"),
        "status=asleep&limit=0".to_string(),
        format!("parent={long_parent}&status=asleep"),
    ];
    for query in queries {
        let path = format!("/tokens?{query}");
        let (mine, reference) = (ours.get(&path), theirs.get(&path));
        assert_eq!(
            (mine.status, mine.json()),
            (reference.status, reference.json()),
            "{path}"
        );
    }
}

/// `POST path` with the header `Idempotency-Key` holding `key`, bytes as they are.
fn fire_with_key(daemon: &Daemon, path: &str, key: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(&daemon.authority).unwrap().timed();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: stateous\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: 2\r\nidempotency-key: "
    )
    .into_bytes();
    request.extend_from_slice(key);
    request.extend_from_slice(b"\r\n\r\n{}");
    stream.write_all(&request).unwrap();
    read_reply(stream, format!("POST {path}")).unwrap()
}

#[test]
fn an_idempotency_key_is_utf8_counted_in_characters_and_kept_as_sent() {
    let daemon = Daemon::tickets();
    daemon
        .post(
            "/tokens",
            &json!({"token": "T-1", "context": {"repo": "r"}}),
        )
        .expect(201);
    // 129 characters, 258 bytes: within the limit of 1 to 256 characters.
    let key = "é".repeat(129);
    let path = "/tokens/T-1/events/stuck";
    let first = fire_with_key(&daemon, path, key.as_bytes()).expect(200);
    assert_eq!(first.get("duplicate"), None, "{first}");
    let again = fire_with_key(&daemon, path, key.as_bytes()).expect(200);
    assert_eq!(again["duplicate"], true, "{again}");
    let db = rusqlite::Connection::open(&daemon.db).unwrap();
    let stored: String = db
        .query_row("SELECT key FROM ledger WHERE key IS NOT NULL", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(stored, key, "the key is stored as sent");
    let long = "é".repeat(257);
    let sentence = fire_with_key(&daemon, path, long.as_bytes()).refused(422, "invalid_payload");
    assert_eq!(sentence, "an idempotency key must have 1 to 256 characters");
    let sentence = fire_with_key(&daemon, path, b"caf\xe9").refused(422, "invalid_payload");
    assert_eq!(sentence, "an idempotency key must be UTF-8 text");
}

#[test]
fn a_heartbeats_attempts_of_the_wrong_shape_are_422_invalid_body() {
    let daemon = Daemon::tickets();
    for attempts in [
        json!([1]),
        json!({"one": 1}),
        json!({"1": 0}),
        json!({"1": "2"}),
    ] {
        let body = json!({"supervisor": "box", "tasks": [1], "attempts": attempts});
        daemon
            .post("/tasks/heartbeat", &body)
            .refused(422, "invalid_body");
    }
    let body = json!({"supervisor": "box", "tasks": [1], "attempts": {"1": 1}});
    assert_eq!(
        daemon.post("/tasks/heartbeat", &body).expect(200),
        json!({"lost": [1]})
    );
}
