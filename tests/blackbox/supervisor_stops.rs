//! Black-box: a supervisor's stop is told to the control plane at once. A forced
//! stop reports each routine it killed as a failed attempt, so that the task is
//! tried again now rather than when its lease ends; every stop says so with
//! `POST /supervisors/{name}/stop`, so that `GET /supervisors`, `token why` and the
//! metrics no longer count the supervisor, and the first two say when it stopped;
//! a refused claim or heartbeat lists no supervisor at all.

use crate::harness;
use crate::supervising;

use std::time::{Duration, Instant};

use harness::{asset_graph, eventually, Daemon, Setup};
use serde_json::{json, Value};
use supervising::{folder_named, outbox, show_lines, start_token, wait_for_status, Supervise};

/// A coding routine that ends its token once the file `go` is in its folder, and
/// otherwise runs until it is stopped.
const CODING_UNTIL_GO: &str = "[ -f go ] && exec stateous ctx emit stuck\nsleep 60 &\nwait";

/// A daemon on `sdlc` (coding has `retries: 2`) whose leases last a minute, far
/// longer than any wait of these tests.
fn sdlc_long_lease() -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "60s"])
        .start()
}

/// The names `GET /supervisors` lists.
fn listed(daemon: &Daemon) -> Vec<String> {
    let list = daemon.get("/supervisors").expect(200);
    list["supervisors"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|s| s["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The value of the `stateous_supervisors` gauge.
fn counted(daemon: &Daemon) -> String {
    let reply = daemon.get("/metrics");
    assert_eq!(reply.status, 200, "{reply}");
    String::from_utf8_lossy(&reply.body)
        .lines()
        .find_map(|line| line.strip_prefix("stateous_supervisors "))
        .unwrap_or_default()
        .to_string()
}

/// Start `vm` on a folder of its own with a routine that runs until stopped, and
/// the token `F-1` in that routine.
fn vm_running_f1(daemon: &Daemon) -> (Supervise, std::path::PathBuf) {
    let folder = folder_named(daemon, "vm", "vm", &[("coding.sh", CODING_UNTIL_GO)]);
    let sup = Supervise::start(&folder);
    start_token(daemon, "F-1");
    sup.wait_for_line("task 1: coding of F-1, attempt 1");
    (sup, folder)
}

/// Stop `sup` with two signals; its exit code.
fn force_stop(sup: &mut Supervise) -> Option<i32> {
    sup.signal(libc::SIGTERM);
    sup.wait_for_line("stopping: no new tasks; waiting for 1 routine(s)");
    sup.signal(libc::SIGINT);
    sup.wait().code()
}

fn a_forced_stop_fails_its_attempt_at_once_and_the_task_is_tried_again_now() {
    let daemon = sdlc_long_lease();
    let (mut sup, folder) = vm_running_f1(&daemon);
    assert_eq!(listed(&daemon), ["vm"]);
    assert_eq!(force_stop(&mut sup), Some(1), "{}", sup.report());
    let log = sup.stderr();
    assert!(
        log.contains("stopping now: cancelling 1 routine(s)"),
        "{log}"
    );
    assert!(log.contains("task 1 of F-1: reported failed"), "{log}");
    assert!(outbox(&folder).is_empty(), "{:?}", outbox(&folder));
    let lines = show_lines(&daemon, "F-1");
    let failed = lines
        .iter()
        .position(|l| l.starts_with("task 1 failed: the supervisor was stopped"));
    let again = lines
        .iter()
        .position(|l| l.starts_with("task 1 is tried again (attempt 2)"));
    assert!(
        failed.is_some() && again.is_some() && failed < again,
        "{lines:#?}"
    );
    assert!(listed(&daemon).is_empty(), "{}", daemon.report());
    assert_eq!(counted(&daemon), "0");
    let why = daemon.get("/tokens/F-1/why").expect(200);
    assert_eq!(why["supervisors"], json!([]), "{why}");
    assert_eq!(why["stopped"][0]["name"], "vm", "{why}");
    // A new supervisor of the same name takes the task again well within the
    // lease of the attempt that was stopped.
    std::fs::write(folder.join("go"), "").unwrap();
    let started = Instant::now();
    let _again = Supervise::start(&folder);
    wait_for_status(&daemon, "F-1", "completed");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        show_lines(&daemon, "F-1")
            .iter()
            .any(|l| l.starts_with("vm took task 1 (attempt 2)")),
        "{:#?}",
        show_lines(&daemon, "F-1")
    );
}

fn a_forced_stop_without_a_control_plane_exits_and_keeps_the_report_in_the_outbox() {
    let mut daemon = sdlc_long_lease();
    let (mut sup, folder) = vm_running_f1(&daemon);
    daemon.stop_with(libc::SIGKILL);
    let started = Instant::now();
    assert_eq!(force_stop(&mut sup), Some(1), "{}", sup.report());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{}",
        sup.report()
    );
    let kept = outbox(&folder);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, "report", "{kept:?}");
    assert_eq!(kept[0].1["kind"], "failed", "{kept:?}");
    assert_eq!(kept[0].1["error"], "the supervisor was stopped", "{kept:?}");
}

/// The supervisors list, `token why` and the metric drop it at once; the list and
/// `why` say when it stopped (they said that no supervisor had claimed, or that
/// none serving the state had been heard from since the control plane started).
fn a_graceful_stop_leaves_the_supervisors_list_why_and_the_metric_at_once() {
    let daemon = sdlc_long_lease();
    let folder = folder_named(&daemon, "vm", "vm", &[("coding.sh", CODING_UNTIL_GO)]);
    let mut sup = Supervise::start(&folder);
    eventually(
        Duration::from_secs(30),
        "vm is listed",
        || sup.report(),
        || listed(&daemon) == ["vm"],
    );
    assert_eq!(counted(&daemon), "1");
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    assert!(listed(&daemon).is_empty(), "{}", sup.report());
    assert_eq!(counted(&daemon), "0");
    let list = daemon.get("/supervisors").expect(200);
    let stopped = &list["stopped"];
    assert_eq!(stopped[0]["name"], "vm", "{list}");
    assert_eq!(stopped[0]["states"], json!(["coding"]), "{list}");
    let at = stopped[0]["stopped_at"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!at.is_empty(), "{list}");
    start_token(&daemon, "W-1");
    let why = daemon.get("/tokens/W-1/why").expect(200);
    assert_eq!(why["supervisors"], json!([]), "{why}");
    assert_eq!(why["stopped"][0]["name"], "vm", "{why}");
    let said = why["reasons"].to_string();
    let sentence = format!("no supervisor serves 'coding' now: vm stopped at {at} (");
    assert!(said.contains(&sentence), "{why}");
    assert!(!said.contains("since this control plane started"), "{why}");
    let cli = harness::run(
        daemon.dir.path(),
        &["token", "why", "W-1", "--url", &daemon.url],
    );
    assert_eq!(cli.code(), 0, "{cli}");
    assert!(cli.stdout.contains(&sentence), "{cli}");
    // A later claim of the name lists it as running again.
    let claim = json!({"supervisor": "vm", "states": ["coding"]});
    daemon.post("/tasks/claim", &claim).expect(200);
    assert_eq!(listed(&daemon), ["vm"]);
    assert_eq!(daemon.get("/supervisors").expect(200).get("stopped"), None);
}

fn the_stop_route_forgets_a_name_and_refuses_one_no_supervisor_can_have() {
    let daemon = sdlc_long_lease();
    let claim = json!({"supervisor": "box", "states": ["coding"]});
    daemon.post("/tasks/claim", &claim).expect(204);
    assert_eq!(listed(&daemon), ["box"]);
    daemon.post_empty("/supervisors/box/stop").expect(204);
    assert!(listed(&daemon).is_empty());
    // Said twice, or by a name never heard from: the same answer.
    daemon.post_empty("/supervisors/box/stop").expect(204);
    daemon
        .post_empty("/supervisors/nobody%20here/stop")
        .expect(204);
    daemon
        .post_empty("/supervisors/a%00b/stop")
        .refused(422, "invalid_argument");
    daemon
        .get("/supervisors/box/stop")
        .refused(405, "method_not_allowed");
}

fn a_refused_claim_or_heartbeat_registers_no_supervisor() {
    let daemon = sdlc_long_lease();
    let nul = "vm\u{0}x";
    let refused: [(&str, Value); 2] = [
        (
            "/tasks/claim",
            json!({"supervisor": nul, "states": ["coding"]}),
        ),
        ("/tasks/heartbeat", json!({"supervisor": nul, "tasks": []})),
    ];
    for (path, body) in refused {
        daemon.post(path, &body).refused(422, "invalid_argument");
    }
    assert!(listed(&daemon).is_empty(), "{}", daemon.report());
    assert_eq!(counted(&daemon), "0");
}

both!(
    a_forced_stop_fails_its_attempt_at_once_and_the_task_is_tried_again_now,
    a_forced_stop_without_a_control_plane_exits_and_keeps_the_report_in_the_outbox,
    a_graceful_stop_leaves_the_supervisors_list_why_and_the_metric_at_once,
    the_stop_route_forgets_a_name_and_refuses_one_no_supervisor_can_have,
    a_refused_claim_or_heartbeat_registers_no_supervisor,
);
