//! Black-box: `serve --tls-cert --tls-key [--tls-client-ca]` and the clients over
//! https, with certificates made in the test (rcgen): the CA given to the client
//! answers and another is refused; plain HTTP to the TLS port gets nothing; mutual
//! TLS wants a client certificate; a certificate rotated on disk is served to new
//! connections; a supervisor over https, its outbox across a daemon restart. Also
//! the listener's guards: the cap on connections and the header timeout.

use crate::harness;
use crate::supervising;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{asset_graph, eventually, run, Daemon, Setup};
use supervising::{history, start_token, wait_for_status, write_script, Supervise};

/// The context an `orders` token starts with.
const TITLE: &str = r#"{"title": "a"}"#;

/// A self-signed certificate for `localhost` and `127.0.0.1`: its PEM files.
struct Made {
    cert: PathBuf,
    key: PathBuf,
}

fn made(dir: &Path, name: &str) -> Made {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let made = rcgen::generate_simple_self_signed(names).unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    Made { cert, key }
}

/// A folder of certificates that outlives the daemon's.
fn pki() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn https_daemon(server: &Made, more: &[&str]) -> Daemon {
    let (cert, key) = (
        server.cert.display().to_string(),
        server.key.display().to_string(),
    );
    let mut args = vec!["--tls-cert", &cert, "--tls-key", &key];
    args.extend_from_slice(more);
    let daemon = Setup::new(asset_graph("orders")).args(&args).start();
    assert!(
        daemon.url.starts_with("https://127.0.0.1:"),
        "{}",
        daemon.url
    );
    daemon
}

/// `stateous ARGS` with `--url` and `--cacert`.
fn over_https(daemon: &Daemon, ca: &Path, args: &[&str]) -> harness::Finished {
    let ca = ca.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--url", &daemon.url, "--cacert", &ca]);
    run(daemon.dir.path(), &all)
}

fn metric(daemon: &Daemon, line_start: &str) -> f64 {
    let body = daemon.request_unix("GET", "/metrics", &[], b"").body;
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .find_map(|line| line.strip_prefix(line_start))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
}

both!(
    token_commands_speak_https_to_a_daemon_given_its_ca,
    access_commands_speak_https_to_a_daemon_given_its_ca,
);

fn token_commands_speak_https_to_a_daemon_given_its_ca() {
    let certs = pki();
    let server = made(certs.path(), "server");
    let daemon = https_daemon(&server, &[]);
    let started = over_https(&daemon, &server.cert, &["token", "start", "ORDER-1", TITLE]);
    assert_eq!(started.code(), 0, "{started}");
    assert_eq!(started.stdout, "ORDER-1: draft, active\n", "{started}");
    // STATEOUS_CACERT does what --cacert does; a list with failover takes https too.
    let shown = std::process::Command::new(harness::binary())
        .args(["token", "show", "ORDER-1", "--url"])
        .arg(format!("http://127.0.0.1:1,{}", daemon.url))
        .env("STATEOUS_CACERT", &server.cert)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(stdout.starts_with("ORDER-1: draft"), "{stdout}");
}

/// `access` takes the TLS flags of the other clients: `--cacert`, and
/// `STATEOUS_CACERT` in its place.
fn access_commands_speak_https_to_a_daemon_given_its_ca() {
    let certs = pki();
    let server = made(certs.path(), "server");
    let daemon = https_daemon(&server, &[]);
    let secret = crate::access::add_key(&daemon, "ops", "admin", None);
    let key = certs.path().join("ops.key");
    std::fs::write(&key, &secret).unwrap();
    let key = key.display().to_string();
    let listed = over_https(
        &daemon,
        &server.cert,
        &["access", "list", "--access-key-file", &key],
    );
    assert_eq!(listed.code(), 0, "{listed}");
    assert!(
        listed.stdout.starts_with("ops  admin  -  created "),
        "{listed}"
    );
    let added = std::process::Command::new(harness::binary())
        .args([
            "access",
            "add",
            "reader",
            "--role",
            "read",
            "--url",
            &daemon.url,
        ])
        .args(["--access-key-file", &key])
        .env("STATEOUS_CACERT", &server.cert)
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(String::from_utf8_lossy(&added.stdout).starts_with("stateous_key_"));
}

#[test]
fn a_daemon_signed_by_another_ca_is_refused_by_the_client_with_a_clear_error() {
    let certs = pki();
    let (server, other) = (made(certs.path(), "server"), made(certs.path(), "other"));
    let daemon = https_daemon(&server, &[]);
    let refused = over_https(&daemon, &other.cert, &["token", "show", "X"]);
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(refused.stdout.is_empty(), "{refused}");
    let line = refused.stderr.trim();
    assert!(line.starts_with("error: "), "{refused}");
    assert!(line.contains("certificate"), "{refused}");
    assert!(line.contains("give that CA with --cacert"), "{refused}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    // A CA file that does not exist is named before anything is sent.
    let missing = over_https(
        &daemon,
        Path::new("/nonexistent/ca.pem"),
        &["token", "show", "X"],
    );
    assert_eq!(missing.code(), 1, "{missing}");
    assert!(missing.stderr.contains("/nonexistent/ca.pem"), "{missing}");
}

#[test]
fn plain_http_to_the_tls_port_gets_no_answer() {
    let certs = pki();
    let server = made(certs.path(), "server");
    let daemon = https_daemon(&server, &[]);
    let mut stream = TcpStream::connect(&daemon.authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).contains("HTTP/1.1"),
        "{answer:?}"
    );
    eventually(
        Duration::from_secs(10),
        "the refused handshake is counted",
        || daemon.report(),
        || {
            metric(
                &daemon,
                "stateous_connections_closed_total{reason=\"tls_handshake\"}",
            ) >= 1.0
        },
    );
}

#[test]
fn mutual_tls_refuses_a_client_without_a_certificate_and_answers_one_with() {
    let certs = pki();
    let (server, client) = (made(certs.path(), "server"), made(certs.path(), "client"));
    let stranger = made(certs.path(), "stranger");
    let ca = client.cert.display().to_string();
    let daemon = https_daemon(&server, &["--tls-client-ca", &ca]);
    let without = over_https(&daemon, &server.cert, &["token", "show", "X"]);
    assert_eq!(without.code(), 1, "{without}");
    assert!(without.stderr.starts_with("error: "), "{without}");
    assert!(
        without.stderr.contains("asks for a client certificate")
            && without.stderr.contains("--client-cert"),
        "the refusal says what is missing: {without}"
    );
    let (cert, key) = (
        client.cert.display().to_string(),
        client.key.display().to_string(),
    );
    let with = over_https(
        &daemon,
        &server.cert,
        &[
            "token",
            "start",
            "M-1",
            TITLE,
            "--client-cert",
            &cert,
            "--client-key",
            &key,
        ],
    );
    assert_eq!(with.code(), 0, "{with}");
    assert_eq!(with.stdout, "M-1: draft, active\n");
    let (cert, key) = (
        stranger.cert.display().to_string(),
        stranger.key.display().to_string(),
    );
    let unknown = over_https(
        &daemon,
        &server.cert,
        &[
            "token",
            "show",
            "M-1",
            "--client-cert",
            &cert,
            "--client-key",
            &key,
        ],
    );
    assert_eq!(unknown.code(), 1, "{unknown}");
    assert!(unknown.stderr.contains("fatal alert"), "{unknown}");
    assert!(
        unknown
            .stderr
            .contains("does not trust the CA that signed the client certificate"),
        "the refusal says what is wrong: {unknown}"
    );
}

#[test]
fn a_certificate_rotated_on_disk_is_served_to_new_connections_without_a_restart() {
    let certs = pki();
    let first = made(certs.path(), "first");
    let served = Made {
        cert: certs.path().join("served.pem"),
        key: certs.path().join("served.key"),
    };
    std::fs::copy(&first.cert, &served.cert).unwrap();
    std::fs::copy(&first.key, &served.key).unwrap();
    let daemon = https_daemon(&served, &[]);
    let before = over_https(&daemon, &first.cert, &["token", "start", "R-1", TITLE]);
    assert_eq!(before.code(), 0, "{before}");
    // A half-done rotation (a new certificate, the old key) keeps the old pair
    // in use, with one line in the log.
    let second = made(certs.path(), "second");
    std::fs::copy(&second.cert, certs.path().join("next.pem")).unwrap();
    std::fs::rename(certs.path().join("next.pem"), &served.cert).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mid = over_https(&daemon, &first.cert, &["token", "show", "R-1"]);
    assert_eq!(mid.code(), 0, "{mid}");
    eventually(
        Duration::from_secs(10),
        "the mismatched pair is logged",
        || daemon.report(),
        || daemon.stderr().contains("kept the TLS certificate in use"),
    );
    std::fs::copy(&second.key, certs.path().join("next.key")).unwrap();
    std::fs::rename(certs.path().join("next.key"), &served.key).unwrap();
    eventually(
        Duration::from_secs(10),
        "the new certificate is served",
        || daemon.report(),
        || over_https(&daemon, &second.cert, &["token", "show", "R-1"]).code() == 0,
    );
    let old = over_https(&daemon, &first.cert, &["token", "show", "R-1"]);
    assert_eq!(old.code(), 1, "{old}");
    assert!(daemon.stderr().contains("read the new TLS certificate"));
    assert_eq!(
        daemon
            .stderr()
            .matches("kept the TLS certificate in use")
            .count(),
        1
    );
}

#[test]
fn serve_refuses_tls_flags_that_cannot_be_used_in_one_line() {
    let certs = pki();
    let server = made(certs.path(), "server");
    let other = made(certs.path(), "other");
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("orders").display().to_string();
    let cert = server.cert.display().to_string();
    let wrong_key = other.key.display().to_string();
    let cases: [(&[&str], &str); 3] = [
        (&["--tls-cert", &cert], "--tls-cert needs --tls-key"),
        (
            &["--tls-cert", &cert, "--tls-key", &wrong_key],
            "cannot be used",
        ),
        (
            &["--tls-cert", "/nonexistent.pem", "--tls-key", &wrong_key],
            "/nonexistent.pem",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["serve", &graph, "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let refused = run(dir.path(), &args);
        assert_eq!(refused.code(), 1, "{refused}");
        assert!(refused.stderr.starts_with("error: "), "{refused}");
        assert!(refused.stderr.contains(expected), "{expected}: {refused}");
    }
}

both!(
    a_supervisor_on_a_supervise_key_over_https_completes_tokens_and_its_outbox_survives_a_restart
);

fn a_supervisor_on_a_supervise_key_over_https_completes_tokens_and_its_outbox_survives_a_restart() {
    let certs = pki();
    let server = made(certs.path(), "server");
    let (cert, key) = (
        server.cert.display().to_string(),
        server.key.display().to_string(),
    );
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--tls-cert", &cert, "--tls-key", &key, "--lease", "60s"])
        .start();
    // The folder is made over https; its stateous.yaml then names, relative to
    // the folder, the CA.
    let made = run(
        daemon.dir.path(),
        &["init", "supervisor", &daemon.url, "sup", "--cacert", &cert],
    );
    assert_eq!(made.code(), 0, "{made}");
    let folder = daemon.dir.path().join("sup");
    std::fs::copy(&server.cert, folder.join("ca.pem")).unwrap();
    write_script(
        &folder.join("coding.sh"),
        "while [ ! -e go ]; do sleep 0.05; done\nstateous ctx note over-https\nstateous ctx emit done",
    );
    write_script(
        &folder.join("testing.sh"),
        r#"stateous ctx emit passed '{"passed": 1, "failed": 0}'"#,
    );
    std::fs::write(
        folder.join("stateous.yaml"),
        format!(
            "url: {}\ncacert: ca.pem\nname: remote-1\nidle: 100ms\nheartbeat: 1s\n\
             backoff: [200ms]\nrequest_timeout: 5s\n",
            daemon.url
        ),
    )
    .unwrap();
    // Its key, made over the socket, bound to its name: the daemon now refuses TCP
    // without a key (the test's own requests go over the socket).
    let secret = crate::access::add_key(&daemon, "remote-1-key", "supervise", Some("remote-1"));
    crate::access::write_key(&folder, &secret);
    let sup = Supervise::start(&folder);
    start_token(&daemon, "S-1");
    sup.wait_for_line("coding of S-1, attempt 1");
    // The daemon goes down while the routine runs: its note and its outcome wait
    // in the outbox, and arrive over https once the daemon is back.
    daemon.stop_with(libc::SIGKILL);
    std::fs::write(folder.join("go"), "").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    daemon.crash_and_restart();
    wait_for_status(&daemon, "S-1", "completed");
    let notes: Vec<serde_json::Value> = history(&daemon, "S-1")
        .into_iter()
        .filter(|e| e["kind"] == "note")
        .collect();
    assert_eq!(notes.len(), 1, "{}", sup.report());
    assert_eq!(notes[0]["by"], "remote-1-key", "the ledger names the key");
    assert!(sup.stderr().contains(&daemon.url), "{}", sup.report());
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--max-connections", "2"])
        .start();
    let first = TcpStream::connect(&daemon.authority).unwrap();
    let _second = TcpStream::connect(&daemon.authority).unwrap();
    eventually(
        Duration::from_secs(10),
        "two connections open",
        || daemon.report(),
        || metric(&daemon, "stateous_connections_open") == 2.0,
    );
    let mut third = TcpStream::connect(&daemon.authority).unwrap();
    third
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    let mut answer = [0u8; 4096];
    assert!(third.read(&mut answer).is_err(), "the third waits");
    drop(first);
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let read = third.read(&mut answer).unwrap();
    assert!(
        answer[..read].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &answer[..read]
    );
}

#[test]
fn a_half_sent_request_is_closed_after_the_header_timeout() {
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--header-timeout", "1s"])
        .start();
    let mut stream = TcpStream::connect(&daemon.authority).unwrap();
    stream.write_all(b"GET /health HTTP/1.1\r\nhos").unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let began = Instant::now();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let took = began.elapsed();
    assert!(answer.is_empty(), "{answer:?}");
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    eventually(
        Duration::from_secs(10),
        "the timeout is counted",
        || daemon.report(),
        || {
            metric(
                &daemon,
                "stateous_connections_closed_total{reason=\"header_timeout\"}",
            ) >= 1.0
        },
    );
    // A whole request on a new connection is answered as before.
    assert_eq!(daemon.get("/health").status, 200);
}

#[test]
fn a_standby_takes_the_tls_flags_and_serves_https_once_it_takes_over() {
    harness::on(harness::Backend::Postgres, || {
        let certs = pki();
        let server = made(certs.path(), "server");
        let mut active = https_daemon(&server, &[]);
        let (cert, key) = (
            server.cert.display().to_string(),
            server.key.display().to_string(),
        );
        let standby = Setup::new(asset_graph("orders"))
            .database_of(&active)
            .args(&["--tls-cert", &cert, "--tls-key", &key])
            .start_standby();
        assert!(standby.url.starts_with("https://"), "{}", standby.url);
        let waiting = over_https(&standby, &server.cert, &["token", "list"]);
        assert_eq!(waiting.code(), 1, "{waiting}");
        assert!(waiting.stderr.contains("standby"), "{waiting}");
        let started = over_https(&active, &server.cert, &["token", "start", "H-1", TITLE]);
        assert_eq!(started.code(), 0, "{started}");
        active.stop_with(libc::SIGTERM);
        standby.wait_for_line("serving on https://", Duration::from_secs(30));
        let shown = over_https(&standby, &server.cert, &["token", "show", "H-1"]);
        assert_eq!(shown.code(), 0, "{shown}");
        assert!(shown.stdout.starts_with("H-1: draft"), "{shown}");
    });
}
