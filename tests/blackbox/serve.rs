//! Black-box: `stateous serve` as a process: its start order and refusals (one line,
//! exit 1), its Unix socket, and its graceful stop.

use crate::harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::Duration;

use harness::{run, test_graph, Daemon, Setup};
use serde_json::json;

fn graph() -> String {
    test_graph("tickets").display().to_string()
}

/// The one `error:` line of a refusal at start, checked: exit 1, one line.
fn refused_at_start(dir: &std::path::Path, args: &[&str]) -> String {
    let finished = run(dir, args);
    assert_eq!(finished.code(), 1, "{finished}");
    let lines: Vec<&str> = finished.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {finished}");
    assert!(lines[0].starts_with("error: "), "{finished}");
    assert!(!finished.stderr.contains("panicked"), "{finished}");
    lines[0].to_string()
}

#[test]
fn serve_prints_its_url_then_stops_on_sigint_with_stopped_and_exit_0() {
    let mut daemon = Daemon::tickets();
    daemon.get("/health").expect(200);
    let status = daemon.stop_with(libc::SIGINT);
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    let stderr = daemon.stderr();
    assert!(
        stderr.contains(&format!("serving on {} (Ctrl-C stops)", daemon.url)),
        "{stderr}"
    );
    assert_eq!(stderr.lines().last(), Some("stopped"), "{stderr}");
    assert!(
        !daemon.socket.exists(),
        "the socket file is removed at the stop"
    );
}

#[test]
fn sigterm_stops_gracefully_too() {
    let mut daemon = Daemon::tickets();
    let status = daemon.stop_with(libc::SIGTERM);
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    assert_eq!(daemon.stderr().lines().last(), Some("stopped"));
}

#[test]
fn a_request_in_progress_at_a_graceful_stop_is_answered() {
    let mut daemon = Daemon::tickets();
    let mut stream = TcpStream::connect(&daemon.authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let body = json!({"supervisor": "box-1"}).to_string();
    let head = format!(
        "POST /tasks/claim HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body.as_bytes()[..5]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    daemon.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    stream.write_all(&body.as_bytes()[5..]).unwrap();
    let reply = harness::read_reply(&mut stream, "POST /tasks/claim".into()).unwrap();
    reply.refused(422, "invalid_body");
    let status = daemon.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    // A new connection after the stop began is not served.
    assert!(TcpStream::connect(&daemon.authority).is_err());
}

#[test]
fn a_second_signal_stops_at_once_without_the_hung_request() {
    let mut daemon = Daemon::tickets();
    let mut hung = TcpStream::connect(&daemon.authority).unwrap();
    let head = "POST /tokens HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{\"tok";
    hung.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    daemon.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        daemon.is_running(),
        "a graceful stop waits for the request in progress"
    );
    daemon.signal(libc::SIGINT);
    // Well inside the grace period that the first signal would have waited.
    let status = daemon.wait(Duration::from_secs(3));
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    assert_eq!(daemon.stderr().lines().last(), Some("stopped"));
}

#[test]
fn an_idle_connection_does_not_hold_a_graceful_stop() {
    let mut daemon = Daemon::tickets();
    let mut idle = TcpStream::connect(&daemon.authority).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let status = daemon.stop_with(libc::SIGINT);
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
    let mut rest = Vec::new();
    let _ = idle.read_to_end(&mut rest);
}

#[test]
fn the_unix_socket_is_private_and_answers_as_tcp_does() {
    let daemon = Daemon::tickets();
    let meta = std::fs::metadata(&daemon.socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let stderr = daemon.stderr();
    assert!(
        stderr.contains(&format!("unix://{}", daemon.socket.display())),
        "{stderr}"
    );
    for path in ["/health", "/workflow", "/nothing", "/tokens?limit=0"] {
        let tcp = daemon.get(path);
        let unix = daemon.request_unix("GET", path, &[], b"");
        assert_eq!((tcp.status, &tcp.body), (unix.status, &unix.body), "{path}");
    }
    let big = vec![b' '; 1024 * 1024 + 1];
    daemon
        .request_unix("POST", "/tokens", &[], &big)
        .refused(413, "bad_request");
}

#[test]
fn curl_reaches_the_api_over_the_unix_socket() {
    let daemon = Daemon::tickets();
    let output = std::process::Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(&daemon.socket)
        .arg("http://x/health")
        .output();
    let Ok(output) = output else {
        eprintln!("curl is not installed; the raw socket tests cover the socket");
        return;
    };
    let health: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(health["workflow"], "tickets", "{}", daemon.report());
}

#[test]
fn a_live_daemon_keeps_its_socket_against_a_second_one() {
    let daemon = Daemon::tickets();
    let other = tempfile::tempdir().unwrap();
    let socket = daemon.socket.display().to_string();
    let line = refused_at_start(
        other.path(),
        &[
            "serve",
            &graph(),
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
        ],
    );
    assert!(line.contains("listens on the socket"), "{line}");
    // A wrong --db is named as such, though the socket is taken as well.
    let line = refused_at_start(
        other.path(),
        &[
            "serve",
            &graph(),
            "--db",
            "mysql://x/y",
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
        ],
    );
    assert!(line.contains("is not a database URL"), "{line}");
    daemon.request_unix("GET", "/health", &[], b"").expect(200);
}

#[test]
fn a_stale_socket_file_from_a_killed_daemon_is_replaced() {
    let mut daemon = Daemon::tickets();
    daemon.crash_and_restart();
    daemon.request_unix("GET", "/health", &[], b"").expect(200);
}

#[test]
fn a_port_in_use_is_refused_with_one_sentence() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let socket = dir.path().join("s.sock").display().to_string();
    let line = refused_at_start(
        dir.path(),
        &["serve", &graph(), "--listen", &listen, "--socket", &socket],
    );
    assert!(line.contains("already uses that port"), "{line}");
    assert!(
        !dir.path().join("stateous.db").exists(),
        "the database is not opened"
    );
    assert!(!dir.path().join("s.sock").exists());
}

#[test]
fn a_listen_that_is_not_host_and_port_is_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let line = refused_at_start(
        dir.path(),
        &["serve", "missing.json", "--listen", "0.0.0.0"],
    );
    assert!(line.contains("is not HOST:PORT"), "{line}");
    assert!(!dir.path().join("stateous.db").exists());
}

#[test]
fn a_missing_or_broken_graph_file_is_refused_with_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock").display().to_string();
    let base = ["--listen", "127.0.0.1:0", "--socket", socket.as_str()];
    let missing = refused_at_start(
        dir.path(),
        &[&["serve", "missing.json"][..], &base].concat(),
    );
    assert!(
        missing.contains("cannot read the graph file missing.json"),
        "{missing}"
    );
    for (name, text) in [
        ("empty.json", ""),
        ("list.json", "[1]"),
        ("broken.json", "{\"stateous\": 1,"),
        ("other.json", "{\"stateous\": 2}"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let line = refused_at_start(dir.path(), &[&["serve", name][..], &base].concat());
        assert!(
            line.contains(&format!("{name} is not a graph file")),
            "{line}"
        );
    }
    std::fs::write(dir.path().join("binary.json"), b"\xff\xfe").unwrap();
    let line = refused_at_start(dir.path(), &[&["serve", "binary.json"][..], &base].concat());
    assert!(line.contains("is not a graph file"), "{line}");
    assert!(!dir.path().join("stateous.db").exists());
}

#[test]
fn a_flow_yaml_given_as_the_graph_file_says_to_compile_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock").display().to_string();
    let base = ["--listen", "127.0.0.1:0", "--socket", socket.as_str()];
    let flow = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/orders/flow.yaml"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("orders")).unwrap();
    std::fs::write(dir.path().join("orders/flow.yaml"), &flow).unwrap();
    let line = refused_at_start(
        dir.path(),
        &[&["serve", "orders/flow.yaml"][..], &base].concat(),
    );
    assert!(
        line.contains("orders/flow.yaml is a workflow to compile, not a graph file"),
        "{line}"
    );
    assert!(
        line.contains("`stateous compile orders/flow.yaml`"),
        "{line}"
    );
    assert!(line.contains("orders/build/orders.json"), "{line}");
    // A graph file with a JSON mistake that YAML forgives is still a graph file.
    std::fs::write(
        dir.path().join("comma.json"),
        "{\"stateous\": 1, \"workflow\": \"x\",}",
    )
    .unwrap();
    let line = refused_at_start(dir.path(), &[&["serve", "comma.json"][..], &base].concat());
    assert!(line.contains("comma.json is not a graph file"), "{line}");
    assert!(!line.contains("compile"), "{line}");
    assert!(!dir.path().join("stateous.db").exists());
}

#[test]
fn database_urls_that_cannot_be_used_are_refused_with_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock").display().to_string();
    for (db, expected) in [
        // Nothing listens on port 1: refused within the connect timeout.
        (
            "postgresql://u:secret@127.0.0.1:1/s",
            "cannot reach the database",
        ),
        ("mysql://x/y", "is not a database URL"),
        ("sqlite:///", "names no database file"),
    ] {
        let line = refused_at_start(
            dir.path(),
            &[
                "serve",
                &graph(),
                "--db",
                db,
                "--listen",
                "127.0.0.1:0",
                "--socket",
                &socket,
                "--connect-timeout",
                "2s",
            ],
        );
        assert!(
            line.contains(expected) && !line.contains("secret"),
            "{line}"
        );
    }
}

#[test]
fn a_bad_or_zero_timing_from_a_flag_or_the_environment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let line = refused_at_start(dir.path(), &["serve", &graph(), "--tick", "soon"]);
    assert!(line.contains("--tick"), "{line}");
    let finished = std::process::Command::new(harness::binary())
        .args(["serve", &graph()])
        .env("STATEOUS_LEASE", "0s")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(finished.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(
        stderr.starts_with("error: --lease must be more than 0, not '0s'"),
        "{stderr}"
    );
    let line = refused_at_start(dir.path(), &["serve", &graph(), "--tick", "0ms"]);
    assert!(
        line.starts_with("error: --tick must be more than 0"),
        "{line}"
    );
}

/// A negative value got clap's "unexpected argument '-1' found; to pass '-1' as a
/// value, use '-- -1'", which a typo does not call for.
#[test]
fn a_negative_timing_or_count_says_it_must_be_more_than_0() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, expected) in [
        (
            "--lease",
            "-1s",
            "error: --lease must be more than 0, not '-1s'; ",
        ),
        (
            "--tick",
            "-500ms",
            "error: --tick must be more than 0, not '-500ms'; ",
        ),
        (
            "--pool-size",
            "-1",
            "error: --pool-size '-1' is not a whole number from 1 to 1000",
        ),
    ] {
        for args in [[flag, value].join(" "), format!("{flag}={value}")] {
            let mut all = vec!["serve", "NO-GRAPH.json"];
            all.extend(args.split(' '));
            let line = refused_at_start(dir.path(), &all);
            assert!(line.starts_with(expected), "{args}: {line}");
        }
    }
}

#[test]
fn help_documents_the_timing_flags_and_their_environment_variables() {
    let dir = tempfile::tempdir().unwrap();
    let help = run(dir.path(), &["serve", "--help"]);
    assert_eq!(help.code(), 0, "{help}");
    for text in [
        "--lease",
        "STATEOUS_LEASE",
        "STATEOUS_TICK",
        "STATEOUS_BUSY_TIMEOUT",
        "--socket",
        "[default: 2m]",
    ] {
        assert!(help.stdout.contains(text), "{text}: {help}");
    }
}

/// `--supervise`'s help says what one Ctrl-C does: it stops both, the supervisor
/// first (`supervisor_guarantees` proves it), not the supervisor alone.
#[test]
fn help_says_one_ctrl_c_stops_the_supervisor_beside_it_and_then_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let help = run(dir.path(), &["serve", "--help"]);
    assert_eq!(help.code(), 0, "{help}");
    let text = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "one Ctrl-C stops both, the supervisor gracefully first (the server serves on \
             until its running routines have reported), then the server; a second Ctrl-C \
             stops both at once (exit 1)"
        ),
        "{help}"
    );
}

#[test]
fn a_wide_address_is_refused_without_keys_and_tls_and_served_with_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let graph = test_graph("tickets").display().to_string();
    let socket = dir.path().join("s.sock").display().to_string();
    let line = refused_at_start(
        dir.path(),
        &[
            "serve",
            &graph,
            "--listen",
            "0.0.0.0:0",
            "--socket",
            &socket,
        ],
    );
    assert!(
        line.starts_with("error: other computers can reach 0.0.0.0, and this control plane has no access key and no TLS"),
        "{line}"
    );
    for advice in ["stateous access add", "--tls-cert", "--insecure"] {
        assert!(line.contains(advice), "{advice}: {line}");
    }
    let daemon = Setup::new(test_graph("tickets"))
        .args(&["--listen", "0.0.0.0:0", "--insecure"])
        .start();
    let stderr = daemon.stderr();
    assert!(
        stderr
            .contains("warning: other computers can reach 0.0.0.0, and the API has no access key"),
        "{stderr}"
    );
    daemon.get("/health").expect(200);
}

/// A certificate for `names` (self-signed) in `dir`: its PEM files, as paths.
fn certificate(dir: &std::path::Path, names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let made = rcgen::generate_simple_self_signed(names).unwrap();
    let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

/// A wide address is judged before the database is opened: a refusal leaves no
/// database file (nor its lock file) behind, without TLS and with it.
#[test]
fn a_wide_address_refused_at_start_leaves_no_database_behind() {
    let dir = tempfile::tempdir().unwrap();
    let graph = graph();
    let socket = dir.path().join("s.sock").display().to_string();
    let db = format!("sqlite:///{}", dir.path().join("fresh.db").display());
    let (cert, key) = certificate(dir.path(), &["localhost"]);
    let wide = [
        "serve",
        &graph,
        "--db",
        &db,
        "--socket",
        &socket,
        "--listen",
        "0.0.0.0:0",
    ];
    let plain = refused_at_start(dir.path(), &wide);
    assert!(plain.contains("has no access key and no TLS"), "{plain}");
    let tls = [&wide[..], &["--tls-cert", &cert, "--tls-key", &key]].concat();
    let keyless = refused_at_start(dir.path(), &tls);
    assert!(
        keyless.contains("has no access key: make an access key"),
        "{keyless}"
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("fresh.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The line `serve` prints on its start, up to `(Ctrl-C stops)`, for `args`: the
/// process is stopped once it said it.
fn serving_line(dir: &std::path::Path, args: &[&str]) -> String {
    let mut child = std::process::Command::new(harness::binary())
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let line = std::io::BufRead::lines(std::io::BufReader::new(stderr))
        .map_while(Result::ok)
        .find(|line| line.starts_with("serving on ") || line.starts_with("error: "));
    let _ = child.kill();
    let _ = child.wait();
    line.unwrap_or_default()
}

/// On every interface, `serve` says so, and names the URL a client on this
/// computer uses: 127.0.0.1 over HTTP; over HTTPS, a loopback name its certificate
/// holds, or that it holds none.
#[test]
fn serving_on_every_interface_says_so_and_names_a_url_for_this_computer() {
    let daemon = Setup::new(test_graph("tickets"))
        .args(&["--listen", "0.0.0.0:0", "--insecure"])
        .start();
    let port = daemon.url.rsplit(':').next().unwrap().to_string();
    assert_eq!(daemon.url, format!("http://127.0.0.1:{port}"));
    let line = format!(
        "serving on 0.0.0.0:{port}, every interface of this computer; from this computer: \
         http://127.0.0.1:{port} (Ctrl-C stops)"
    );
    assert!(daemon.stderr().contains(&line), "{}", daemon.report());
    daemon.get("/health").expect(200);
    let dir = tempfile::tempdir().unwrap();
    let graph = graph();
    let socket = dir.path().join("s.sock").display().to_string();
    for (names, near) in [
        (&["localhost"][..], "https://localhost:"),
        (
            &["cp.example", "10.0.0.1"][..],
            "its certificate names neither 127.0.0.1 nor localhost",
        ),
    ] {
        let (cert, key) = certificate(dir.path(), names);
        let args = [
            "serve",
            &graph,
            "--socket",
            &socket,
            "--listen",
            "0.0.0.0:0",
            "--insecure",
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ];
        let line = serving_line(dir.path(), &args);
        assert!(line.starts_with("serving on 0.0.0.0:"), "{line}");
        assert!(line.contains(near), "{line}");
    }
    // An address of its own is said as it is.
    let one = Setup::new(test_graph("tickets")).start();
    assert!(one
        .stderr()
        .contains(&format!("serving on {} (Ctrl-C stops)", one.url)));
}

#[test]
fn a_device_given_as_the_graph_file_is_refused_not_read_for_ever() {
    let dir = tempfile::tempdir().unwrap();
    let line = refused_at_start(
        dir.path(),
        &["serve", "/dev/zero", "--listen", "127.0.0.1:0"],
    );
    assert!(line.contains("not a regular file"), "{line}");
}

#[test]
fn a_socket_path_too_long_for_unix_sockets_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join(format!("{}.sock", "s".repeat(120)));
    let long = long.display().to_string();
    let args = [
        "serve",
        &graph(),
        "--listen",
        "127.0.0.1:0",
        "--socket",
        &long,
    ];
    let line = refused_at_start(dir.path(), &args);
    assert!(line.contains("too long"), "{line}");
}

#[test]
fn a_socket_in_a_missing_folder_is_refused_and_the_folder_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nodir").join("deeper");
    let socket = missing.join("s.sock").display().to_string();
    let args = [
        "serve",
        &graph(),
        "--listen",
        "127.0.0.1:0",
        "--socket",
        &socket,
    ];
    let line = refused_at_start(dir.path(), &args);
    assert!(
        line.contains(&format!("the folder {} ", missing.display())),
        "{line}"
    );
    assert!(!dir.path().join("nodir").exists(), "no folder was made");
}

#[test]
fn the_default_socket_gets_its_missing_runtime_folder_made() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run").join("user");
    let socket = runtime.join("stateous.sock");
    let stderr = dir.path().join("stderr.log");
    let mut child = std::process::Command::new(harness::binary())
        .args(["serve", &graph(), "--listen", "127.0.0.1:0"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("STATEOUS_DB")
        .current_dir(dir.path())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&stderr).unwrap_or_default();
    harness::eventually(Duration::from_secs(20), "the default socket", log, || {
        log().contains(&format!("the same API on unix://{}", socket.display()))
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(0), "{}", log());
}

#[test]
fn a_sqlite_database_in_a_missing_folder_is_refused_naming_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock").display().to_string();
    let args = [
        "serve",
        &graph(),
        "--db",
        "sqlite:///nodir/x.db",
        "--listen",
        "127.0.0.1:0",
        "--socket",
        &socket,
    ];
    let line = refused_at_start(dir.path(), &args);
    assert_eq!(
        line,
        "error: cannot open the database nodir/x.db: its folder nodir does not exist; make it \
         first, or give another --db"
    );
    assert!(!dir.path().join("nodir").exists(), "no folder was made");
}
