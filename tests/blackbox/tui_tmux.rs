//! End to end, as a person uses it: `stateous tui` in a tmux pane against a real
//! daemon; keys go in with `send-keys`, the screen comes out with `capture-pane`.

use crate::harness;

use std::time::{Duration, Instant};

use harness::tmux::{have_tmux, row, Tmux};
use harness::{binary, Daemon};
use serde_json::json;

#[test]
fn a_token_paused_and_resumed_with_keys_shows_the_change_on_screen() {
    if !have_tmux() {
        return;
    }
    let daemon = Daemon::orders();
    daemon
        .post(
            "/tokens",
            &json!({"token": "ORD-1", "context": {"title": "pen"}}),
        )
        .expect(201);
    let tmux = Tmux::start("keys", &format!("{} tui --url {}", binary(), daemon.url));
    tmux.wait_for("ORD-1 active in draft", |s| {
        row(s, "ORD-1").is_some_and(|r| r.contains("draft") && r.contains("active"))
    });
    tmux.keys("p");
    // Waited for whole (the status line too): a screen read while the TUI draws
    // it may lack its last rows.
    tmux.wait_for("ORD-1 paused, and the status line says so", |s| {
        row(s, "ORD-1").is_some_and(|r| r.contains("paused"))
            && s.contains("#5  paused")
            && s.contains("ORD-1: draft, paused")
    });
    assert_eq!(daemon.get("/tokens/ORD-1").expect(200)["status"], "paused");
    tmux.keys("p");
    tmux.wait_for("the refusal", |s| {
        s.contains("refused (409 token_not_active)")
    });
    tmux.keys("r");
    let resumed = tmux.wait_for("ORD-1 active again", |s| {
        row(s, "ORD-1").is_some_and(|r| r.contains("active")) && s.contains("#6  resumed")
    });
    eprintln!("the screen after resume:\n{resumed}");
    assert_eq!(daemon.get("/tokens/ORD-1").expect(200)["status"], "active");
    // P: a priority typed at the prompt is set, said and shown in the detail.
    tmux.keys("P");
    tmux.wait_for("the priority prompt", |s| s.contains("priority of ORD-1:"));
    tmux.keys("5");
    tmux.keys("Enter");
    tmux.wait_for("the priority set and shown", |s| {
        s.contains("ORD-1: priority 5") && s.contains("priority  5")
    });
    assert_eq!(
        daemon.get("/tokens/ORD-1/detail").expect(200)["priority"],
        5
    );
    tmux.keys("q");
}

#[test]
fn the_tui_stays_live_through_a_daemon_restart() {
    if !have_tmux() {
        return;
    }
    let mut daemon = Daemon::orders();
    daemon
        .post(
            "/tokens",
            &json!({"token": "ORD-1", "context": {"title": "pen"}}),
        )
        .expect(201);
    // The socket keeps its path across the restart; the TCP port does not.
    let url = format!("unix://{}", daemon.socket.display());
    let tmux = Tmux::start("restart", &format!("{} tui --url {url}", binary()));
    tmux.wait_for("the live stream", |s| s.contains("connected, live"));
    daemon.crash_and_restart();
    daemon
        .post_empty("/tokens/ORD-1/events/submitted")
        .expect(200);
    let after = tmux.wait_for("ORD-1 in review, live again", |s| {
        s.contains("connected, live")
            && row(s, "ORD-1").is_some_and(|r| r.contains("review"))
            && s.contains("#7  entered review")
    });
    assert!(after.contains("ORD-1: review, active"), "{after}");
    tmux.keys("q");
}

#[test]
fn read_only_says_so_and_its_keys_change_nothing() {
    if !have_tmux() {
        return;
    }
    let daemon = Daemon::orders();
    daemon
        .post(
            "/tokens",
            &json!({"token": "ORD-1", "context": {"title": "pen"}}),
        )
        .expect(201);
    // Once by the flag, once by the environment.
    let commands = [
        format!("{} tui --read-only --url {}", binary(), daemon.url),
        format!(
            "env STATEOUS_READ_ONLY=1 NO_COLOR=1 {} tui --url {}",
            binary(),
            daemon.url
        ),
    ];
    for (n, command) in commands.iter().enumerate() {
        let tmux = Tmux::start(&format!("read-only-{n}"), command);
        tmux.wait_for("ORD-1 and the read-only mark", |s| {
            s.lines().next().is_some_and(|l| l.contains("read-only"))
                && row(s, "ORD-1").is_some_and(|r| r.contains("active"))
        });
        tmux.keys("p");
        tmux.wait_for("the refusal of p", |s| {
            s.contains("read-only: 'p' would change a token")
        });
        tmux.keys("c");
        tmux.keys("y");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(daemon.get("/tokens/ORD-1").expect(200)["status"], "active");
        tmux.keys("q");
    }
}

#[test]
fn advancing_the_dev_clock_an_hour_fires_a_timeout_that_the_tui_shows_within_seconds() {
    if !have_tmux() {
        return;
    }
    let daemon = harness::Setup::new(harness::asset_graph("sdlc"))
        .args(&["--dev-clock"])
        .start();
    daemon
        .post(
            "/tokens",
            &json!({"token": "T-1", "context": {"repo": "r"}}),
        )
        .expect(201);
    // In testing, whose timeout is 1h; sdlc has no transition for it: it fails.
    daemon
        .post("/tokens/T-1/events/done", &json!({}))
        .expect(200);
    let tmux = Tmux::start(
        "dev-clock",
        &format!("{} tui --url {}", binary(), daemon.url),
    );
    tmux.wait_for("T-1 active in testing, live", |s| {
        s.contains("connected, live")
            && row(s, "T-1").is_some_and(|r| r.contains("testing") && r.contains("active"))
    });
    tmux.keys("w");
    tmux.wait_for("the graph with T-1 active in testing", |s| {
        s.contains("Workflow: tokens by state") && s.contains("  testing")
    });
    tmux.keys("Escape");
    let advanced = Instant::now();
    let finished = harness::run(
        daemon.dir.path(),
        &["clock", "advance", "1h", "--url", &daemon.url],
    );
    assert_eq!(finished.code(), 0, "{finished}");
    let after = tmux.wait_for(
        "T-1 failed by its timeout, and the clock in the header",
        |s| {
            row(s, "T-1").is_some_and(|r| r.contains("failed"))
                && s.lines()
                    .next()
                    .is_some_and(|l| l.contains("dev clock +1h"))
        },
    );
    assert!(advanced.elapsed() < Duration::from_secs(5), "{after}");
    eprintln!("the screen after the advance:\n{after}");
    // Ages count from the daemon's time: T-1 entered testing an hour ago.
    tmux.wait_for("T-1's age on the daemon's clock", |s| {
        row(s, "T-1").is_some_and(|r| r.contains("1h00m"))
    });
    tmux.keys("w");
    tmux.wait_for("testing counts its failed token", |s| {
        s.lines()
            .any(|l| l.contains("testing (timeout 1h)") && l.contains("0      0      1"))
    });
    tmux.keys("q");
}

#[test]
fn marked_rows_are_cancelled_through_the_preview_and_the_filter_language_filters() {
    if !have_tmux() {
        return;
    }
    let daemon = Daemon::orders();
    for id in ["ORD-1", "ORD-2", "ORD-3"] {
        let body = json!({"token": id, "context": {"title": "pen"}});
        daemon.post("/tokens", &body).expect(201);
    }
    let tmux = Tmux::start("bulk", &format!("{} tui --url {}", binary(), daemon.url));
    tmux.wait_for("three tokens", |s| {
        ["ORD-1", "ORD-2", "ORD-3"]
            .iter()
            .all(|id| row(s, id).is_some())
    });
    // The first two rows: the most recently moved first.
    tmux.keys("Space");
    tmux.keys("Space");
    tmux.wait_for("two marks", |s| s.contains("2 marked"));
    tmux.keys("c");
    tmux.wait_for("the preview", |s| s.contains("cancel: 2 tokens (2 marked)"));
    tmux.keys("tmux test");
    tmux.keys("Tab");
    tmux.keys("2");
    tmux.keys("Enter");
    let done = tmux.wait_for("the run's end", |s| {
        s.contains("cancel done: 2 tokens, 2 applied, 0 refused")
    });
    eprintln!("the screen after the bulk cancel:\n{done}");
    let cancelled: Vec<String> = ["ORD-1", "ORD-2", "ORD-3"]
        .iter()
        .filter(|id| daemon.get(&format!("/tokens/{id}")).expect(200)["status"] == "cancelled")
        .map(|id| id.to_string())
        .collect();
    assert_eq!(cancelled, ["ORD-2", "ORD-3"]);
    let history = daemon.get("/tokens/ORD-3/history").expect(200);
    let operator = history
        .as_array()
        .and_then(|h| h.iter().find(|e| e["kind"] == "operator"))
        .expect("the operator entry")
        .clone();
    assert_eq!(operator["data"]["reason"], "tmux test");
    // The filter language, matched by the daemon, with its total in the title.
    tmux.keys("/");
    tmux.keys("status == 'active'");
    tmux.keys("Enter");
    tmux.wait_for("the filtered table", |s| {
        s.contains("Tokens: 1 (status all, where status == 'active'") && row(s, "ORD-2").is_none()
    });
    tmux.keys("q");
}

#[test]
fn a_bulk_cancel_at_a_terminal_goes_ahead_only_once_the_count_is_typed() {
    if !have_tmux() {
        return;
    }
    let daemon = Daemon::orders();
    for id in ["ORD-1", "ORD-2", "ORD-3"] {
        let body = json!({"token": id, "context": {"title": "pen"}});
        daemon.post("/tokens", &body).expect(201);
    }
    let command = format!(
        "{} token cancel --where \"state == 'draft'\" --reason 'at a terminal' --url {}; sleep 30",
        binary(),
        daemon.url
    );
    let tmux = Tmux::start("typed", &command);
    tmux.wait_for("the question", |s| {
        s.contains("3 tokens match state == 'draft'; cancel would do:")
            && s.contains("Type 3 to cancel them, anything else to stop:")
    });
    assert_eq!(daemon.get("/tokens/ORD-1").expect(200)["status"], "active");
    tmux.keys("3");
    tmux.keys("Enter");
    tmux.wait_for("the summary", |s| {
        s.contains("cancelled 3 tokens; 0 refused, 0 duplicate, 0 skipped")
    });
    for id in ["ORD-1", "ORD-2", "ORD-3"] {
        assert_eq!(
            daemon.get(&format!("/tokens/{id}")).expect(200)["status"],
            "cancelled"
        );
    }
}

/// `--where "state == 'reveiw'"` (a state the graph does not have) opened the
/// screen with `0 shown` and the daemon's 422 in its status line, and exited 0;
/// docs/reference/tui.md says a `--where` that is not a filter is refused before the screen
/// changes, and the daemon's 422 says that this one is not.
fn a_where_the_daemon_refuses_is_refused_before_the_screen_opens() {
    let daemon = Daemon::orders();
    let filter = "state == 'reveiw'";
    // Without a terminal: the refusal comes before the screen would be needed.
    let refused = harness::run(
        daemon.dir.path(),
        &["tui", "--where", filter, "--url", &daemon.url],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused.stderr.starts_with("error: --where: ") && refused.stderr.contains("'reveiw'"),
        "{refused}"
    );
    assert!(!refused.stderr.contains("terminal"), "{refused}");
    if !have_tmux() {
        return;
    }
    // At a terminal: the error and the exit code, and no screen in between.
    let command = format!(
        "{} tui --where \"{filter}\" --url {}; echo \"exit $?\"; sleep 30",
        binary(),
        daemon.url
    );
    let tmux = Tmux::start("where-refused", &command);
    let screen = tmux.wait_for("the refusal and exit 1", |s| s.contains("exit 1"));
    assert!(screen.contains("error: --where: "), "{screen}");
    assert!(!screen.contains("Tokens"), "{screen}");
}

both!(
    d_describes_a_token_y_copies_its_json_into_tmux_and_f_and_o_change_the_screen,
    a_where_the_daemon_refuses_is_refused_before_the_screen_opens,
);

fn d_describes_a_token_y_copies_its_json_into_tmux_and_f_and_o_change_the_screen() {
    if !have_tmux() {
        return;
    }
    let daemon = Daemon::orders();
    for (id, title) in [("ORD-2", "pen"), ("ORD-1", "ink")] {
        daemon
            .post(
                "/tokens",
                &json!({"token": id, "context": {"title": title}}),
            )
            .expect(201);
    }
    daemon
        .post("/tokens/ORD-1/events/submitted", &json!({}))
        .expect(200);
    daemon
        .post(
            "/tokens/ORD-1/events/reviewed",
            &json!({"payload": {"approved": false, "note": "by tmux"}}),
        )
        .expect(200);
    let tmux = Tmux::start(
        "describe",
        &format!("{} tui --url {}", binary(), daemon.url),
    );
    // tmux keeps what an OSC 52 sequence sets as a paste buffer only when `on`.
    tmux.run(&["set-option", "-s", "set-clipboard", "on"]);
    tmux.wait_for("both tokens", |s| {
        row(s, "ORD-1").is_some() && row(s, "ORD-2").is_some()
    });
    tmux.keys("o");
    let at = |s: &str, id: &str| s.find(&format!("│{id} "));
    tmux.wait_for("the table sorted by token", |s| {
        s.contains("token▲") && at(s, "ORD-1").is_some_and(|one| at(s, "ORD-2") > Some(one))
    });
    tmux.keys("F");
    tmux.wait_for("no supervisors pane", |s| !s.contains("Supervisors"));
    tmux.keys("d");
    // Waited for whole: a screen read while the TUI draws it may lack its last rows.
    tmux.wait_for("ORD-1 as JSON, with its history", |s| {
        s.contains("ORD-1 as JSON") && s.contains("\"title\": \"ink\"") && s.contains("\"history\"")
    });
    tmux.keys("y");
    tmux.wait_for("the copy said", |s| {
        s.contains("copied the JSON of ORD-1 to the clipboard")
    });
    let copied = tmux.run(&["show-buffer"]);
    let copied: serde_json::Value = serde_json::from_str(&copied).unwrap();
    assert_eq!(copied["token"]["token"]["context"]["title"], "ink");
    let history = copied["history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|entry| entry["data"]["payload"]["note"] == "by tmux"),
        "{copied}"
    );
    tmux.keys("Escape");
    // Waited for: an Esc and an F read together are Alt-F, which closes nothing.
    tmux.wait_for("the JSON view closed", |s| !s.contains("ORD-1 as JSON"));
    tmux.keys("F");
    tmux.wait_for("the supervisors pane again", |s| s.contains("Supervisors"));
    tmux.keys("q");
}
