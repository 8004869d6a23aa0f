//! Black-box: a context or payload on the command line can come from a file
//! (`@FILE`) or from standard input (`-`), so that one larger than the system's
//! limit for an argument (128 KiB on Linux) still goes: `token start`, `token
//! fire`, a bulk fire; a file that cannot be read is one `error:` line and exit 1.

use crate::harness;

use harness::{run_with_input, test_graph, Daemon, Setup};
use serde_json::json;

fn desk() -> Daemon {
    Setup::new(test_graph("desk/build/desk")).start()
}

#[test]
fn a_context_or_payload_comes_from_a_file_or_standard_input() {
    let daemon = desk();
    // 200,000 characters: more than one argument may hold.
    let big = "x".repeat(200_000);
    let context = json!({"customer": big}).to_string();
    std::fs::write(daemon.dir.path().join("ctx.json"), &context).unwrap();
    let started = daemon.token(&["start", "F-1", "@ctx.json"]);
    assert_eq!(started.code(), 0, "{started}");
    let read = daemon.get("/tokens/F-1").expect(200);
    assert_eq!(
        read["context"]["customer"].as_str().map(str::len),
        Some(200_000)
    );

    let mut all = vec!["token", "start", "S-1", "-", "--url", &daemon.url];
    let piped = run_with_input(daemon.dir.path(), &all, &context);
    assert_eq!(piped.code(), 0, "{piped}");
    let read = daemon.get("/tokens/S-1").expect(200);
    assert_eq!(
        read["context"]["customer"].as_str().map(str::len),
        Some(200_000)
    );

    // A payload from a file, once the token is in `review`.
    for id in ["F-1", "S-1"] {
        let fired = daemon.token(&["fire", id, "submitted"]);
        assert_eq!(fired.code(), 0, "{fired}");
    }
    std::fs::write(daemon.dir.path().join("ok.json"), r#"{"ok": true}"#).unwrap();
    let fired = daemon.token(&["fire", "F-1", "reviewed", "@ok.json"]);
    assert_eq!(fired.code(), 0, "{fired}");
    assert_eq!(daemon.get("/tokens/F-1").expect(200)["state"], "closing");

    // A bulk fire's payload, from standard input.
    all = vec![
        "token",
        "fire",
        "reviewed",
        "-",
        "--where",
        "token == 'S-1'",
        "--reason",
        "r",
        "--yes",
        "--url",
        &daemon.url,
    ];
    let bulk = run_with_input(daemon.dir.path(), &all, r#"{"ok": true}"#);
    assert_eq!(bulk.code(), 0, "{bulk}");
    assert_eq!(daemon.get("/tokens/S-1").expect(200)["state"], "closing");

    // What cannot be read, or is not JSON, is named; nothing is started.
    let missing = daemon.token(&["start", "M-1", "@nope.json"]);
    assert_eq!(missing.code(), 1, "{missing}");
    assert!(
        missing
            .stderr
            .starts_with("error: CONTEXT_JSON: the file nope.json cannot be read: "),
        "{missing}"
    );
    let all = ["token", "start", "M-1", "-", "--url", &daemon.url];
    let empty = run_with_input(daemon.dir.path(), &all, "");
    assert_eq!(empty.code(), 1, "{empty}");
    assert!(
        empty
            .stderr
            .starts_with("error: CONTEXT_JSON from standard input is not valid JSON"),
        "{empty}"
    );
    daemon.get("/tokens/M-1").refused(404, "token_not_found");
}
