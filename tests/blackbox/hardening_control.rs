//! Black-box: the control plane's side of hardening, on both backends where the
//! guarantee is not SQLite's own: a control plane that lost its hold commits nothing
//! (even requests that queued while it was stopped), a newcomer's settings never take a
//! healthy holder's database, leases are judged at every request and not only at the
//! clock's tick, and SQLite's busy wait is never doubled.

use crate::harness;

use std::time::{Duration, Instant};

use harness::{run, test_graph, Backend, Daemon, Setup};
use serde_json::{json, Value};

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"repo": "acme/api"}}),
        )
        .expect(201);
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

/// A daemon whose clock never ticks during the test: only requests judge leases.
fn without_ticks() -> Daemon {
    Setup::new(test_graph("tickets"))
        .args(&["--lease", "1s", "--tick", "1h"])
        .start()
}

fn claim(daemon: &Daemon, state: &str) -> Value {
    daemon
        .post(
            "/tasks/claim",
            &json!({"supervisor": "box-1", "states": [state]}),
        )
        .expect(200)
}

fn a_report_after_its_lease_ended_is_refused_before_the_clock_ticks() {
    let daemon = without_ticks();
    start(&daemon, "T-1");
    let grant = claim(&daemon, "coding");
    std::thread::sleep(Duration::from_millis(1300));
    let report = json!({"kind": "event", "event": "done", "supervisor": "box-1",
        "attempt": grant["attempt"]});
    let refused = daemon
        .post(&format!("/tasks/{}/report", grant["task"]), &report)
        .refused(409, "task_not_held");
    assert!(refused.contains("queued"), "{refused}");
    let history = daemon.get("/tokens/T-1/history").expect(200);
    let failed = history
        .as_array()
        .and_then(|h| h.iter().find(|e| e["kind"] == "task_failed"))
        .expect("the lease ended at the report");
    assert_eq!(
        failed["data"]["error"],
        "box-1 stopped answering: no heartbeat for 1 second"
    );
    assert_eq!(
        kinds(&daemon, "T-1").last().map(String::as_str),
        Some("task_retrying")
    );
}

fn a_heartbeat_or_memory_write_after_the_lease_ended_ends_it_then_and_there() {
    let daemon = without_ticks();
    start(&daemon, "T-1");
    start(&daemon, "T-2");
    let first = claim(&daemon, "coding");
    let second = claim(&daemon, "coding");
    std::thread::sleep(Duration::from_millis(1300));
    let beat = json!({"supervisor": "box-1", "tasks": [first["task"]]});
    let answer = daemon.post("/tasks/heartbeat", &beat).expect(200);
    assert_eq!(answer["lost"], json!([first["task"]]));
    assert!(kinds(&daemon, first["token"].as_str().unwrap()).contains(&"task_failed".to_string()));
    let write = json!({"key": "session", "value": 1, "attempt": second["attempt"]});
    daemon
        .put(&format!("/tasks/{}/memory", second["task"]), &write)
        .refused(409, "task_not_held");
    assert!(kinds(&daemon, second["token"].as_str().unwrap()).contains(&"task_failed".to_string()));
}

fn a_stopped_control_plane_whose_database_was_taken_commits_nothing_it_queued() {
    let mut daemon = Daemon::tickets();
    start(&daemon, "T-1");
    stop_between_writes(&daemon);
    // Requests queue at the stopped control plane...
    let url = daemon.authority.clone();
    let senders: Vec<_> = (2..6)
        .map(|n| {
            let url = url.clone();
            std::thread::spawn(move || {
                let body = format!(r#"{{"token": "T-{n}", "context": {{"repo": "r"}}}}"#);
                let stream = std::net::TcpStream::connect(&url).expect("a connection");
                stream
                    .set_read_timeout(Some(Duration::from_secs(30)))
                    .expect("a timeout");
                let headers = [("content-type", "application/json")];
                harness::exchange(stream, "POST", "/tokens", &headers, body.as_bytes())
                    .map(|reply| reply.status)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // ...while another control plane takes the database (as a takeover records it).
    daemon
        .database
        .execute("UPDATE control_plane SET serving = 'another:1:1', epoch = epoch + 1");
    daemon.signal(libc::SIGCONT);
    for sender in senders {
        // Answered 503, or not at all when the control plane had already exited:
        // never a success.
        if let Ok(status) = sender.join().expect("a sender") {
            assert_eq!(status, 503, "a queued request must not commit");
        }
    }
    let status = daemon.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(1), "{}", daemon.report());
    let rows = daemon.rows("SELECT token FROM tokens ORDER BY token");
    assert_eq!(rows.len(), 1, "only T-1: {rows:?}");
}

/// Stop the daemon (SIGSTOP) at a moment it holds no write lock. Stopped halfway
/// through a clock tick or a renewal of its hold, a SQLite daemon keeps the file's
/// write lock, and a takeover's write would wait for it until it gave up.
fn stop_between_writes(daemon: &Daemon) {
    for _ in 0..50 {
        daemon.signal(libc::SIGSTOP);
        if daemon.database.backend() == Backend::Postgres
            || sqlite_write_lock_free(&daemon.database.path)
        {
            return;
        }
        daemon.signal(libc::SIGCONT);
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the daemon held the write lock each time it was stopped");
}

/// Whether another connection can take the SQLite file's write lock now.
fn sqlite_write_lock_free(path: &std::path::Path) -> bool {
    let conn = rusqlite::Connection::open(path).expect("the database");
    conn.busy_timeout(Duration::from_millis(300))
        .expect("a busy timeout");
    let free = conn.execute_batch("BEGIN IMMEDIATE").is_ok();
    let _ = conn.execute_batch("ROLLBACK");
    free
}

fn a_newcomers_short_staleness_never_takes_a_healthy_or_stopped_holders_database() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    let url = daemon.database.url();
    let graph = test_graph("tickets").display().to_string();
    let socket = daemon.dir.path().join("second.sock").display().to_string();
    let args = [
        "serve",
        &graph,
        "--db",
        &url,
        "--listen",
        "127.0.0.1:0",
        "--socket",
        &socket,
        "--stale-after",
        "1s",
    ];
    std::thread::sleep(Duration::from_secs(2));
    let refused = run(daemon.dir.path(), &args);
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused.stderr.contains("serves this database ("),
        "{refused}"
    );
    daemon.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(2));
    let refused = run(daemon.dir.path(), &args);
    daemon.signal(libc::SIGCONT);
    assert_eq!(
        refused.code(),
        1,
        "a stopped holder keeps its database: {refused}"
    );
    daemon.get("/tokens/T-1").expect(200);
}

/// A control plane stopped (SIGSTOP) while it still holds its database may apply,
/// when it runs again, the requests that reached its port meanwhile, also those
/// whose clients gave up waiting (whether it does depends on when it notices the
/// closed connection). A start sent again by a script is then a duplicate or the
/// start itself, never a second start; only an idempotency key keeps a fire from
/// counting twice (docs/how-to/run-a-standby.md says so).
fn a_stopped_holder_may_apply_on_waking_the_requests_whose_clients_gave_up() {
    let daemon = Daemon::tickets();
    start(&daemon, "T-1");
    stop_between_writes(&daemon);
    let body = br#"{"token": "T-2", "context": {"repo": "acme/api"}}"#;
    let stream = std::net::TcpStream::connect(&daemon.authority).expect("a connection");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a timeout");
    let headers = [("content-type", "application/json")];
    let gave_up = harness::exchange(stream, "POST", "/tokens", &headers, body);
    assert!(gave_up.is_err(), "no answer while stopped: {gave_up:?}");
    daemon.signal(libc::SIGCONT);
    // Give the woken control plane the moment it needs to take up what waited.
    std::thread::sleep(Duration::from_millis(500));
    let again = daemon.post(
        "/tokens",
        &json!({"token": "T-2", "context": {"repo": "acme/api"}}),
    );
    assert!(
        [200, 201].contains(&again.status),
        "the start sent again finds the token taken, or starts it: {}",
        again.status
    );
    assert_eq!(
        kinds(&daemon, "T-2")
            .iter()
            .filter(|k| *k == "started")
            .count(),
        1,
        "one start, whichever request made it"
    );
}

both!(
    a_report_after_its_lease_ended_is_refused_before_the_clock_ticks,
    a_heartbeat_or_memory_write_after_the_lease_ended_ends_it_then_and_there,
    a_stopped_control_plane_whose_database_was_taken_commits_nothing_it_queued,
    a_newcomers_short_staleness_never_takes_a_healthy_or_stopped_holders_database,
    a_stopped_holder_may_apply_on_waking_the_requests_whose_clients_gave_up,
);

#[test]
fn a_request_behind_another_process_write_lock_answers_within_its_own_busy_timeout() {
    harness::on(Backend::Sqlite, || {
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--busy-timeout", "1s"])
            .start();
        let other = rusqlite::Connection::open(&daemon.db).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        // Requests that arrive while the writer already waits must not wait a
        // second timeout behind it.
        let answers: Vec<(u16, Duration)> = std::thread::scope(|scope| {
            let senders: Vec<_> = (0..4)
                .map(|n| {
                    let daemon = &daemon;
                    std::thread::sleep(Duration::from_millis(150));
                    scope.spawn(move || {
                        let began = Instant::now();
                        let body = json!({"token": format!("T-{n}"), "context": {"repo": "r"}});
                        let reply = daemon.post("/tokens", &body);
                        (reply.status, began.elapsed())
                    })
                })
                .collect();
            senders
                .into_iter()
                .map(|sender| sender.join().expect("a sender"))
                .collect()
        });
        for (status, took) in answers {
            assert_eq!(status, 503);
            assert!(
                took < Duration::from_millis(1600),
                "answered after {took:?}"
            );
        }
        other.execute_batch("ROLLBACK").unwrap();
        start(&daemon, "T-9");
    });
}
