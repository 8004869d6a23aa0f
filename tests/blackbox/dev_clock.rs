//! Black-box: the dev clock. `stateous clock advance` on a daemon started with
//! `--dev-clock` fires the timeouts due inside the advance once each and in due order;
//! `--dev-clock` is refused on a database that a control plane on the real clock
//! served; without the flag the command says so.

use crate::harness;

use harness::{asset_graph, run, Daemon, Setup};
use serde_json::{json, Value};

/// `stateous clock ARGS --url URL` against `daemon`, which must succeed; its
/// stdout.
fn clock(daemon: &Daemon, args: &[&str]) -> String {
    let mut all = vec!["clock"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    let finished = run(daemon.dir.path(), &all);
    assert_eq!(finished.code(), 0, "{finished}");
    finished.stdout
}

/// The moment a clock line gives as `now (...)`, in microseconds.
fn micros_now(line: &str) -> i64 {
    let moment = line
        .split("now ")
        .nth(1)
        .and_then(|rest| rest.split([')', ';']).next())
        .and_then(stateous_shared::time::parse_iso)
        .unwrap_or_else(|| panic!("no moment in {line:?}"));
    stateous_shared::time::to_micros(moment)
}

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"repo": "r"}}),
        )
        .expect(201);
}

/// The history entries of `token` of `kind`.
fn entries(daemon: &Daemon, token: &str, kind: &str) -> Vec<Value> {
    let history = daemon.get(&format!("/tokens/{token}/history")).expect(200);
    history
        .as_array()
        .expect("a history")
        .iter()
        .filter(|entry| entry["kind"] == kind)
        .cloned()
        .collect()
}

/// Microseconds since 1970 of an ISO time the daemon wrote.
fn micros(at: &Value) -> i64 {
    let text = at.as_str().expect("a time");
    stateous_shared::time::to_micros(stateous_shared::time::parse_iso(text).expect("ISO 8601"))
}

fn dev_daemon() -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--dev-clock"])
        .start()
}

#[test]
fn clock_advance_fires_each_due_timeout_once_and_in_due_order() {
    let daemon = dev_daemon();
    assert!(
        daemon.stderr().contains("dev clock:"),
        "{}",
        daemon.report()
    );
    // Frozen, each timeout fires at its due moment to the microsecond.
    let frozen = clock(&daemon, &["freeze"]);
    assert!(
        frozen.starts_with("dev clock +0s, frozen (now "),
        "{frozen}"
    );
    for token in ["T-1", "T-2", "T-3"] {
        start(&daemon, token);
        clock(&daemon, &["advance", "1h"]);
    }
    // coding's timeout is 6h: T-1's is due 3h from now, T-3's 5h from now.
    let moved = clock(&daemon, &["advance", "5h"]);
    // Frozen, it stands exactly 8h after the freeze. (How far ahead of the wall
    // clock that is shrinks while the wall clock runs: +7h59m59s once a second
    // passed since the freeze, so the line's figure is not compared.)
    assert!(moved.starts_with("dev clock +"), "{moved}");
    assert!(moved.contains(", frozen (now "), "{moved}");
    assert_eq!(
        micros_now(&moved) - micros_now(&frozen),
        8 * 3600 * 1_000_000,
        "{frozen} then {moved}"
    );
    assert!(moved.contains("3 due moments ticked"), "{moved}");
    let mut fired = Vec::new();
    for token in ["T-1", "T-2", "T-3"] {
        let timers = entries(&daemon, token, "timer_fired");
        assert_eq!(timers.len(), 1, "{token}: {timers:?}");
        let entered = entries(&daemon, token, "entered");
        let due = micros(&entered[0]["at"]) + 6 * 3_600_000_000;
        assert_eq!(
            micros(&timers[0]["at"]),
            due,
            "{token} fired at its due moment"
        );
        fired.push(due);
        let failed = entries(&daemon, token, "failed");
        assert_eq!(failed.len(), 1, "{token}");
    }
    assert!(fired.windows(2).all(|w| w[0] < w[1]), "{fired:?}");
    // Nothing fires twice.
    clock(&daemon, &["advance", "2d"]);
    for token in ["T-1", "T-2", "T-3"] {
        assert_eq!(entries(&daemon, token, "timer_fired").len(), 1, "{token}");
    }
    let health = daemon.get("/health").expect(200);
    assert_eq!(health["dev_clock"]["frozen"], true, "{health}");
    let ahead = health["dev_clock"]["ahead"]
        .as_f64()
        .expect("seconds ahead");
    assert!(ahead > 55.9 * 3600.0, "{health}");
    let thawed = clock(&daemon, &["thaw"]);
    // It runs on from where it stood: 2d8h after the freeze.
    let since_freeze = micros_now(&thawed) - micros_now(&frozen);
    assert!(
        (56 * 3600 * 1_000_000..(56 * 3600 + 1) * 1_000_000).contains(&since_freeze),
        "{frozen} then {thawed}"
    );
    assert!(!thawed.contains("frozen"), "{thawed}");
    let shown = clock(&daemon, &["show", "--json"]);
    let shown: Value = serde_json::from_str(&shown).expect("JSON");
    assert_eq!(shown["frozen"], false);
}

#[test]
fn without_dev_clock_the_routes_are_404_and_the_command_says_so() {
    let daemon = Setup::new(asset_graph("sdlc")).start();
    let refused = daemon
        .post("/clock/advance", &json!({"by": "10m"}))
        .refused(404, "not_found");
    assert!(refused.contains("--dev-clock"), "{refused}");
    daemon.post_empty("/clock/freeze").refused(404, "not_found");
    assert!(daemon.get("/health").expect(200).get("dev_clock").is_none());
    for args in [&["advance", "10m"][..], &["thaw"], &["show"]] {
        let mut all = vec!["clock"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &daemon.url]);
        let finished = run(daemon.dir.path(), &all);
        assert_eq!(finished.code(), 1, "{finished}");
        assert!(
            finished
                .stderr
                .starts_with("error: the daemon at http://127.0.0.1:"),
            "{finished}"
        );
        assert!(
            finished.stderr.contains("was not started with --dev-clock"),
            "{finished}"
        );
    }
}

#[test]
fn a_bad_duration_is_refused_by_the_command_and_the_route() {
    let daemon = dev_daemon();
    let finished = run(
        daemon.dir.path(),
        &["clock", "advance", "soon", "--url", &daemon.url],
    );
    assert_eq!(finished.code(), 1, "{finished}");
    assert!(
        finished.stderr.contains("'soon' is not a duration"),
        "{finished}"
    );
    let zero = run(
        daemon.dir.path(),
        &["clock", "advance", "0s", "--url", &daemon.url],
    );
    assert_eq!(zero.code(), 1, "{zero}");
    assert!(zero.stderr.contains("must be more than 0"), "{zero}");
    daemon
        .post("/clock/advance", &json!({"by": 600}))
        .refused(422, "invalid_argument");
}

/// A paused token's timer stands still: `why` gives the moment it would fire if
/// the token were resumed now, never a moment the dev clock already passed.
#[test]
fn why_on_a_paused_token_gives_a_due_time_ahead_of_the_dev_clock() {
    let daemon = dev_daemon();
    clock(&daemon, &["freeze"]);
    start(&daemon, "P-1");
    daemon.post_empty("/tokens/P-1/pause").expect(200);
    let moved = clock(&daemon, &["advance", "8h"]);
    let now = micros_now(&moved);
    let why = daemon.get("/tokens/P-1/why").expect(200);
    let timer = &why["timers"][0];
    assert_eq!(timer["frozen"], true, "{why}");
    assert_eq!(
        micros(&timer["due_at"]),
        now + 6 * 3_600_000_000,
        "coding's 6h timeout, all of it left: {why}"
    );
    let said = run(
        daemon.dir.path(),
        &["token", "why", "P-1", "--url", &daemon.url],
    );
    assert!(
        said.stdout.contains("(6h left, frozen while paused)"),
        "{said}"
    );
}

#[test]
fn dev_clock_is_refused_on_a_database_that_the_real_clock_served() {
    let mut daemon = Setup::new(asset_graph("sdlc")).start();
    start(&daemon, "T-1");
    assert_eq!(daemon.stop_with(libc::SIGINT).code(), Some(0));
    let finished = run(
        daemon.dir.path(),
        &[
            "serve",
            &asset_graph("sdlc").display().to_string(),
            "--db",
            &format!("sqlite:///{}", daemon.db.display()),
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &daemon.dir.path().join("again.sock").display().to_string(),
            "--dev-clock",
        ],
    );
    assert_eq!(finished.code(), 1, "{finished}");
    assert_eq!(
        finished.stderr.trim_end(),
        "error: refusing --dev-clock: a control plane on the real clock served this \
         database, and a moved clock would fire its timers and end its leases early; \
         serve it without --dev-clock, or give --dev-clock a new database",
        "{finished}"
    );
    // The same database still serves on the real clock.
    let dir = std::mem::replace(&mut daemon.dir, tempfile::tempdir().expect("a folder"));
    let again = Setup::new(asset_graph("sdlc"))
        .in_dir(dir, daemon.db.clone())
        .start();
    assert_eq!(again.get("/tokens/T-1").expect(200)["state"], "coding");
}
