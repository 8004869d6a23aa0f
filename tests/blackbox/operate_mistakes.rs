//! Black-box: an operator's mistakes with many tokens, found by a tryout with
//! 20,000 tokens. A page asked for past the last match says how many match (it
//! printed `tokens 30001 to 30000 of 20000`), and a listing that matches
//! nothing writes no line of data on stdout; a bulk fire of an event that no
//! workflow has is refused whole, and one that a token's own workflow lacks leaves
//! nothing in that token's history (each token got an `operator` and a refused
//! entry, two ledger rows per token for a typo).
//!
//! A second tryout: `fire --where` without its event, a payload that breaks the
//! event's schema, keys a bulk body does not take, negative flags, Ctrl-D at the
//! count question, and a filter naming a state that no workflow has.

use crate::harness;

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

fn start(daemon: &Daemon, ids: &[&str]) {
    for id in ids {
        let body = json!({"token": id, "context": {"customer": "ACME"}});
        daemon.post("/tokens", &body).expect(201);
    }
}

/// Every entry of each token's history, to compare before and after.
fn histories(daemon: &Daemon, ids: &[&str]) -> Vec<Value> {
    ids.iter()
        .map(|id| daemon.get(&format!("/tokens/{id}/history")).expect(200))
        .collect()
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

/// A script reads `token list` line by line as token lines: "no token matches"
/// on stdout was read as a token named "no token matches".
#[test]
fn a_listing_that_matches_nothing_prints_no_line_of_data() {
    let daemon = desk();
    start(&daemon, &["C-1"]);
    for extra in [&[][..], &["--jsonl"][..]] {
        let mut args = vec!["list", "--where", "state == 'closing'"];
        args.extend_from_slice(extra);
        let none = token(&daemon, &args);
        assert_eq!(none.code(), 0, "{none}");
        assert_eq!(none.stdout, "", "{none}");
        assert_eq!(none.stderr, "no token matches\n", "{none}");
    }
}

#[test]
fn a_bulk_fire_of_an_event_no_workflow_has_is_refused_whole_and_changes_nothing() {
    let daemon = desk();
    let ids = ["C-1", "C-2", "C-3"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    for extra in [&["--yes"][..], &["--dry-run"][..]] {
        let mut args = vec![
            "fire",
            "--where",
            "status == 'active'",
            "submited",
            "--reason",
            "a typo",
        ];
        args.extend_from_slice(extra);
        let refused = token(&daemon, &args);
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(
            refused.stderr,
            format!(
                "error: the control plane at {} refused (422 invalid_argument): no workflow \
                 of the served graph has an event 'submited'\n",
                daemon.url
            ),
            "{refused}"
        );
        assert_eq!(refused.stdout, "", "{refused}");
    }
    // A retry into a state that no workflow has, the same.
    let retry = daemon.post(
        "/tokens/bulk",
        &json!({"action": "retry", "where": "true", "state": "nowhere", "reason": "x"}),
    );
    let sentence = retry.refused(422, "invalid_argument");
    assert_eq!(
        sentence,
        "no workflow of the served graph has a state 'nowhere' to enter"
    );
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
}

#[test]
fn a_bulk_fire_leaves_no_entry_in_a_token_whose_own_workflow_lacks_the_event() {
    let daemon = desk();
    let ids = ["C-1", "C-2", "C-3"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    // `ok` is an event of the child workflows, not of desk's own.
    let fired = token(
        &daemon,
        &[
            "fire",
            "--where",
            "status == 'active'",
            "ok",
            "--reason",
            "wrong tokens",
            "--yes",
        ],
    );
    assert_eq!(fired.code(), 0, "{fired}");
    assert!(
        fired
            .stdout
            .contains("fired 0 tokens; 3 refused, 0 duplicate, 0 skipped\n"),
        "{fired}"
    );
    assert!(
        fired
            .stdout
            .contains("-> refused (event_not_allowed): the workflow 'desk' has no event 'ok'"),
        "{fired}"
    );
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
}

/// With --where the first argument of `token fire` is the event: without it, the
/// error said the argument `<ID>` was missing.
#[test]
fn a_bulk_fire_without_an_event_says_the_event_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    for filter in [&["--where", "true"][..], &["--where=true"][..]] {
        let mut args = vec!["token", "fire"];
        args.extend_from_slice(filter);
        args.extend_from_slice(&["--reason", "R", "--yes"]);
        let missing = run(dir.path(), &args);
        assert_eq!(missing.code(), 1, "{missing}");
        assert_eq!(missing.stdout, "", "{missing}");
        assert_eq!(
            missing.stderr,
            "error: with --where, give the EVENT to fire on each token the filter matches \
             (see 'stateous token fire --help')\n",
            "{missing}"
        );
    }
    // Without --where the token's id is what is missing, as before.
    let single = run(dir.path(), &["token", "fire"]);
    assert_eq!(single.code(), 1, "{single}");
    assert!(single.stderr.contains("<ID>"), "{single}");
}

/// A payload that breaks the event's schema in every workflow that has the event
/// is refused once, before any token is touched (it was refused token by token,
/// with exit code 0).
#[test]
fn a_bulk_fire_whose_payload_breaks_the_schema_is_refused_whole() {
    let daemon = desk();
    let ids = ["C-1", "C-2", "C-3"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    let cases = [
        (
            "reviewed",
            "{\"ok\": \"yes\"}",
            "reviewed: ok: 'yes' is not of type 'boolean'",
        ),
        (
            "reviewed",
            "{}",
            "reviewed: Verdict: 'ok' is a required property",
        ),
        (
            "submitted",
            "{\"a\": 1}",
            "submitted: 'submitted' carries no payload",
        ),
    ];
    for (event, payload, sentence) in cases {
        for extra in [&["--yes"][..], &["--dry-run"][..]] {
            let mut args = vec!["fire", "--where", "true", event, payload, "--reason", "r"];
            args.extend_from_slice(extra);
            let refused = token(&daemon, &args);
            assert_eq!(refused.code(), 1, "{refused}");
            assert_eq!(
                refused.stderr,
                format!(
                    "error: the control plane at {} refused (422 invalid_payload): {sentence}\n",
                    daemon.url
                ),
                "{refused}"
            );
            assert_eq!(refused.stdout, "", "{refused}");
        }
    }
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
    // A payload the schema takes goes on to the tokens, as before.
    let fired = token(
        &daemon,
        &[
            "fire",
            "--where",
            "true",
            "reviewed",
            "{\"ok\": true}",
            "--reason",
            "r",
            "--yes",
        ],
    );
    assert_eq!(fired.code(), 0, "{fired}");
}

/// `POST /tokens/bulk` took a key it does not know as if it were absent (a
/// misspelt `"dryrun": true` ran the action), and refused `"limit": "5"` as
/// `invalid_argument` where its other wrong shapes are `invalid_body`.
#[test]
fn a_bulk_body_with_a_key_it_does_not_take_or_a_limit_of_the_wrong_type_is_refused() {
    let daemon = desk();
    let ids = ["C-1", "C-2"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    let misspelt = daemon.post(
        "/tokens/bulk",
        &json!({"action": "cancel", "where": "true", "reason": "r", "dryrun": true}),
    );
    let sentence = misspelt.refused(422, "invalid_body");
    assert!(sentence.contains("'dryrun'"), "{sentence}");
    let retry = daemon.post("/tokens/C-1/retry", &json!({"stat": "intake"}));
    let sentence = retry.refused(422, "invalid_body");
    assert!(sentence.contains("'stat'"), "{sentence}");
    for limit in [json!("5"), json!(2.5), json!(true)] {
        let wrong = daemon.post(
            "/tokens/bulk",
            &json!({"action": "cancel", "where": "true", "reason": "r", "limit": limit}),
        );
        assert_eq!(
            wrong.refused(422, "invalid_body"),
            "'limit' must be a whole number from 1 to 1000"
        );
    }
    // A whole number out of range is a value out of range, as before.
    let over = daemon.post(
        "/tokens/bulk",
        &json!({"action": "cancel", "where": "true", "reason": "r", "limit": 1001}),
    );
    over.refused(422, "invalid_argument");
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
}

/// A negative --offset or --limit got clap's "unexpected argument '-1' found".
#[test]
fn a_negative_offset_or_limit_is_refused_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    for (args, expected) in [
        (
            &["--offset", "-1"][..],
            "error: --offset must be a whole number, 0 or more, not '-1'\n",
        ),
        (
            &["--offset=-1"][..],
            "error: --offset must be a whole number, 0 or more, not '-1'\n",
        ),
        (
            &["--offset", "x"][..],
            "error: --offset must be a whole number, 0 or more, not 'x'\n",
        ),
        (
            &["--limit", "-1"][..],
            "error: --limit must be a whole number from 1 to 1000, not '-1'\n",
        ),
        (
            &["--limit", "0"][..],
            "error: --limit must be a whole number from 1 to 1000, not '0'\n",
        ),
    ] {
        let mut all = vec!["token", "list"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", "http://127.0.0.1:9"]);
        let refused = run(dir.path(), &all);
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(refused.stdout, "", "{refused}");
        assert_eq!(refused.stderr, expected, "{refused}");
    }
}

/// Ctrl-D at the question ends the question's line before the error (the error
/// was printed on the question's line), and nothing is changed.
#[test]
fn ctrl_d_at_the_count_question_ends_its_line_before_the_error() {
    if !harness::tmux::have_tmux() {
        return;
    }
    let daemon = desk();
    let ids = ["C-1", "C-2"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    let command = format!(
        "{} token cancel --where true --reason r --url {}; echo \"exit $?\"; sleep 60",
        harness::binary(),
        daemon.url
    );
    let tmux = harness::tmux::Tmux::start("ctrl-d", &format!("sh -c '{command}'"));
    tmux.wait_for("the question", |s| s.contains("anything else to stop:"));
    tmux.keys("C-d");
    let screen = tmux.wait_for("the exit code", |s| s.contains("exit 1"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let asked = lines
        .iter()
        .position(|l| l.ends_with("Type 2 to cancel them, anything else to stop:"))
        .unwrap_or_else(|| panic!("the question on a line of its own:\n{screen}"));
    assert_eq!(
        lines.get(asked + 1).copied(),
        Some("error: nothing was changed: the answer was not 2"),
        "{screen}"
    );
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
}

/// A filter or `--state` naming a state that no workflow has (a typo) matched
/// nothing without a word; a bulk action over it did nothing. Refused now, with
/// the unknown name, on both backends.
fn a_filter_naming_a_state_no_workflow_has_is_refused() {
    let daemon = desk();
    let ids = ["C-1", "C-2"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    let sentence = |state: &str| {
        format!(
            "no workflow of the served graph has a state '{state}' (its states: check, \
             closing, intake, review, sign)"
        )
    };
    for query in [
        format!("where={}", encoded("state == 'reveiw'")),
        format!(
            "where={}",
            encoded("status == 'active' and state in ['intake', 'nosuch']")
        ),
        format!("where={}", encoded("not state != 'reveiw'")),
        "state=reveiw".to_string(),
    ] {
        let refused = daemon.get(&format!("/tokens?{query}"));
        let said = refused.refused(422, "invalid_argument");
        assert!(
            said == sentence("reveiw") || said == sentence("nosuch"),
            "{said}"
        );
    }
    let refused = |finished: Finished, state: &str| {
        assert_eq!(finished.code(), 1, "{finished}");
        assert_eq!(finished.stdout, "", "{finished}");
        assert_eq!(
            finished.stderr,
            format!(
                "error: the control plane at {} refused (422 invalid_argument): {}\n",
                daemon.url,
                sentence(state)
            ),
            "{finished}"
        );
    };
    refused(
        token(&daemon, &["list", "--where", "state == 'reveiw'"]),
        "reveiw",
    );
    refused(token(&daemon, &["list", "--state", "nosuch"]), "nosuch");
    for extra in [&["--yes"][..], &["--dry-run"][..]] {
        let mut args = vec!["cancel", "--where", "state == 'reveiw'", "--reason", "r"];
        args.extend_from_slice(extra);
        refused(token(&daemon, &args), "reveiw");
    }
    // Without --reason too: what the control plane refuses is said first, not
    // the missing reason (one mistake at a time, the one that needs fixing).
    for args in [
        &["cancel", "--where", "state == 'reveiw'", "--yes"][..],
        &["priority", "5", "--where", "state == 'reveiw'"][..],
    ] {
        refused(token(&daemon, args), "reveiw");
    }
    let bulk = daemon.post(
        "/tokens/bulk",
        &json!({"action": "pause", "tokens": ["C-1"], "where": "state == 'x'", "reason": "r"}),
    );
    assert_eq!(bulk.refused(422, "invalid_argument"), sentence("x"));
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
    // A state of a child workflow, START, and a state with no token are names
    // the graph has: they match as before.
    for filter in [
        "state == 'check'",
        "state == '__start__'",
        "state != 'closing'",
    ] {
        let listed = daemon.get(&format!("/tokens?where={}", encoded(filter)));
        listed.expect(200);
    }
    let none = token(&daemon, &["list", "--state", "closing"]);
    assert_eq!(none.code(), 0, "{none}");
    assert_eq!(none.stderr, "no token matches\n", "{none}");
}

both!(a_filter_naming_a_state_no_workflow_has_is_refused);

/// A third tryout: `tokens` naming one id twice acted on it twice (the second
/// outcome read the status the first had just set) and a dry run counted it twice.
/// Each id is taken once, where it first occurs, on both backends.
fn a_token_listed_twice_in_a_bulk_action_is_acted_on_once() {
    let daemon = desk();
    start(&daemon, &["B-1", "B-3"]);
    let body = |dry_run: bool| {
        json!({"action": "pause", "tokens": ["B-3", "B-1", "B-3"], "reason": "x",
               "dry_run": dry_run})
    };
    let tokens = |answer: &Value, list: &str| -> Vec<Value> {
        answer[list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| o["token"].clone())
            .collect()
    };
    let preview = daemon.post("/tokens/bulk", &body(true)).expect(200);
    assert_eq!(preview["count"], 2, "{preview}");
    assert_eq!(tokens(&preview, "sample"), [json!("B-3"), json!("B-1")]);
    let ran = daemon.post("/tokens/bulk", &body(false)).expect(200);
    assert_eq!(ran["count"], 2, "{ran}");
    assert_eq!(ran["applied"], 2, "{ran}");
    assert_eq!(ran["refused"], 0, "{ran}");
    assert_eq!(tokens(&ran, "outcomes"), [json!("B-3"), json!("B-1")]);
    let history = daemon.get("/tokens/B-3/history").expect(200);
    let paused = history
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "paused")
        .count();
    assert_eq!(paused, 1, "{history}");
}

both!(a_token_listed_twice_in_a_bulk_action_is_acted_on_once);

/// `workflow == 'nope'` matched nothing without a word, while a state no workflow
/// has is refused: a workflow the graph does not have is refused the same way in
/// `GET /tokens`, `token list` and bulk actions, on both backends.
fn a_filter_naming_a_workflow_the_graph_lacks_is_refused() {
    let daemon = desk();
    let ids = ["C-1", "C-2"];
    start(&daemon, &ids);
    let before = histories(&daemon, &ids);
    let sentence = |name: &str| {
        format!("the served graph has no workflow '{name}' (its workflows: desk, finance, legal)")
    };
    for (filter, name) in [
        ("workflow == 'nope'", "nope"),
        ("workflow != 'nope'", "nope"),
        (
            "'desk' == workflow and workflow in ['legal', 'nada']",
            "nada",
        ),
        ("not workflow not in ['nope']", "nope"),
    ] {
        let refused = daemon.get(&format!("/tokens?where={}", encoded(filter)));
        assert_eq!(refused.refused(422, "invalid_argument"), sentence(name));
    }
    let listed = token(&daemon, &["list", "--where", "workflow == 'nope'"]);
    assert_eq!(listed.code(), 1, "{listed}");
    assert_eq!(listed.stdout, "", "{listed}");
    assert_eq!(
        listed.stderr,
        format!(
            "error: the control plane at {} refused (422 invalid_argument): {}\n",
            daemon.url,
            sentence("nope")
        ),
        "{listed}"
    );
    for extra in [&["--yes"][..], &["--dry-run"][..]] {
        let mut args = vec!["cancel", "--where", "workflow == 'nope'", "--reason", "r"];
        args.extend_from_slice(extra);
        let refused = token(&daemon, &args);
        assert_eq!(refused.code(), 1, "{refused}");
        assert!(
            refused.stderr.ends_with(&format!("{}\n", sentence("nope"))),
            "{refused}"
        );
    }
    let bulk = daemon.post(
        "/tokens/bulk",
        &json!({"action": "pause", "tokens": ["C-1"], "where": "workflow == 'x'", "reason": "r"}),
    );
    assert_eq!(bulk.refused(422, "invalid_argument"), sentence("x"));
    assert_eq!(histories(&daemon, &ids), before, "nothing was written");
    // The main workflow and a child workflow are names the graph has.
    for filter in ["workflow == 'desk'", "workflow in ['legal', 'finance']"] {
        daemon
            .get(&format!("/tokens?where={}", encoded(filter)))
            .expect(200);
    }
    let mains = daemon.get(&format!("/tokens?where={}", encoded("workflow == 'desk'")));
    assert_eq!(mains.expect(200).as_array().map(Vec::len), Some(2));
}

both!(a_filter_naming_a_workflow_the_graph_lacks_is_refused);

/// A bulk action that matches nothing keeps stdout to the format asked for: with
/// `--json` the answer (a count of 0), with `--jsonl` no line, in text nothing;
/// the note goes to stderr, as the listing's does. A dry run that matches nothing
/// says so, instead of ending on "would do:" with nothing after it. (A tryout:
/// `--json` and `--jsonl` printed the note as plain text on stdout.)
#[test]
fn a_bulk_action_that_matches_nothing_keeps_stdout_to_its_format() {
    let daemon = desk();
    start(&daemon, &["C-1"]);
    let before = histories(&daemon, &["C-1"]);
    let none = [
        "cancel",
        "--where",
        "status == 'failed'",
        "--reason",
        "r",
        "--yes",
    ];
    let note = "no token matches the filter; nothing to do\n";
    let json = token(&daemon, &[&none[..], &["--json"]].concat());
    assert_eq!(json.code(), 0, "{json}");
    let answer: Value = serde_json::from_str(&json.stdout).expect("--json prints JSON");
    assert_eq!(answer["count"], 0, "{json}");
    assert_eq!(json.stderr, note, "{json}");
    for extra in [&["--jsonl"][..], &[][..]] {
        let finished = token(&daemon, &[&none[..], extra].concat());
        assert_eq!(finished.code(), 0, "{finished}");
        assert_eq!(finished.stdout, "", "{finished}");
        assert_eq!(finished.stderr, note, "{finished}");
    }
    let dry = token(
        &daemon,
        &["retry", "--where", "status == 'failed'", "--dry-run"],
    );
    assert_eq!(dry.code(), 0, "{dry}");
    assert_eq!(
        dry.stdout, "no token matches status == 'failed'; retry would do nothing\n",
        "{dry}"
    );
    assert_eq!(histories(&daemon, &["C-1"]), before);
}
