//! Black-box: `stateous token migrate` (`docs/how-to/change-a-workflow.md`) on the
//! graphs of `versions.rs`: v1's tokens moved to v2 with a preview, a map, per
//! token refusals, a held lease's late report, held events, an undo, and a SIGKILL
//! in the middle of a migration of 2,000 tokens.

use crate::harness;
use crate::versions::{fire, serve_next, start, v1_then_v2, where_is};

use harness::{eventually, run, Daemon, Finished};
use serde_json::{json, Value};
use std::time::Duration;

/// `stateous token migrate ARGS --url URL` in the daemon's folder.
fn migrate(daemon: &Daemon, args: &[&str]) -> Finished {
    let mut all = vec!["token", "migrate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    run(daemon.dir.path(), &all)
}

fn detail(daemon: &Daemon, token: &str) -> Value {
    daemon.get(&format!("/tokens/{token}/detail")).expect(200)
}

fn entries(daemon: &Daemon) -> i64 {
    daemon.count("SELECT count(*) FROM ledger")
}

fn line_of<'a>(finished: &'a Finished, token: &str) -> &'a str {
    let prefix = format!("  {token}: ");
    finished
        .stdout
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line of {token}\n{finished}"))
}

fn a_migration_previews_then_moves_each_token_or_says_why_not_and_an_undo_moves_it_back() {
    let (mut v1, v2, _graphs) = v1_then_v2();
    start(&v1, "EXPIRED", json!({"amount": 5, "customer": "ACME"}));
    fire(&v1, "EXPIRED", "submit");
    start(&v1, "NOCUSTOMER", json!({"amount": 5}));
    start(&v1, "HELD", json!({"amount": 5, "customer": "ACME"}));
    start(&v1, "LEASED", json!({"amount": 5, "customer": "ACME"}));
    start(&v1, "FAMILY", json!({"amount": 500, "customer": "ACME"}));
    fire(&v1, "FAMILY", "submit");
    eventually(
        Duration::from_secs(15),
        "v1's timeout moves EXPIRED to expired",
        || v1.report(),
        || where_is(&v1, "EXPIRED").0 == "expired",
    );
    let daemon = serve_next(&mut v1, v2);
    // An old token with a held lease in a state with a timeout, and one holding an
    // event while paused.
    fire(&daemon, "LEASED", "submit");
    let claim = json!({"supervisor": "box-1", "states": ["review"]});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    let (task, attempt) = (grant["task"].as_i64().unwrap(), grant["attempt"].clone());
    let due = detail(&daemon, "LEASED")["timers"][0]["due_at"].clone();
    daemon.post_empty("/tokens/HELD/pause").expect(200);
    fire(&daemon, "HELD", "submit");

    // The dry run says what each token would become, and changes nothing.
    let before = entries(&daemon);
    let preview = migrate(&daemon, &["--where", "true", "--dry-run"]);
    assert_eq!(preview.code(), 0, "{preview}");
    assert!(
        line_of(&preview, "EXPIRED").contains("has no state 'expired'; map it with --map expired="),
        "{preview}"
    );
    assert!(
        line_of(&preview, "NOCUSTOMER").contains("'customer' is a required property"),
        "{preview}"
    );
    assert!(
        line_of(&preview, "LEASED")
            .contains("in 'review'; its task is queued anew for 'review'; its timeout keeps"),
        "{preview}"
    );
    assert!(
        line_of(&preview, "HELD").contains("in 'draft'"),
        "{preview}"
    );
    // A family moves whole or not at all: v2's checks start one child, not two;
    // a child is moved only with its parent.
    assert!(
        line_of(&preview, "FAMILY").contains("'checks' starts other child workflows"),
        "{preview}"
    );
    assert!(
        line_of(&preview, "FAMILY.checks.1.stock").contains("child_token"),
        "{preview}"
    );
    assert_eq!(entries(&daemon), before, "the dry run wrote nothing");

    // The run moves what it can; the refused tokens stay as they were.
    let moved = migrate(
        &daemon,
        &["--where", "true", "--yes", "--reason", "v2 is out"],
    );
    assert_eq!(moved.code(), 0, "{moved}");
    assert!(
        moved.stdout.contains("migrated 2 tokens; 5 refused"),
        "{moved}"
    );
    assert_eq!(
        detail(&daemon, "FAMILY.checks.1.fraud")["graph_served"],
        false
    );
    assert_eq!(detail(&daemon, "NOCUSTOMER")["graph_served"], false);
    assert_eq!(detail(&daemon, "EXPIRED")["graph_served"], false);

    // The held lease ended: its late report is refused, and the task is queued
    // anew for the same state; the timeout kept its time left.
    let late = json!({"kind": "event", "event": "ok", "supervisor": "box-1", "attempt": attempt});
    daemon
        .post(&format!("/tasks/{task}/report"), &late)
        .refused(409, "attempt_over");
    let leased = detail(&daemon, "LEASED");
    assert_eq!(leased["graph_served"], true, "{leased}");
    assert_eq!(leased["tasks"][0]["status"], "queued", "{leased}");
    assert_eq!(leased["timers"][0]["due_at"], due, "{leased}");
    // ... and it fires by v2's rule: review times out back to draft.
    eventually(
        Duration::from_secs(15),
        "the kept timeout fires by v2's rule",
        || daemon.report(),
        || where_is(&daemon, "LEASED").0 == "draft",
    );

    // The held event stays held, and applies by v2's rules on resume.
    daemon.post_empty("/tokens/HELD/resume").expect(200);
    assert_eq!(
        where_is(&daemon, "HELD"),
        ("triage".into(), "active".into())
    );

    // With a map, the token in a state v2 lacks moves too; once each.
    let mapped = migrate(
        &daemon,
        &[
            "--where",
            "true",
            "--map",
            "expired=done",
            "--yes",
            "--reason",
            "map",
        ],
    );
    assert!(
        mapped
            .stdout
            .contains("migrated 1 token; 4 refused, 2 duplicate"),
        "{mapped}"
    );
    assert_eq!(where_is(&daemon, "EXPIRED").0, "done");
    let history = run(
        daemon.dir.path(),
        &["token", "show", "EXPIRED", "--url", &daemon.url],
    );
    assert!(
        history.stdout.contains("migrated by ") && history.stdout.contains("(expired) to graph"),
        "{history}"
    );

    // The undo takes it back to v1 and `expired`; a second undo changes nothing.
    let filter = "token == 'EXPIRED'";
    let undo = &[
        "--where",
        filter,
        "--undo",
        "--yes",
        "--reason",
        "by mistake",
    ];
    let undone = migrate(&daemon, undo);
    assert!(
        undone.stdout.contains("migrated 1 token; 0 refused"),
        "{undone}"
    );
    assert_eq!(where_is(&daemon, "EXPIRED").0, "expired");
    assert_eq!(detail(&daemon, "EXPIRED")["graph_served"], false);
    let again = migrate(&daemon, undo);
    assert!(
        again
            .stdout
            .contains("migrated 0 tokens; 0 refused, 1 duplicate"),
        "{again}"
    );
    // It goes on by v1's rules.
    fire(&daemon, "EXPIRED", "ok");
    assert_eq!(
        where_is(&daemon, "EXPIRED"),
        ("expired".into(), "completed".into())
    );
}

both!(a_migration_previews_then_moves_each_token_or_says_why_not_and_an_undo_moves_it_back);

/// A migration of 2,000 tokens, its control plane killed once 100 moves have
/// committed, then the same command again after the restart: each token moves
/// once.
fn a_migration_killed_halfway_and_run_again_moves_each_token_once() {
    const TOKENS: usize = 2000;
    let (mut v1, v2, _graphs) = v1_then_v2();
    // Started by 8 clients at once: one at a time, the 2,000 starts made this the
    // test that ran alone for the last 10 s of the black-box run.
    const CLIENTS: usize = 8;
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let v1 = &v1;
            scope.spawn(move || {
                for n in (client..TOKENS).step_by(CLIENTS) {
                    start(
                        v1,
                        &format!("T-{n}"),
                        json!({"amount": 5, "customer": "ACME"}),
                    );
                }
            });
        }
    });
    let mut daemon = serve_next(&mut v1, v2);
    let args = ["--where", "true", "--yes", "--reason", "v2 is out"];
    let mut all = vec!["token", "migrate"];
    all.extend_from_slice(&args);
    all.extend_from_slice(&["--url", &daemon.url]);
    let mut command = std::process::Command::new(harness::binary());
    command
        .args(&all)
        .current_dir(daemon.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut running = command.spawn().unwrap();
    let migrated = "SELECT count(*) FROM ledger WHERE kind = 'migrated'";
    eventually(
        Duration::from_secs(60),
        "the first 100 tokens are migrated",
        || daemon.report(),
        || daemon.count(migrated) >= 100,
    );
    daemon.crash_and_restart();
    let _ = running.wait();
    let halfway = daemon.count(migrated);
    eprintln!("{halfway} of {TOKENS} tokens were migrated before the kill");
    let finished = migrate(&daemon, &args);
    assert_eq!(finished.code(), 0, "{finished}");
    let twice = daemon.count(
        "SELECT count(*) FROM (SELECT token FROM ledger WHERE kind = 'migrated'
         GROUP BY token HAVING count(*) > 1) AS t",
    );
    assert_eq!(twice, 0, "no token was migrated twice");
    assert_eq!(daemon.count(migrated), TOKENS as i64);
    let served = daemon.get("/graphs").expect(200)["graphs"][1]["tokens"]["active"].clone();
    assert_eq!(served, TOKENS as i64, "every token runs on v2");
}

both!(a_migration_killed_halfway_and_run_again_moves_each_token_once);
