//! Black-box: `stateous init supervisor` and `stateous supervise` against our own
//! `stateous serve`, with program routines that speak through `stateous ctx`.

use crate::harness;
use crate::supervising;

use std::path::Path;
use std::time::{Duration, Instant};

use harness::{asset_graph, run, Setup};
use serde_json::{json, Value};
use supervising::{
    alive, ends_soon, folder_for, history, pid_in, running, sdlc, start_token, wait_for_status,
    write_script, Supervise,
};

const CODING: &str = r#"read grant
echo "$grant" > grant.json
echo "$STATEOUS_TOKEN $STATEOUS_STATE $STATEOUS_VISIT $STATEOUS_ATTEMPT" > env.txt
stateous ctx note "coding $(stateous ctx get repo --raw)"
stateous ctx memory set dev '"session-1"'
for i in 1 2 3; do { stateous ctx get; echo $? >> pipes.txt; } | true; done
echo "to the log"
stateous ctx emit done"#;

const TESTING: &str = r#"stateous ctx emit passed '{"passed": 3, "failed": 0}'"#;

#[test]
fn init_supervisor_writes_the_contract_stubs_and_settings_then_keeps_them() {
    let daemon = sdlc();
    let first = run(
        daemon.dir.path(),
        &["init", "supervisor", &daemon.url, "sup"],
    );
    assert_eq!(
        first.stdout,
        "wrote    sup/contract.json\nwrote    sup/coding.sh\nwrote    sup/testing.sh\n\
         wrote    sup/stateous.yaml\n\nWrite the routines, then run: stateous supervise sup\n",
        "{first}"
    );
    let contract: Value = serde_json::from_str(
        &std::fs::read_to_string(daemon.dir.path().join("sup/contract.json")).unwrap(),
    )
    .unwrap();
    let health = daemon.get("/health").expect(200);
    assert_eq!(contract["checksum"], health["checksum"]);
    assert_eq!(
        contract["states"]["testing"]["emits"],
        json!(["passed", "failed"])
    );
    let again = run(
        daemon.dir.path(),
        &["init", "supervisor", &daemon.url, "sup"],
    );
    assert!(
        again.stdout.contains("kept     the routine of 'coding'"),
        "{again}"
    );
    assert!(
        again.stdout.contains("kept     sup/stateous.yaml"),
        "{again}"
    );
    for source in [
        asset_graph("sdlc"),
        asset_graph("sdlc")
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("flow.yaml"),
    ] {
        let other = run(
            daemon.dir.path(),
            &["init", "supervisor", source.to_str().unwrap(), "other"],
        );
        assert_eq!(other.code(), 0, "{other}");
        let written: Value = serde_json::from_str(
            &std::fs::read_to_string(daemon.dir.path().join("other/contract.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["checksum"], health["checksum"], "{source:?}");
    }
}

fn a_token_runs_through_program_routines_that_use_the_ctx_helper() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", CODING), ("testing", TESTING)]);
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line("box-1 serves coding, testing; the control plane is");
    start_token(&daemon, "T-1");
    wait_for_status(&daemon, "T-1", "completed");
    sup.wait_for_line("of T-1: reported passed");
    let log = sup.stderr();
    assert!(log.contains("coding of T-1, attempt 1"), "{log}");
    assert!(log.contains("of T-1: reported done"), "{log}");
    assert!(log.contains("| to the log"), "{log}");
    let grant: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("grant.json")).unwrap()).unwrap();
    assert_eq!(grant["token"], "T-1");
    assert_eq!(grant["context"], json!({"repo": "acme"}));
    assert_eq!(grant["entered_by"]["name"], "__started__");
    let env = std::fs::read_to_string(folder.join("env.txt")).unwrap();
    assert_eq!(env.trim(), "T-1 coding 1 1");
    // A reader that stops early (here at once) cuts the answer short, no more:
    // the helper exits 0 and prints no panic.
    let pipes = std::fs::read_to_string(folder.join("pipes.txt")).unwrap();
    assert_eq!(pipes, "0\n0\n0\n");
    let kinds: Vec<String> = history(&daemon, "T-1")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(kinds.contains(&"note".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"memory_set".to_string()), "{kinds:?}");
    // Coding's output has its file; testing printed nothing, so it made none.
    let logs: Vec<String> = std::fs::read_dir(folder.join(".stateous/logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(logs, ["task-1-attempt-1.log"]);
    let kept = std::fs::read_to_string(folder.join(".stateous/logs/task-1-attempt-1.log")).unwrap();
    assert_eq!(kept, "to the log\n");
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    sup.wait_for_line(
        "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)",
    );
}

fn a_failing_routine_fails_its_attempt_with_its_exit_status_and_stderr() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "echo boom >&2\nexit 3")]);
    let _sup = Supervise::start(&folder);
    start_token(&daemon, "F-1");
    wait_for_status(&daemon, "F-1", "failed");
    let failures: Vec<String> = history(&daemon, "F-1")
        .iter()
        .filter(|e| e["kind"] == "task_failed")
        .map(|e| e["data"]["error"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(failures.len(), 3, "coding has 2 retries: {failures:?}");
    assert_eq!(
        failures[0],
        "the routine exited with status 3; stderr: boom"
    );
}

fn a_routine_that_cannot_start_fails_its_attempt_with_the_reason() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "stateous ctx emit done")]);
    let sup = Supervise::start(&folder);
    sup.wait_for_line("box-1 serves coding");
    std::fs::remove_file(folder.join("coding.sh")).unwrap();
    start_token(&daemon, "N-1");
    wait_for_status(&daemon, "N-1", "failed");
    let failure = history(&daemon, "N-1")
        .into_iter()
        .find(|e| e["kind"] == "task_failed")
        .unwrap();
    assert_eq!(
        failure["data"]["error"],
        "the routine coding.sh could not start: No such file or directory (os error 2)"
    );
}

/// The folder where supervisors make their helper sockets' folders.
fn ctx_base() -> std::path::PathBuf {
    let base = std::env::temp_dir();
    if base.as_os_str().len() > 60 {
        return "/tmp".into();
    }
    base
}

fn the_socket_folder_a_killed_supervisor_left_is_removed_by_the_next_start() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "stateous ctx emit done")]);
    // A process that has ended: its pid names no process now.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let gone = ended.id();
    ended.wait().unwrap();
    // The test runs on each backend at once in one process: each run names its
    // folders apart, or one run's cleanup removes the other's living folder.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let left = ctx_base().join(format!("stateous-ctx-{gone}-{run:08x}"));
    let living = ctx_base().join(format!("stateous-ctx-{}-{run:08x}", std::process::id()));
    for dir in [&left, &living] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("1.sock"), "").unwrap();
    }
    let sup = Supervise::start(&folder);
    sup.wait_for_line("box-1 serves coding");
    // The supervisor makes its own folder (and sweeps) just after that line:
    // once a routine ran, it has.
    start_token(&daemon, "C-1");
    wait_for_status(&daemon, "C-1", "active");
    let deadline = Instant::now() + Duration::from_secs(10);
    while left.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let living_kept = living.exists();
    let _ = std::fs::remove_dir_all(&living);
    assert!(!left.exists(), "{} is still there", left.display());
    assert!(living_kept, "a live process's folder was removed");
}

fn an_outcome_the_contract_does_not_allow_fails_the_attempt() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "stateous ctx emit passed || true")],
    );
    let _sup = Supervise::start(&folder);
    start_token(&daemon, "W-1");
    wait_for_status(&daemon, "W-1", "failed");
    let failure = history(&daemon, "W-1")
        .into_iter()
        .find(|e| e["kind"] == "task_failed")
        .unwrap();
    assert_eq!(
        failure["data"]["error"],
        "the routine emitted 'passed', which 'coding' may not emit (allowed: done, stuck)"
    );
}

fn refused(folder: &Path) -> String {
    let finished = run(
        folder.parent().unwrap(),
        &["supervise", folder.to_str().unwrap()],
    );
    assert_eq!(finished.code(), 1, "{finished}");
    let lines: Vec<&str> = finished.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {finished}");
    lines[0].to_string()
}

#[test]
fn a_folder_that_cannot_be_used_stops_supervise_with_one_line() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "exit 0")]);
    let config = folder.join("stateous.yaml");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}taks: 3\n")).unwrap();
    let line = refused(&folder);
    assert!(
        line.ends_with("stateous.yaml: taks: there is no such setting"),
        "{line}"
    );
    std::fs::write(&config, &good).unwrap();
    write_script(&folder.join("coding.py"), "exit 0");
    let line = refused(&folder);
    assert!(
        line.contains("two routines for 'coding': coding.py and coding.sh"),
        "{line}"
    );
    std::fs::remove_file(folder.join("coding.py")).unwrap();
    let contract = folder.join("contract.json");
    let text = std::fs::read_to_string(&contract).unwrap();
    std::fs::write(&contract, text.replace("sha256:", "sha256:0")).unwrap();
    let line = refused(&folder);
    assert!(
        line.contains("is for another version of the workflow"),
        "{line}"
    );
    assert!(line.ends_with("again"), "{line}");
    assert!(
        line.contains("keeps the routines and stateous.yaml"),
        "{line}"
    );
    // A folder of another workflow is not told to take this one's contract.
    let other = text.replace("\"sdlc\"", "\"billing\"");
    assert_ne!(other, text, "the contract names its workflow");
    std::fs::write(&contract, other).unwrap();
    let line = refused(&folder);
    assert!(
        line.contains("is the supervisor of workflow 'billing',")
            && line.contains("serves workflow 'sdlc'"),
        "{line}"
    );
    assert!(
        line.ends_with(
            "for 'sdlc' with `stateous init supervisor {} NEW_FOLDER`"
                .replace("{}", &daemon.url)
                .as_str()
        ),
        "{line}"
    );
    assert_eq!(
        std::fs::read_to_string(&contract).unwrap(),
        text.replace("\"sdlc\"", "\"billing\""),
        "the folder is left as it was"
    );
}

fn a_second_supervisor_on_the_same_folder_does_not_start() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "exit 0")]);
    let first = Supervise::start(&folder);
    first.wait_for_line("serves coding");
    let line = refused(&folder);
    assert!(
        line.starts_with("error: another supervisor runs on"),
        "{line}"
    );
    assert!(
        line.ends_with("now: stop it, or use another folder"),
        "{line}"
    );
}

fn the_first_signal_waits_for_the_routine_and_the_second_kills_its_group() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "sleep 60 &\necho $! > child.pid\nwait")],
    );
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "S-1");
    sup.wait_for_line("coding of S-1, attempt 1");
    let child = pid_in(&folder, "child.pid");
    sup.signal(libc::SIGTERM);
    sup.wait_for_line(
        "stopping: no new tasks; waiting for 1 routine(s) (signal again to stop now)",
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        sup.child.try_wait().unwrap().is_none(),
        "it waits for the routine"
    );
    sup.signal(libc::SIGINT);
    assert_eq!(sup.wait().code(), Some(1), "{}", sup.report());
    assert!(sup
        .stderr()
        .contains("stopping now: cancelling 1 routine(s)"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(child),
        "the routine's whole process group is stopped"
    );
}

fn a_lost_task_stops_its_routine() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "sleep 60 &\necho $! > child.pid\nwait")],
    );
    let sup = Supervise::start(&folder);
    start_token(&daemon, "L-1");
    sup.wait_for_line("coding of L-1, attempt 1");
    std::thread::sleep(Duration::from_millis(300));
    let child: i32 = std::fs::read_to_string(folder.join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    daemon.post_empty("/tokens/L-1/cancel").expect(200);
    sup.wait_for_line("of L-1: the control plane took attempt 1 back; stopping its routine");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(child), "the lost routine's group is stopped");
}

fn a_report_that_cannot_be_sent_stays_in_the_outbox_and_goes_at_the_next_start() {
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "60s", "--stale-after", "1s"])
        .start();
    let folder = folder_for(&daemon, &[("coding.sh", "sleep 1\nstateous ctx emit done")]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "O-1");
    sup.wait_for_line("coding of O-1, attempt 1");
    daemon.stop_with(libc::SIGKILL);
    sup.wait_for_line("trying again in");
    std::thread::sleep(Duration::from_millis(1500));
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    sup.wait_for_line("of O-1: the control plane cannot be reached; the report stays in the outbox for the next start");
    let outbox = rusqlite::Connection::open(folder.join(".stateous/outbox.db")).unwrap();
    let left: i64 = outbox
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'report'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 1);
    drop(outbox);
    // The daemon is down already; this starts it again on the same port and database.
    daemon.crash_and_restart();
    let again = Supervise::start(&folder);
    again.wait_for_line("sending 1 message(s) left in the outbox");
    again.wait_for_line("of O-1: reported done");
    let token = daemon.get("/tokens/O-1").expect(200);
    assert_ne!(token["state"], "coding", "{token}");
}

fn an_outbox_message_survives_a_sigkill_of_the_supervisor() {
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "60s", "--stale-after", "1s"])
        .start();
    let folder = folder_for(&daemon, &[("coding.sh", "sleep 1\nstateous ctx emit done")]);
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "K-1");
    sup.wait_for_line("coding of K-1, attempt 1");
    daemon.stop_with(libc::SIGKILL);
    sup.wait_for_line("trying again in");
    std::thread::sleep(Duration::from_millis(1500));
    sup.signal(libc::SIGKILL);
    sup.wait();
    // The daemon is down already; this starts it again on the same port and database.
    daemon.crash_and_restart();
    let again = Supervise::start(&folder);
    again.wait_for_line("sending 1 message(s) left in the outbox");
    again.wait_for_line("of K-1: reported done");
}

#[test]
fn init_supervisor_refuses_a_source_it_cannot_use_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), "{}").unwrap();
    for (source, start) in [
        ("nothing.json", "error: nothing.json does not exist"),
        ("bad.json", "error: cannot use bad.json: "),
        (
            "http://127.0.0.1:1",
            "error: cannot fetch the workflow from http://127.0.0.1:1: ",
        ),
    ] {
        let finished = run(dir.path(), &["init", "supervisor", source, "sup"]);
        assert_eq!(finished.code(), 1, "{finished}");
        assert_eq!(finished.stderr.lines().count(), 1, "{finished}");
        assert!(finished.stderr.starts_with(start), "{finished}");
        assert!(
            !dir.path().join("sup").exists(),
            "nothing written: {finished}"
        );
    }
}

fn a_routine_stops_when_its_supervisor_is_killed() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "echo $$ > routine.pid\nexec sleep 60")],
    );
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "D-1");
    sup.wait_for_line("coding of D-1, attempt 1");
    let routine = pid_in(&folder, "routine.pid");
    assert!(running(routine));
    sup.signal(libc::SIGKILL);
    sup.wait();
    assert!(
        ends_soon(routine),
        "the routine got SIGTERM when its supervisor died"
    );
}

/// The routine's own children are in its process group, and the whole group gets
/// SIGTERM: a shell's `sleep` must not go on, reparented, once the shell is gone.
fn a_routines_own_children_stop_when_its_supervisor_is_killed() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "sleep 60 &\necho $! > child.pid\nwait")],
    );
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "G-1");
    sup.wait_for_line("coding of G-1, attempt 1");
    let child = pid_in(&folder, "child.pid");
    assert!(running(child));
    sup.signal(libc::SIGKILL);
    sup.wait();
    let stopped = ends_soon(child);
    if !stopped {
        // SAFETY: kill(2) on the pid the routine wrote has no memory effects.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    assert!(
        stopped,
        "the routine's child got SIGTERM when its supervisor died"
    );
}

/// A routine that ignores SIGTERM, and its child that inherits that, get SIGKILL
/// once the grace period (1 s here) has passed after its supervisor died: a task
/// retried after the lease must never run beside an orphan of its last attempt.
fn a_routine_that_ignores_sigterm_is_killed_a_grace_after_its_supervisor_dies() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[(
            "coding.sh",
            "trap '' TERM\necho $$ > routine.pid\nsleep 61 &\necho $! > child.pid\nwait",
        )],
    );
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "T-1");
    sup.wait_for_line("coding of T-1, attempt 1");
    let routine = pid_in(&folder, "routine.pid");
    let child = pid_in(&folder, "child.pid");
    assert!(running(routine) && running(child));
    sup.signal(libc::SIGKILL);
    sup.wait();
    let stopped = [routine, child].map(ends_soon);
    for pid in [routine, child] {
        // SAFETY: kill(2) on a pid the routine wrote has no memory effects.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(
        stopped,
        [true, true],
        "the routine and its child were killed after the grace"
    );
}

/// A Ctrl-C signals the terminal's whole foreground group, which holds the
/// supervisor and the process that starts its routines: the supervisor takes no
/// more tasks and its routine runs to its end. The routine starts with no signal
/// blocked, and SIGINT, SIGTERM and SIGPIPE not ignored, as a child of the
/// supervisor itself did. (glibc's own signals, 32 and 33, may be: a posix_spawn
/// of the supervisor leaves them ignored, and exec keeps that.)
fn a_ctrl_c_to_the_supervisors_group_lets_its_routine_finish() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[(
            "coding.sh",
            "while read -r key mask; do case $key in Sig*) echo \"$key $mask\";; esac; \
             done < /proc/self/status > signals.txt\nsleep 1\nstateous ctx emit done",
        )],
    );
    let mut sup = Supervise::start_in_own_group(&folder);
    start_token(&daemon, "C-1");
    sup.wait_for_line("coding of C-1, attempt 1");
    std::thread::sleep(Duration::from_millis(300));
    sup.signal_group(libc::SIGINT);
    sup.wait_for_line("stopping: no new tasks; waiting for 1 routine(s)");
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    assert!(
        sup.stderr().contains("of C-1: reported done"),
        "{}",
        sup.report()
    );
    // Read by the shell itself: a child's view of it could catch the shell with
    // every signal blocked while it forks.
    let signals = std::fs::read_to_string(folder.join("signals.txt")).unwrap();
    let mask = |name: &str| {
        let line = signals.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{signals}");
    let (int, pipe, term) = (
        1 << (libc::SIGINT - 1),
        1 << (libc::SIGPIPE - 1),
        1 << (libc::SIGTERM - 1),
    );
    assert_eq!(mask("SigIgn:") & (int | pipe | term), 0, "{signals}");
}

fn an_emit_whose_report_would_be_over_the_body_limit_is_refused_to_the_routine_at_once() {
    let daemon = sdlc();
    // The routine speaks the helper's protocol itself: a 1 MB payload does not
    // fit in one command-line argument.
    let testing = r#"exec python3 - <<'PY'
import json, os, socket
conn = socket.socket(socket.AF_UNIX)
conn.connect(os.environ["STATEOUS_CTX"])
lines = conn.makefile("rw")
def ask(request):
    lines.write(json.dumps(request) + "\n")
    lines.flush()
    return json.loads(lines.readline())
big = {"passed": 1, "failed": 0, "log": "x" * 1100000}
with open("big-answer.json", "w") as out:
    json.dump(ask({"op": "emit", "event": "passed", "payload": big}), out)
ask({"op": "emit", "event": "passed", "payload": {"passed": 1, "failed": 0}})
PY"#;
    let folder = folder_for(
        &daemon,
        &[
            ("coding.sh", "stateous ctx emit done"),
            ("testing.sh", testing),
        ],
    );
    let _sup = Supervise::start(&folder);
    start_token(&daemon, "E-1");
    wait_for_status(&daemon, "E-1", "completed");
    let answer: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("big-answer.json")).unwrap())
            .unwrap();
    assert_eq!(answer["ok"], false, "{answer}");
    let why = answer["error"].as_str().unwrap_or_default();
    assert!(why.starts_with("the report would be "), "{why}");
    let failed = history(&daemon, "E-1")
        .iter()
        .filter(|e| e["kind"] == "task_failed")
        .count();
    assert_eq!(failed, 0);
}

both!(
    a_token_runs_through_program_routines_that_use_the_ctx_helper,
    a_failing_routine_fails_its_attempt_with_its_exit_status_and_stderr,
    a_routine_that_cannot_start_fails_its_attempt_with_the_reason,
    the_socket_folder_a_killed_supervisor_left_is_removed_by_the_next_start,
    an_outcome_the_contract_does_not_allow_fails_the_attempt,
    a_second_supervisor_on_the_same_folder_does_not_start,
    the_first_signal_waits_for_the_routine_and_the_second_kills_its_group,
    a_lost_task_stops_its_routine,
    a_report_that_cannot_be_sent_stays_in_the_outbox_and_goes_at_the_next_start,
    an_outbox_message_survives_a_sigkill_of_the_supervisor,
    a_routine_stops_when_its_supervisor_is_killed,
    a_routines_own_children_stop_when_its_supervisor_is_killed,
    a_routine_that_ignores_sigterm_is_killed_a_grace_after_its_supervisor_dies,
    a_ctrl_c_to_the_supervisors_group_lets_its_routine_finish,
    an_emit_whose_report_would_be_over_the_body_limit_is_refused_to_the_routine_at_once,
);
