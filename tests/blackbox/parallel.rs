//! Black-box: parallel states on the real daemon (`docs/concepts/parallel.md`). The
//! graph served is `tests/data/release/build/release.json`, written by the reference's
//! compiler from `flow.py`; our compiler writes the same bytes from `flow.yaml` beside
//! it. `release`: `coding`, then `reviews` (security and design, join all, timeout 1h),
//! `race` (the same two, join any, no fallback), `nested` (audit, which runs lint) or
//! `quick` (the two, timeout 2 s). Each child: `triage` emits `lgtm` (to `approved`) or
//! `deny` (to `rejected`, payload `{count}`), each of which ends on `recorded`.

use crate::harness;
use crate::reference;
use crate::supervising;

use harness::{run, Daemon, Setup};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/release")
}

/// The release graph served with a lease of 60 s: no claimed task of these tests
/// ends by its lease, even on a slow machine.
fn serve() -> Daemon {
    Setup::new(release_dir().join("build/release.json"))
        .args(&["--lease", "60s"])
        .start()
}

fn start(daemon: &Daemon, token: &str) -> Value {
    let body = json!({"token": token, "context": {"repo": "acme/api"}});
    daemon.post("/tokens", &body).expect(201)
}

fn fire(daemon: &Daemon, token: &str, event: &str) -> Value {
    daemon
        .post(&format!("/tokens/{token}/events/{event}"), &json!({}))
        .expect(200)
}

fn token(daemon: &Daemon, id: &str) -> Value {
    daemon.get(&format!("/tokens/{id}")).expect(200)
}

/// `(state, status)` of a token.
fn where_is(daemon: &Daemon, id: &str) -> (String, String) {
    let found = token(daemon, id);
    let text = |key: &str| found[key].as_str().unwrap_or_default().to_string();
    (text("state"), text("status"))
}

fn at(state: &str, status: &str) -> (String, String) {
    (state.to_string(), status.to_string())
}

/// Claim a task of `state` (`W/S` for a child's state); its id.
fn claim(daemon: &Daemon, state: &str) -> i64 {
    let body = json!({"supervisor": "box-1", "states": [state]});
    let grant = daemon.post("/tasks/claim", &body).expect(200);
    assert_eq!(grant["state"], state, "{grant}");
    grant["task"].as_i64().expect("a task id")
}

fn claim_none(daemon: &Daemon, state: &str) {
    let body = json!({"supervisor": "box-1", "states": [state]});
    assert_eq!(daemon.post("/tasks/claim", &body).status, 204);
}

fn report(daemon: &Daemon, task: i64, outcome: Value) -> Value {
    daemon
        .post(&format!("/tasks/{task}/report"), &outcome)
        .expect(200)
}

fn emit(daemon: &Daemon, task: i64, event: &str, payload: Option<Value>) -> Value {
    let mut outcome = json!({"kind": "event", "event": event, "supervisor": "box-1"});
    if let Some(payload) = payload {
        outcome["payload"] = payload;
    }
    report(daemon, task, outcome)
}

/// Claim the task of `W/S`, and report `event` for it.
fn work(daemon: &Daemon, state: &str, event: &str, payload: Option<Value>) {
    let task = claim(daemon, state);
    emit(daemon, task, event, payload);
}

fn history(daemon: &Daemon, id: &str) -> Vec<Value> {
    let found = daemon.get(&format!("/tokens/{id}/history")).expect(200);
    found.as_array().cloned().unwrap_or_default()
}

/// The last ledger entry of `kind` of a token.
fn last(daemon: &Daemon, id: &str, kind: &str) -> Value {
    history(daemon, id)
        .into_iter()
        .rev()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("{id} has no {kind}"))
}

fn children(daemon: &Daemon, parent: &str) -> Vec<Value> {
    let found = daemon.get(&format!("/tokens?parent={parent}")).expect(200);
    found.as_array().cloned().unwrap_or_default()
}

fn our_compiler_writes_the_reference_graph_file_byte_for_byte() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let out = dir.path().join("release.json");
    let flow = release_dir().join("flow.yaml");
    let finished = run(
        dir.path(),
        &[
            "compile",
            flow.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(finished.code(), 0, "{finished}");
    let ours = std::fs::read(&out).expect("our graph file");
    let theirs = std::fs::read(release_dir().join("build/release.json")).expect("the reference's");
    assert!(ours == theirs, "the graph files differ");
}

fn an_all_join_waits_for_each_child_and_its_branches_guard_decides() {
    let daemon = serve();
    start(&daemon, "R-1");
    assert_eq!(fire(&daemon, "R-1", "done")["state"], "reviews");
    let listed = children(&daemon, "R-1");
    let mut ids: Vec<&str> = listed.iter().filter_map(|c| c["token"].as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["R-1.reviews.1.design", "R-1.reviews.1.security"]);
    let child = token(&daemon, "R-1.reviews.1.security");
    assert_eq!(child["parent"], "R-1");
    assert_eq!(
        child["context"],
        json!({"repo": "acme/api", "branch": "main"})
    );
    assert_eq!(
        last(&daemon, "R-1.reviews.1.security", "started")["data"]["parent"],
        "R-1"
    );

    work(&daemon, "security/triage", "lgtm", None);
    work(&daemon, "security/approved", "recorded", None);
    assert_eq!(where_is(&daemon, "R-1"), at("reviews", "active"));
    work(&daemon, "design/triage", "lgtm", None);
    work(&daemon, "design/approved", "recorded", None);
    assert_eq!(where_is(&daemon, "R-1"), at("merging", "active"));
    let joined = last(&daemon, "R-1", "event_accepted");
    assert_eq!(joined["data"]["event"], "joined");
    let branches = &joined["data"]["payload"]["branches"];
    assert_eq!(
        branches[0],
        json!({"workflow": "security", "token": "R-1.reviews.1.security",
               "status": "completed", "final": "approved", "payload": null})
    );
    assert_eq!(branches[1]["token"], "R-1.reviews.1.design");

    // One denial: the guard does not hold, and the fallback goes back to coding.
    start(&daemon, "R-2");
    fire(&daemon, "R-2", "done");
    work(&daemon, "security/triage", "lgtm", None);
    work(&daemon, "design/triage", "deny", Some(json!({"count": 2})));
    work(&daemon, "design/rejected", "recorded", None);
    work(&daemon, "security/approved", "recorded", None);
    assert_eq!(where_is(&daemon, "R-2"), at("coding", "active"));
    let joined = last(&daemon, "R-2", "event_accepted");
    let branches = &joined["data"]["payload"]["branches"];
    assert_eq!(branches[1]["final"], "rejected");
    assert_eq!(branches[1]["payload"], json!({"count": 2}));
}

fn an_any_join_goes_on_at_the_first_child_and_cancels_the_others() {
    let daemon = serve();
    start(&daemon, "A-1");
    fire(&daemon, "A-1", "hurry");
    work(&daemon, "design/triage", "lgtm", None);
    work(&daemon, "design/approved", "recorded", None);
    assert_eq!(where_is(&daemon, "A-1"), at("merging", "active"));
    let branches = &last(&daemon, "A-1", "event_accepted")["data"]["payload"]["branches"];
    assert_eq!(branches.as_array().map(Vec::len), Some(1));
    assert_eq!(branches[0]["workflow"], "design");
    let other = "A-1.race.1.security";
    assert_eq!(where_is(&daemon, other), at("triage", "cancelled"));
    assert_eq!(
        last(&daemon, other, "cancelled")["data"]["reason"],
        "the parent left 'race' on 'joined'"
    );
    claim_none(&daemon, "security/triage");
    daemon
        .post(&format!("/tokens/{}/events/joined", "A-1"), &json!({}))
        .refused(409, "event_not_allowed");
}

fn a_failing_child_ends_as_failed_and_a_join_that_cannot_move_fails_the_parent() {
    let daemon = serve();
    start(&daemon, "F-1");
    fire(&daemon, "F-1", "hurry");
    let task = claim(&daemon, "security/triage");
    let failed = json!({"kind": "failed", "error": "boom", "supervisor": "box-1"});
    assert_eq!(report(&daemon, task, failed)["status"], "failed");
    assert_eq!(where_is(&daemon, "F-1"), at("race", "failed"));
    let reason = "the join of 'race' cannot move the token: no guard matched 'joined' \
                  from 'race', and no otherwise";
    assert_eq!(last(&daemon, "F-1", "failed")["data"]["reason"], reason);
    let other = "F-1.race.1.design";
    assert_eq!(where_is(&daemon, other), at("triage", "cancelled"));
    assert_eq!(
        last(&daemon, other, "cancelled")["data"]["reason"],
        format!("the parent failed: {reason}")
    );

    // With `all`, a failed child is one branch among the others.
    start(&daemon, "F-2");
    fire(&daemon, "F-2", "done");
    let task = claim(&daemon, "security/triage");
    let failed = json!({"kind": "failed", "error": "boom", "supervisor": "box-1"});
    report(&daemon, task, failed);
    work(&daemon, "design/triage", "lgtm", None);
    work(&daemon, "design/approved", "recorded", None);
    assert_eq!(where_is(&daemon, "F-2"), at("coding", "active"));
    let branches = &last(&daemon, "F-2", "event_accepted")["data"]["payload"]["branches"];
    assert_eq!(branches[0]["status"], "failed");
    assert_eq!(branches[0]["final"], "triage");
}

fn a_parent_that_times_out_cancels_its_running_children() {
    // The lease is longer than the state's 2 s timeout: the claimed task stays held.
    let daemon = serve();
    start(&daemon, "Q-1");
    fire(&daemon, "Q-1", "rush");
    let task = claim(&daemon, "security/triage");
    let deadline = Instant::now() + Duration::from_secs(20);
    while where_is(&daemon, "Q-1").0 == "quick" {
        assert!(Instant::now() < deadline, "the timeout never fired");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(where_is(&daemon, "Q-1"), at("blocked", "active"));
    for child in ["Q-1.quick.1.security", "Q-1.quick.1.design"] {
        assert_eq!(where_is(&daemon, child), at("triage", "cancelled"));
        assert_eq!(
            last(&daemon, child, "cancelled")["data"]["reason"],
            "the parent left 'quick' on 'timeout'"
        );
    }
    let beat = json!({"supervisor": "box-1", "tasks": [task]});
    assert_eq!(
        daemon.post("/tasks/heartbeat", &beat).expect(200),
        json!({"lost": [task]})
    );
}

fn a_child_cannot_be_steered_alone_and_cancelling_the_parent_cancels_it() {
    let daemon = serve();
    start(&daemon, "C-1");
    fire(&daemon, "C-1", "done");
    let task = claim(&daemon, "security/triage");
    let child = "C-1.reviews.1.security";
    for verb in ["pause", "resume", "cancel"] {
        let sentence = daemon
            .post_empty(&format!("/tokens/{child}/{verb}"))
            .refused(409, "child_token");
        assert!(sentence.contains("'C-1'"), "{sentence}");
    }
    assert_eq!(
        daemon.post_empty("/tokens/C-1/cancel").expect(200)["status"],
        "cancelled"
    );
    for child in children(&daemon, "C-1") {
        assert_eq!(child["status"], "cancelled");
        let id = child["token"].as_str().unwrap_or_default();
        assert_eq!(
            last(&daemon, id, "cancelled")["data"]["reason"],
            "the parent was cancelled"
        );
    }
    let beat = json!({"supervisor": "box-1", "tasks": [task]});
    assert_eq!(
        daemon.post("/tasks/heartbeat", &beat).expect(200),
        json!({"lost": [task]})
    );
}

fn pause_holds_the_family_and_resume_replays_its_events_in_arrival_order() {
    let daemon = serve();
    start(&daemon, "P-1");
    fire(&daemon, "P-1", "done");
    let security = claim(&daemon, "security/triage");
    let design = claim(&daemon, "design/triage");
    daemon.post_empty("/tokens/P-1/pause").expect(200);
    let paused = daemon.get("/tokens?status=paused").expect(200);
    assert_eq!(paused.as_array().map(Vec::len), Some(3), "{paused}");

    // Held: design's outcome (1), security's (2), then the parent's own event (3).
    emit(&daemon, design, "deny", Some(json!({"count": 1})));
    emit(&daemon, security, "lgtm", None);
    fire(&daemon, "P-1", "abandon");
    let arrival = |id: &str| last(&daemon, id, "event_deferred")["data"]["arrival"].clone();
    assert_eq!(arrival("P-1.reviews.1.design"), 1);
    assert_eq!(arrival("P-1.reviews.1.security"), 2);
    assert_eq!(arrival("P-1"), 3);
    claim_none(&daemon, "design/rejected");

    let resumed = daemon.post_empty("/tokens/P-1/resume").expect(200);
    assert_eq!(
        (&resumed["state"], &resumed["visit"]),
        (&json!("coding"), &json!(2))
    );
    for (child, state) in [
        ("P-1.reviews.1.design", "rejected"),
        ("P-1.reviews.1.security", "approved"),
    ] {
        assert_eq!(where_is(&daemon, child), at(state, "cancelled"));
        assert_eq!(
            last(&daemon, child, "cancelled")["data"]["reason"],
            "the parent left 'reviews' on 'abandon'"
        );
    }
}

fn nesting_two_levels_deep_joins_from_the_bottom_up() {
    let daemon = serve();
    let top = "z".repeat(64);
    start(&daemon, &top);
    fire(&daemon, &top, "deep");
    let audit = format!("{top}.nested.1.audit");
    let lint = format!("{audit}.scan.1.lint");
    assert_eq!(token(&daemon, &lint)["parent"], audit.as_str());
    daemon
        .post_empty(&format!("/tokens/{top}/pause"))
        .expect(200);
    assert_eq!(where_is(&daemon, &lint), at("check", "paused"));
    claim_none(&daemon, "lint/check");
    daemon
        .post_empty(&format!("/tokens/{top}/resume"))
        .expect(200);
    work(&daemon, "lint/check", "ok", None);
    assert_eq!(where_is(&daemon, &audit), at("scan", "completed"));
    assert_eq!(where_is(&daemon, &top), at("merging", "active"));
}

fn an_event_that_would_make_a_child_id_too_long_is_refused() {
    let daemon = serve();
    let long = "x".repeat(110);
    start(&daemon, &long);
    let sentence = daemon
        .post(&format!("/tokens/{long}/events/done"), &json!({}))
        .refused(409, "event_not_allowed");
    assert!(
        sentence.contains("longer than 128 characters"),
        "{sentence}"
    );
    assert_eq!(where_is(&daemon, &long), at("coding", "active"));
    let rejected = last(&daemon, &long, "event_rejected");
    assert_eq!(
        rejected["data"]["reason"],
        format!(
            "the child '{long}.reviews.1.security' of 'reviews' would have an id longer \
             than 128 characters; use a shorter token id"
        )
    );
    assert!(children(&daemon, &long).is_empty());
}

fn token_show_lists_the_children_under_the_parent() {
    let daemon = serve();
    start(&daemon, "S-1");
    fire(&daemon, "S-1", "done");
    let finished = run(
        daemon.dir.path(),
        &["token", "show", "S-1", "--url", &daemon.url],
    );
    assert_eq!(finished.code(), 0, "{finished}");
    let lines: Vec<&str> = finished.stdout.lines().collect();
    assert_eq!(lines[0], "S-1: reviews, active", "{finished}");
    let mut kids: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("  child "))
        .collect();
    kids.sort();
    assert_eq!(
        kids,
        [
            "  child S-1.reviews.1.design: triage, active",
            "  child S-1.reviews.1.security: triage, active"
        ],
        "{finished}"
    );
}

fn a_supervisor_runs_the_routines_of_child_states_from_w_dot_s_files() {
    let daemon = serve();
    let review = r#"echo "$STATEOUS_STATE $(stateous ctx get branch --raw)" >> seen.txt
stateous ctx emit lgtm"#;
    let routines = [
        ("coding.sh", "stateous ctx emit done"),
        ("security.triage.sh", review),
        ("design.triage.sh", review),
        ("security.approved.sh", "stateous ctx emit recorded"),
        ("design.approved.sh", "stateous ctx emit recorded"),
        ("merging.sh", "stateous ctx emit merged"),
    ];
    let folder = supervising::folder_for(&daemon, &routines);
    let contract = std::fs::read_to_string(folder.join("contract.json")).expect("a contract");
    let contract: Value = serde_json::from_str(&contract).expect("JSON");
    assert_eq!(
        contract["states"]["security/triage"]["emits"],
        json!(["lgtm", "deny"])
    );
    assert!(contract["states"].get("reviews").is_none(), "{contract}");
    let sup = supervising::Supervise::start(&folder);
    start(&daemon, "E-1");
    supervising::wait_for_status(&daemon, "E-1", "completed");
    sup.wait_for_line("of E-1.reviews.1.security: reported lgtm");
    let mut seen: Vec<String> = std::fs::read_to_string(folder.join("seen.txt"))
        .expect("the routines ran")
        .lines()
        .map(str::to_string)
        .collect();
    seen.sort();
    assert_eq!(seen, ["design/triage main", "security/triage main"]);
    for child in ["E-1.reviews.1.security", "E-1.reviews.1.design"] {
        assert_eq!(where_is(&daemon, child), at("approved", "completed"));
    }
}

/// stdout, stderr and exit code of `PROGRAM token ARGS --url URL`.
fn token_command(program: &Path, url: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let output = std::process::Command::new(program)
        .arg("token")
        .args(args)
        .args(["--url", url])
        .env_remove("STATEOUS_URL")
        .output()
        .expect("the command runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code(),
    )
}

fn the_reference_token_commands_read_our_families_as_ours_do() {
    let theirs = reference::reference_stateous();
    let ours = Path::new(harness::binary());
    let daemon = serve();
    start(&daemon, "R-1");
    fire(&daemon, "R-1", "done");
    work(&daemon, "security/triage", "lgtm", None);
    work(&daemon, "security/approved", "recorded", None);
    work(&daemon, "design/triage", "deny", Some(json!({"count": 2})));
    work(&daemon, "design/rejected", "recorded", None);
    fire(&daemon, "R-1", "hurry");
    daemon.post_empty("/tokens/R-1/pause").expect(200);
    let reads: [&[&str]; 6] = [
        &["show", "R-1"],
        &["show", "R-1.reviews.1.design"],
        &["show", "R-1.race.1.security"],
        &["show"],
        &["resume", "R-1.race.1.security"],
        &["cancel", "R-1.race.1.design"],
    ];
    for read in reads {
        let mine = token_command(ours, &daemon.url, read);
        let reference = token_command(&theirs, &daemon.url, read);
        assert_eq!(mine, reference, "stateous token {}", read.join(" "));
    }
    let (shown, _, _) = token_command(ours, &daemon.url, &["show", "R-1"]);
    assert!(
        shown.contains("  child R-1.race.1.security: triage, paused"),
        "{shown}"
    );
}

fn states_count_the_tokens_of_each_workflow_by_state_and_status() {
    let daemon = serve();
    start(&daemon, "R-1");
    start(&daemon, "R-2");
    fire(&daemon, "R-1", "done");
    daemon.post_empty("/tokens/R-2/pause").expect(200);
    let states = daemon.get("/states").expect(200);
    assert_eq!(
        states,
        json!({"states": [
            {"workflow": null, "state": "coding", "tokens": {"paused": 1}},
            {"workflow": null, "state": "reviews", "tokens": {"active": 1}},
            {"workflow": "design", "state": "triage", "tokens": {"active": 1}},
            {"workflow": "security", "state": "triage", "tokens": {"active": 1}},
        ]}),
        "{states}"
    );
}

both!(
    our_compiler_writes_the_reference_graph_file_byte_for_byte,
    an_all_join_waits_for_each_child_and_its_branches_guard_decides,
    an_any_join_goes_on_at_the_first_child_and_cancels_the_others,
    a_failing_child_ends_as_failed_and_a_join_that_cannot_move_fails_the_parent,
    a_parent_that_times_out_cancels_its_running_children,
    a_child_cannot_be_steered_alone_and_cancelling_the_parent_cancels_it,
    pause_holds_the_family_and_resume_replays_its_events_in_arrival_order,
    nesting_two_levels_deep_joins_from_the_bottom_up,
    an_event_that_would_make_a_child_id_too_long_is_refused,
    token_show_lists_the_children_under_the_parent,
    a_supervisor_runs_the_routines_of_child_states_from_w_dot_s_files,
    the_reference_token_commands_read_our_families_as_ours_do,
    states_count_the_tokens_of_each_workflow_by_state_and_status,
);
