//! Black-box: claims that wait (`POST /tasks/claim` with `wait`,
//! `docs/reference/http.md`). A waiting claim is woken by the commit that queues a
//! task of its states; of several waiting for one task one gets it and the others
//! wait on; a request id sent again answers the same task and attempt; a stop,
//! and a control plane that loses its database, answer waiting claims at once; our
//! supervisor waits with its claims, so that an idle one takes a new task without
//! waiting for its next claim, also after the daemon was killed.
//!
//! No assertion here is about speed: a claim that waits 60 s and is answered
//! before the harness's 30 s read timeout was answered early, and a supervisor
//! whose `idle` is 30 s that runs a routine within the test took it from its
//! waiting claim.

use crate::harness;
use crate::supervising;

use std::thread;
use std::time::Duration;

use std::net::TcpStream;

use harness::{asset_graph, eventually, exchange, Daemon, Reply, Setup, Timed, KEEPALIVES};
use serde_json::{json, Value};
use supervising::{folder_for, history, Supervise};

both!(
    a_waiting_claim_takes_the_task_queued_while_it_waits_and_one_waiter_gets_each_task,
    a_stop_answers_a_waiting_claim_at_once,
    an_idle_supervisor_takes_a_new_task_from_its_waiting_claim_also_after_a_sigkill,
);

/// A claim of `draft` by `supervisor` that waits up to `wait` seconds.
fn claim(daemon: &Daemon, supervisor: &str, request: &str, wait: Value) -> Reply {
    claim_at(&daemon.authority, supervisor, request, wait)
}

/// [`claim`] at the daemon at `authority` (from another thread).
fn claim_at(authority: &str, supervisor: &str, request: &str, wait: Value) -> Reply {
    let body = json!({
        "supervisor": supervisor,
        "states": ["draft"],
        "request": request,
        "wait": wait,
    });
    let stream = TcpStream::connect(authority).expect("a connection");
    let headers = [("content-type", "application/json")];
    let body = body.to_string();
    exchange(
        stream.timed(),
        "POST",
        "/tasks/claim",
        &headers,
        body.as_bytes(),
    )
    .expect("an answer")
}

/// A claim in a thread of its own, as [`claim`].
fn claim_aside(
    daemon: &Daemon,
    supervisor: &'static str,
    request: &'static str,
) -> thread::JoinHandle<Reply> {
    let authority = daemon.authority.clone();
    thread::spawn(move || claim_at(&authority, supervisor, request, json!(60)))
}

fn start_order(daemon: &Daemon, id: &str) {
    let body = json!({"token": id, "context": {"title": "a book"}});
    daemon.post("/tokens", &body).expect(201);
}

/// The kinds of a token's ledger entries, in order.
fn kinds(daemon: &Daemon, id: &str) -> Vec<String> {
    history(daemon, id)
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Wait until `count` claims wait at `daemon` (`GET /metrics`).
fn until_waiting(daemon: &Daemon, count: usize) {
    let line = format!("stateous_claims_waiting {count}");
    eventually(
        Duration::from_secs(10),
        &format!("{count} claims wait"),
        || daemon.report(),
        || {
            let metrics = daemon.get("/metrics");
            String::from_utf8_lossy(&metrics.body)
                .lines()
                .any(|l| l == line)
        },
    );
}

fn a_waiting_claim_takes_the_task_queued_while_it_waits_and_one_waiter_gets_each_task() {
    let daemon = Daemon::orders();
    // A wrong wait is refused, and nothing changes.
    for wrong in [json!(-1), json!(61), json!("10"), json!(true)] {
        let refused =
            claim(&daemon, "box-1", "r-0", wrong.clone()).refused(422, "invalid_argument");
        assert_eq!(
            refused, "'wait' must be a number of seconds from 0 to 60",
            "{wrong}"
        );
    }
    // No task: a short wait ends with 204, as a claim without one does.
    assert_eq!(claim(&daemon, "box-1", "r-1", json!(0.2)).status, 204);

    let first = claim_aside(&daemon, "box-1", "r-2");
    let second = claim_aside(&daemon, "box-2", "r-3");
    until_waiting(&daemon, 2);
    start_order(&daemon, "O-1");
    // One of the two gets O-1; the other waits on, and gets O-2.
    until_waiting(&daemon, 1);
    start_order(&daemon, "O-2");
    let (one, two) = (first.join().unwrap(), second.join().unwrap());
    let one = one.expect(200);
    let two = two.expect(200);
    let mut tokens = [one["token"].clone(), two["token"].clone()];
    tokens.sort_by_key(|t| t.to_string());
    assert_eq!(tokens, [json!("O-1"), json!("O-2")]);
    for token in ["O-1", "O-2"] {
        assert_eq!(
            kinds(&daemon, token),
            [
                "started",
                "event_accepted",
                "entered",
                "task_queued",
                "task_claimed"
            ],
            "{token}"
        );
    }
    // The request id sent again: the same task and attempt, though its answer
    // was a waiting claim's.
    let again = claim(&daemon, "box-1", "r-2", json!(60)).expect(200);
    assert_eq!(
        (&again["task"], &again["attempt"]),
        (&one["task"], &one["attempt"])
    );
    // A task queued before the claim comes is answered at once.
    start_order(&daemon, "O-3");
    let third = claim(&daemon, "box-3", "r-4", json!(60)).expect(200);
    assert_eq!(third["token"], "O-3");
}

fn a_stop_answers_a_waiting_claim_at_once() {
    let mut daemon = Daemon::orders();
    let claim = claim_aside(&daemon, "box-1", "r-1");
    until_waiting(&daemon, 1);
    daemon.signal(libc::SIGTERM);
    // Answered before the harness's 30 s read timeout: at once, not after 60 s.
    let answer = claim.join().unwrap();
    assert_eq!(answer.status, 204, "{answer}");
    let status = daemon.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
}

#[test]
fn a_control_plane_that_loses_its_database_answers_waiting_claims_not_serving() {
    harness::on(harness::Backend::Postgres, || {
        let graph = asset_graph("orders");
        let active = Setup::new(&graph)
            .args(&KEEPALIVES)
            .args(&["--tick", "200ms"])
            .start();
        let standby = Setup::new(&graph)
            .database_of(&active)
            .args(&KEEPALIVES)
            .start_standby();
        let claim = claim_aside(&active, "box-1", "r-1");
        until_waiting(&active, 1);
        // An operator ends its sessions: its clock finds the hold lost.
        assert!(active.end_sessions() > 0, "{}", active.report());
        let answer = claim.join().unwrap();
        answer.refused(503, "not_serving");
        standby.wait_for_line("serving on ", Duration::from_secs(20));
        // The standby serves the waiting claims now.
        let claim = claim_aside(&standby, "box-1", "r-2");
        until_waiting(&standby, 1);
        start_order(&standby, "O-1");
        assert_eq!(claim.join().unwrap().expect(200)["token"], "O-1");
    });
}

/// A routine of `draft` that says it ran, and submits.
const DRAFT: &str = "touch ran-$STATEOUS_TOKEN\nstateous ctx emit submitted";
/// A routine of `review` that approves.
const REVIEW: &str = r#"stateous ctx emit reviewed '{"approved": true}'"#;

fn an_idle_supervisor_takes_a_new_task_from_its_waiting_claim_also_after_a_sigkill() {
    let mut daemon = Setup::new(asset_graph("orders")).start();
    let folder = folder_for(&daemon, &[("draft.sh", DRAFT), ("review.sh", REVIEW)]);
    // An idle wait of 30 s: only a waiting claim takes a task within the test.
    let yaml = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&yaml).expect("stateous.yaml");
    let text = text.replace("idle: 50ms", "idle: 30s\nclaim_wait: 30s");
    std::fs::write(&yaml, text).expect("written");
    let sup = Supervise::start(&folder);
    until_waiting(&daemon, 1);
    start_order(&daemon, "O-1");
    let ran = |token: &str| folder.join(format!("ran-{token}")).exists();
    eventually(
        Duration::from_secs(10),
        "the idle supervisor runs O-1's routine",
        || format!("{}\n{}", daemon.report(), sup.report()),
        || ran("O-1"),
    );
    let claimed = history(&daemon, "O-1");
    assert!(
        claimed
            .iter()
            .any(|e| e["kind"] == "task_claimed" && e["data"]["supervisor"] == "box-1"),
        "{claimed:?}"
    );
    // The daemon is killed while the supervisor's claim waits; once it is back,
    // the supervisor waits again there and takes the next task.
    until_waiting(&daemon, 1);
    daemon.crash_and_restart();
    until_waiting(&daemon, 1);
    start_order(&daemon, "O-2");
    eventually(
        Duration::from_secs(10),
        "after the restart the supervisor runs O-2's routine",
        || format!("{}\n{}", daemon.report(), sup.report()),
        || ran("O-2"),
    );
}
