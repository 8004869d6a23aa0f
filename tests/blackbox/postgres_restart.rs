//! Black-box, Postgres only, run while no other test of this binary uses the
//! server because it restarts it (`harness::alone_on_postgres`): what
//! a control plane does when Postgres restarts under it. Its lock's session ends
//! with the restart, so it cannot know that no other control plane took the
//! database meanwhile: it answers 503 (`database_busy` while the server is down,
//! `not_serving` once it is back), commits nothing, and exits 1; a supervisor such
//! as systemd (`Restart=on-failure`) starts it again, and it carries on.
//!
//! Runs only as root on the machine of the server (`pg_ctlcluster` restarts it);
//! elsewhere it says it was skipped.

use crate::harness;

use std::process::Command;
use std::time::Duration;

use harness::{test_graph, Daemon, Setup};
use serde_json::json;

fn restart_postgres() -> bool {
    let versions = match std::fs::read_dir("/etc/postgresql") {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        Err(_) => return false,
    };
    let [version] = versions.as_slice() else {
        return false;
    };
    Command::new("pg_ctlcluster")
        .args([
            "--skip-systemctl-redirect",
            version,
            "main",
            "restart",
            "-m",
            "fast",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

fn may_restart() -> bool {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let local = std::env::var(stateous_daemon::testing::POSTGRES_ENV)
        .is_ok_and(|url| url.contains("@127.0.0.1") || url.contains("@localhost"));
    root && local && std::path::Path::new("/etc/postgresql").is_dir()
}

#[test]
fn a_control_plane_whose_postgres_restarts_exits_1_and_a_new_one_carries_on() {
    harness::alone_on_postgres(|| {
        if !may_restart() {
            stateous_shared::testing::skip(
                "restarting Postgres needs root on the server's machine",
            );
            return;
        }
        let mut daemon = Daemon::tickets();
        daemon
            .post(
                "/tokens",
                &json!({"token": "T-1", "context": {"repo": "r"}}),
            )
            .expect(201);
        assert!(restart_postgres(), "pg_ctlcluster restarts the server");
        let status = daemon.wait(Duration::from_secs(30));
        assert_eq!(status.code(), Some(1), "{}", daemon.report());
        assert!(
            daemon.stderr().contains("hold on it ended"),
            "{}",
            daemon.report()
        );
        let dir = std::mem::replace(&mut daemon.dir, tempfile::tempdir().unwrap());
        let next = Setup::new(test_graph("tickets"))
            .in_dir(dir, daemon.db.clone())
            .database_of(&daemon)
            .start();
        assert_eq!(next.get("/tokens/T-1").expect(200)["state"], "coding");
        next.post_empty("/tokens/T-1/events/stuck").expect(200);
    });
}
