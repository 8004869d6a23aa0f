//! Black-box: clients that know several addresses of the control plane. The token
//! commands and the supervisor pass over an address that refuses the connection or
//! answers 503 `standby`, stay with the one that serves, and a supervisor that loses
//! its control plane mid-task goes on at the next address with its outbox in order.

use crate::harness;
use crate::supervising;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;

use harness::{asset_graph, Setup};
use serde_json::Value;
use supervising::{folder_for, history, set_urls, start_token, wait_for_status, Supervise};

/// A URL where nothing listens.
fn dead_url() -> String {
    let free = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", free.local_addr().expect("its address"));
    drop(free);
    url
}

/// A stand-in for `serve --standby` on a thread: every request is answered 503
/// `standby`, each body read whole first so the answer is never cut by a reset.
fn standby() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let refusal = r#"{"error": "this control plane is a standby", "code": "standby"}"#;
            let answer = format!(
                "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{refusal}",
                refusal.len()
            );
            let _ = reader.get_mut().write_all(answer.as_bytes());
        }
    });
    url
}

fn stateous(args: &[&str], url_env: Option<&str>) -> (i32, String, String) {
    let mut command = Command::new(harness::binary());
    command.args(args).env_remove("STATEOUS_URL");
    if let Some(url) = url_env {
        command.env("STATEOUS_URL", url);
    }
    let output = command.output().expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn token_commands_pass_over_a_dead_or_standby_address_to_the_one_that_serves() {
    let daemon = harness::Daemon::orders();
    let list = format!("{},{}", dead_url(), daemon.url);
    let (code, out, err) = stateous(
        &["token", "start", "O-1", r#"{"title": "a"}"#, "--url", &list],
        None,
    );
    assert_eq!((code, out.as_str()), (0, "O-1: draft, active\n"), "{err}");

    let list = format!("{}, {}", standby(), daemon.url);
    let (code, out, err) = stateous(&["token", "pause", "O-1"], Some(&list));
    assert_eq!((code, out.as_str()), (0, "O-1: draft, paused\n"), "{err}");

    // None serves: the last address's error, as with one address.
    let only_standby = format!("{},{}", dead_url(), standby());
    let (code, _, err) = stateous(&["token", "show", "O-1", "--url", &only_standby], None);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: the control plane at http://"),
        "{err}"
    );
    assert!(
        err.contains("refused (503): this control plane is a standby"),
        "{err}"
    );
}

#[test]
fn a_list_with_an_empty_or_bad_address_is_one_error_line_and_exit_1() {
    let (code, out, err) = stateous(
        &[
            "token",
            "show",
            "O-1",
            "--url",
            "http://127.0.0.1:1,,http://127.0.0.1:2",
        ],
        None,
    );
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "error: http://127.0.0.1:1,,http://127.0.0.1:2 is not a list of control plane URLs: \
         address 2 is empty; write URL,URL with each http://HOST:PORT or unix:///PATH\n"
    );
    let (code, _, err) = stateous(
        &["token", "show", "O-1"],
        Some("http://127.0.0.1:1,ftp://x"),
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error: ftp://x is not a URL of a control plane; write http://HOST:PORT or unix:///PATH\n"
    );
}

const CODING: &str = "stateous ctx note one\nstateous ctx emit done";
const TESTING: &str = r#"stateous ctx emit passed '{"passed": 1, "failed": 0}'"#;

#[test]
fn a_supervisor_given_a_dead_a_standby_and_a_live_address_runs_a_token_to_completion() {
    let daemon = supervising::sdlc();
    let folder = folder_for(&daemon, &[("coding", CODING), ("testing", TESTING)]);
    let (dead, waiting) = (dead_url(), standby());
    set_urls(&folder, &[&dead, &waiting, &daemon.url]);
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line(&format!("connected to the control plane at {}", daemon.url));
    sup.wait_for_line(&format!(
        "the control plane is {} (of {dead}, {waiting}, {})",
        daemon.url, daemon.url
    ));
    start_token(&daemon, "T-1");
    wait_for_status(&daemon, "T-1", "completed");
    sup.wait_for_line("of T-1: reported passed");
    let log = sup.stderr();
    assert!(
        log.contains(&format!(
            "the control plane at {dead} does not serve (cannot connect: "
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "the control plane at {waiting} does not serve (it answered 503 standby); \
             trying {}",
            daemon.url
        )),
        "{log}"
    );
    // Once connected, the supervisor stays: one line of each.
    assert_eq!(
        log.matches("connected to the control plane").count(),
        1,
        "{log}"
    );
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
}

/// A routine that notes `one` and `two`, waits for the file `go`, then notes
/// `three` and `four` and is done.
const WAITING: &str = "stateous ctx note one\nstateous ctx note two\ntouch waiting\n\
    while [ ! -f go ]; do sleep 0.05; done\nstateous ctx note three\nstateous ctx note four\n\
    stateous ctx emit done";

/// The texts of the notes in `T-1`'s history, in order.
fn notes_of(daemon: &harness::Daemon) -> Vec<String> {
    history(daemon, "T-1")
        .iter()
        .filter(|e| e["kind"] == "note")
        .map(|e| e["data"]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

fn a_supervisor_whose_control_plane_dies_goes_on_at_the_next_address_in_order() {
    let mut first = Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "30s"])
        .start();
    let port = free_port();
    let second_url = format!("http://127.0.0.1:{port}");
    let folder = folder_for(&first, &[("coding", WAITING), ("testing", TESTING)]);
    set_urls(&folder, &[&first.url, &second_url]);
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line("the control plane is");
    start_token(&first, "T-1");
    let waiting = folder.join("waiting");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !waiting.exists() {
        assert!(std::time::Instant::now() < deadline, "{}", sup.report());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Both notes reached the first control plane (a note whose answer a crash
    // cuts off is sent again, and written once: its idempotency key).
    while notes_of(&first) != ["one", "two"] {
        assert!(std::time::Instant::now() < deadline, "{}", sup.report());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The first control plane dies; another takes the same database at the
    // second address, and only then does the routine go on.
    first.stop_with(libc::SIGKILL);
    let listen = format!("127.0.0.1:{port}");
    let second = Setup::new(asset_graph("sdlc"))
        .database_of(&first)
        .args(&["--lease", "30s", "--listen", &listen])
        .start();
    assert_eq!(second.url, second_url);
    std::fs::write(folder.join("go"), "").expect("go");
    wait_for_status(&second, "T-1", "completed");
    sup.wait_for_line(&format!("connected to the control plane at {second_url}"));
    assert_eq!(
        notes_of(&second),
        ["one", "two", "three", "four"],
        "{}",
        sup.report()
    );
    let entries: Vec<Value> = history(&second, "T-1");
    assert_eq!(
        entries.last().map(|e| e["kind"].clone()),
        Some("completed".into())
    );
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
}

#[test]
fn a_note_whose_answer_is_lost_is_sent_again_and_written_once() {
    let daemon = supervising::sdlc();
    // The first note reaches the control plane, which writes it; its answer is
    // lost on the way back, so the supervisor sends it again.
    let cut_once = std::sync::atomic::AtomicBool::new(false);
    let relay = harness::relay_cutting(&daemon.url, move |_, request| {
        let note = request.starts_with("POST /tasks/") && request.contains("/note ");
        note && !cut_once.swap(true, std::sync::atomic::Ordering::SeqCst)
    });
    let folder = folder_for(&daemon, &[("coding", CODING), ("testing", TESTING)]);
    set_urls(&folder, &[&relay]);
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line("the control plane is");
    start_token(&daemon, "T-1");
    wait_for_status(&daemon, "T-1", "completed");
    assert_eq!(notes_of(&daemon), ["one"], "{}", sup.report());
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
}

#[test]
fn init_supervisor_from_a_list_fetches_from_the_one_that_serves_and_writes_the_list() {
    let daemon = supervising::sdlc();
    let list = format!("{},{}", dead_url(), daemon.url);
    let made = harness::run(daemon.dir.path(), &["init", "supervisor", &list, "sup"]);
    assert_eq!(made.code(), 0, "{made}");
    let text = std::fs::read_to_string(daemon.dir.path().join("sup/stateous.yaml"))
        .expect("stateous.yaml");
    let (dead, live) = list.split_once(',').expect("two addresses");
    assert!(
        text.contains(&format!("url: [\"{dead}\",\"{live}\"]")),
        "{text}"
    );
}

/// A free port of 127.0.0.1, for a control plane started later.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

fn token_show_follow_goes_on_at_the_next_address_and_prints_each_line_once() {
    let mut first = harness::Daemon::orders();
    first
        .post(
            "/tokens",
            &serde_json::json!({"token": "F-1", "context": {"title": "a"}}),
        )
        .expect(201);
    let port = free_port();
    let list = format!("{},http://127.0.0.1:{port}", first.url);
    let out = first.dir.path().join("follow.out");
    let mut follow = Command::new(harness::binary())
        .args(["token", "show", "F-1", "--follow", "--url", &list])
        .env_remove("STATEOUS_URL")
        .stdout(std::fs::File::create(&out).expect("an output file"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("follow starts");
    let printed = |line: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.contains(line) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no '{line}' in:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    printed("#4  task 1 queued for draft");
    first.post_empty("/tokens/F-1/events/submitted").expect(200);
    printed("#7  entered review");
    first.stop_with(libc::SIGKILL);
    let listen = format!("127.0.0.1:{port}");
    let second = Setup::new(asset_graph("orders"))
        .database_of(&first)
        .args(&["--listen", &listen])
        .start();
    let verdict = serde_json::json!({"payload": {"approved": true}});
    second
        .post("/tokens/F-1/events/reviewed", &verdict)
        .expect(200);
    let text = printed("#11  completed");
    let status = follow.wait().expect("follow ends");
    assert!(status.success(), "{status}: {text}");
    for seq in 1..=11 {
        let mark = format!("  #{seq}  ");
        assert_eq!(text.matches(&mark).count(), 1, "#{seq} once:\n{text}");
    }
}

both!(
    a_supervisor_whose_control_plane_dies_goes_on_at_the_next_address_in_order,
    token_show_follow_goes_on_at_the_next_address_and_prints_each_line_once,
);
