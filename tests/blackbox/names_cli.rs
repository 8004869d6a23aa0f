//! Black-box: a name given to `stateous schedule`, `limit`, `access` and `budget`
//! that goes into a request's path (`docs/reference/cli.md`). A name that no
//! schedule, limit or access key can have (one with a `/`) is said to be no
//! one's, in one line, before a request whose path would reach no route, and
//! changes nothing; a name that may hold a `/` (a main workflow's, a child
//! workflow's state) goes as one segment and is found.

use crate::harness;

use harness::{run, test_graph, Daemon, Finished, Setup};
use serde_json::{json, Value};

/// The end of each refusal of a name outside the rule of schedules and limits.
const RULE: &str = "a letter or digit, then up to 63 letters, digits, '.', '_' or '-'";

/// `stateous COMMAND --url URL ARGS` in the daemon's folder.
fn stateous(daemon: &Daemon, command: &str, args: &[&str]) -> Finished {
    let mut all = vec![command, "--url", &daemon.url];
    all.extend_from_slice(args);
    run(daemon.dir.path(), &all)
}

/// `done` failed with exit code 1 and one line on stderr, `error: ` and a
/// sentence that contains `part`; nothing on stdout.
fn refused_in_one_line(done: &Finished, part: &str) {
    assert_eq!(done.code(), 1, "{done}");
    assert!(done.stdout.is_empty(), "{done}");
    let lines: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{done}");
    assert!(lines[0].starts_with("error: "), "{done}");
    assert!(lines[0].contains(part), "{done}");
}

/// `done` succeeded.
fn done(done: &Finished) {
    assert_eq!(done.code(), 0, "{done}");
}

/// A daemon serving `tickets`, with the schedule `nightly` and the limit `coding`.
fn with_nightly_and_coding() -> Daemon {
    let daemon = Setup::new(test_graph("tickets")).start();
    daemon
        .post(
            "/schedules",
            &json!({"name": "nightly", "spec": "every 1h", "context": {"repo": "r"}}),
        )
        .expect(201);
    daemon
        .put("/limits/coding", &json!({"states": ["coding"], "max": 2}))
        .expect(200);
    daemon
}

/// The schedules as `GET /schedules` lists them: name, spec and status.
fn schedules(daemon: &Daemon) -> Vec<Value> {
    let listed = daemon.get("/schedules").expect(200);
    let all = listed["schedules"].as_array().cloned().unwrap_or_default();
    all.iter()
        .map(|one| json!([one["name"], one["spec"], one["status"]]))
        .collect()
}

fn a_name_no_schedule_can_have_is_said_so_and_changes_nothing() {
    let daemon = with_nightly_and_coding();
    let before = schedules(&daemon);
    // `nightly/pause` went as `/schedules/nightly%2Fpause`, decoded to
    // `/schedules/nightly/pause`: a 405 for `show` and `remove`.
    for name in ["a/b", "nightly/pause"] {
        for command in ["show", "pause", "resume", "remove", "trigger"] {
            let done = stateous(&daemon, "schedule", &[command, name]);
            refused_in_one_line(
                &done,
                &format!("no schedule is named {name}: a schedule's name is {RULE}"),
            );
        }
    }
    let done = stateous(&daemon, "schedule", &["add", "a/b", "every 1h"]);
    refused_in_one_line(&done, "\"a/b\" is not a schedule's name");
    // The control plane says the same of such a name in one segment.
    let sentence = daemon
        .get("/schedules/a%20b")
        .refused(404, "schedule_not_found");
    assert_eq!(
        sentence,
        format!("no schedule is named a b: a schedule's name is {RULE}")
    );
    // A name that could be one, and is not, is refused as before.
    let done = stateous(&daemon, "schedule", &["show", "nope"]);
    refused_in_one_line(
        &done,
        "no schedule is named nope; stateous schedule list shows them",
    );
    assert_eq!(schedules(&daemon), before);
    assert_eq!(before.len(), 1, "{before:?}");
}

fn a_name_no_limit_can_have_is_said_so_and_changes_nothing() {
    let daemon = with_nightly_and_coding();
    let before = daemon.get("/limits").expect(200);
    for name in ["a/b", "coding/x"] {
        let done = stateous(&daemon, "limit", &["remove", name]);
        refused_in_one_line(
            &done,
            &format!("no limit is named {name}: a limit's name is {RULE}"),
        );
        // `set` says what the control plane says of such a name in a body.
        let done = stateous(
            &daemon,
            "limit",
            &["set", name, "--states", "coding", "--max", "1"],
        );
        refused_in_one_line(&done, &format!("'{name}' is not a limit's name: {RULE}"));
    }
    let sentence = daemon
        .request("DELETE", "/limits/a%20b", &[], b"")
        .refused(404, "limit_not_found");
    assert_eq!(
        sentence,
        format!("no limit is named a b: a limit's name is {RULE}")
    );
    let done = stateous(&daemon, "limit", &["remove", "nope"]);
    refused_in_one_line(&done, "no limit is named 'nope'");
    assert_eq!(daemon.get("/limits").expect(200), before);
    assert_eq!(before["limits"][0]["name"], "coding", "{before}");
}

fn a_name_no_access_key_can_have_is_said_so_and_changes_nothing() {
    // No key is made: over TCP every caller acts as admin, and may revoke.
    let daemon = with_nightly_and_coding();
    let before = daemon.get("/access").expect(200);
    let rule = "a key's name is 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'";
    for name in ["a/b", "ops/x"] {
        let done = stateous(&daemon, "access", &["revoke", name]);
        refused_in_one_line(&done, &format!("no access key is named {name}: {rule}"));
    }
    let sentence = daemon
        .request("DELETE", "/access/a%20b", &[], b"")
        .refused(404, "key_not_found");
    assert_eq!(sentence, format!("no access key is named a b: {rule}"));
    let done = stateous(&daemon, "access", &["revoke", "nope"]);
    refused_in_one_line(&done, "no access key named nope is in use");
    // An empty name keeps the client's own sentence, here as for the others.
    for (command, action) in [
        ("access", "revoke"),
        ("schedule", "show"),
        ("notify", "show"),
    ] {
        let done = stateous(&daemon, command, &[action, ""]);
        refused_in_one_line(&done, "the name given is empty");
    }
    let done = stateous(
        &daemon,
        "limit",
        &["set", "", "--states", "coding", "--max", "1"],
    );
    refused_in_one_line(&done, "the name given is empty");
    assert_eq!(daemon.get("/access").expect(200), before);
}

fn a_workflow_named_with_a_slash_has_its_default_budget_by_that_name() {
    // A main workflow's name is any string: `tickets` served as `team/tickets`.
    let folder = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(test_graph("tickets")).unwrap();
    let mut graph: Value = serde_json::from_str(&text).unwrap();
    graph["workflow"] = json!("team/tickets");
    let path = folder.path().join("team.json");
    std::fs::write(&path, graph.to_string()).unwrap();
    let daemon = Setup::new(&path).start();
    // Before, `/budgets/team%2Ftickets` was decoded to `/budgets/team/tickets`:
    // "this API has no path".
    done(&stateous(
        &daemon,
        "budget",
        &["set", "team/tickets", "cost_usd=5"],
    ));
    let listed = daemon.get("/budgets").expect(200);
    assert_eq!(listed["budgets"][0]["workflow"], "team/tickets", "{listed}");
    let removed = stateous(&daemon, "budget", &["remove", "team/tickets"]);
    done(&removed);
    assert!(
        removed
            .stderr
            .contains("removed the default budget of team/tickets"),
        "{removed}"
    );
    assert_eq!(daemon.get("/budgets").expect(200)["budgets"], json!([]));
    // A workflow no graph has, with a `/` or not, is refused as before.
    for name in ["a/b", "tickets"] {
        let done = stateous(&daemon, "budget", &["set", name, "cost_usd=5"]);
        refused_in_one_line(
            &done,
            &format!("no graph of this control plane has the workflow '{name}'"),
        );
    }
    assert_eq!(daemon.get("/budgets").expect(200)["budgets"], json!([]));
}

fn a_child_workflows_state_has_its_retry_policy_by_its_name() {
    let daemon = Setup::new(test_graph("desk/build/desk")).start();
    // Before, `/retry-policies/legal%2Fcheck` reached no route.
    done(&stateous(
        &daemon,
        "limit",
        &["retry", "legal/check", "--delay", "2s"],
    ));
    let listed = daemon.get("/retry-policies").expect(200);
    assert_eq!(listed["policies"][0]["state"], "legal/check", "{listed}");
    done(&stateous(&daemon, "limit", &["unretry", "legal/check"]));
    let done = stateous(&daemon, "limit", &["unretry", "legal/check"]);
    refused_in_one_line(&done, "no retry policy is set for 'legal/check'");
    let done = stateous(&daemon, "limit", &["retry", "nowhere/x", "--delay", "2s"]);
    assert_eq!(done.code(), 1, "{done}");
    assert!(!done.stderr.contains("has no path"), "{done}");
    assert_eq!(
        daemon.get("/retry-policies").expect(200)["policies"],
        json!([])
    );
}

both!(
    a_name_no_schedule_can_have_is_said_so_and_changes_nothing,
    a_name_no_limit_can_have_is_said_so_and_changes_nothing,
    a_name_no_access_key_can_have_is_said_so_and_changes_nothing,
    a_workflow_named_with_a_slash_has_its_default_budget_by_that_name,
    a_child_workflows_state_has_its_retry_policy_by_its_name,
);
