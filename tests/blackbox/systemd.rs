//! Black-box: the systemd units in `assets/systemd/` and the READY=1 that
//! `Type=notify` waits for. `stateous serve` sends it once its database is open
//! and it listens, and never when it does not start; `stateous supervise` once its
//! outbox is open and the control plane answered. systemd's side is played by a
//! Unix datagram socket named in `NOTIFY_SOCKET`, as systemd names its own.

use crate::harness;
use crate::supervising;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use harness::{asset_graph, binary, run, Setup};
use supervising::folder_for;

/// A socket standing in for systemd's notify socket, in `dir`.
fn notify_socket(dir: &Path) -> (UnixDatagram, PathBuf) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("a datagram socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("a read timeout");
    (socket, path)
}

/// The next message on `socket`, or `None` after its timeout.
fn message(socket: &UnixDatagram) -> Option<String> {
    let mut buffer = [0u8; 4096];
    let size = socket.recv(&mut buffer).ok()?;
    Some(String::from_utf8_lossy(&buffer[..size]).into_owned())
}

#[test]
fn serve_tells_systemd_ready_once_its_database_is_open() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let (socket, path) = notify_socket(dir.path());
    let daemon = Setup::new(asset_graph("orders"))
        .env("NOTIFY_SOCKET", path.to_str().expect("a UTF-8 path"))
        .start();
    assert_eq!(message(&socket).as_deref(), Some("READY=1\n"));
    // Ready means serving: the database answers at once.
    daemon.get("/health").expect(200);
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("a read timeout");
    assert_eq!(message(&socket), None, "READY is sent once");
}

#[test]
fn serve_that_cannot_open_its_database_tells_systemd_nothing() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let (socket, path) = notify_socket(dir.path());
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("a read timeout");
    let graph = asset_graph("orders");
    let db = format!("sqlite:///{}/no/such/folder/s.db", dir.path().display());
    let output = Command::new(binary())
        .args(["serve", graph.to_str().expect("a UTF-8 path"), "--db", &db])
        .args(["--listen", "127.0.0.1:0", "--socket"])
        .arg(dir.path().join("d.sock"))
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .output()
        .expect("the stateous binary runs");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(message(&socket), None);
}

#[test]
fn supervise_tells_systemd_ready_once_the_control_plane_answers() {
    let daemon = Setup::new(asset_graph("sdlc")).start();
    let folder = folder_for(
        &daemon,
        &[
            ("coding.sh", "stateous ctx emit done"),
            ("testing.sh", "exit 0"),
        ],
    );
    let (socket, path) = notify_socket(daemon.dir.path());
    let log = folder.with_extension("log");
    let mut child = Command::new(binary())
        .arg("supervise")
        .arg(&folder)
        .env_remove("STATEOUS_URL")
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("a log file"))
        .spawn()
        .expect("the stateous binary starts");
    let ready = message(&socket);
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(ready.as_deref(), Some("READY=1\n"), "{stderr}");
    assert!(
        stderr.contains("box-1 serves"),
        "ready after the start: {stderr}"
    );
}

/// The units of `assets/systemd/`, with `ExecStart` pointing at the binary under
/// test, in `dir`; the supervisor's template also as an instance.
fn units(dir: &Path) -> Vec<PathBuf> {
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/systemd");
    let mut written = Vec::new();
    for (name, instance) in [
        ("stateous.service", "stateous.service"),
        (
            "stateous-supervisor@.service",
            "stateous-supervisor@orders.service",
        ),
    ] {
        let text = std::fs::read_to_string(assets.join(name)).expect("a unit");
        assert!(text.contains("\nType=notify\n"), "{name} is Type=notify");
        let text = text.replace("/usr/local/bin/stateous", binary());
        let path = dir.join(instance);
        std::fs::write(&path, text).expect("a unit copy");
        written.push(path);
    }
    written
}

#[test]
fn the_systemd_units_verify_and_their_commands_take_their_flags() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let units = units(dir.path());
    // Each flag of each ExecStart is one its command takes.
    for unit in &units {
        let text = std::fs::read_to_string(unit).expect("a unit");
        let exec = text
            .split("ExecStart=")
            .nth(1)
            .expect("an ExecStart")
            .replace("\\\n", " ");
        let exec = exec.lines().next().unwrap_or_default();
        let words: Vec<&str> = exec.split_whitespace().collect();
        let command = words[1];
        let help = run(dir.path(), &[command, "--help"]);
        for flag in words.iter().filter(|w| w.starts_with("--")) {
            assert!(
                help.stdout.contains(flag),
                "{command} has no {flag}: {help}"
            );
        }
    }
    let Ok(verified) = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(&units)
        .output()
    else {
        eprintln!("systemd-analyze is not installed: the units' syntax is not checked");
        return;
    };
    let stderr = String::from_utf8_lossy(&verified.stderr);
    assert!(
        verified.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {stderr}"
    );
}
