//! Black-box: a limit with `per` behind a deep queue (`docs/limits.md`, "No
//! head-of-line blocking"): a full key with more queued tasks than a claim reads in
//! queue order never holds back another key's task, also when the limit is set
//! over the queue; once the limit is raised or removed, the full key's tasks are
//! claimed in queue order; priorities still order the claims behind it, and a
//! cancelled task is never claimed; a SIGKILL of the daemon and a standby's
//! takeover keep each key's queue, and a database without the keys of its queued
//! tasks (upgraded to schema 0018) gets them at its open.

use crate::harness;

use std::time::Duration;

use harness::{asset_graph, Daemon, Setup};
use serde_json::json;

/// More than the 500 queued tasks a claim reads in queue order
/// (`engine::claim_limits::LOOK_PAST`).
const DEEP: usize = 600;

/// A daemon on `sdlc` with a lease long enough to hold through the test.
fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "10m"])
        .start()
}

/// `stateous limit ARGS... --url URL`, which must succeed.
fn limit(daemon: &Daemon, args: &[&str]) {
    let mut all = vec!["limit"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    let done = harness::run(daemon.dir.path(), &all);
    assert_eq!(done.code(), 0, "{done}");
}

/// A limit of `max` per `ctx['repo']` over `coding`.
fn per_repo(daemon: &Daemon, max: &str) {
    limit(
        daemon,
        &[
            "set",
            "per-repo",
            "--states",
            "coding",
            "--max",
            max,
            "--per",
            "ctx['repo']",
        ],
    );
}

fn start(daemon: &Daemon, id: &str, repo: &str, priority: i64) {
    daemon
        .post(
            "/tokens",
            &json!({"token": id, "context": {"repo": repo}, "priority": priority}),
        )
        .expect(201);
}

/// One claim of `coding`: the token of the task it got, if any.
fn claim(daemon: &Daemon) -> Option<String> {
    let reply = daemon.post(
        "/tasks/claim",
        &json!({"supervisor": "box-1", "states": ["coding"]}),
    );
    if reply.status == 204 {
        return None;
    }
    let grant = reply.expect(200);
    grant["token"].as_str().map(str::to_string)
}

/// Key `a` full (its first task claimed) with [`DEEP`] more queued behind it.
fn deep_full_key(daemon: &Daemon) {
    per_repo(daemon, "1");
    start(daemon, "A-0", "a", 0);
    assert_eq!(claim(daemon).as_deref(), Some("A-0"));
    for n in 1..=DEEP {
        start(daemon, &format!("A-{n}"), "a", 0);
    }
    assert_eq!(claim(daemon), None, "key a is full");
}

fn a_full_key_with_600_queued_never_holds_back_another_keys_task() {
    let daemon = sdlc();
    deep_full_key(&daemon);
    start(&daemon, "B-1", "b", 0);
    assert_eq!(claim(&daemon).as_deref(), Some("B-1"));
    // A cancelled task of a new key is never claimed; the next one of that key is.
    start(&daemon, "C-1", "c", 0);
    daemon.token(&["cancel", "C-1"]);
    start(&daemon, "C-2", "c", 0);
    assert_eq!(claim(&daemon).as_deref(), Some("C-2"));
    assert_eq!(claim(&daemon), None, "keys a, b and c are full");
    // Raised: a's oldest queued task goes next, then the limit holds again.
    per_repo(&daemon, "2");
    assert_eq!(claim(&daemon).as_deref(), Some("A-1"));
    assert_eq!(claim(&daemon), None, "keys a, b and c are full");
    // Removed: a's tasks are claimed in queue order.
    limit(&daemon, &["remove", "per-repo"]);
    assert_eq!(claim(&daemon).as_deref(), Some("A-2"));
    assert_eq!(claim(&daemon).as_deref(), Some("A-3"));
}

fn a_limit_set_over_a_deep_queue_finds_each_keys_first_task() {
    let daemon = sdlc();
    for n in 0..=DEEP {
        start(&daemon, &format!("A-{n}"), "a", 0);
    }
    start(&daemon, "B-1", "b", 0);
    assert_eq!(claim(&daemon).as_deref(), Some("A-0"));
    // Set now, over the queue: A-0's claim fills key a.
    per_repo(&daemon, "1");
    assert_eq!(claim(&daemon).as_deref(), Some("B-1"));
    assert_eq!(claim(&daemon), None, "keys a and b are full");
}

fn behind_a_full_key_priorities_still_order_the_claims() {
    let daemon = sdlc();
    deep_full_key(&daemon);
    start(&daemon, "B-1", "b", 0);
    start(&daemon, "B-2", "b", 3);
    start(&daemon, "D-1", "d", 1);
    start(&daemon, "E-1", "e", 0);
    // B-2 before B-1 (its priority), D-1 next (b is full), then E-1.
    assert_eq!(claim(&daemon).as_deref(), Some("B-2"));
    assert_eq!(claim(&daemon).as_deref(), Some("D-1"));
    assert_eq!(claim(&daemon).as_deref(), Some("E-1"));
    assert_eq!(claim(&daemon), None, "keys a, b, d and e are full");
    // A priority changed while queued counts at the next claim.
    per_repo(&daemon, "2");
    let changed = daemon.token(&["priority", "A-7", "9"]);
    assert_eq!(changed.code(), 0, "{changed}");
    assert_eq!(claim(&daemon).as_deref(), Some("A-7"));
}

fn a_sigkill_keeps_each_keys_queue() {
    let mut daemon = sdlc();
    deep_full_key(&daemon);
    daemon.crash_and_restart();
    start(&daemon, "B-1", "b", 0);
    assert_eq!(claim(&daemon).as_deref(), Some("B-1"));
    assert_eq!(claim(&daemon), None, "keys a and b are full");
}

/// How many rows `task_keys` holds.
fn task_keys(daemon: &Daemon) -> String {
    let rows = daemon.database.rows("SELECT count(*) FROM task_keys");
    rows[0][0].clone().unwrap_or_default()
}

fn a_database_without_the_keys_of_its_queued_tasks_gets_them_at_its_open() {
    let mut daemon = sdlc();
    deep_full_key(&daemon);
    // One row for each queued task: the claimed one has none.
    assert_eq!(task_keys(&daemon), DEEP.to_string());
    // As a database upgraded to schema 0018 with the limit set: no row.
    daemon.stop_with(libc::SIGKILL);
    daemon.database.execute("DELETE FROM task_keys");
    daemon.start_again();
    assert_eq!(task_keys(&daemon), DEEP.to_string());
    start(&daemon, "B-1", "b", 0);
    assert_eq!(claim(&daemon).as_deref(), Some("B-1"));
    assert_eq!(task_keys(&daemon), DEEP.to_string());
}

#[test]
fn a_standby_takeover_on_postgres_keeps_each_keys_queue() {
    harness::on(harness::Backend::Postgres, || {
        let active = Setup::new(asset_graph("sdlc"))
            .args(&harness::KEEPALIVES)
            .args(&["--lease", "10m"])
            .start();
        let standby = Setup::new(asset_graph("sdlc"))
            .database_of(&active)
            .args(&harness::KEEPALIVES)
            .args(&["--lease", "10m"])
            .start_standby();
        deep_full_key(&active);
        active.signal(libc::SIGKILL);
        standby.wait_for_line("serving on", Duration::from_secs(30));
        start(&standby, "B-1", "b", 0);
        assert_eq!(claim(&standby).as_deref(), Some("B-1"));
        assert_eq!(claim(&standby), None, "keys a and b are full");
    });
}

both!(
    a_full_key_with_600_queued_never_holds_back_another_keys_task,
    a_limit_set_over_a_deep_queue_finds_each_keys_first_task,
    behind_a_full_key_priorities_still_order_the_claims,
    a_sigkill_keeps_each_keys_queue,
    a_database_without_the_keys_of_its_queued_tasks_gets_them_at_its_open,
);
