//! Black-box: retention of ended tokens, on both backends. `serve --retain-ended 30d`
//! (with the dev clock moved 31 days) prunes a token that ended longer ago, with
//! every row it had, after writing its history into the `--archive` folder, counts
//! it in `/metrics`, and its id can be started again; `stateous token prune --where`
//! previews what it would do and refuse, asks as the other bulk actions do, refuses
//! live tokens, and archives before it deletes.

use crate::harness;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use harness::{eventually, run, test_graph, Daemon, Setup};
use serde_json::{json, Value};

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"customer": "ACME", "score": 1}}),
        )
        .expect(201);
}

/// How many rows of tokens, ledger, tasks, timers and memory name `token`.
fn rows_of(daemon: &Daemon, token: &str) -> Vec<i64> {
    ["tokens", "ledger", "tasks", "timers", "memory"]
        .iter()
        .map(|table| {
            daemon.count(&format!(
                "SELECT count(*) FROM {table} WHERE token = '{token}'"
            ))
        })
        .collect()
}

/// Every line of every archive file in `dir`, as JSON.
fn archived(dir: &Path) -> Vec<Value> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.to_string_lossy().ends_with(".jsonl.gz"),
            "only archive files: {}",
            path.display()
        );
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        lines.extend(text.lines().map(|line| serde_json::from_str(line).unwrap()));
    }
    lines
}

fn serve_retain_ended_prunes_an_old_ended_token_after_archiving_it() {
    let archive = tempfile::tempdir().unwrap();
    let folder = archive.path().display().to_string();
    let daemon = Setup::new(test_graph("desk/build/desk"))
        .args(&[
            "--dev-clock",
            "--retain-ended",
            "30d",
            "--retain-every",
            "200ms",
            "--archive",
            &folder,
        ])
        .start();
    start(&daemon, "OLD");
    daemon.post_empty("/tokens/OLD/cancel").expect(200);
    start(&daemon, "LIVE");
    // LIVE's rows come after OLD's (SQLite keeps a token holding a table's newest
    // row until a newer one exists).
    daemon
        .post("/tokens/LIVE/events/submitted", &json!({}))
        .expect(200);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(rows_of(&daemon, "OLD")[0], 1, "ended just now: kept");

    let moved = run(
        daemon.dir.path(),
        &["clock", "advance", "31d", "--url", &daemon.url],
    );
    assert_eq!(moved.code(), 0, "{moved}");
    eventually(
        Duration::from_secs(10),
        "OLD pruned",
        || daemon.report(),
        || rows_of(&daemon, "OLD") == vec![0; 5],
    );
    daemon.get("/tokens/OLD").refused(404, "token_not_found");
    assert_eq!(rows_of(&daemon, "LIVE")[0], 1, "a live token stays");
    eventually(
        Duration::from_secs(5),
        "the log line",
        || daemon.report(),
        || {
            daemon
                .stderr()
                .contains("retention pruned 1 token(s) that ended more than 30d ago")
        },
    );

    let lines = archived(archive.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["token"], "OLD");
    assert_eq!(lines[0]["status"], "cancelled");
    let kinds: Vec<&str> = lines[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"cancelled"), "{kinds:?}");

    let metrics = String::from_utf8(daemon.get("/metrics").body).unwrap();
    assert!(
        metrics
            .lines()
            .any(|line| line == "stateous_tokens_pruned_total 1"),
        "{metrics}"
    );
    // The id is free again: a new token, with a history of its own.
    start(&daemon, "OLD");
    let history = daemon.get("/tokens/OLD/history").expect(200);
    assert_eq!(history[0]["seq"], 1, "{history}");
}

fn token_prune_previews_asks_refuses_live_tokens_and_archives_first() {
    let daemon = Setup::new(test_graph("desk/build/desk")).start();
    for id in ["P-1", "P-2", "P-3"] {
        start(&daemon, id);
    }
    daemon.post_empty("/tokens/P-1/cancel").expect(200);
    daemon.post_empty("/tokens/P-2/cancel").expect(200);
    start(&daemon, "Z");

    let preview = daemon.token(&["prune", "--where", "token != 'Z'", "--dry-run"]);
    assert_eq!(preview.code(), 0, "{preview}");
    assert!(
        preview
            .stdout
            .starts_with("3 tokens match token != 'Z'; prune would do:"),
        "{preview}"
    );
    assert!(
        preview.stdout.contains(
            "P-3: intake, active -> refused (token_not_active): token 'P-3' is active; \
             only an ended token can be pruned"
        ),
        "{preview}"
    );

    let unasked = daemon.token(&["prune", "--where", "token != 'Z'"]);
    assert_eq!(unasked.code(), 1, "{unasked}");
    assert!(
        unasked
            .stderr
            .contains("error: prune would act on 3 tokens: confirm at a terminal, or add --yes"),
        "{unasked}"
    );
    assert_eq!(rows_of(&daemon, "P-1")[0], 1, "nothing was pruned");

    let done = daemon.token(&[
        "prune",
        "--where",
        "token != 'Z'",
        "--yes",
        "--archive",
        "kept",
    ]);
    // The folder must exist: refused, nothing pruned.
    assert_eq!(done.code(), 1, "{done}");
    assert!(done.stderr.contains("does not exist"), "{done}");
    assert_eq!(rows_of(&daemon, "P-1")[0], 1);

    std::fs::create_dir(daemon.dir.path().join("kept")).unwrap();
    let done = daemon.token(&[
        "prune",
        "--where",
        "token != 'Z'",
        "--yes",
        "--archive",
        "kept",
    ]);
    assert_eq!(done.code(), 0, "{done}");
    assert!(
        done.stdout
            .contains("pruned 2 tokens; 1 refused, 0 duplicate, 0 skipped"),
        "{done}"
    );
    assert!(
        done.stdout.contains("P-3: intake, active -> refused"),
        "{done}"
    );
    for gone in ["P-1", "P-2"] {
        assert_eq!(rows_of(&daemon, gone), vec![0; 5], "{gone}");
    }
    assert_eq!(rows_of(&daemon, "P-3")[0], 1);
    let tokens: Vec<Value> = archived(&daemon.dir.path().join("kept"))
        .into_iter()
        .map(|line| line["token"].clone())
        .collect();
    assert_eq!(tokens, [json!("P-1"), json!("P-2")]);
}

/// SQLite keeps a token that holds the newest ledger row: `token prune --archive`
/// says so for it, by reason with its id (and in `--json`), and leaves it out of
/// the archive, so that across runs each pruned token is archived once, by the
/// run that pruned it.
#[test]
fn a_prune_archives_only_what_it_removes_and_says_why_it_skipped() {
    harness::on(harness::Backend::Sqlite, || {
        let daemon = Setup::new(test_graph("desk/build/desk")).start();
        for token in ["S-1", "S-2"] {
            start(&daemon, token);
            daemon
                .post_empty(&format!("/tokens/{token}/cancel"))
                .expect(200);
        }
        std::fs::create_dir(daemon.dir.path().join("kept")).unwrap();
        let prune = [
            "prune",
            "--where",
            "token != 'Z'",
            "--yes",
            "--archive",
            "kept",
        ];
        let first = daemon.token(&prune);
        assert_eq!(first.code(), 0, "{first}");
        assert!(
            first
                .stdout
                .contains("pruned 1 token; 0 refused, 0 duplicate, 1 skipped\n  1 skipped (S-2): kept for now: it holds the newest row of the ledger"),
            "{first}"
        );
        let tokens = |daemon: &Daemon| -> Vec<Value> {
            let mut tokens: Vec<Value> = archived(&daemon.dir.path().join("kept"))
                .into_iter()
                .map(|line| line["token"].clone())
                .collect();
            tokens.sort_by_key(|token| token.to_string());
            tokens
        };
        assert_eq!(tokens(&daemon), [json!("S-1")], "only what was pruned");
        // Once a newer row exists, S-2 goes, and is archived by that run alone.
        start(&daemon, "S-3");
        let json = daemon.token(&[
            "prune",
            "--where",
            "token == 'S-2'",
            "--yes",
            "--archive",
            "kept",
            "--json",
        ]);
        assert_eq!(json.code(), 0, "{json}");
        let answer: Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(answer["applied"], 1, "{json}");
        assert_eq!(tokens(&daemon), [json!("S-1"), json!("S-2")]);
        // A skip is in the JSON answer with its token and reason.
        daemon.post_empty("/tokens/S-3/cancel").expect(200);
        let json = daemon.token(&[
            "prune",
            "--where",
            "token == 'S-3'",
            "--yes",
            "--archive",
            "kept",
            "--json",
        ]);
        let answer: Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(answer["skipped"], 1, "{json}");
        assert_eq!(answer["outcomes"][0]["token"], "S-3", "{json}");
        assert!(
            answer["outcomes"][0]["detail"]
                .as_str()
                .unwrap()
                .starts_with("kept for now: it holds the newest row"),
            "{json}"
        );
        assert_eq!(tokens(&daemon), [json!("S-1"), json!("S-2")]);
    });
}

/// Retention's log names the tokens a pass left and why, once: SQLite keeps a
/// token that holds the newest ledger row, pass after pass, until a newer row
/// exists; then a pass prunes it.
#[test]
fn retention_logs_the_tokens_it_left_and_why_once() {
    harness::on(harness::Backend::Sqlite, || {
        let daemon = Setup::new(test_graph("desk/build/desk"))
            .args(&[
                "--dev-clock",
                "--retain-ended",
                "30d",
                "--retain-every",
                "200ms",
            ])
            .start();
        start(&daemon, "OLD");
        daemon.post_empty("/tokens/OLD/cancel").expect(200);
        let moved = run(
            daemon.dir.path(),
            &["clock", "advance", "31d", "--url", &daemon.url],
        );
        assert_eq!(moved.code(), 0, "{moved}");
        let left = "retention pruned no token that ended more than 30d ago; 1 left (OLD): \
                    kept for now: it holds the newest row of the ledger";
        eventually(
            Duration::from_secs(10),
            "the pass that left OLD logged",
            || daemon.report(),
            || daemon.stderr().contains(left),
        );
        // Several passes later, the same tokens left are not logged again.
        std::thread::sleep(Duration::from_millis(1000));
        assert_eq!(
            daemon.stderr().matches(left).count(),
            1,
            "{}",
            daemon.report()
        );
        assert_eq!(rows_of(&daemon, "OLD")[0], 1, "kept for now");
        start(&daemon, "NEW");
        eventually(
            Duration::from_secs(10),
            "OLD pruned and logged",
            || daemon.report(),
            || {
                daemon
                    .stderr()
                    .contains("retention pruned 1 token(s) that ended more than 30d ago\n")
            },
        );
        assert_eq!(rows_of(&daemon, "OLD"), vec![0; 5]);
    });
}

both!(
    serve_retain_ended_prunes_an_old_ended_token_after_archiving_it,
    token_prune_previews_asks_refuses_live_tokens_and_archives_first,
);
