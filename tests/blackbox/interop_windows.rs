//! Interop with the reference implementation in two places where our documents once
//! disagreed with it, run side by side on the same graph file: a late report while
//! its task waits, queued, for its next attempt (`task_not_held`, then `attempt_over`
//! once that attempt is claimed), and the ledger's order on resume (`resumed`, then
//! each held event replayed or dropped, in one transaction).

use crate::harness;
use crate::reference;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{exchange, test_graph, Daemon, Setup, Timed};
use serde_json::{json, Value};

/// A control plane serving the test graph `tickets`: ours or the reference's.
enum Plane {
    Ours(Box<Daemon>),
    Reference { child: Child, authority: String },
}

impl Plane {
    fn ours() -> Plane {
        Plane::Ours(Box::new(Setup::new(test_graph("tickets")).start()))
    }

    fn reference(dir: &Path) -> Plane {
        let stateous = reference::reference_stateous();
        let authority = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.to_string())
            .expect("a free port");
        let log = std::fs::File::create(dir.join("reference.log")).expect("a log file");
        let child = Command::new(stateous)
            .arg("serve")
            .arg(test_graph("tickets"))
            .arg("--db")
            .arg(format!("sqlite:///{}", dir.join("reference.db").display()))
            .args(["--listen", &authority])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the reference serves");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(&authority).is_err() {
            assert!(Instant::now() < deadline, "the reference did not serve");
            std::thread::sleep(Duration::from_millis(100));
        }
        Plane::Reference { child, authority }
    }

    /// `method path` with a JSON body (or none): the status and the body.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = &[("content-type", "application/json")];
        let reply = match self {
            Plane::Ours(daemon) => daemon.request(method, path, headers, payload.as_bytes()),
            Plane::Reference { authority, .. } => {
                let stream = TcpStream::connect(authority).expect("the reference listens");
                exchange(stream.timed(), method, path, headers, payload.as_bytes())
                    .expect("the reference answers")
            }
        };
        let body = if reply.body.is_empty() {
            Value::Null
        } else {
            reply.json()
        };
        (reply.status, body)
    }

    fn start(&self, token: &str) {
        let body = json!({"token": token, "context": {"repo": "acme/api"}});
        assert_eq!(self.call("POST", "/tokens", Some(body)).0, 201);
    }

    fn claim(&self) -> Value {
        let body = json!({"supervisor": "box-1", "states": ["coding"]});
        let (status, grant) = self.call("POST", "/tasks/claim", Some(body));
        assert_eq!(status, 200, "{grant}");
        grant
    }

    fn kinds(&self, token: &str) -> Vec<String> {
        let (_, history) = self.call("GET", &format!("/tokens/{token}/history"), None);
        let entries = history.as_array().cloned().unwrap_or_default();
        entries
            .iter()
            .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        if let Plane::Reference { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The codes a late report of attempt 1 gets: while the task waits for attempt 2,
/// then once attempt 2 is claimed.
fn late_report_codes(plane: &Plane) -> Vec<(u16, String)> {
    plane.start("T-1");
    let grant = plane.claim();
    let task = grant["task"].as_i64().expect("a task id");
    let report = format!("/tasks/{task}/report");
    let failed = json!({"kind": "failed", "error": "x", "supervisor": "box-1", "attempt": 1});
    assert_eq!(plane.call("POST", &report, Some(failed)).0, 200);
    let late = json!({"kind": "event", "event": "done", "supervisor": "box-1", "attempt": 1});
    let mut codes = Vec::new();
    let mut refused = |plane: &Plane| {
        let (status, body) = plane.call("POST", &report, Some(late.clone()));
        codes.push((
            status,
            body["code"].as_str().unwrap_or_default().to_string(),
        ));
    };
    refused(plane);
    assert_eq!(plane.claim()["attempt"], 2);
    refused(plane);
    codes
}

#[test]
fn a_late_report_while_the_next_attempt_is_queued_is_task_not_held_as_on_the_reference() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let reference = late_report_codes(&Plane::reference(dir.path()));
    let ours = late_report_codes(&Plane::ours());
    let expected = [(409, "task_not_held"), (409, "attempt_over")];
    let expected: Vec<(u16, String)> = expected.iter().map(|(s, c)| (*s, c.to_string())).collect();
    assert_eq!(reference, expected, "the reference");
    assert_eq!(ours, expected, "ours");
}

/// The kinds from the pause on: two events held, then the resume.
fn resume_order(plane: &Plane) -> Vec<String> {
    plane.start("T-1");
    assert_eq!(plane.call("POST", "/tokens/T-1/pause", None).0, 200);
    for event in ["done", "stuck"] {
        let path = format!("/tokens/T-1/events/{event}");
        assert_eq!(plane.call("POST", &path, None).0, 200);
    }
    let (status, token) = plane.call("POST", "/tokens/T-1/resume", None);
    assert_eq!((status, &token["state"]), (200, &json!("testing")));
    let kinds = plane.kinds("T-1");
    let paused = kinds.iter().position(|k| k == "paused").expect("paused");
    kinds[paused..].to_vec()
}

#[test]
fn resume_writes_resumed_before_it_replays_the_held_events_as_on_the_reference() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let reference = resume_order(&Plane::reference(dir.path()));
    let ours = resume_order(&Plane::ours());
    assert_eq!(ours, reference);
    assert_eq!(
        ours[..5],
        [
            "paused",
            "event_deferred",
            "event_deferred",
            "resumed",
            "event_replayed"
        ]
    );
    assert!(ours.contains(&"event_dropped".to_string()), "{ours:?}");
}
