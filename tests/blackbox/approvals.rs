//! People in the loop (`docs/how-to/approve-with-keys.md`): the first access key
//! names the TCP callers it would lock out and is made only when asked to
//! (`--yes`, or yes at a terminal); a request over the Unix socket that carries a
//! key acts as that key; a scoped key fires only its events, in its states, for
//! the tokens its filter matches, and nothing else.

use serde_json::{json, Value};

use crate::access::access;
use crate::harness;
use harness::{asset_graph, run, Daemon, Reply, Setup};

fn orders() -> Daemon {
    Setup::new(asset_graph("orders")).start()
}

fn socket_url(daemon: &Daemon) -> String {
    format!("unix://{}", daemon.socket.display())
}

/// A request with `secret` as its bearer key, over TCP or (`local`) the socket.
fn keyed(
    daemon: &Daemon,
    local: bool,
    secret: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> Reply {
    let bearer = format!("Bearer {secret}");
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    if local {
        daemon.request_unix(method, path, &headers, text.as_bytes())
    } else {
        daemon.request(method, path, &headers, text.as_bytes())
    }
}

/// Over the socket, as its owner (admin).
fn local(daemon: &Daemon, method: &str, path: &str, body: &Value) -> Reply {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let headers = [("content-type", "application/json")];
    daemon.request_unix(method, path, &headers, text.as_bytes())
}

fn history(daemon: &Daemon, token: &str) -> Vec<Value> {
    let answer = local(
        daemon,
        "GET",
        &format!("/tokens/{token}/history"),
        &Value::Null,
    );
    answer.expect(200).as_array().cloned().unwrap_or_default()
}

/// Start `token` with the context's `title`, and move it to `state` (`draft`
/// or `review`).
fn token_in(daemon: &Daemon, token: &str, title: &str, state: &str) {
    let body = json!({"token": token, "context": {"title": title}});
    local(daemon, "POST", "/tokens", &body).expect(201);
    if state == "review" {
        let path = format!("/tokens/{token}/events/submitted");
        local(daemon, "POST", &path, &json!({})).expect(200);
    }
}

fn the_first_key_names_the_supervisors_it_would_lock_out_and_needs_yes() {
    let daemon = orders();
    // A supervisor claims over TCP, as `stateous supervise` does.
    let claim = json!({"supervisor": "box-1", "states": ["draft"]});
    daemon.post("/tasks/claim", &claim).expect(204);
    let url = socket_url(&daemon);
    let refused = run(
        daemon.dir.path(),
        &["access", "add", "ann", "--role", "operate", "--url", &url],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(refused.stdout.is_empty(), "no secret: {refused}");
    assert!(
        refused.stderr.contains("the supervisor box-1 at 127.0.0.1"),
        "{refused}"
    );
    assert!(
        refused.stderr.contains(
            "error: the first access key was not made: it would lock out the 1 TCP caller"
        ),
        "{refused}"
    );
    // Nothing changed: no key, and TCP still open.
    assert_eq!(
        local(&daemon, "GET", "/access", &Value::Null).expect(200),
        json!([])
    );
    daemon.get("/tokens").expect(200);
    let callers = local(&daemon, "GET", "/access/callers", &Value::Null).expect(200);
    assert_eq!(callers[0]["address"], "127.0.0.1", "{callers}");
    assert_eq!(callers[0]["supervisors"], json!(["box-1"]), "{callers}");

    let made = run(
        daemon.dir.path(),
        &[
            "access", "add", "ann", "--role", "operate", "--yes", "--url", &url,
        ],
    );
    assert_eq!(made.code(), 0, "{made}");
    assert!(made.stdout.starts_with("stateous_key_"), "{made}");
    assert!(
        made.stderr.contains("the supervisor box-1"),
        "still said: {made}"
    );
    daemon
        .post("/tasks/claim", &claim)
        .refused(401, "unauthenticated");
    // Once a key exists, a further key asks nothing: TCP is closed already.
    let second = run(
        daemon.dir.path(),
        &["access", "add", "bob", "--role", "read", "--url", &url],
    );
    assert_eq!(second.code(), 0, "{second}");
    assert!(!second.stderr.contains("lock out"), "{second}");
}

/// Without TCP callers, the first key is made without a question; health checks
/// (a load balancer's, systemd's) are no callers a key locks out.
fn a_first_key_with_no_tcp_callers_is_made_without_asking() {
    let daemon = orders();
    daemon.get("/health").expect(200);
    let url = socket_url(&daemon);
    let made = run(
        daemon.dir.path(),
        &["access", "add", "ann", "--role", "operate", "--url", &url],
    );
    assert_eq!(made.code(), 0, "{made}");
    assert!(!made.stderr.contains("lock out"), "{made}");
}

fn a_fire_over_the_socket_with_a_key_is_named_by_that_key() {
    let daemon = orders();
    let ann = access(&daemon, &["add", "ann", "--role", "operate"]);
    let ann = ann.trim();
    token_in(&daemon, "O-1", "a", "draft");
    keyed(
        &daemon,
        true,
        ann,
        "POST",
        "/tokens/O-1/events/submitted",
        &json!({}),
    )
    .expect(200);
    let entries = history(&daemon, "O-1");
    let accepted = entries
        .iter()
        .find(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "submitted")
        .expect("the event's entry");
    assert_eq!(accepted["by"], "ann", "{accepted}");
    // The key's role applies on the socket too; an unknown key is refused there.
    let read = access(&daemon, &["add", "reader", "--role", "read"]);
    keyed(
        &daemon,
        true,
        read.trim(),
        "POST",
        "/tokens/O-1/pause",
        &json!({}),
    )
    .refused(403, "forbidden");
    let unknown = format!("stateous_key_{}", "ab".repeat(32));
    keyed(&daemon, true, &unknown, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    // Without a key the socket is its owner's admin door, and names nobody.
    local(&daemon, "POST", "/tokens/O-1/pause", &json!({})).expect(200);
    let paused = history(&daemon, "O-1");
    let last = paused.last().expect("entries");
    assert_eq!(last["kind"], "paused");
    assert!(last.get("by").is_none_or(Value::is_null), "{last}");
    // The command line sends a key over the socket too.
    let url = socket_url(&daemon);
    let key_file = daemon.dir.path().join("ann.key");
    std::fs::write(&key_file, ann).unwrap();
    let key_path = key_file.to_string_lossy().into_owned();
    let resumed = run(
        daemon.dir.path(),
        &[
            "token",
            "resume",
            "O-1",
            "--url",
            &url,
            "--access-key-file",
            &key_path,
        ],
    );
    assert_eq!(resumed.code(), 0, "{resumed}");
    let shown = run(daemon.dir.path(), &["token", "show", "O-1", "--url", &url]);
    assert!(shown.stdout.contains("resumed  (by key ann)"), "{shown}");
}

fn a_scoped_key_fires_its_events_in_its_states_for_its_tokens_and_nothing_else() {
    let daemon = orders();
    let ann = access(
        &daemon,
        &[
            "add",
            "ann",
            "--role",
            "operate",
            "--events",
            "reviewed",
            "--states",
            "review",
            "--where",
            "ctx['title'] == 'ours'",
        ],
    );
    let ann = ann.trim().to_string();
    let listed = access(&daemon, &["list"]);
    assert!(
        listed.contains("may fire reviewed in review where ctx['title'] == 'ours'"),
        "{listed}"
    );
    token_in(&daemon, "R-1", "ours", "review");
    token_in(&daemon, "R-2", "ours", "draft");
    token_in(&daemon, "R-3", "theirs", "review");
    let tcp =
        |method: &str, path: &str, body: &Value| keyed(&daemon, false, &ann, method, path, body);

    // Reads are allowed.
    tcp("GET", "/tokens", &Value::Null).expect(200);
    tcp("GET", "/tokens/R-1/history", &Value::Null).expect(200);
    let own = tcp("GET", "/access/self", &Value::Null).expect(200);
    assert_eq!(own["scope"]["events"], json!(["reviewed"]), "{own}");

    // Each refusal names the scope and writes nothing.
    let before: Vec<usize> = ["R-1", "R-2", "R-3"]
        .iter()
        .map(|t| history(&daemon, t).len())
        .collect();
    let verdict = json!({"payload": {"approved": true}});
    let refusals = [
        ("POST", "/tokens/R-1/cancel", json!({})),
        ("POST", "/tokens/R-1/pause", json!({})),
        ("POST", "/tokens/R-2/events/submitted", json!({})),
        ("POST", "/tokens/R-2/events/reviewed", verdict.clone()),
        ("POST", "/tokens/R-3/events/reviewed", verdict.clone()),
        (
            "POST",
            "/tokens",
            json!({"token": "R-9", "context": {"title": "ours"}}),
        ),
    ];
    for (method, path, body) in &refusals {
        let sentence = tcp(method, path, body).refused(403, "forbidden");
        assert!(
            sentence.contains("the access key ann may")
                && sentence.contains("reviewed in review where ctx['title'] == 'ours'"),
            "{path}: {sentence}"
        );
    }
    let sentence = tcp("POST", "/tokens/R-2/events/reviewed", &verdict).refused(403, "forbidden");
    assert!(sentence.ends_with("'R-2' is in draft"), "{sentence}");
    let sentence = tcp("POST", "/tokens/R-3/events/reviewed", &verdict).refused(403, "forbidden");
    assert!(
        sentence.ends_with("'R-3' does not match the filter"),
        "{sentence}"
    );
    let bulk =
        json!({"action": "fire", "event": "reviewed", "where": "state == 'review'", "reason": "x"});
    tcp("POST", "/tokens/bulk", &bulk).refused(403, "forbidden");
    let after: Vec<usize> = ["R-1", "R-2", "R-3"]
        .iter()
        .map(|t| history(&daemon, t).len())
        .collect();
    assert_eq!(before, after, "a refused fire writes nothing");

    // In scope: it fires, and the ledger names the key.
    let fired = tcp("POST", "/tokens/R-1/events/reviewed", &verdict).expect(200);
    assert_eq!(fired["status"], "completed", "{fired}");
    let accepted = history(&daemon, "R-1")
        .into_iter()
        .find(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "reviewed")
        .expect("the approval's entry");
    assert_eq!(accepted["by"], "ann", "{accepted}");
}

/// A scope that cannot mean what it says is refused with its code and one
/// sentence, and no key is made.
fn a_scope_with_wrong_names_is_refused_and_makes_no_key() {
    let daemon = orders();
    let url = socket_url(&daemon);
    let cases: [(&[&str], &str); 5] = [
        (
            &["--role", "read", "--events", "reviewed"],
            "only an operate key takes a scope",
        ),
        (
            &["--role", "operate", "--events", "nope"],
            "has an event 'nope'",
        ),
        (
            &["--role", "operate", "--events", "timeout"],
            "has an event 'timeout'",
        ),
        (
            &[
                "--role", "operate", "--events", "reviewed", "--states", "nowhere",
            ],
            "has a state 'nowhere'",
        ),
        (
            &[
                "--role",
                "operate",
                "--events",
                "reviewed",
                "--where",
                "ctx['x' ==",
            ],
            "does not parse",
        ),
    ];
    for (flags, said) in cases {
        let mut args = vec!["access", "add", "k"];
        args.extend(flags);
        args.extend(["--url", &url]);
        let refused = run(daemon.dir.path(), &args);
        assert_eq!(refused.code(), 1, "{refused}");
        assert!(
            refused.stderr.contains("(422 invalid_argument)") || refused.stderr.contains("(422)"),
            "{refused}"
        );
        assert!(refused.stderr.contains(said), "{said}: {refused}");
    }
    assert_eq!(
        local(&daemon, "GET", "/access", &Value::Null).expect(200),
        json!([])
    );
}

both!(
    the_first_key_names_the_supervisors_it_would_lock_out_and_needs_yes,
    a_first_key_with_no_tcp_callers_is_made_without_asking,
    a_fire_over_the_socket_with_a_key_is_named_by_that_key,
    a_scoped_key_fires_its_events_in_its_states_for_its_tokens_and_nothing_else,
    a_scope_with_wrong_names_is_refused_and_makes_no_key,
);
