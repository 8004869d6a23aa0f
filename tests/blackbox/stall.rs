//! Black-box: time in which the control plane itself did not run (here a SIGSTOP
//! longer than the lease; in life a frozen VM, a suspended laptop, a long disk pause)
//! does not count against the supervisors (`docs/guarantees.md`, "Leases"). A
//! supervisor that kept heartbeating through the stall keeps its attempt, gets a
//! whole lease from its next heartbeat, and the ledger never says that it stopped
//! answering; the same when a standby takes the database over during the stall.

use crate::harness;

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use harness::{exchange, test_graph, Backend, Daemon, Setup, KEEPALIVES};
use serde_json::{json, Value};

/// The lease of these tests: the stalls below last longer.
const LEASE: &str = "4s";

/// A test client that heartbeats one task every second, as a supervisor would, to
/// the control plane whose `HOST:PORT` it is told (a standby's after a takeover).
struct Beats {
    to: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<(String, Value)>>,
}

impl Beats {
    /// Heartbeat `task` for `h1` to `authority`, each answer awaited at most `within`
    /// (a stopped control plane answers once it runs again, or never).
    fn start(authority: &str, task: i64, within: Duration) -> Beats {
        let to = Arc::new(Mutex::new(authority.to_string()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (to, stop) = (Arc::clone(&to), Arc::clone(&stop));
            std::thread::spawn(move || {
                let body = json!({"supervisor": "h1", "tasks": [task]}).to_string();
                let mut answers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let authority = to.lock().map(|a| a.clone()).unwrap_or_default();
                    if let Some(answer) = heartbeat(&authority, &body, within) {
                        answers.push((authority, answer));
                    }
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
                answers
            })
        };
        Beats { to, stop, thread }
    }

    /// Heartbeat to `authority` from now on.
    fn switch_to(&self, authority: &str) {
        *self.to.lock().unwrap() = authority.to_string();
    }

    /// Stop after the heartbeat under way; each answer with where it came from.
    fn stop(self) -> Vec<(String, Value)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("the heartbeat thread")
    }
}

/// One heartbeat; its answer's body, or `None` when none came within `within`.
fn heartbeat(authority: &str, body: &str, within: Duration) -> Option<Value> {
    let stream = TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(within)).ok()?;
    let headers = [("content-type", "application/json")];
    let reply = exchange(
        stream,
        "POST",
        "/tasks/heartbeat",
        &headers,
        body.as_bytes(),
    )
    .ok()?;
    Some(reply.expect(200))
}

fn start_and_claim(daemon: &Daemon) -> i64 {
    let body = json!({"token": "T-1", "context": {"repo": "acme/api"}});
    daemon.post("/tokens", &body).expect(201);
    let claim = json!({"supervisor": "h1", "states": ["coding"]});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    assert_eq!(grant["attempt"], 1);
    grant["task"].as_i64().expect("a task id")
}

fn kinds(daemon: &Daemon) -> Vec<String> {
    let history = daemon.get("/tokens/T-1/history").expect(200);
    let entries = history.as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The attempt is still the supervisor's: its report of attempt 1 lands, and the
/// ledger holds no failure of it.
fn attempt_one_completes(daemon: &Daemon, task: i64) {
    let done = json!({"kind": "event", "event": "done", "supervisor": "h1", "attempt": 1});
    let token = daemon.post(&format!("/tasks/{task}/report"), &done);
    assert_eq!(token.expect(200)["state"], "testing", "{}", daemon.report());
    let kinds = kinds(daemon);
    for kind in ["task_failed", "task_retrying"] {
        assert!(!kinds.iter().any(|k| k == kind), "{kinds:?}");
    }
}

fn a_stalled_control_plane_ends_no_lease_of_a_supervisor_that_kept_heartbeating() {
    let daemon = Setup::new(test_graph("tickets"))
        .args(&["--lease", LEASE])
        .start();
    let task = start_and_claim(&daemon);
    let beats = Beats::start(&daemon.authority, task, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500));
    daemon.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(6));
    daemon.signal(libc::SIGCONT);
    // The heartbeat sent during the stall is answered once the daemon runs again;
    // it is the last one, so the lease it gives must last a whole lease.
    let answers = beats.stop();
    assert!(answers.len() >= 2, "{answers:?}\n{}", daemon.report());
    for (_, answer) in &answers {
        assert_eq!(answer, &json!({"lost": []}), "{}", daemon.report());
    }
    std::thread::sleep(Duration::from_secs(3));
    attempt_one_completes(&daemon, task);
}

fn a_standby_that_takes_over_during_a_stall_ends_no_lease_that_was_kept() {
    let active = Setup::new(test_graph("tickets"))
        .args(&KEEPALIVES)
        .args(&["--lease", LEASE])
        .start();
    let task = start_and_claim(&active);
    let standby = Setup::new(test_graph("tickets"))
        .database_of(&active)
        .args(&KEEPALIVES)
        .args(&["--lease", LEASE])
        .start_standby();
    let beats = Beats::start(&active.authority, task, Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(1500));
    active.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(5));
    // An operator ends the stopped one's sessions; the standby takes over.
    assert!(active.end_sessions() > 0, "{}", active.report());
    standby.wait_for_line("serving on ", Duration::from_secs(10));
    beats.switch_to(&standby.authority);
    std::thread::sleep(Duration::from_millis(2500));
    let answers = beats.stop();
    let from_standby: Vec<&Value> = answers
        .iter()
        .filter(|(to, _)| *to == standby.authority)
        .map(|(_, answer)| answer)
        .collect();
    assert!(
        !from_standby.is_empty(),
        "{answers:?}\n{}",
        standby.report()
    );
    for answer in from_standby {
        assert_eq!(answer, &json!({"lost": []}), "{}", standby.report());
    }
    attempt_one_completes(&standby, task);
    // The stopped one runs again: it finds the database lost and writes nothing.
    let entries = standby.count("SELECT count(*) FROM ledger");
    active.signal(libc::SIGCONT);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(standby.count("SELECT count(*) FROM ledger"), entries);
}

both!(a_stalled_control_plane_ends_no_lease_of_a_supervisor_that_kept_heartbeating);

mod a_standby_that_takes_over_during_a_stall_ends_no_lease_that_was_kept {
    #[test]
    fn postgres() {
        super::harness::on(
            super::Backend::Postgres,
            super::a_standby_that_takes_over_during_a_stall_ends_no_lease_that_was_kept,
        );
    }
}
