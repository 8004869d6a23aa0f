//! Black-box: usage and budgets (`docs/concepts/budgets.md`), with the real `stateous
//! serve` and `stateous supervise` processes and program routines that report what
//! they spend (`stateous ctx usage`) and log what happens to them: usage summed per
//! token, a usage report that outlives a crash of its supervisor, a budget crossed
//! that pauses the token and stops its routine within a heartbeat without using a
//! retry, and a crossing kept through a SIGKILL of the daemon.

use crate::harness;
use crate::supervising;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{asset_graph, run, Daemon, Setup};
use serde_json::{json, Value};
use supervising::{folder_for, history, wait_for_status, Supervise};

/// `testing` passes at once: the tests here are about `coding`.
const TESTING: &str = "stateous ctx emit passed '{\"passed\": 1, \"failed\": 0}'";

/// A routine that logs its attempts and a SIGTERM to `routine.log` in its folder,
/// and then runs `body`. A loop of short sleeps lets the shell run its trap at once.
fn logged(body: &str) -> String {
    format!(
        "trap 'echo \"attempt $STATEOUS_ATTEMPT got SIGTERM\" >> routine.log; exit 143' TERM\n\
         echo \"attempt $STATEOUS_ATTEMPT started\" >> routine.log\n{body}"
    )
}

/// A daemon on `sdlc` (`coding` has `retries: 2`) with a lease of 2 s.
fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "2s", "--stale-after", "1s"])
        .start()
}

/// `stateous token ARGS... --url URL` in the daemon's folder.
fn token(daemon: &Daemon, args: &[&str]) -> harness::Finished {
    let mut all = vec!["token"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    run(daemon.dir.path(), &all)
}

/// The token's usage and budget as `token show --json` prints them.
fn budget_shown(daemon: &Daemon, id: &str) -> Value {
    let shown = token(daemon, &["show", id, "--json"]);
    assert_eq!(shown.code(), 0, "{shown}");
    let answer: Value = serde_json::from_str(&shown.stdout).expect("JSON");
    answer["budget"].clone()
}

/// The amount of `name` in an object of amounts, 0 when absent.
fn amount(amounts: &Value, name: &str) -> f64 {
    amounts[name].as_f64().unwrap_or(0.0)
}

/// The entries of `kind` in the token's history.
fn entries(daemon: &Daemon, id: &str, kind: &str) -> Vec<Value> {
    history(daemon, id)
        .into_iter()
        .filter(|entry| entry["kind"] == kind)
        .collect()
}

/// Poll `check` every 20 ms for at most 30 s; panics with `what` and `report`.
fn eventually(what: &str, report: impl Fn() -> String, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}\n{}", report());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn routine_log(folder: &Path) -> String {
    std::fs::read_to_string(folder.join("routine.log")).unwrap_or_default()
}

/// A supervisor folder for `daemon` whose `coding` runs `coding`.
fn folder(daemon: &Daemon, coding: &str) -> PathBuf {
    folder_for(
        daemon,
        &[("coding.sh", &logged(coding)), ("testing.sh", TESTING)],
    )
}

fn usage_reported_in_several_calls_is_summed_per_token() {
    let daemon = sdlc();
    let folder = folder(
        &daemon,
        "stateous ctx usage cost_usd=0.12 input_tokens=1200\n\
         stateous ctx usage cost_usd=0.3 output_tokens=80\n\
         stateous ctx emit done",
    );
    let _sup = Supervise::start(&folder);
    let started = token(&daemon, &["start", "U-1", r#"{"repo": "acme"}"#]);
    assert_eq!(started.code(), 0, "{started}");
    wait_for_status(&daemon, "U-1", "completed");
    let budget = budget_shown(&daemon, "U-1");
    assert!(
        (amount(&budget["usage"], "cost_usd") - 0.42).abs() < 1e-9,
        "{budget}"
    );
    assert_eq!(budget["usage"]["input_tokens"], json!(1200));
    assert_eq!(budget["usage"]["output_tokens"], json!(80));
    let reported = entries(&daemon, "U-1", "usage_reported");
    assert_eq!(reported.len(), 2, "{reported:?}");
    assert_eq!(reported[0]["data"]["supervisor"], "box-1");
    let shown = token(&daemon, &["show", "U-1"]);
    assert!(
        shown
            .stdout
            .contains("  usage: cost_usd 0.42, input_tokens 1200, output_tokens 80"),
        "{shown}"
    );
    assert!(
        shown
            .stdout
            .contains("task 1 (attempt 1) reported usage: cost_usd 0.12, input_tokens 1200"),
        "{shown}"
    );
    let metrics = daemon.get("/metrics").body;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("stateous_usage_total{name=\"input_tokens\"} 1200"),
        "{metrics}"
    );
}

fn a_usage_report_outlives_a_sigkill_of_its_supervisor() {
    let mut daemon = sdlc();
    // The first attempt reports once the daemon is down, then the test kills its
    // supervisor: the report is in the outbox only, and the next start sends it.
    let folder = folder(
        &daemon,
        "if [ \"$STATEOUS_ATTEMPT\" = 1 ]; then\n\
           while [ ! -f go ]; do sleep 0.05; done\n\
           stateous ctx usage cost_usd=1.5\n\
           touch used\n\
         fi\n\
         while :; do sleep 0.1; done",
    );
    let mut sup = Supervise::start(&folder);
    let started = token(&daemon, &["start", "U-2", r#"{"repo": "acme"}"#]);
    assert_eq!(started.code(), 0, "{started}");
    sup.wait_for_line("coding of U-2, attempt 1");
    daemon.stop_with(libc::SIGKILL);
    std::fs::write(folder.join("go"), "").unwrap();
    eventually(
        "the usage was written",
        || sup.report(),
        || folder.join("used").exists(),
    );
    sup.signal(libc::SIGKILL);
    sup.wait();
    let left = supervising::outbox(&folder);
    assert!(
        left.iter().any(|(kind, _)| kind == "usage"),
        "the usage waits in the outbox: {left:?}"
    );
    daemon.crash_and_restart();
    let sup = Supervise::start(&folder);
    eventually(
        "the usage counted",
        || sup.report(),
        || amount(&budget_shown(&daemon, "U-2")["usage"], "cost_usd") == 1.5,
    );
    let reported = entries(&daemon, "U-2", "usage_reported");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0]["data"]["attempt"], 1);
    assert!(
        sup.stderr()
            .contains("sending 1 message(s) left in the outbox"),
        "{}",
        sup.report()
    );
}

/// The routine of a budget test: attempt 1 spends 6 in two reports and keeps
/// running; attempts 2 and 3 fail; attempt 4 is done. With `retries: 2` the token
/// completes only if the stopped attempt used no retry.
const SPENDS_THEN_FAILS_TWICE: &str = "case \"$STATEOUS_ATTEMPT\" in\n\
       1) stateous ctx usage cost_usd=3\n\
          stateous ctx usage cost_usd=3\n\
          while :; do sleep 0.1; done ;;\n\
       2|3) exit 1 ;;\n\
       *) stateous ctx emit done ;;\n\
     esac";

fn a_budget_crossed_pauses_the_token_and_stops_its_routine_without_a_retry() {
    let daemon = sdlc();
    let folder = folder(&daemon, SPENDS_THEN_FAILS_TWICE);
    let sup = Supervise::start(&folder);
    let started = token(
        &daemon,
        &[
            "start",
            "B-1",
            r#"{"repo": "acme"}"#,
            "--budget",
            "cost_usd=5",
        ],
    );
    assert_eq!(started.code(), 0, "{started}");
    wait_for_status(&daemon, "B-1", "paused");
    eventually(
        "the routine got SIGTERM",
        || format!("{}\n{}", sup.report(), routine_log(&folder)),
        || routine_log(&folder).contains("attempt 1 got SIGTERM"),
    );
    let crossed = entries(&daemon, "B-1", "budget_exceeded");
    assert_eq!(crossed.len(), 1, "{crossed:?}");
    assert_eq!(crossed[0]["data"]["reason"], "over budget: cost_usd 6 of 5");
    assert_eq!(
        crossed[0]["data"]["stopped"],
        json!([{"token": "B-1", "task": 1, "attempt": 1}])
    );
    let why = token(&daemon, &["why", "B-1"]);
    assert!(
        why.stdout
            .contains("it is over budget: cost_usd 6 of 5; it stays paused"),
        "{why}"
    );
    let resumed = token(&daemon, &["resume", "B-1"]);
    assert_eq!(resumed.code(), 1, "{resumed}");
    assert!(
        resumed.stderr.contains("over budget: cost_usd 6 of 5"),
        "{resumed}"
    );
    let raised = token(&daemon, &["budget", "B-1", "cost_usd=10"]);
    assert_eq!(raised.code(), 0, "{raised}");
    assert!(
        raised.stdout.contains("B-1: budget: cost_usd 10 (its own)"),
        "{raised}"
    );
    let resumed = token(&daemon, &["resume", "B-1"]);
    assert_eq!(resumed.code(), 0, "{resumed}");
    wait_for_status(&daemon, "B-1", "completed");
    let log = routine_log(&folder);
    assert!(log.contains("attempt 4 started"), "{log}");
    assert_eq!(entries(&daemon, "B-1", "task_failed").len(), 2);
    let metrics = daemon.get("/metrics").body;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("stateous_budget_crossings_total 1\n"),
        "{metrics}"
    );
}

fn a_crossing_is_kept_through_a_sigkill_of_the_daemon() {
    let mut daemon = sdlc();
    let set = run(
        daemon.dir.path(),
        &["budget", "set", "sdlc", "cost_usd=5", "--url", &daemon.url],
    );
    assert_eq!(set.code(), 0, "{set}");
    let folder = folder(&daemon, SPENDS_THEN_FAILS_TWICE);
    let sup = Supervise::start(&folder);
    let started = token(&daemon, &["start", "B-2", r#"{"repo": "acme"}"#]);
    assert_eq!(started.code(), 0, "{started}");
    // The pause is acknowledged: a read answers it. The daemon dies at once.
    wait_for_status(&daemon, "B-2", "paused");
    daemon.crash_and_restart();
    let token_now = daemon.get("/tokens/B-2").expect(200);
    assert_eq!(token_now["status"], "paused");
    assert_eq!(entries(&daemon, "B-2", "budget_exceeded").len(), 1);
    eventually(
        "the routine got SIGTERM",
        || format!("{}\n{}", sup.report(), routine_log(&folder)),
        || routine_log(&folder).contains("attempt 1 got SIGTERM"),
    );
    let budget = budget_shown(&daemon, "B-2");
    assert_eq!(budget["budget_from"], "workflow");
    assert_eq!(budget["over"], json!(["cost_usd"]));
    let journal = daemon.get("/journal?subject=budget").expect(200);
    assert_eq!(journal["entries"][0]["name"], "sdlc");
    assert_eq!(journal["entries"][0]["kind"], "set");
    let raised = token(&daemon, &["budget", "B-2", "cost_usd=8"]);
    assert_eq!(raised.code(), 0, "{raised}");
    assert_eq!(token(&daemon, &["resume", "B-2"]).code(), 0);
    wait_for_status(&daemon, "B-2", "completed");
}

both!(
    usage_reported_in_several_calls_is_summed_per_token,
    a_usage_report_outlives_a_sigkill_of_its_supervisor,
    a_budget_crossed_pauses_the_token_and_stops_its_routine_without_a_retry,
    a_crossing_is_kept_through_a_sigkill_of_the_daemon,
);

#[test]
fn usage_and_budgets_refuse_bad_input_and_change_nothing() {
    let daemon = Daemon::orders();
    let started = daemon
        .post(
            "/tokens",
            &json!({"token": "O-1", "context": {"title": "t"}}),
        )
        .expect(201);
    assert_eq!(started["status"], "active");
    for bad in [
        json!({"token": "O-2", "budget": {"Cost": 1}}),
        json!({"token": "O-2", "budget": {"cost_usd": -1}}),
        json!({"token": "O-2", "budget": {"cost_usd": "5"}}),
        json!({"token": "O-2", "budget": [5]}),
    ] {
        daemon
            .post("/tokens", &bad)
            .refused(422, "invalid_argument");
    }
    daemon.get("/tokens/O-2").refused(404, "token_not_found");
    for bad in [
        json!({"usage": {"cost usd": 1}}),
        json!({"usage": {"cost_usd": 1e300}}),
        json!({"usage": {}}),
        json!({"usage": 3}),
    ] {
        daemon
            .post("/tasks/1/usage", &bad)
            .refused(422, "invalid_argument");
    }
    daemon
        .post("/tasks/1/usage", &json!({"usage": {"cost_usd": 1}}))
        .refused(409, "task_not_held");
    for bad in [
        json!({"budget": {"cost_usd": "x"}}),
        json!({"budget": 5}),
        json!({}),
    ] {
        daemon
            .put("/tokens/O-1/budget", &bad)
            .refused(422, "invalid_argument");
    }
    daemon
        .put("/budgets/nothing", &json!({"budget": {"cost_usd": 5}}))
        .refused(422, "invalid_argument");
    daemon
        .put("/budgets/orders", &json!({"budget": {}}))
        .refused(422, "invalid_argument");
    assert_eq!(daemon.get("/budgets").expect(200), json!({"budgets": []}));
    let dir = daemon.dir.path();
    for args in [
        &["token", "start", "O-3", "--budget", "cost_usd=abc"][..],
        &["token", "start", "O-3", "--budget", "Cost=1"],
        &["token", "budget", "O-1", "cost_usd"],
        &["budget", "set", "orders", "cost_usd=-2"],
        &["budget", "set", "orders", "cost_usd=inf"],
    ] {
        let mut with_url = args.to_vec();
        with_url.extend_from_slice(&["--url", &daemon.url]);
        let refused = run(dir, &with_url);
        assert_eq!(refused.code(), 1, "{refused}");
        assert!(refused.stderr.starts_with("error: "), "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    }
    daemon.get("/tokens/O-3").refused(404, "token_not_found");
    assert_eq!(daemon.get("/budgets").expect(200), json!({"budgets": []}));
    let outside = run(dir, &["ctx", "usage", "cost_usd=1"]);
    assert_eq!(outside.code(), 1, "{outside}");
}

/// The reference's `token show` reads the entries of ours as it reads any kind it
/// does not know: the kind and its data, on one line each.
#[test]
fn the_references_token_show_reads_the_usage_and_budget_entries() {
    let daemon = Daemon::orders();
    let body = json!({"token": "O-1", "context": {"title": "t"}, "budget": {"cost_usd": 5}});
    daemon.post("/tokens", &body).expect(201);
    let claim = json!({"supervisor": "box", "states": ["draft"]});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    let report =
        json!({"usage": {"cost_usd": 6}, "attempt": grant["attempt"], "supervisor": "box"});
    let path = format!("/tasks/{}/usage", grant["task"]);
    let answer = daemon.post(&path, &report).expect(200);
    assert_eq!(answer["stopped"], json!([grant["task"]]));
    let beat = json!({"supervisor": "box", "tasks": [grant["task"]]});
    let lost = daemon.post("/tasks/heartbeat", &beat).expect(200);
    assert_eq!(
        lost["lost"],
        json!([grant["task"]]),
        "the stopped attempt is lost"
    );
    let theirs = crate::reference::reference_stateous();
    let shown = std::process::Command::new(theirs)
        .args(["token", "show", "O-1", "--url", &daemon.url])
        .env_remove("STATEOUS_URL")
        .output()
        .expect("the reference's command runs");
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{stdout}");
    for part in [
        "O-1: draft, paused",
        "budget_set {\"budget\": {\"cost_usd\": 5}}",
        "usage_reported {",
        "budget_exceeded {",
        "paused",
    ] {
        assert!(stdout.contains(part), "{part:?} in\n{stdout}");
    }
}
