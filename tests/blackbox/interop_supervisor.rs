//! Interop: our supervisor against the reference's control plane. The `orders` example
//! supervisor of `assets/` completes tokens there, with its program routines, notes and
//! memory, as it does on ours, without the additions of ours that the reference lacks
//! (`/watch`, `lease_seconds`, a heartbeat's `attempts`).

use crate::harness;
use crate::reference;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, binary, exchange, Reply, Timed};
use serde_json::{json, Value};

/// A child process that is killed when the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn request(authority: &str, method: &str, path: &str, body: Option<&Value>) -> Reply {
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let stream = TcpStream::connect(authority).expect("the reference listens");
    exchange(
        stream.timed(),
        method,
        path,
        &[("content-type", "application/json")],
        payload.as_bytes(),
    )
    .expect("the reference answers")
}

#[test]
fn our_supervisor_completes_orders_on_the_reference_control_plane() {
    let stateous = reference::reference_stateous();
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let authority = format!("127.0.0.1:{port}");
    let _plane = Killed(
        Command::new(&stateous)
            .arg("serve")
            .arg(asset_graph("orders"))
            .arg("--db")
            .arg(format!("sqlite:///{}", dir.path().join("ref.db").display()))
            .args(["--listen", &authority])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(&authority).is_err() {
        assert!(Instant::now() < deadline, "the reference did not serve");
        std::thread::sleep(Duration::from_millis(100));
    }
    let folder = dir.path().join("orders-supervisor");
    std::fs::create_dir_all(&folder).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/orders-supervisor");
    for entry in std::fs::read_dir(example).unwrap().flatten() {
        std::fs::copy(entry.path(), folder.join(entry.file_name())).unwrap();
    }
    std::fs::write(
        folder.join("stateous.yaml"),
        format!("url: http://{authority}\nname: our-box\nheartbeat: 500ms\nidle: 100ms\n"),
    )
    .unwrap();
    let log = dir.path().join("supervise.log");
    let _supervisor = Killed(
        Command::new(binary())
            .arg("supervise")
            .arg(&folder)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    for (id, title) in [("O-1", "desk"), ("O-2", "rush chair")] {
        let body = json!({"token": id, "context": {"title": title}});
        request(&authority, "POST", "/tokens", Some(&body)).expect(201);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in ["O-1", "O-2"] {
        loop {
            let token = request(&authority, "GET", &format!("/tokens/{id}"), None).expect(200);
            if token["status"] == "completed" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{id} is {token}\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let history = request(&authority, "GET", "/tokens/O-1/history", None).expect(200);
    let entries = history.get("history").cloned().unwrap_or(history);
    let kinds: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "task_claimed").count(),
        4,
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"note") && kinds.contains(&"memory_set"),
        "{kinds:?}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("our-box serves draft, review"), "{log}");
    assert!(log.contains("of O-2: reported reviewed"), "{log}");
    // The reference has no /watch: the supervisor says so once and relies on its
    // heartbeat, whose added `attempts` the reference ignores.
    assert_eq!(log.matches("has no /watch stream").count(), 1, "{log}");
}
