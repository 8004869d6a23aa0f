//! Interop with the reference implementation: the reference's own Python supervisor,
//! unchanged, completes `orders` tokens on our control plane, and each token's history
//! has the same kinds, in the same order, with the same data fields, as on the
//! reference's control plane.

use crate::harness;
use crate::reference;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, exchange, Daemon, Reply, Timed};
use serde_json::{json, Value};

/// The tokens each run starts.
const TOKENS: [&str; 3] = ["ORDER-1", "ORDER-2", "ORDER-3"];

/// A control plane to run against: ours (through the harness) or the reference's.
enum Plane {
    Ours(Box<Daemon>),
    Reference { child: Child, authority: String },
}

impl Plane {
    fn url(&self) -> String {
        match self {
            Plane::Ours(daemon) => daemon.url.clone(),
            Plane::Reference { authority, .. } => format!("http://{authority}"),
        }
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("content-type", "application/json")]
        } else {
            &[]
        };
        match self {
            Plane::Ours(daemon) => daemon.request(method, path, headers, payload.as_bytes()),
            Plane::Reference { authority, .. } => {
                let stream = TcpStream::connect(authority).expect("the reference listens");
                exchange(stream.timed(), method, path, headers, payload.as_bytes())
                    .expect("the reference answers")
            }
        }
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn reference_plane(stateous: &Path, dir: &Path) -> Plane {
    let authority = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join("reference-serve.log")).expect("a log file");
    let child = Command::new(stateous)
        .arg("serve")
        .arg(asset_graph("orders"))
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

/// A supervisor folder for the reference's supervisor, pointed at `url`.
fn supervisor_folder(stateous: &Path, dir: &Path, url: &str) -> PathBuf {
    let folder = dir.join("orders-supervisor");
    let init = Command::new(stateous)
        .args(["init", "supervisor"])
        .arg(asset_graph("orders"))
        .arg(&folder)
        .current_dir(dir)
        .output()
        .expect("the reference's init runs");
    assert!(init.status.success(), "init supervisor: {init:?}");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interop");
    for routine in ["draft.py", "review.py"] {
        std::fs::copy(fixtures.join(routine), folder.join(routine)).expect("a routine copies");
    }
    std::fs::write(
        folder.join("stateous.yaml"),
        format!("url: \"{url}\"\ntasks: 4\nname: interop-box\n"),
    )
    .expect("stateous.yaml is written");
    folder
}

/// Run the reference supervisor against `plane` until every token completed; the
/// histories, by token.
fn run_tokens(stateous: &Path, plane: &Plane, dir: &Path) -> Vec<Vec<Value>> {
    let folder = supervisor_folder(stateous, dir, &plane.url());
    let log = std::fs::File::create(dir.join("supervise.log")).expect("a log file");
    let mut supervisor = Command::new(stateous)
        .arg("supervise")
        .arg(&folder)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("the reference supervisor starts");
    for (n, token) in TOKENS.iter().enumerate() {
        let body = json!({"token": token, "context": {"title": format!("order {n}")}});
        plane.request("POST", "/tokens", Some(&body)).expect(201);
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let histories = loop {
        let done = TOKENS.iter().all(|token| {
            plane
                .request("GET", &format!("/tokens/{token}"), None)
                .expect(200)["status"]
                == "completed"
        });
        if done {
            break TOKENS
                .iter()
                .map(|token| {
                    let path = format!("/tokens/{token}/history");
                    let history = plane.request("GET", &path, None).expect(200);
                    history.as_array().cloned().unwrap_or_default()
                })
                .collect();
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("supervise.log")).unwrap_or_default();
            panic!("the tokens did not complete; the supervisor's log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = supervisor.kill();
    let _ = supervisor.wait();
    histories
}

/// Each entry as its kind and the names of its data fields, in order.
fn shape(history: &[Value]) -> Vec<(String, Vec<String>)> {
    history
        .iter()
        .map(|entry| {
            let kind = entry["kind"].as_str().unwrap_or_default().to_string();
            let mut fields: Vec<String> = entry["data"]
                .as_object()
                .map(|data| data.keys().cloned().collect())
                .unwrap_or_default();
            fields.sort();
            (kind, fields)
        })
        .collect()
}

fn the_reference_supervisor_completes_orders_on_our_control_plane_with_the_same_ledger() {
    let stateous = reference::reference_stateous();

    let ours_dir = tempfile::tempdir().expect("a temp folder");
    let ours = Plane::Ours(Box::new(Daemon::orders()));
    let our_histories = run_tokens(&stateous, &ours, ours_dir.path());

    let theirs_dir = tempfile::tempdir().expect("a temp folder");
    let theirs = reference_plane(&stateous, theirs_dir.path());
    let their_histories = run_tokens(&stateous, &theirs, theirs_dir.path());

    for ((token, ours), theirs) in TOKENS.iter().zip(&our_histories).zip(&their_histories) {
        assert_eq!(
            shape(ours),
            shape(theirs),
            "{token}: our ledger differs from the reference's\nours: {ours:#?}\ntheirs: {theirs:#?}"
        );
        let seqs: Vec<i64> = ours.iter().filter_map(|e| e["seq"].as_i64()).collect();
        assert_eq!(
            seqs,
            (1..=ours.len() as i64).collect::<Vec<_>>(),
            "{token}: seq"
        );
        // The facts that do not depend on timing or task numbering agree too.
        for (mine, reference) in ours.iter().zip(theirs) {
            for field in [
                "event",
                "payload",
                "state",
                "visit",
                "supervisor",
                "attempt",
                "text",
            ] {
                assert_eq!(
                    mine["data"].get(field),
                    reference["data"].get(field),
                    "{token}: field {field} of {mine} vs {reference}"
                );
            }
        }
    }
}

both!(the_reference_supervisor_completes_orders_on_our_control_plane_with_the_same_ledger,);
