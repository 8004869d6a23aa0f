//! Black-box, on both backends: a bulk preview counts what the action would do to
//! every match and what it would refuse, by reason (a dry run printed `115 tokens
//! match ... fire would do:` and the real run then refused 15 that had ended), and
//! `pause`, `resume`, `cancel`, `fire` and `migrate` leave ended tokens out of the
//! filter unless `--include-ended` (or a filter that names a status) takes them
//! in; the real run does and says what its preview did.

use crate::harness;

use harness::{test_graph, Daemon, Finished, Setup};
use serde_json::json;

/// `stateous token ARGS`, checked to exit 0.
fn token(daemon: &Daemon, args: &[&str]) -> Finished {
    let finished = daemon.token(args);
    assert_eq!(finished.code(), 0, "{finished}");
    finished
}

/// The last line of stdout: the preview's counts.
fn counts(finished: &Finished) -> String {
    finished.stdout.lines().last().unwrap_or("").to_string()
}

/// A-1 .. A-6 for ACME: A-1 and A-2 cancelled, A-3 and A-4 in `review` (they took
/// `submitted` already), A-5 and A-6 in `intake`.
fn six() -> Daemon {
    let daemon = Setup::new(test_graph("desk/build/desk")).start();
    for i in 1..=6 {
        let body = json!({"token": format!("A-{i}"), "context": {"customer": "ACME"}});
        daemon.post("/tokens", &body).expect(201);
    }
    for id in ["A-1", "A-2"] {
        daemon
            .post_empty(&format!("/tokens/{id}/cancel"))
            .expect(200);
    }
    for id in ["A-3", "A-4"] {
        daemon
            .post(&format!("/tokens/{id}/events/submitted"), &json!({}))
            .expect(200);
    }
    daemon
}

fn a_preview_counts_what_it_would_do_and_refuse_and_leaves_ended_tokens_out() {
    let daemon = six();
    let filter = "ctx['customer'] == 'ACME'";
    let preview = token(
        &daemon,
        &["fire", "submitted", "--where", filter, "--dry-run"],
    );
    assert!(
        preview
            .stdout
            .starts_with("4 tokens match ctx['customer'] == 'ACME'; fire would do:"),
        "{preview}"
    );
    assert_eq!(
        counts(&preview),
        "fire would apply to 2 tokens and refuse 2: 2 event_not_allowed (active); 2 ended \
         tokens left out (include them with --include-ended)",
        "{preview}"
    );

    let every = token(
        &daemon,
        &[
            "fire",
            "submitted",
            "--where",
            filter,
            "--dry-run",
            "--include-ended",
        ],
    );
    assert!(every.stdout.starts_with("6 tokens match"), "{every}");
    assert_eq!(
        counts(&every),
        "fire would apply to 2 tokens and refuse 4: 2 event_not_allowed (active), 2 \
         token_not_active (cancelled)",
        "{every}"
    );

    // A filter that names a status chooses the statuses itself.
    let cancelled = token(
        &daemon,
        &["cancel", "--where", "status == 'cancelled'", "--dry-run"],
    );
    assert_eq!(
        counts(&cancelled),
        "cancel would apply to 0 tokens and refuse 2: 2 token_not_active (cancelled)",
        "{cancelled}"
    );

    // The real run does what the preview counted: the ended ones are not met.
    let run = token(
        &daemon,
        &["cancel", "--where", filter, "--reason", "r", "--yes"],
    );
    assert!(
        run.stdout
            .contains("cancelled 4 tokens; 0 refused, 0 duplicate, 0 skipped"),
        "{run}"
    );

    // Over HTTP the same counts come as fields.
    let body = json!({"action": "cancel", "where": "true", "dry_run": true,
                      "include_ended": true});
    let answer = daemon.post("/tokens/bulk", &body).expect(200);
    assert_eq!(answer["count"], 6, "{answer}");
    assert_eq!(answer["refused"], 6, "{answer}");
    assert_eq!(
        answer["refusals"][0]["code"], "token_not_active",
        "{answer}"
    );
    assert_eq!(answer["refusals"][0]["count"], 6, "{answer}");
    let body = json!({"action": "cancel", "where": "true", "dry_run": true});
    let answer = daemon.post("/tokens/bulk", &body).expect(200);
    assert_eq!(answer["count"], 0, "{answer}");
    assert_eq!(answer["left_out"], 6, "{answer}");
}

/// A dry run shows what the action would do to each match, past the first 20.
fn a_dry_run_prints_what_it_would_do_to_every_token() {
    let daemon = Setup::new(test_graph("desk/build/desk")).start();
    for i in 1..=25 {
        let body = json!({"token": format!("M-{i:02}"), "context": {"customer": "ACME"}});
        daemon.post("/tokens", &body).expect(201);
    }
    let filter = "ctx['customer'] == 'ACME'";
    let text = token(&daemon, &["pause", "--where", filter, "--dry-run"]);
    for i in 1..=25 {
        let id = format!("M-{i:02}");
        assert!(
            text.stdout
                .lines()
                .any(|line| line.trim_start().starts_with(&id)),
            "{id}: {text}"
        );
    }
    assert!(!text.stdout.contains("more"), "{text}");
    let jsonl = token(
        &daemon,
        &["pause", "--where", filter, "--dry-run", "--jsonl"],
    );
    let lines: Vec<serde_json::Value> = jsonl
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 25, "{jsonl}");
    assert!(lines.iter().all(|o| o["outcome"] == "applied"), "{jsonl}");
    let paused = daemon.get("/tokens?status=paused").expect(200);
    assert_eq!(
        paused.as_array().map(Vec::len),
        Some(0),
        "a dry run changes nothing"
    );
}

/// The real run says how many ended tokens it left out, in the preview's words:
/// when nothing else matched (it said only `no token matches the filter; nothing
/// to do`), and in its summary when some did.
fn a_run_says_how_many_ended_tokens_it_left_out_as_its_preview_does() {
    let daemon = six();
    let ended = "token in ['A-1', 'A-2']";
    let hint = "(2 ended tokens left out; include them with --include-ended)";
    let preview = token(&daemon, &["cancel", "--where", ended, "--dry-run"]);
    assert_eq!(
        preview.stdout,
        format!("no token matches {ended}; cancel would do nothing {hint}\n"),
        "{preview}"
    );
    let run = token(
        &daemon,
        &["cancel", "--where", ended, "--reason", "r", "--yes"],
    );
    assert_eq!(
        run.stderr,
        format!("no token matches the filter; nothing to do {hint}\n"),
        "{run}"
    );
    assert_eq!(run.stdout, "", "{run}");

    // Some matched: the summary ends as the preview's count does.
    let filter = "ctx['customer'] == 'ACME'";
    let left_out = "; 2 ended tokens left out (include them with --include-ended)";
    let preview = token(&daemon, &["pause", "--where", filter, "--dry-run"]);
    assert_eq!(
        counts(&preview),
        format!("pause would apply to 4 tokens{left_out}"),
        "{preview}"
    );
    let run = token(
        &daemon,
        &["pause", "--where", filter, "--reason", "r", "--yes"],
    );
    assert_eq!(
        counts(&run),
        format!("paused 4 tokens; 0 refused, 0 duplicate, 0 skipped{left_out}"),
        "{run}"
    );
    // With --json, the run's one object counts them too.
    let json = token(
        &daemon,
        &[
            "resume", "--where", filter, "--reason", "r", "--yes", "--json",
        ],
    );
    let answer: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(answer["applied"], 4, "{json}");
    assert_eq!(answer["left_out"], 2, "{json}");
}

/// A bulk fire run again after some of its tokens ended: each token that took
/// its key answers `duplicate`, as the single fire with that key does, and the
/// preview says so too (it said `refuse 1: 1 token_not_active (cancelled)` and
/// the run then counted the token duplicate).
fn a_bulk_fire_previews_a_taken_key_as_duplicate_as_the_run_and_a_single_fire_answer() {
    let daemon = six();
    let both = "token in ['A-5', 'A-6']";
    let fire = ["fire", "submitted", "--where", both, "--include-ended"];
    let first = token(&daemon, &[&fire[..], &["--reason", "r", "--yes"]].concat());
    assert!(
        first
            .stdout
            .contains("fired 2 tokens; 0 refused, 0 duplicate, 0 skipped"),
        "{first}"
    );
    daemon.post_empty("/tokens/A-5/cancel").expect(200);

    // The single fire with A-5's key answers duplicate, though A-5 has ended.
    let key = stateous_shared::bulk::bulk_key(None, "submitted", None, "A-5");
    let headers = [
        ("content-type", "application/json"),
        ("Idempotency-Key", &key),
    ];
    let single = daemon
        .request("POST", "/tokens/A-5/events/submitted", &headers, b"{}")
        .expect(200);
    assert_eq!(single["duplicate"], true, "{single}");
    assert_eq!(single["token"]["status"], "cancelled", "{single}");

    let preview = token(&daemon, &[&fire[..], &["--dry-run"]].concat());
    assert_eq!(
        counts(&preview),
        "fire would apply to 0 tokens (2 already done)",
        "{preview}"
    );
    assert!(
        preview
            .stdout
            .contains("A-5: review, cancelled -> duplicate"),
        "{preview}"
    );
    let again = token(&daemon, &[&fire[..], &["--reason", "r", "--yes"]].concat());
    assert_eq!(
        counts(&again),
        "fired 0 tokens; 0 refused, 2 duplicate, 0 skipped",
        "{again}"
    );
}

/// `migrate` leaves ended tokens out as `pause`, `resume`, `cancel` and `fire`
/// do (its sample was mostly `refused (token_not_active)`), and `--include-ended`
/// takes them in.
fn a_migrate_leaves_ended_tokens_out_unless_asked() {
    let daemon = six();
    let filter = "ctx['customer'] == 'ACME'";
    let left_out = "; 2 ended tokens left out (include them with --include-ended)";
    let preview = token(&daemon, &["migrate", "--where", filter, "--dry-run"]);
    assert!(preview.stdout.starts_with("4 tokens match"), "{preview}");
    assert_eq!(
        counts(&preview),
        format!("migrate would apply to 0 tokens (4 already done){left_out}"),
        "{preview}"
    );
    let every = token(
        &daemon,
        &["migrate", "--where", filter, "--dry-run", "--include-ended"],
    );
    assert_eq!(
        counts(&every),
        "migrate would apply to 0 tokens (4 already done) and refuse 2: 2 \
         token_not_active (cancelled)",
        "{every}"
    );
    let run = token(
        &daemon,
        &["migrate", "--where", filter, "--reason", "r", "--yes"],
    );
    assert_eq!(
        counts(&run),
        format!("migrated 0 tokens; 0 refused, 4 duplicate, 0 skipped{left_out}"),
        "{run}"
    );
    let body = json!({"action": "migrate", "where": "true", "dry_run": true});
    let answer = daemon.post("/tokens/bulk", &body).expect(200);
    assert_eq!(answer["count"], 4, "{answer}");
    assert_eq!(answer["left_out"], 2, "{answer}");
}

both!(
    a_dry_run_prints_what_it_would_do_to_every_token,
    a_preview_counts_what_it_would_do_and_refuse_and_leaves_ended_tokens_out,
    a_run_says_how_many_ended_tokens_it_left_out_as_its_preview_does,
    a_bulk_fire_previews_a_taken_key_as_duplicate_as_the_run_and_a_single_fire_answer,
    a_migrate_leaves_ended_tokens_out_unless_asked,
);
