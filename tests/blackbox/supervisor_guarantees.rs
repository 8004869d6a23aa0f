//! Black-box: the guarantees of the supervisor, each proved with the real `stateous
//! serve` and `stateous supervise` processes, real SQLite files and program routines:
//! the crash story of `docs/guarantees.md`, the outbox across a lost daemon and a
//! killed supervisor, a report after its lease, the graceful stop, and a lost task's
//! routine.

use crate::harness;
use crate::supervising;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{asset_graph, run, Daemon, Setup};
use serde_json::{json, Value};
use supervising::{
    alive, ends_soon, history, outbox, pid_in, running, show_lines, start_token, wait_for_status,
    write_script, Supervise,
};

/// A routine that waits until the test creates `go` in the folder.
const WAIT_FOR_GO: &str = "while [ ! -f go ]; do sleep 0.05; done";

/// A daemon on `sdlc` (coding has `retries: 2`) whose leases last `lease`, and
/// whose hold on the database may be taken 1 s after a crash.
fn sdlc_with_lease(lease: &str) -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--lease", lease, "--stale-after", "1s"])
        .start()
}

/// A supervisor folder `dir_name` made by `stateous init supervisor`, named
/// `name`, with short timings, the stubs replaced by `routines`.
fn folder_named(daemon: &Daemon, dir_name: &str, name: &str, routines: &[(&str, &str)]) -> PathBuf {
    let made = run(
        daemon.dir.path(),
        &["init", "supervisor", &daemon.url, dir_name],
    );
    assert_eq!(made.code(), 0, "{made}");
    let folder = daemon.dir.path().join(dir_name);
    for stub in ["coding.sh", "testing.sh"] {
        let _ = std::fs::remove_file(folder.join(stub));
    }
    for (file, script) in routines {
        write_script(&folder.join(file), script);
    }
    let settings = format!(
        "url: \"{}\"\nname: {name}\nheartbeat: 200ms\nidle: 50ms\ngrace: 1s\nbackoff: [100ms]\n",
        daemon.url
    );
    std::fs::write(folder.join("stateous.yaml"), settings).unwrap();
    folder
}

/// Poll `check` every 20 ms for at most 30 s; panics with `what` and `report`.
fn eventually(what: &str, report: impl Fn() -> String, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}\n{}", report());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ledger kinds of a token's history, oldest first.
fn kinds(daemon: &Daemon, token: &str) -> Vec<String> {
    history(daemon, token)
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Whether `wanted` occur in `lines` in this order (others may come between).
fn in_order(lines: &[String], wanted: &[&str]) -> bool {
    let mut rest = lines.iter();
    wanted
        .iter()
        .all(|want| rest.any(|line| line.starts_with(want)))
}

/// The position of the first log line containing `part`; panics without one.
fn line_of(log: &str, part: &str) -> usize {
    log.lines()
        .position(|line| line.contains(part))
        .unwrap_or_else(|| panic!("no line with {part:?} in\n{log}"))
}

/// Wait for the routine to run, then stop the daemon (SIGKILL) and let the
/// routine go on: its messages cannot be sent.
fn kill_daemon_then_go(daemon: &mut Daemon, sup: &Supervise, folder: &Path, token: &str) {
    sup.wait_for_line(&format!("coding of {token}, attempt 1"));
    daemon.stop_with(libc::SIGKILL);
    std::fs::write(folder.join("go"), "").unwrap();
}

/// The daemon is already down: this starts it again on the same port and database.
fn daemon_back(daemon: &mut Daemon) {
    daemon.crash_and_restart();
}

fn a_killed_supervisors_task_is_retried_on_another_with_its_memory() {
    let daemon = sdlc_with_lease("2s");
    let first = folder_named(
        &daemon,
        "box1",
        "build-box-1",
        &[(
            "coding.sh",
            "stateous ctx memory set session '\"sess-42\"'\ntouch wrote\nexec sleep 60",
        )],
    );
    let mut box1 = Supervise::start(&first);
    start_token(&daemon, "C-1");
    box1.wait_for_line("task 1: coding of C-1, attempt 1");
    eventually(
        "the memory write arrived",
        || box1.report(),
        || first.join("wrote").exists() && kinds(&daemon, "C-1").contains(&"memory_set".into()),
    );
    box1.signal(libc::SIGKILL);
    box1.wait();
    eventually(
        "the retry",
        || daemon.report(),
        || {
            show_lines(&daemon, "C-1")
                .iter()
                .any(|l| l == "task 1 is tried again (attempt 2)")
        },
    );
    let second = folder_named(
        &daemon,
        "box2",
        "build-box-2",
        &[(
            "coding.sh",
            "read grant\necho \"$grant\" > grant.json\nstateous ctx emit stuck",
        )],
    );
    let _box2 = Supervise::start(&second);
    wait_for_status(&daemon, "C-1", "completed");
    let lines = show_lines(&daemon, "C-1");
    assert!(
        in_order(
            &lines,
            &[
                "build-box-1 took task 1 (attempt 1)",
                "task 1 failed: build-box-1 stopped answering: no heartbeat for ",
                "task 1 is tried again (attempt 2)",
                "build-box-2 took task 1 (attempt 2)",
            ]
        ),
        "{lines:#?}"
    );
    let grant: Value =
        serde_json::from_str(&std::fs::read_to_string(second.join("grant.json")).unwrap()).unwrap();
    assert_eq!(grant["attempt"], 2, "{grant}");
    assert_eq!(grant["memory"], json!({"session": "sess-42"}), "{grant}");
}

fn messages_wait_in_the_outbox_while_the_daemon_is_down_and_arrive_in_order_once() {
    let mut daemon = sdlc_with_lease("60s");
    let coding = format!(
        "{WAIT_FOR_GO}\nstateous ctx note first\nstateous ctx memory set session '\"s-1\"'\n\
         stateous ctx note second\nstateous ctx emit done\ntouch emitted"
    );
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", &coding)]);
    let sup = Supervise::start(&folder);
    start_token(&daemon, "O-1");
    kill_daemon_then_go(&mut daemon, &sup, &folder, "O-1");
    eventually(
        "the routine ended",
        || sup.report(),
        || folder.join("emitted").exists(),
    );
    // The outbox stays locked while its supervisor runs, so this test cannot look
    // in; the next one does, after a kill. Meanwhile the messages are retried.
    std::thread::sleep(Duration::from_millis(500));
    daemon_back(&mut daemon);
    sup.wait_for_line("task 1 of O-1: reported done");
    // The routine's messages, each once, in the order it wrote them.
    let arrived: Vec<Value> = history(&daemon, "O-1")
        .into_iter()
        .filter_map(|e| match e["kind"].as_str() {
            Some("note") => Some(e["data"]["text"].clone()),
            Some("memory_set") => Some(e["data"]["memory_key"].clone()),
            Some("event_accepted") if e["data"]["state"] == "coding" => {
                Some(e["data"]["event"].clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        arrived,
        [
            json!("first"),
            json!("session"),
            json!("second"),
            json!("done")
        ]
    );
    let log = sup.stderr();
    assert_eq!(log.matches("of O-1: reported done").count(), 1, "{log}");
}

fn a_supervisor_killed_with_unsent_messages_sends_them_at_its_next_start_before_it_claims() {
    let mut daemon = sdlc_with_lease("60s");
    // A report would follow the note and the memory write once they went (as in
    // the reference); the kill comes while they wait.
    let coding = format!(
        "{WAIT_FOR_GO}\nstateous ctx note \"from $STATEOUS_TOKEN\"\n\
         stateous ctx memory set seen true\ntouch written\nexec sleep 60"
    );
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", &coding)]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "K-1");
    kill_daemon_then_go(&mut daemon, &sup, &folder, "K-1");
    eventually(
        "both written",
        || sup.report(),
        || folder.join("written").exists(),
    );
    sup.signal(libc::SIGKILL);
    sup.wait();
    let waiting: Vec<String> = outbox(&folder).into_iter().map(|(k, _)| k).collect();
    assert_eq!(waiting, ["note", "memory"], "they wait in outbox.db");
    daemon_back(&mut daemon);
    start_token(&daemon, "K-2");
    let again = Supervise::start(&folder);
    // (Task ids are unique and increasing, not gapless: a restarted control plane
    // on Postgres takes its ids from a new block.)
    again.wait_for_line(": coding of K-2, attempt 1");
    let log = again.stderr();
    let sending = line_of(&log, "sending 2 message(s) left in the outbox");
    let claimed = line_of(&log, ": coding of K-2, attempt 1");
    assert!(sending < claimed, "{log}");
    assert!(!log.contains("refused"), "{log}");
    let at = |token: &str, kind: &str| -> String {
        let entry = history(&daemon, token)
            .into_iter()
            .find(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} for {token}"));
        entry["at"].as_str().unwrap().to_string()
    };
    let claim = at("K-2", "task_claimed");
    assert!(at("K-1", "note") <= claim, "the note went before the claim");
    assert!(
        at("K-1", "memory_set") <= claim,
        "the memory write went before the claim"
    );
    let notes = kinds(&daemon, "K-1")
        .iter()
        .filter(|k| *k == "note")
        .count();
    assert_eq!(notes, 1, "once");
}

fn a_report_after_its_lease_ended_is_dropped_with_one_line_and_the_new_attempt_is_untouched() {
    let mut daemon = sdlc_with_lease("3s");
    let coding = format!("{WAIT_FOR_GO}\nstateous ctx emit done");
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", &coding)]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "R-1");
    kill_daemon_then_go(&mut daemon, &sup, &folder, "R-1");
    // With its control plane gone, the stop keeps the report for the next start.
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    let waiting: Vec<String> = outbox(&folder).into_iter().map(|(k, _)| k).collect();
    assert_eq!(waiting, ["report"], "{}", sup.report());
    daemon_back(&mut daemon);
    eventually(
        "the retry",
        || daemon.report(),
        || {
            show_lines(&daemon, "R-1")
                .iter()
                .any(|l| l == "task 1 is tried again (attempt 2)")
        },
    );
    let claim = json!({"supervisor": "build-box-2", "states": ["coding"]});
    let granted = daemon.post("/tasks/claim", &claim).expect(200);
    assert_eq!(
        (granted["task"].clone(), granted["attempt"].clone()),
        (json!(1), json!(2))
    );
    let again = Supervise::start(&folder);
    again.wait_for_line("task 1 of R-1: the control plane refused the report");
    std::thread::sleep(Duration::from_millis(300));
    let log = again.stderr();
    assert_eq!(log.matches("of R-1").count(), 1, "one line: {log}");
    let beat = json!({"supervisor": "build-box-2", "tasks": [1]});
    assert_eq!(
        daemon.post("/tasks/heartbeat", &beat).expect(200),
        json!({"lost": []})
    );
    let token = daemon.get("/tokens/R-1").expect(200);
    assert_eq!(
        (token["state"].as_str(), token["status"].as_str()),
        (Some("coding"), Some("active"))
    );
    let lines = show_lines(&daemon, "R-1");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("build-box-2 took task 1 (attempt 2)"),
        "{lines:#?}"
    );
}

fn the_first_signal_lets_a_running_routine_finish_and_report_then_exits_0() {
    let daemon = sdlc_with_lease("60s");
    let coding = format!("{WAIT_FOR_GO}\nstateous ctx emit done");
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", &coding)]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "G-1");
    sup.wait_for_line("coding of G-1, attempt 1");
    sup.signal(libc::SIGTERM);
    sup.wait_for_line(
        "stopping: no new tasks; waiting for 1 routine(s) (signal again to stop now)",
    );
    start_token(&daemon, "G-2");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        sup.child.try_wait().unwrap().is_none(),
        "it waits for the routine"
    );
    std::fs::write(folder.join("go"), "").unwrap();
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    let log = sup.stderr();
    assert!(log.contains("task 1 of G-1: reported done"), "{log}");
    assert!(!log.contains("G-2"), "no new task after the signal: {log}");
    assert_eq!(daemon.get("/tokens/G-1").expect(200)["state"], "testing");
}

/// A SIGTERM to the supervisor's whole process group (`kill -TERM -PGID`) reaches
/// the process that starts its routines too, which must not take it for the
/// supervisor's death: the stop is graceful, and the routine finishes and reports.
fn a_sigterm_to_the_supervisors_group_lets_its_routine_finish_and_report() {
    let daemon = sdlc_with_lease("60s");
    let coding = format!("{WAIT_FOR_GO}\nstateous ctx emit done");
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", &coding)]);
    let mut sup = Supervise::start_in_own_group(&folder);
    start_token(&daemon, "T-1");
    sup.wait_for_line("coding of T-1, attempt 1");
    sup.signal_group(libc::SIGTERM);
    sup.wait_for_line("stopping: no new tasks; waiting for 1 routine(s)");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(folder.join("go"), "").unwrap();
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    let log = sup.stderr();
    assert!(log.contains("task 1 of T-1: reported done"), "{log}");
    assert_eq!(daemon.get("/tokens/T-1").expect(200)["state"], "testing");
}

/// What a routine leaves running in its process group ends with its attempt: a
/// child that ignores SIGTERM gets SIGKILL after the grace (1 s here), while the
/// report goes at once.
fn what_a_routine_left_running_in_its_group_ends_with_its_attempt() {
    let daemon = sdlc_with_lease("60s");
    let coding = "(trap '' TERM; exec sleep 67) &\necho $! > child.pid\nstateous ctx emit done";
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", coding)]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "L-1");
    sup.wait_for_line("task 1 of L-1: reported done");
    let child = pid_in(&folder, "child.pid");
    let stopped = ends_soon(child);
    // SAFETY: kill(2) on a pid the routine wrote has no memory effects.
    unsafe { libc::kill(child, libc::SIGKILL) };
    assert!(stopped, "the routine's child was stopped after the grace");
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
}

/// A SIGKILL to the supervisor's whole process group (`kill -9 %1` in a shell)
/// must not take the process that starts its routines along: that one lives in a
/// group of its own, sees the supervisor die, and stops a routine that ignores
/// SIGTERM, and its child, with SIGKILL after the grace (1 s here).
fn a_sigkill_to_the_supervisors_group_still_stops_its_routines_after_the_grace() {
    let daemon = sdlc_with_lease("60s");
    let coding = "trap '' TERM\necho $$ > routine.pid\nsleep 61 &\necho $! > child.pid\nwait";
    let folder = folder_named(&daemon, "sup", "box-1", &[("coding.sh", coding)]);
    let mut sup = Supervise::start_in_own_group(&folder);
    start_token(&daemon, "K-1");
    sup.wait_for_line("coding of K-1, attempt 1");
    let pids = [pid_in(&folder, "routine.pid"), pid_in(&folder, "child.pid")];
    assert!(pids.iter().all(|pid| running(*pid)));
    sup.signal_group(libc::SIGKILL);
    sup.wait();
    let stopped = pids.map(ends_soon);
    for pid in pids {
        // SAFETY: kill(2) on a pid the routine wrote has no memory effects.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(
        stopped,
        [true, true],
        "the routine and its child were stopped"
    );
}

fn a_routine_whose_token_a_fired_event_moved_on_is_stopped() {
    let daemon = sdlc_with_lease("60s");
    let folder = folder_named(
        &daemon,
        "sup",
        "box-1",
        &[("coding.sh", "sleep 60 &\necho $! > child.pid\nwait")],
    );
    let sup = Supervise::start(&folder);
    start_token(&daemon, "M-1");
    sup.wait_for_line("coding of M-1, attempt 1");
    let pid_file = folder.join("child.pid");
    eventually(
        "the routine's child",
        || sup.report(),
        || std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')),
    );
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    daemon.post_empty("/tokens/M-1/events/stuck").expect(200);
    sup.wait_for_line("task 1 of M-1: the control plane took attempt 1 back; stopping its routine");
    eventually(
        "the routine's group stopped",
        || sup.report(),
        || !alive(child),
    );
}

/// A daemon serving `sdlc` with `serve --supervise` on a folder whose coding
/// routine waits for `go`, then ends its token; a token `B-1` in its routine.
fn serving_with_a_waiting_routine() -> (Daemon, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("sdlc").display().to_string();
    let made = run(dir.path(), &["init", "supervisor", &graph, "sup"]);
    assert_eq!(made.code(), 0, "{made}");
    let folder = dir.path().join("sup");
    let _ = std::fs::remove_file(folder.join("testing.sh"));
    write_script(
        &folder.join("coding.sh"),
        &format!("{WAIT_FOR_GO}\nstateous ctx emit stuck"),
    );
    std::fs::write(
        folder.join("stateous.yaml"),
        "name: box-1\nheartbeat: 200ms\nidle: 50ms\ngrace: 1s\nbackoff: [100ms]\n",
    )
    .unwrap();
    let db = dir.path().join("stateous.db");
    let daemon = Setup::new(asset_graph("sdlc"))
        .in_dir(dir, db)
        .args(&["--lease", "60s", "--supervise", folder.to_str().unwrap()])
        .start();
    start_token(&daemon, "B-1");
    eventually(
        "the routine runs",
        || daemon.report(),
        || daemon.stderr().contains("coding of B-1, attempt 1"),
    );
    (daemon, folder)
}

fn serve_with_supervise_serves_on_until_the_supervisors_routines_have_reported() {
    let (mut daemon, folder) = serving_with_a_waiting_routine();
    daemon.signal(libc::SIGINT);
    eventually(
        "the supervisor stops first",
        || daemon.report(),
        || {
            daemon.stderr().contains(
                "stopping: no new tasks; waiting for 1 routine(s) (signal again to stop now)",
            )
        },
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(daemon.is_running(), "{}", daemon.report());
    daemon.get("/health").expect(200);
    std::fs::write(folder.join("go"), "").unwrap();
    let status = daemon.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    let log = daemon.stderr();
    let reported = line_of(&log, "task 1 of B-1: reported stuck");
    assert_eq!(log.lines().last(), Some("stopped"), "{log}");
    assert!(reported < log.lines().count() - 1, "{log}");
    assert!(
        outbox(&folder).is_empty(),
        "the report did not wait for a next start"
    );
}

fn serve_with_supervise_stops_at_once_with_exit_1_on_a_second_signal() {
    let (mut daemon, _folder) = serving_with_a_waiting_routine();
    daemon.signal(libc::SIGINT);
    eventually(
        "the supervisor stops first",
        || daemon.report(),
        || {
            daemon
                .stderr()
                .contains("stopping: no new tasks; waiting for 1 routine(s)")
        },
    );
    daemon.signal(libc::SIGTERM);
    let status = daemon.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{}", daemon.report());
    let log = daemon.stderr();
    assert!(
        log.contains("stopping now: cancelling 1 routine(s)"),
        "{log}"
    );
    // The stopped attempt was reported failed before the server stopped, so its
    // task does not wait for its lease to end.
    assert!(log.contains("task 1 of B-1: reported failed"), "{log}");
    assert!(!log.lines().any(|l| l == "stopped"), "{log}");
}

fn serve_with_supervise_stops_both_when_another_control_plane_takes_the_database() {
    let (mut daemon, _folder) = serving_with_a_waiting_routine();
    daemon
        .database
        .execute("UPDATE control_plane SET serving = 'another-control-plane', epoch = epoch + 1");
    let status = daemon.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{}", daemon.report());
    let log = daemon.stderr();
    assert!(
        log.contains("stopping now: cancelling 1 routine(s)"),
        "{log}"
    );
    assert!(
        log.contains("error: another control plane took the database, or this control plane's hold on it ended; this control plane stopped"),
        "{log}"
    );
    assert!(!log.lines().any(|l| l == "stopped"), "{log}");
}

both!(
    a_killed_supervisors_task_is_retried_on_another_with_its_memory,
    messages_wait_in_the_outbox_while_the_daemon_is_down_and_arrive_in_order_once,
    a_supervisor_killed_with_unsent_messages_sends_them_at_its_next_start_before_it_claims,
    a_report_after_its_lease_ended_is_dropped_with_one_line_and_the_new_attempt_is_untouched,
    the_first_signal_lets_a_running_routine_finish_and_report_then_exits_0,
    a_sigterm_to_the_supervisors_group_lets_its_routine_finish_and_report,
    a_sigkill_to_the_supervisors_group_still_stops_its_routines_after_the_grace,
    what_a_routine_left_running_in_its_group_ends_with_its_attempt,
    a_routine_whose_token_a_fired_event_moved_on_is_stopped,
    serve_with_supervise_serves_on_until_the_supervisors_routines_have_reported,
    serve_with_supervise_stops_at_once_with_exit_1_on_a_second_signal,
    serve_with_supervise_stops_both_when_another_control_plane_takes_the_database,
);
