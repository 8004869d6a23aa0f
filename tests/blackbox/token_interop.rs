//! Interop: our `stateous token ...` against the reference's control plane prints
//! exactly what the reference's own `stateous token ...` prints
//! (`docs/reference/cli.md`), line for line, refusals included.

use crate::harness;
use crate::reference;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::asset_graph;

/// The reference's control plane on a free port, stopped on drop.
struct ReferenceServer {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ReferenceServer {
    fn start(stateous: &Path) -> ReferenceServer {
        let dir = tempfile::tempdir().expect("a temp folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|probe| probe.local_addr())
            .expect("a free port")
            .port();
        let db = format!("sqlite:///{}", dir.path().join("ref.db").display());
        let child = Command::new(stateous)
            .arg("serve")
            .arg(asset_graph("orders"))
            .args(["--db", &db, "--listen", &format!("127.0.0.1:{port}")])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the reference serves");
        let server = ReferenceServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let began = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "the reference did not serve"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }
}

/// stdout, stderr and exit code of `PROGRAM token ARGS --url URL`.
fn token(program: &Path, url: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let output = Command::new(program)
        .arg("token")
        .args(args)
        .args(["--url", url])
        .env_remove("STATEOUS_URL")
        .output()
        .expect("the command runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code(),
    )
}

#[test]
fn our_token_commands_print_what_the_reference_prints() {
    let theirs = reference::reference_stateous();
    let ours = Path::new(harness::binary());
    let server = ReferenceServer::start(&theirs);
    let url = server.url.as_str();
    // Each step changes the reference's state once (with our command), then both
    // commands read: the reads must match byte for byte.
    let steps: [&[&str]; 9] = [
        &["start", "O-1", r#"{"title": "é first"}"#],
        &["fire", "O-1", "submitted", "--key", "k-1"],
        &["pause", "O-1"],
        &[
            "fire",
            "O-1",
            "reviewed",
            r#"{"approved": false, "note": "x"}"#,
        ],
        &["resume", "O-1"],
        &["start", "O-2", r#"{"title": "second"}"#],
        &["cancel", "O-2"],
        &["fire", "O-1", "nope"],
        &["fire", "O-1", "timeout"],
    ];
    for step in steps {
        let (_, stderr, code) = token(ours, url, step);
        assert!(code == Some(0) || code == Some(1), "{step:?}: {stderr}");
    }
    let (shown, _, _) = token(ours, url, &["show", "O-1"]);
    assert!(
        shown.starts_with("O-1: draft (visit 2), active\n"),
        "{shown}"
    );
    assert!(shown.lines().count() > 15, "{shown}");
    let reads: [&[&str]; 10] = [
        &["show", "O-1"],
        &["show", "O-2"],
        &["show"],
        &["show", "--graph"],
        &["show", "NOPE"],
        &["start", "O-1"],
        &["fire", "O-1", "submitted", "--key", "k-1"],
        &["fire", "O-2", "submitted"],
        &["pause", "O-2"],
        &["start", "bad/id"],
    ];
    for read in reads {
        let ours = token(ours, url, read);
        let reference = token(&theirs, url, read);
        assert_eq!(ours, reference, "stateous token {}", read.join(" "));
    }
}
