//! Black-box: an operator's mistakes with many tokens, found by a tryout with
//! 20,000 tokens. A page asked for past the last match says how many match (it
//! printed `tokens 30001 to 30000 of 20000`).

mod harness;

use harness::{run, test_graph, Daemon, Finished, Setup};
use serde_json::json;

fn desk() -> Daemon {
    Setup::new(test_graph("desk/build/desk")).start()
}

/// `stateous token ARGS --url URL` in the daemon's folder, without a terminal.
fn token(daemon: &Daemon, args: &[&str]) -> Finished {
    let mut all = vec!["token"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    run(daemon.dir.path(), &all)
}

fn start(daemon: &Daemon, ids: &[&str]) {
    for id in ids {
        let body = json!({"token": id, "context": {"customer": "ACME"}});
        daemon.post("/tokens", &body).expect(201);
    }
}

#[test]
fn a_page_past_the_last_match_says_how_many_match_instead_of_a_backwards_range() {
    let daemon = desk();
    start(&daemon, &["C-1", "C-2", "C-3"]);
    let past = token(&daemon, &["list", "--offset", "5"]);
    assert_eq!(past.code(), 0, "{past}");
    assert_eq!(past.stdout, "", "{past}");
    assert_eq!(
        past.stderr, "no token after the first 5: 3 tokens match; a smaller --offset shows them\n",
        "{past}"
    );
    let at_the_end = token(&daemon, &["list", "--offset", "3", "--jsonl"]);
    assert_eq!(at_the_end.code(), 0, "{at_the_end}");
    assert_eq!(
        at_the_end.stderr,
        "no token after the first 3: 3 tokens match; a smaller --offset shows them\n",
        "{at_the_end}"
    );
    // A page that holds some is counted as before.
    let last = token(&daemon, &["list", "--offset", "2"]);
    assert_eq!(
        last.stderr, "tokens 3 to 3 of 3; --limit and --offset show others\n",
        "{last}"
    );
    assert_eq!(last.stdout.lines().count(), 1, "{last}");
}
