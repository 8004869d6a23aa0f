//! Interop for parallel states: the reference's own Python supervisor, unchanged, runs
//! the routines of child states (`contract.py`'s `states.security.triage`, claimed as
//! `security/triage`) on our control plane, and the family's ledgers have the kinds and
//! data fields, in order, that the reference's control plane writes for the same run.

use crate::harness;
use crate::reference;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{exchange, Reply, Setup, Timed};
use serde_json::{json, Value};

/// The family of the one token each run starts.
const FAMILY: [&str; 3] = ["R-1", "R-1.reviews.1.security", "R-1.reviews.1.design"];

fn graph() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/release/build/release.json")
}

/// Each routine: the file the reference's `init supervisor` wrote, and the event
/// it returns in place of the stub's `raise`.
const ROUTINES: [(&str, &str); 6] = [
    ("coding.py", "events.done()"),
    ("security_triage.py", "events.security.lgtm()"),
    ("design_triage.py", "events.design.lgtm()"),
    ("security_approved.py", "events.security.recorded()"),
    ("design_approved.py", "events.design.recorded()"),
    ("merging.py", "events.merged()"),
];

/// A control plane at `authority`: ours (kept alive by the daemon) or the reference's.
struct Plane {
    authority: String,
    _ours: Option<harness::Daemon>,
    theirs: Option<Child>,
}

impl Plane {
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("content-type", "application/json")]
        } else {
            &[]
        };
        let stream = TcpStream::connect(&self.authority).expect("the control plane listens");
        exchange(stream.timed(), method, path, headers, payload.as_bytes())
            .expect("the control plane answers")
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        if let Some(child) = self.theirs.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn ours() -> Plane {
    let daemon = Setup::new(graph()).args(&["--lease", "60s"]).start();
    Plane {
        authority: daemon.authority.clone(),
        _ours: Some(daemon),
        theirs: None,
    }
}

fn theirs(stateous: &Path, dir: &Path) -> Plane {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let authority = format!("127.0.0.1:{port}");
    let child = Command::new(stateous)
        .arg("serve")
        .arg(graph())
        .arg("--db")
        .arg(format!("sqlite:///{}", dir.join("reference.db").display()))
        .args(["--listen", &authority])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the reference serves");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(&authority).is_err() {
        assert!(Instant::now() < deadline, "the reference did not serve");
        std::thread::sleep(Duration::from_millis(100));
    }
    Plane {
        authority,
        _ours: None,
        theirs: Some(child),
    }
}

/// The reference's supervisor folder for the release graph, its routines written.
fn folder(stateous: &Path, dir: &Path, plane: &Plane) -> PathBuf {
    let folder = dir.join("release-supervisor");
    let init = Command::new(stateous)
        .args(["init", "supervisor"])
        .arg(graph())
        .arg(&folder)
        .current_dir(dir)
        .output()
        .expect("the reference's init runs");
    assert!(init.status.success(), "init supervisor: {init:?}");
    for (file, event) in ROUTINES {
        let path = folder.join(file);
        let stub = std::fs::read_to_string(&path).expect("a stub");
        let start = stub
            .find("raise NotImplementedError")
            .expect("the stub raises");
        let routine = format!("{}return {event}\n", &stub[..start]);
        std::fs::write(&path, routine).expect("a routine");
    }
    let settings = format!(
        "url: \"http://{}\"\ntasks: 4\nname: interop-box\n",
        plane.authority
    );
    std::fs::write(folder.join("stateous.yaml"), settings).expect("stateous.yaml");
    folder
}

/// Run the reference's supervisor until `R-1` completes; the family's histories.
fn run(stateous: &Path, plane: &Plane, dir: &Path) -> Vec<Vec<Value>> {
    let folder = folder(stateous, dir, plane);
    let log = dir.join("supervise.log");
    let mut supervisor = Command::new(stateous)
        .arg("supervise")
        .arg(&folder)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("a log file"))
        .spawn()
        .expect("the reference supervisor starts");
    let body = json!({"token": "R-1", "context": {"repo": "acme/api"}});
    plane.request("POST", "/tokens", Some(&body)).expect(201);
    let deadline = Instant::now() + Duration::from_secs(90);
    while plane.request("GET", "/tokens/R-1", None).expect(200)["status"] != "completed" {
        if Instant::now() > deadline {
            let _ = supervisor.kill();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("R-1 did not complete; the supervisor's log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = supervisor.kill();
    let _ = supervisor.wait();
    FAMILY
        .iter()
        .map(|token| {
            let path = format!("/tokens/{token}/history");
            let history = plane.request("GET", &path, None).expect(200);
            history.as_array().cloned().unwrap_or_default()
        })
        .collect()
}

/// Each entry as its kind and its data's field names, in order.
fn shape(history: &[Value]) -> Vec<(String, Vec<String>)> {
    history
        .iter()
        .map(|entry| {
            let kind = entry["kind"].as_str().unwrap_or_default().to_string();
            let fields = entry["data"]
                .as_object()
                .map(|data| data.keys().cloned().collect())
                .unwrap_or_default();
            (kind, fields)
        })
        .collect()
}

#[test]
fn the_reference_supervisor_runs_child_states_on_our_control_plane_with_the_same_ledger() {
    let stateous = reference::reference_stateous();
    let our_dir = tempfile::tempdir().expect("a temp folder");
    let our_plane = ours();
    let our_histories = run(&stateous, &our_plane, our_dir.path());
    let their_dir = tempfile::tempdir().expect("a temp folder");
    let their_plane = theirs(&stateous, their_dir.path());
    let their_histories = run(&stateous, &their_plane, their_dir.path());
    for ((token, ours), theirs) in FAMILY.iter().zip(&our_histories).zip(&their_histories) {
        assert_eq!(
            shape(ours),
            shape(theirs),
            "{token}: our ledger differs\nours: {ours:#?}\ntheirs: {theirs:#?}"
        );
    }
    let joined = our_histories[0]
        .iter()
        .find(|e| e["data"]["event"] == "joined")
        .expect("R-1 joined");
    assert_eq!(
        joined["data"]["payload"]["branches"][1],
        json!({"workflow": "design", "token": "R-1.reviews.1.design",
               "status": "completed", "final": "approved", "payload": null})
    );
}
