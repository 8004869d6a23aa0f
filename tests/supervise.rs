//! Black-box: `stateous init supervisor` and `stateous supervise` against our own
//! `stateous serve`, with program routines that speak through `stateous ctx`.

mod harness;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, binary, run, Daemon, Setup};
use serde_json::{json, Value};

/// Short timings for the supervisor, in its `stateous.yaml`.
const TIMINGS: &str = "name: box-1\nheartbeat: 200ms\nidle: 50ms\ngrace: 1s\nbackoff: [100ms]\n";

/// A supervisor under test: `stateous supervise FOLDER`, its stderr in a file.
struct Supervise {
    child: Child,
    folder: PathBuf,
    log: PathBuf,
}

impl Supervise {
    fn start(folder: &Path) -> Supervise {
        Supervise::start_with(folder, &[])
    }

    fn start_with(folder: &Path, args: &[&str]) -> Supervise {
        let log = folder.with_extension("log");
        let stderr = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(binary())
            .arg("supervise")
            .arg(folder)
            .args(args)
            .env_remove("STATEOUS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("the stateous binary starts");
        Supervise {
            child,
            folder: folder.to_path_buf(),
            log,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for_line(&self, part: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.stderr().contains(part) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the supervisor never logged {part:?}\n{}", self.report());
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("a status") {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit\n{}", self.report());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn report(&self) -> String {
        format!(
            "command: stateous supervise {}\n--- stderr ---\n{}",
            self.folder.display(),
            self.stderr()
        )
    }
}

impl Drop for Supervise {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("=== the supervisor under test ===\n{}", self.report());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `stateous init supervisor URL FOLDER`, the stubs removed, `routines` written
/// (file name, script), and the short timings added.
fn folder_for(daemon: &Daemon, routines: &[(&str, &str)]) -> PathBuf {
    let folder = daemon.dir.path().join("sup");
    let made = run(
        daemon.dir.path(),
        &["init", "supervisor", &daemon.url, "sup"],
    );
    assert_eq!(made.code(), 0, "{made}");
    for stub in ["coding.sh", "testing.sh"] {
        let _ = std::fs::remove_file(folder.join(stub));
    }
    for (name, script) in routines {
        write_script(&folder.join(name), script);
    }
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).unwrap() + TIMINGS;
    std::fs::write(config, text).unwrap();
    folder
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc")).start()
}

fn start_token(daemon: &Daemon, id: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": id, "context": {"repo": "acme"}}),
        )
        .expect(201);
}

fn wait_for_status(daemon: &Daemon, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let token = daemon.get(&format!("/tokens/{id}")).expect(200);
        if token["status"] == status {
            return token;
        }
        assert!(Instant::now() < deadline, "{id} is {token}, never {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn history(daemon: &Daemon, id: &str) -> Vec<Value> {
    let answer = daemon.get(&format!("/tokens/{id}/history")).expect(200);
    let entries = answer.get("history").cloned().unwrap_or(answer);
    entries.as_array().cloned().unwrap_or_default()
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

const CODING: &str = r#"read grant
echo "$grant" > grant.json
echo "$STATEOUS_TOKEN $STATEOUS_STATE $STATEOUS_VISIT $STATEOUS_ATTEMPT" > env.txt
stateous ctx note "coding $(stateous ctx get repo --raw)"
stateous ctx memory set dev '"session-1"'
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

#[test]
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
    let kinds: Vec<String> = history(&daemon, "T-1")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(kinds.contains(&"note".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"memory_set".to_string()), "{kinds:?}");
    let logs: Vec<_> = std::fs::read_dir(folder.join(".stateous/logs"))
        .unwrap()
        .collect();
    assert_eq!(logs.len(), 2);
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    sup.wait_for_line(
        "stopping: no new tasks; waiting for 0 routine(s) (signal again to stop now)",
    );
}

#[test]
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

#[test]
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
}

#[test]
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

#[test]
fn the_first_signal_waits_for_the_routine_and_the_second_kills_its_group() {
    let daemon = sdlc();
    let folder = folder_for(
        &daemon,
        &[("coding.sh", "sleep 60 &\necho $! > child.pid\nwait")],
    );
    let mut sup = Supervise::start(&folder);
    start_token(&daemon, "S-1");
    sup.wait_for_line("coding of S-1, attempt 1");
    let pid_file = folder.join("child.pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
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

#[test]
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
    sup.wait_for_line("of L-1: the control plane took it back; cancelling its routine");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(child), "the lost routine's group is stopped");
}

#[test]
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

/// A copy of an example supervisor of `assets/`, pointed at `daemon`.
fn example_folder(daemon: &Daemon, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(name);
    let to = daemon.dir.path().join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    let config = to.join("stateous.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("http://127.0.0.1:8080", &daemon.url);
    std::fs::write(&config, text + TIMINGS).unwrap();
    to
}

#[test]
fn the_orders_example_supervisor_reviews_each_order_twice_unless_rushed() {
    let daemon = Setup::new(asset_graph("orders")).start();
    let folder = example_folder(&daemon, "orders-supervisor");
    let _sup = Supervise::start(&folder);
    for (id, title) in [("O-1", "desk"), ("O-2", "rush chair")] {
        daemon
            .post(
                "/tokens",
                &json!({"token": id, "context": {"title": title}}),
            )
            .expect(201);
    }
    wait_for_status(&daemon, "O-1", "completed");
    wait_for_status(&daemon, "O-2", "completed");
    let reviews = |id: &str| {
        history(&daemon, id)
            .iter()
            .filter(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "reviewed")
            .count()
    };
    assert_eq!(reviews("O-1"), 2);
    assert_eq!(reviews("O-2"), 1);
}

#[test]
fn the_sdlc_example_supervisor_codes_and_tests_a_checkout() {
    let daemon = sdlc();
    let folder = example_folder(&daemon, "sdlc-supervisor");
    let checkout = folder.join("repo");
    std::fs::create_dir_all(&checkout).unwrap();
    write_script(&checkout.join("test_ok"), "exit 0");
    let _sup = Supervise::start(&folder);
    daemon
        .post(
            "/tokens",
            &json!({"token": "TICKET-1", "context": {"repo": "repo"}}),
        )
        .expect(201);
    daemon
        .post(
            "/tokens",
            &json!({"token": "TICKET-2", "context": {"repo": "nowhere"}}),
        )
        .expect(201);
    wait_for_status(&daemon, "TICKET-1", "completed");
    wait_for_status(&daemon, "TICKET-2", "completed");
    let last = |id: &str| {
        history(&daemon, id)
            .into_iter()
            .rfind(|e| e["kind"] == "event_accepted")
            .map(|e| e["data"]["event"].clone())
    };
    assert_eq!(last("TICKET-1"), Some(json!("passed")));
    assert_eq!(last("TICKET-2"), Some(json!("stuck")));
}

#[test]
fn the_example_contracts_are_those_of_the_example_graphs() {
    for (graph, folder) in [("orders", "orders-supervisor"), ("sdlc", "sdlc-supervisor")] {
        let daemon = Setup::new(asset_graph(graph)).start();
        let health = daemon.get("/health").expect(200);
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets")
            .join(folder)
            .join("contract.json");
        let contract: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(
            contract["checksum"], health["checksum"],
            "run `stateous init supervisor assets/{graph}/build/{graph}.json assets/{folder}`"
        );
    }
}

#[test]
fn url_on_the_command_line_wins_and_a_unix_socket_serves_as_well() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "stateous ctx emit stuck")]);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace(&daemon.url, "http://127.0.0.1:9");
    std::fs::write(&config, text).unwrap();
    let socket = format!("unix://{}", daemon.socket.display());
    let sup = Supervise::start_with(&folder, &["--url", &socket]);
    sup.wait_for_line(&format!("serves coding; the control plane is {socket}"));
    start_token(&daemon, "U-1");
    wait_for_status(&daemon, "U-1", "completed");
}

#[test]
fn serve_with_supervise_runs_the_folder_in_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("sdlc").display().to_string();
    let made = run(dir.path(), &["init", "supervisor", &graph, "sup"]);
    assert_eq!(made.code(), 0, "{made}");
    let folder = dir.path().join("sup");
    write_script(&folder.join("coding.sh"), CODING);
    write_script(&folder.join("testing.sh"), TESTING);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).unwrap() + TIMINGS;
    std::fs::write(&config, text).unwrap();
    let db = dir.path().join("stateous.db");
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .in_dir(dir, db)
        .args(&["--supervise", folder.to_str().unwrap()])
        .start();
    start_token(&daemon, "B-1");
    wait_for_status(&daemon, "B-1", "completed");
    let stderr = daemon.stderr();
    assert!(
        stderr.contains("box-1 serves coding, testing; the control plane is unix://"),
        "{stderr}"
    );
    assert!(stderr.contains("of B-1: reported passed"), "{stderr}");
    let status = daemon.stop_with(libc::SIGINT);
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
}

#[test]
fn serve_with_a_folder_that_cannot_be_used_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("sdlc").display().to_string();
    let finished = run(
        dir.path(),
        &[
            "serve",
            &graph,
            "--listen",
            "127.0.0.1:0",
            "--supervise",
            "missing",
        ],
    );
    assert_eq!(finished.code(), 1, "{finished}");
    assert_eq!(
        finished.stderr, "error: missing is not a folder\n",
        "{finished}"
    );
}
