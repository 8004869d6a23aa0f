//! Black-box: `stateous token ...` and `stateous bench` against a real daemon: the
//! reference's lines on stdout, one `error:` line on stderr with exit 1 for a
//! refusal or an unreachable control plane.

use crate::harness;

use std::process::Command;

use harness::{run, Daemon, Finished};
use serde_json::Value;

/// `stateous token ARGS --url URL`, checked to succeed; its stdout.
fn ok(daemon: &Daemon, args: &[&str]) -> String {
    let finished = token(daemon, &daemon.url, args);
    assert_eq!(finished.code(), 0, "{finished}");
    assert_eq!(finished.stderr, "", "{finished}");
    finished.stdout
}

/// `stateous token ARGS --url URL` in the daemon's folder.
fn token(daemon: &Daemon, url: &str, args: &[&str]) -> Finished {
    let mut all = vec!["token"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", url]);
    run(daemon.dir.path(), &all)
}

/// The one `error:` line of a failed command, checked: exit 1, nothing on stdout.
fn one_error(finished: &Finished) -> String {
    assert_eq!(finished.code(), 1, "{finished}");
    assert_eq!(finished.stdout, "", "{finished}");
    let lines: Vec<&str> = finished.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{finished}");
    assert!(lines[0].starts_with("error: "), "{finished}");
    lines[0].to_string()
}

fn free_url() -> String {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", probe.local_addr().expect("an address"));
    drop(probe);
    url
}

#[test]
fn start_fire_and_show_print_the_reference_lines() {
    let daemon = Daemon::orders();
    let started = ok(&daemon, &["start", "O-1", r#"{"title": "first"}"#]);
    assert_eq!(started, "O-1: draft, active\n");
    assert_eq!(ok(&daemon, &["start", "O-1"]), "O-1: draft, active\n");
    assert_eq!(
        ok(&daemon, &["fire", "O-1", "submitted"]),
        "O-1: review, active\n"
    );
    let rejected = r#"{"approved": false, "note": "again"}"#;
    assert_eq!(
        ok(&daemon, &["fire", "O-1", "reviewed", rejected]),
        "O-1: draft (visit 2), active\n"
    );

    let shown = ok(&daemon, &["show", "O-1"]);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "O-1: draft (visit 2), active");
    let what: Vec<&str> = lines[1..]
        .iter()
        .map(|line| line.splitn(3, "  ").nth(2).expect("time, #seq, what"))
        .collect();
    assert_eq!(
        what[..4],
        [
            "started",
            "__started__ in START",
            "entered draft",
            "task 1 queued for draft"
        ]
    );
    assert!(what.contains(&r#"reviewed in review: {"approved": false, "note": "again"}"#));
    assert!(what.contains(&"entered draft (visit 2)"));
    for (n, line) in lines[1..].iter().enumerate() {
        assert!(line.contains(&format!("  #{}  ", n + 1)), "{line}");
    }
}

#[test]
fn a_repeated_key_is_a_duplicate_and_steering_prints_the_token() {
    let daemon = Daemon::orders();
    ok(&daemon, &["start", "O-1", r#"{"title": "a"}"#]);
    let fire = ["fire", "O-1", "submitted", "--key", "gh-1"];
    assert_eq!(ok(&daemon, &fire), "O-1: review, active\n");
    assert_eq!(ok(&daemon, &fire), "duplicate: O-1: review, active\n");
    assert_eq!(ok(&daemon, &["pause", "O-1"]), "O-1: review, paused\n");
    assert_eq!(ok(&daemon, &["resume", "O-1"]), "O-1: review, active\n");
    assert_eq!(ok(&daemon, &["cancel", "O-1"]), "O-1: review, cancelled\n");
    // A paused token holds the event: the line says so.
    ok(&daemon, &["start", "O-2", r#"{"title": "b"}"#]);
    assert_eq!(ok(&daemon, &["pause", "O-2"]), "O-2: draft, paused\n");
    assert_eq!(
        ok(&daemon, &["fire", "O-2", "submitted"]),
        "O-2: draft, paused (held: it applies when the token is resumed)\n"
    );
    assert_eq!(ok(&daemon, &["resume", "O-2"]), "O-2: review, active\n");
}

/// `token show` without an id prints a page, as the reference does; when more
/// tokens exist it says so on stderr, with the command that shows the next ones.
#[test]
fn show_without_an_id_says_when_it_stopped_short_of_every_token() {
    let daemon = Daemon::orders();
    for n in 0..103 {
        let body = serde_json::json!({"token": format!("S-{n}"), "context": {"title": "t"}});
        daemon.post("/tokens", &body).expect(201);
    }
    let finished = token(&daemon, &daemon.url, &["show"]);
    assert_eq!(finished.code(), 0, "{finished}");
    assert_eq!(finished.stdout.lines().count(), 100, "{finished}");
    assert_eq!(
        finished.stderr,
        "the 100 most recently moved of 103 tokens; `stateous token list --offset 100` \
         shows the next ones\n"
    );
    let next = token(&daemon, &daemon.url, &["list", "--offset", "100"]);
    assert_eq!(next.stdout.lines().count(), 3, "{next}");
}

#[test]
fn show_without_an_id_lists_the_tokens_and_json_prints_answers() {
    let daemon = Daemon::orders();
    assert_eq!(ok(&daemon, &["show"]), "no tokens\n");
    ok(&daemon, &["start", "O-1", r#"{"title": "a"}"#]);
    ok(&daemon, &["start", "O-2", r#"{"title": "b"}"#]);
    let mut listed: Vec<String> = ok(&daemon, &["show"]).lines().map(String::from).collect();
    listed.sort();
    assert_eq!(listed, ["O-1: draft, active", "O-2: draft, active"]);

    let answer: Value =
        serde_json::from_str(&ok(&daemon, &["show", "O-1", "--json"])).expect("--json prints JSON");
    assert_eq!(answer["token"]["state"], "draft");
    assert_eq!(answer["history"][0]["kind"], "started");
    let graph = ok(&daemon, &["show", "--graph"]);
    assert!(graph.starts_with("stateDiagram-v2\n"), "{graph}");
}

#[test]
fn the_url_comes_from_stateous_url_or_a_unix_socket() {
    let daemon = Daemon::orders();
    let output = Command::new(harness::binary())
        .args(["token", "start", "O-1", r#"{"title": "a"}"#])
        .env("STATEOUS_URL", &daemon.url)
        .output()
        .expect("the binary runs");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "O-1: draft, active\n"
    );
    let socket = format!("unix://{}", daemon.socket.display());
    let shown = token(&daemon, &socket, &["pause", "O-1"]);
    assert_eq!(shown.stdout, "O-1: draft, paused\n", "{shown}");
}

#[test]
fn a_refusal_is_one_error_line_with_the_status_and_exit_1_and_ours_name_the_code() {
    let daemon = Daemon::orders();
    ok(&daemon, &["start", "O-1", r#"{"title": "a"}"#]);
    ok(&daemon, &["cancel", "O-1"]);
    let line = one_error(&token(&daemon, &daemon.url, &["fire", "O-1", "submitted"]));
    let prefix = format!("error: the control plane at {} refused (409): ", daemon.url);
    assert!(line.starts_with(&prefix), "{line}");
    let line = one_error(&token(&daemon, &daemon.url, &["show", "NOPE"]));
    assert!(line.contains("refused (404): "), "{line}");
    // The commands of ours, which the reference does not have, name the code too.
    let line = one_error(&token(&daemon, &daemon.url, &["retry", "O-1"]));
    let prefix = format!(
        "error: the control plane at {} refused (409 token_not_active): ",
        daemon.url
    );
    assert!(line.starts_with(&prefix), "{line}");
    let line = one_error(&token(&daemon, &daemon.url, &["why", "NOPE"]));
    assert!(line.contains("refused (404 token_not_found): "), "{line}");
    let line = one_error(&token(&daemon, &daemon.url, &["start", "X", "[1]"]));
    assert!(
        line.starts_with("error: CONTEXT_JSON must be a JSON object"),
        "{line}"
    );
    let line = one_error(&token(&daemon, &daemon.url, &["show", "O-1", "--graph"]));
    assert!(line.contains("not both"), "{line}");
}

#[test]
fn an_unreachable_control_plane_is_one_error_line() {
    let daemon = Daemon::orders();
    let nowhere = free_url();
    let line = one_error(&token(&daemon, &nowhere, &["show"]));
    assert!(
        line.starts_with(&format!(
            "error: cannot reach the control plane at {nowhere}: "
        )),
        "{line}"
    );
    let line = one_error(&token(&daemon, "http://my host:8000", &["show"]));
    assert!(line.contains("has a host that is not valid"), "{line}");
}

#[test]
fn bench_runs_every_token_through_orders() {
    let daemon = Daemon::orders();
    let finished = run(
        daemon.dir.path(),
        &[
            "bench",
            "--url",
            &daemon.url,
            "--tokens",
            "30",
            "--clients",
            "4",
        ],
    );
    assert_eq!(finished.code(), 0, "{finished}");
    assert!(finished.stdout.contains("tokens/s: "), "{finished}");
    assert!(finished.stdout.contains("latency p50 "), "{finished}");
    assert!(finished.stdout.contains("bench CPU: "), "{finished}");
    let completed = daemon
        .get("/tokens?status=completed&limit=1000")
        .expect(200);
    assert_eq!(completed.as_array().map(Vec::len), Some(30));
}

/// Tokens another run left queued on the database are worked too, but the bench
/// ends only when its own tokens completed.
#[test]
fn bench_counts_only_its_own_tokens_toward_its_end() {
    let daemon = Daemon::orders();
    for n in 0..20 {
        let body = serde_json::json!({"token": format!("OLD-{n}"), "context": {"title": "old"}});
        daemon.post("/tokens", &body).expect(201);
    }
    let finished = run(
        daemon.dir.path(),
        &[
            "bench",
            "--url",
            &daemon.url,
            "--tokens",
            "10",
            "--clients",
            "2",
        ],
    );
    assert_eq!(finished.code(), 0, "{finished}");
    let completed = daemon
        .get("/tokens?status=completed&limit=1000")
        .expect(200);
    let ours = completed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|token| {
            token["token"]
                .as_str()
                .is_some_and(|id| id.starts_with("BENCH-"))
        })
        .count();
    assert_eq!(ours, 10, "{finished}");
}

#[test]
fn an_id_with_a_slash_is_refused_before_sending_with_the_daemons_sentence() {
    let daemon = Daemon::orders();
    let rule = "error: a token id is an ASCII letter or digit, then up to 127 ASCII letters, \
                digits, '.', '_' or '-'";
    for args in [
        vec!["show", "x/"],
        vec!["show", "O-1/history"],
        vec!["show", "x/", "--json"],
        vec!["fire", "a/b", "submitted"],
        vec!["pause", "x/"],
        vec!["cancel", "/x"],
    ] {
        let finished = token(&daemon, &daemon.url, &args);
        assert_eq!(one_error(&finished), rule, "{finished}");
    }
    // `start` sends its id in the body: the daemon refuses it, as the reference's
    // client shows it.
    let started = token(&daemon, &daemon.url, &["start", "x/"]);
    assert_eq!(
        one_error(&started),
        format!(
            "error: the control plane at {} refused (422): {}",
            daemon.url,
            &rule[7..]
        )
    );
}

/// `STATEOUS_URL=` (set but empty) was read as unset, and the client talked to the
/// default socket or http://127.0.0.1:8080, a control plane nobody named;
/// docs/reference/cli.md says an empty address is refused, as `--url ""` is. Its sentence names the
/// variable, since nothing on the command line was empty.
#[test]
fn an_empty_stateous_url_is_refused_as_an_empty_url_flag_is() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let flag = run(dir.path(), &["token", "show", "--url", ""]);
    assert!(
        one_error(&flag).starts_with("error: the URL of the control plane is empty"),
        "{flag}"
    );
    for args in [
        &["token", "show"][..],
        &["token", "list"][..],
        &["clock", "show"][..],
        &["bench", "--tokens", "1"][..],
        &["tui"][..],
        &["access", "list"][..],
    ] {
        let output = Command::new(harness::binary())
            .args(args)
            .current_dir(dir.path())
            .env("STATEOUS_URL", "")
            .output()
            .expect("the binary runs");
        let finished = Finished {
            command: format!("STATEOUS_URL= stateous {}", args.join(" ")),
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        assert_eq!(
            one_error(&finished),
            "error: STATEOUS_URL is set but empty; set it to http://HOST:PORT or \
             unix:///PATH, or unset it",
            "{finished}"
        );
    }
}

/// `bench --max-seconds 0` was taken, started tokens, then failed: refused before
/// it connects, as `--tokens 0` is.
#[test]
fn bench_refuses_no_time_at_all_before_it_connects() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let nowhere = free_url();
    let refused = run(
        dir.path(),
        &["bench", "--url", &nowhere, "--max-seconds", "0"],
    );
    assert_eq!(
        one_error(&refused),
        "error: --max-seconds must be at least 1",
        "{refused}"
    );
    let refused = run(dir.path(), &["bench-routines", "--max-seconds", "0"]);
    assert_eq!(
        one_error(&refused),
        "error: --max-seconds must be at least 1",
        "{refused}"
    );
}
