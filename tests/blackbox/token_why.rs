//! Black-box: `stateous token retry` completes a failed token with a history that reads
//! naturally, and `stateous token why` says each reason a token waits: a guard that is
//! false, a timer, a lease, a pause, no supervisor, a child join.

use crate::harness;

use std::time::Duration;

use harness::{run, test_graph, Daemon, Finished, Setup};
use serde_json::{json, Value};

fn desk() -> Daemon {
    Setup::new(test_graph("desk/build/desk")).start()
}

/// `stateous token ARGS --url URL`, checked to exit 0; its stdout.
fn ok(daemon: &Daemon, args: &[&str]) -> String {
    let finished = token(daemon, args);
    assert_eq!(finished.code(), 0, "{finished}");
    finished.stdout
}

fn token(daemon: &Daemon, args: &[&str]) -> Finished {
    let mut all = vec!["token"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    run(daemon.dir.path(), &all)
}

fn start(daemon: &Daemon, id: &str, context: Value) {
    daemon
        .post("/tokens", &json!({"token": id, "context": context}))
        .expect(201);
}

fn fire(daemon: &Daemon, id: &str, event: &str, payload: Value) -> u16 {
    let body = json!({ "payload": payload });
    daemon
        .post(&format!("/tokens/{id}/events/{event}"), &body)
        .status
}

/// Claim the oldest queued task of `state` as `supervisor`: its id and attempt.
fn claim(daemon: &Daemon, supervisor: &str, state: &str) -> (i64, i64) {
    let body = json!({"supervisor": supervisor, "states": [state]});
    let grant = daemon.post("/tasks/claim", &body).expect(200);
    (
        grant["task"].as_i64().unwrap(),
        grant["attempt"].as_i64().unwrap(),
    )
}

fn report(daemon: &Daemon, task: i64, outcome: Value) {
    daemon
        .post(&format!("/tasks/{task}/report"), &outcome)
        .expect(200);
}

/// `token why ID`, checked to say `reason` among its reasons.
fn says(daemon: &Daemon, id: &str, reason: &str) -> String {
    let why = ok(daemon, &["why", id]);
    let reasons: Vec<&str> = why
        .lines()
        .skip_while(|l| *l != "why:")
        .skip(1)
        .take_while(|l| l.starts_with("  - "))
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains(reason)),
        "{id} does not say {reason:?}:\n{why}"
    );
    why
}

#[test]
fn retry_of_a_failed_token_completes_it_and_its_history_reads_naturally() {
    let daemon = desk();
    start(&daemon, "C-1", json!({"customer": "ACME"}));
    for _ in 0..2 {
        let (task, attempt) = claim(&daemon, "box-1", "intake");
        let failed = json!({"kind": "failed", "error": "the CRM did not answer",
                            "attempt": attempt, "supervisor": "box-1"});
        report(&daemon, task, failed);
    }
    assert_eq!(
        ok(&daemon, &["show", "C-1"]).lines().next(),
        Some("C-1: intake, failed")
    );
    says(&daemon, "C-1", "it failed in 'intake': 'intake' failed, and has no transition on 'error': the CRM did not answer");
    let refused = token(&daemon, &["retry", "C-2"]);
    assert_eq!(refused.code(), 1, "{refused}");
    let retried = ok(&daemon, &["retry", "C-1", "--reason", "the CRM is back"]);
    assert_eq!(retried, "C-1: intake (visit 2), active\n");
    let again = token(&daemon, &["retry", "C-1"]);
    assert!(
        again
            .stderr
            .contains("refused (409 token_not_active): token 'C-1' is active; only a failed token can be retried"),
        "{again}"
    );
    let (task, attempt) = claim(&daemon, "box-1", "intake");
    assert_eq!(attempt, 1, "a new task: its attempts start again");
    let done =
        json!({"kind": "event", "event": "submitted", "attempt": attempt, "supervisor": "box-1"});
    report(&daemon, task, done);
    assert_eq!(fire(&daemon, "C-1", "reviewed", json!({"ok": true})), 200);
    assert_eq!(fire(&daemon, "C-1", "closed", Value::Null), 200);
    let shown = ok(&daemon, &["show", "C-1"]);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "C-1: closing, completed");
    let what: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.splitn(3, "  ").nth(2).unwrap_or(""))
        .collect();
    let at = what
        .iter()
        .position(|w| w.starts_with("failed: "))
        .expect("the failure");
    assert!(what[at + 1].starts_with("retried by "), "{shown}");
    assert!(
        what[at + 1].ends_with(" in intake: the CRM is back"),
        "{shown}"
    );
    assert_eq!(
        what[at + 2..at + 4],
        ["entered intake (visit 2)", "task 2 queued for intake"]
    );
    assert_eq!(what.last(), Some(&"completed"), "{shown}");
}

#[test]
fn token_why_says_each_reason_a_token_waits() {
    let daemon = desk();
    // No supervisor has been heard from at all.
    start(&daemon, "N-1", json!({"customer": "ACME"}));
    says(
        &daemon,
        "N-1",
        "its task 1 is queued, and no supervisor that serves 'intake' has been heard from \
         since this control plane started",
    );
    // A lease: N-1's task, claimed.
    claim(&daemon, "box-1", "intake");
    let why = says(
        &daemon,
        "N-1",
        "its task 1 is being worked on by box-1 (attempt 1, 1 retry left); its lease ends in",
    );
    assert!(why.contains("box-1 was last heard from "), "{why}");
    assert!(!why.contains("was last renewed"), "{why}");
    // A guard that is false, and a timer.
    start(&daemon, "G-1", json!({"customer": "ACME", "score": 1}));
    assert_eq!(fire(&daemon, "G-1", "submitted", Value::Null), 200);
    assert_eq!(fire(&daemon, "G-1", "approve", Value::Null), 409);
    says(
        &daemon,
        "G-1",
        "'approve' cannot move it now: on its context the guard ctx['score'] > 3 is false",
    );
    says(&daemon, "G-1", "the last event, 'approve', was refused at ");
    says(&daemon, "G-1", "its timeout in 'review' fires in 9m");
    // Paused.
    start(&daemon, "P-1", json!({"customer": "ACME"}));
    ok(&daemon, &["pause", "P-1"]);
    says(
        &daemon,
        "P-1",
        "it is paused: nothing moves it until it is resumed",
    );
    // A child join.
    start(&daemon, "J-1", json!({"customer": "ACME", "score": 5}));
    assert_eq!(fire(&daemon, "J-1", "submitted", Value::Null), 200);
    assert_eq!(fire(&daemon, "J-1", "approve", Value::Null), 200);
    let why = says(
        &daemon,
        "J-1",
        "it waits for its children: the join 'all' moves it when all 2 have ended, and 0 ended",
    );
    assert!(
        why.contains("  child J-1.sign.1.legal (legal): check, active"),
        "{why}"
    );
    // No supervisor has asked for a while (the lease here is 2 s).
    std::thread::sleep(Duration::from_millis(2500));
    start(&daemon, "N-2", json!({"customer": "ACME"}));
    let why = says(
        &daemon,
        "N-2",
        "no supervisor has asked for 'intake' tasks in ",
    );
    assert!(why.contains("(box-1 was last heard from then)"), "{why}");
    // The same facts as JSON.
    let answer = daemon.get("/tokens/J-1/why").expect(200);
    assert_eq!(
        answer["join"],
        json!({"join": "all", "ended": 0, "children": 2})
    );
    assert!(answer["reasons"].as_array().is_some_and(|r| !r.is_empty()));
    daemon
        .get("/tokens/NOPE/why")
        .refused(404, "token_not_found");
}

/// A token ended on one graph, then the database is served a graph of another
/// structure that lacks the token's state: `token why` answered 500 `unexpected`
/// ("the workflow 'sdlc' has no state 'draft'"). An ended token needs no state of
/// the served graph to be explained, nor to be read: it is explained by the graph
/// it ran on, which the database keeps.
fn why_of_an_ended_token_needs_no_state_of_the_served_graph() {
    let mut orders = Setup::new(harness::asset_graph("orders")).start();
    orders
        .post(
            "/tokens",
            &json!({"token": "O-1", "context": {"title": "a"}}),
        )
        .expect(201);
    orders.post_empty("/tokens/O-1/cancel").expect(200);
    orders.stop_with(libc::SIGTERM);
    let sdlc = Setup::new(harness::asset_graph("sdlc"))
        .database_of(&orders)
        .start();
    let why = sdlc.get("/tokens/O-1/why").expect(200);
    assert_eq!(why["token"]["state"], "draft", "{why}");
    assert_eq!(
        why["reasons"],
        json!(["it was cancelled; nothing moves it any more"]),
        "{why}"
    );
    let from_draft = json!([{"event": "submitted", "to": "review", "otherwise": false,
                             "reads_payload": false}]);
    assert_eq!(why["transitions"], from_draft, "orders' own: {why}");
    says(&sdlc, "O-1", "it was cancelled; nothing moves it any more");
    // The other reads of the token answer as well.
    let token = sdlc.get("/tokens/O-1").expect(200);
    assert_eq!(token["status"], "cancelled", "{token}");
    let detail = sdlc.get("/tokens/O-1/detail").expect(200);
    assert_eq!(detail["token"]["state"], "draft", "{detail}");
    let history = sdlc.get("/tokens/O-1/history").expect(200);
    assert!(
        history.as_array().is_some_and(|h| !h.is_empty()),
        "{history}"
    );
    let listed = sdlc.get("/tokens?status=cancelled").expect(200);
    assert_eq!(listed[0]["token"], "O-1", "{listed}");
    let shown = ok(&sdlc, &["show", "O-1"]);
    assert!(shown.starts_with("O-1: draft, cancelled"), "{shown}");
}

both!(why_of_an_ended_token_needs_no_state_of_the_served_graph);

/// A supervisor SIGKILLed while it held a task and started again under the same
/// name asks for work: the name is heard, but the dead one's attempt is not
/// renewed. `token why` said only that the holder was heard a moment ago; it now
/// says when the attempt's lease was last renewed, and the task line shows both.
#[test]
fn token_why_tells_an_attempt_not_renewed_from_its_holders_name_heard() {
    let daemon = Setup::new(test_graph("desk/build/desk"))
        .args(&["--lease", "60s"])
        .start();
    start(&daemon, "N-1", json!({"customer": "ACME"}));
    claim(&daemon, "box-1", "intake");
    std::thread::sleep(std::time::Duration::from_millis(1_300));
    let body = json!({"supervisor": "box-1", "states": ["intake"]});
    daemon.post("/tasks/claim", &body).expect(204);
    // Seconds are rounded, and a loaded machine may take one more.
    let why = says(&daemon, "N-1", "and was last renewed ");
    assert!(why.contains("; box-1 was last heard from "), "{why}");
    assert!(
        why.contains(", renewed ") && why.contains(", box-1 heard "),
        "{why}"
    );
}
