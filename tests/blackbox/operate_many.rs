//! Black-box: operating many tokens with the real binary. A filter over 100,000 tokens
//! (filled by SQL beside the running daemon) answers with the right count; a bulk
//! cancel of 5,000 tokens is previewed, refused without a terminal, then cancels
//! exactly those with the reason in each history; a second run of the same bulk fire
//! applies nothing twice; a walk whose connection breaks says how far it got, and the
//! same command again finishes it.

use crate::harness;

use std::time::{Duration, Instant};

use harness::{encoded, run, test_graph, Daemon, Finished, Setup};
use serde_json::{json, Value};

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

/// The same, checked to exit 0; its stdout.
fn ok(daemon: &Daemon, args: &[&str]) -> Finished {
    let finished = token(daemon, args);
    assert_eq!(finished.code(), 0, "{finished}");
    finished
}

/// How many tokens `GET /tokens?QUERY` says match in all.
fn total(daemon: &Daemon, query: &str) -> u64 {
    let reply = daemon.get(&format!("/tokens?{query}"));
    reply.expect(200);
    reply
        .header("x-total-count")
        .unwrap_or_else(|| panic!("no total: {reply}"))
        .parse()
        .unwrap()
}

/// Fill `tokens` with 100,000 rows beside the running daemon: token `F-i` moved
/// `i` minutes ago, in `review` when `i` is odd, paused when `i % 10 == 0`, the
/// customer ACME when `i % 3 == 0`.
fn fill(daemon: &Daemon) {
    let conn = rusqlite::Connection::open(&daemon.db).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 100000)
         INSERT INTO tokens (token, state, status, visit, context, entered_at)
         SELECT 'F-' || i,
                CASE i % 4 WHEN 0 THEN 'intake' WHEN 2 THEN 'closing' ELSE 'review' END,
                CASE WHEN i % 10 = 0 THEN 'paused' ELSE 'active' END,
                1,
                json_object('customer', CASE WHEN i % 3 = 0 THEN 'ACME' ELSE 'BETA' END,
                            'score', i % 5),
                ?1 - i * 60000000
         FROM n",
        [now],
    )
    .unwrap();
}

#[test]
fn a_filter_over_100000_tokens_answers_with_the_right_count() {
    let daemon = desk();
    fill(&daemon);
    // moved > 3,000,030 s is every token that moved over 50,000 minutes and 30 s
    // ago: i >= 50,001, while the test runs for less than 30 s.
    let filter = "state == 'review' and status == 'active' and moved > 3000030 \
                  and ctx['customer'] == 'ACME'";
    let expected = (0..100_000u64)
        .filter(|i| i % 2 == 1 && i % 10 != 0 && *i >= 50_001 && i % 3 == 0)
        .count() as u64;
    let began = Instant::now();
    let reply = daemon.get(&format!("/tokens?where={}&limit=5", encoded(filter)));
    let took = began.elapsed();
    let page = reply.expect(200);
    assert_eq!(page.as_array().map(Vec::len), Some(5));
    assert_eq!(
        reply.header("x-total-count"),
        Some(expected.to_string().as_str())
    );
    assert_eq!(page[0]["token"], "F-50001", "the most recently moved first");
    eprintln!("a filter over 100,000 tokens answered in {took:?} (a debug build)");
    // Wholly in SQL, the count reads no row; the state parameter and status too.
    assert_eq!(
        total(&daemon, "where=status%20%3D%3D%20%27paused%27"),
        10_000
    );
    assert_eq!(total(&daemon, "state=review&status=active"), 50_000);
    assert_eq!(total(&daemon, ""), 100_000);
    // The command line: the page on stdout, the total on stderr.
    let listed = ok(
        &daemon,
        &["list", "--where", filter, "--limit", "2", "--offset", "1"],
    );
    assert_eq!(
        listed.stdout,
        "F-50007: review, active\nF-50013: review, active\n"
    );
    assert_eq!(
        listed.stderr,
        format!("tokens 2 to 3 of {expected}; --limit and --offset show others\n")
    );
    let json: Value = serde_json::from_str(
        &ok(
            &daemon,
            &["list", "--where", filter, "--json", "--limit", "1"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(json["total"], expected);
    let refused = token(&daemon, &["list", "--where", "ctx['customer'] = 'ACME'"]);
    assert_eq!(refused.code(), 1, "{refused}");
    assert_eq!(
        refused.stderr,
        format!(
            "error: the control plane at {} refused (422 invalid_argument): filter \
             \"ctx['customer'] = 'ACME'\": not a valid expression: `=` is unexpected there\n",
            daemon.url
        )
    );
}

/// Start `count` tokens `PREFIX-i` with `context`, over a few connections at once.
fn start_many(daemon: &Daemon, prefix: &str, count: usize, context: Value) {
    std::thread::scope(|scope| {
        for lane in 0..4 {
            let context = context.clone();
            scope.spawn(move || {
                for i in (lane..count).step_by(4) {
                    let body = json!({"token": format!("{prefix}-{i}"), "context": context});
                    daemon.post("/tokens", &body).expect(201);
                }
            });
        }
    });
}

#[test]
fn a_bulk_cancel_of_5000_tokens_is_previewed_then_cancels_exactly_those() {
    let daemon = desk();
    start_many(&daemon, "A", 5000, json!({"customer": "ACME"}));
    start_many(&daemon, "B", 1000, json!({"customer": "BETA"}));
    let filter = "ctx['customer'] == 'ACME'";
    let preview = ok(&daemon, &["cancel", "--where", filter, "--dry-run"]);
    let lines: Vec<&str> = preview.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "5000 tokens match ctx['customer'] == 'ACME'; cancel would do:"
    );
    assert_eq!(
        lines.len(),
        5002,
        "a dry run says what it would do to each token: {preview}"
    );
    assert!(
        lines[1..5001]
            .iter()
            .all(|line| line.ends_with("intake, active -> cancels it in 'intake'")),
        "{preview}"
    );
    assert_eq!(lines[5001], "cancel would apply to 5000 tokens");
    // Without a terminal and without --yes: one sentence, nothing changed.
    let refused = token(
        &daemon,
        &["cancel", "--where", filter, "--reason", "incident 42"],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert_eq!(
        refused.stderr,
        "error: cancel would act on 5000 tokens: confirm at a terminal, or add --yes\n"
    );
    assert_eq!(refused.stdout, "");
    assert_eq!(total(&daemon, "status=cancelled"), 0);
    let began = Instant::now();
    let done = ok(
        &daemon,
        &[
            "cancel",
            "--where",
            filter,
            "--reason",
            "incident 42",
            "--yes",
        ],
    );
    eprintln!(
        "a bulk cancel of 5,000 tokens took {:?} (a debug build)",
        began.elapsed()
    );
    assert!(
        done.stdout
            .ends_with("cancelled 5000 tokens; 0 refused, 0 duplicate, 0 skipped\n"),
        "{done}"
    );
    let progress: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(progress.len(), 10, "a line for each run of 500: {done}");
    assert_eq!(
        progress[9],
        "cancel: 5000 of 5000 tokens (5000 applied, 0 refused, 0 duplicate, 0 skipped)"
    );
    assert_eq!(total(&daemon, "status=cancelled"), 5000);
    let acme_live = format!("where={}&status=active", encoded(filter));
    assert_eq!(total(&daemon, &acme_live), 0);
    assert_eq!(
        total(
            &daemon,
            "where=ctx%5B%27customer%27%5D%20%3D%3D%20%27BETA%27&status=active"
        ),
        1000
    );
    let history = daemon.get("/tokens/A-17/history").expect(200);
    let kinds: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["operator", "task_cancelled", "cancelled"]
    );
    assert_eq!(history[kinds.len() - 3]["data"]["reason"], "incident 42");

    // A bulk fire, twice: the second applies nothing.
    let fire = [
        "fire",
        "--where",
        "ctx['customer'] == 'BETA'",
        "submitted",
        "--reason",
        "the form was sent",
        "--yes",
    ];
    let first = ok(&daemon, &fire);
    assert!(
        first
            .stdout
            .ends_with("fired 1000 tokens; 0 refused, 0 duplicate, 0 skipped\n"),
        "{first}"
    );
    let second = ok(&daemon, &fire);
    assert!(
        second
            .stdout
            .ends_with("fired 0 tokens; 0 refused, 1000 duplicate, 0 skipped\n"),
        "{second}"
    );
    for id in ["B-0", "B-500", "B-999"] {
        let history = daemon.get(&format!("/tokens/{id}/history")).expect(200);
        let fired = history
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "submitted")
            .count();
        assert_eq!(fired, 1, "{id}: {history}");
    }
    assert_eq!(total(&daemon, "state=review"), 1000);
}

#[test]
fn a_bulk_walk_cut_mid_way_says_how_far_it_got_and_the_same_command_finishes_it() {
    let daemon = desk();
    start_many(&daemon, "C", 1200, json!({"customer": "CUT"}));
    let filter = "ctx['customer'] == 'CUT'";
    // The preview, the first page of 500, then the second page: applied by the
    // daemon, its answer lost.
    let relay = harness::relay_cutting(&daemon.url, |index, _| index == 3);
    let args = [
        "token",
        "pause",
        "--where",
        filter,
        "--reason",
        "incident 7",
        "--yes",
        "--url",
        &relay,
    ];
    let cut = run(daemon.dir.path(), &args);
    assert_eq!(cut.code(), 1, "{cut}");
    let last = cut.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: "), "{cut}");
    assert!(
        last.contains(
            "; pause stopped after 500 of 1200 tokens (500 applied, 0 refused, 0 duplicate, \
             0 skipped); the page it was sending got no answer and may have been applied in \
             part; run it again to finish"
        ),
        "{cut}"
    );
    assert_eq!(
        total(&daemon, "status=paused"),
        1000,
        "the lost page was applied"
    );
    let again = ok(
        &daemon,
        &[
            "pause",
            "--where",
            filter,
            "--reason",
            "incident 7",
            "--yes",
        ],
    );
    assert!(
        again
            .stdout
            .contains("paused 200 tokens; 1000 refused, 0 duplicate, 0 skipped"),
        "{again}"
    );
    assert_eq!(total(&daemon, "status=paused"), 1200);
    assert_eq!(total(&daemon, "status=active"), 0);
}
