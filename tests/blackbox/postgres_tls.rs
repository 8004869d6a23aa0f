//! Black-box: `serve --db postgresql://...?sslmode=...&sslrootcert=...` against a
//! Postgres server of the test's own, started in a temp folder on a free port with
//! a certificate made in the test (the shared server is never reconfigured):
//! `require` connects, `verify-full` with the right root connects, `verify-full`
//! with another root is refused in one line, and a server without TLS is refused
//! to `require`.

use crate::harness;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, run};

const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A Postgres server of this test: its folder, port and certificate; stopped
/// when dropped.
struct PrivatePostgres {
    dir: tempfile::TempDir,
    port: u16,
    /// The server's self-signed certificate for `localhost` (the root to trust).
    cert: PathBuf,
}

fn as_postgres(args: &[&str]) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runuser runs")
}

impl PrivatePostgres {
    /// Start one, or `None` (the test says it skipped) where this machine cannot.
    fn start(ssl: bool) -> Option<PrivatePostgres> {
        let initdb = format!("{BIN}/initdb");
        // runuser needs root: /proc/self belongs to the process's user.
        let root = std::fs::metadata("/proc/self").map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid() == 0
        });
        if !Path::new(&initdb).exists() || !matches!(root, Ok(true)) {
            stateous_shared::testing::skip("no Postgres 15 binaries, or not root for runuser");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let chown = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(chown.success());
        let data_text = data.display().to_string();
        let made = as_postgres(&[&initdb, "-D", &data_text, "-U", "postgres", "--auth=trust"]);
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let names = vec!["localhost".to_string()];
        let certified = rcgen::generate_simple_self_signed(names).unwrap();
        let cert = dir.path().join("root.pem");
        std::fs::write(&cert, certified.cert.pem()).unwrap();
        std::fs::write(data.join("server.crt"), certified.cert.pem()).unwrap();
        std::fs::write(
            data.join("server.key"),
            certified.signing_key.serialize_pem(),
        )
        .unwrap();
        std::fs::set_permissions(
            data.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let conf = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             ssl = {}\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n\
             fsync = off\nshared_buffers = 16MB\nmax_connections = 20\n",
            dir.path().display(),
            if ssl { "on" } else { "off" },
        );
        let conf_path = data.join("postgresql.auto.conf");
        std::fs::write(&conf_path, conf).unwrap();
        for owned in [
            &data.join("server.crt"),
            &data.join("server.key"),
            &conf_path,
        ] {
            let chown = Command::new("chown")
                .arg("postgres:postgres")
                .arg(owned)
                .status()
                .unwrap();
            assert!(chown.success());
        }
        let log = dir.path().join("log").display().to_string();
        let started = as_postgres(&[
            &format!("{BIN}/pg_ctl"),
            "-D",
            &data_text,
            "-l",
            &log,
            "-w",
            "start",
        ]);
        assert!(
            started.status.success(),
            "{}{}",
            String::from_utf8_lossy(&started.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Some(PrivatePostgres { dir, port, cert })
    }

    fn url(&self, query: &str) -> String {
        format!(
            "postgresql://postgres@localhost:{}/postgres?{query}",
            self.port
        )
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = as_postgres(&[
            &format!("{BIN}/pg_ctl"),
            "-D",
            &data,
            "-m",
            "immediate",
            "-w",
            "stop",
        ]);
    }
}

/// `serve` on `db` until it says it serves (true) or exits (false, with its stderr).
fn serves(db: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("stderr.log");
    let mut child = Command::new(harness::binary())
        .arg("serve")
        .arg(asset_graph("orders"))
        .args(["--db", db, "--listen", "127.0.0.1:0", "--socket"])
        .arg(dir.path().join("s.sock"))
        .args(["--connect-timeout", "5s"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let outcome = loop {
        let text = std::fs::read_to_string(&stderr).unwrap_or_default();
        if text.contains("serving on ") {
            break Ok(());
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break Err(std::fs::read_to_string(&stderr).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

#[test]
fn postgres_over_tls_honours_sslmode_and_sslrootcert() {
    let Some(server) = PrivatePostgres::start(true) else {
        return;
    };
    let other = tempfile::tempdir().unwrap();
    let wrong = other.path().join("other.pem");
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(&wrong, certified.cert.pem()).unwrap();
    let root = server.cert.display().to_string();
    serves(&server.url("sslmode=require")).unwrap();
    serves(&server.url(&format!("sslmode=verify-full&sslrootcert={root}"))).unwrap();
    serves(&server.url(&format!("sslmode=verify-ca&sslrootcert={root}"))).unwrap();
    let refused = serves(&server.url(&format!(
        "sslmode=verify-full&sslrootcert={}",
        wrong.display()
    )))
    .unwrap_err();
    let lines: Vec<&str> = refused
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(lines.len(), 1, "{refused}");
    assert!(lines[0].contains("cannot reach the database"), "{refused}");
    assert!(lines[0].contains("certificate"), "{refused}");
    assert!(!refused.contains("serving on"), "{refused}");
    // A root file that is not there is named.
    let missing = run(
        other.path(),
        &[
            "serve",
            &asset_graph("orders").display().to_string(),
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &other.path().join("s.sock").display().to_string(),
            "--db",
            &server.url("sslmode=verify-full&sslrootcert=/nonexistent/root.pem"),
        ],
    );
    assert_eq!(missing.code(), 1, "{missing}");
    assert!(
        missing.stderr.contains("/nonexistent/root.pem"),
        "{missing}"
    );
}

#[test]
fn require_refuses_a_postgres_server_without_tls() {
    let Some(server) = PrivatePostgres::start(false) else {
        return;
    };
    let refused = serves(&server.url("sslmode=require")).unwrap_err();
    assert!(
        refused.contains("error: cannot reach the database"),
        "{refused}"
    );
    serves(&server.url("sslmode=prefer")).unwrap();
}
