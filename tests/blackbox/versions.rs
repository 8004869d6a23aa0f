//! Black-box: workflow versions (`docs/guarantees.md`, "Workflow versions"). The
//! graphs are `tests/data/versions/v1.yaml` and `v2.yaml`, compiled by the binary
//! under test: `shop` v1 reviews a small order (timeout 3 s, to `expired`) and
//! checks a large one with two children (join all); v2 triages every order first,
//! checks with one child, has no `expired`, and needs a customer in the context.
//! A database served v1 is served v2 while v1's tokens live.

use crate::harness;

use harness::{eventually, run, Daemon, Setup};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Compile `versions/NAME.yaml` into `dir`; the graph file's path.
pub fn compiled(dir: &Path, name: &str) -> PathBuf {
    let flow = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/versions")
        .join(format!("{name}.yaml"));
    let out = dir.join(format!("{name}.json"));
    let (flow, target) = (flow.display().to_string(), out.display().to_string());
    let finished = run(dir, &["compile", &flow, "--out", &target]);
    assert_eq!(finished.code(), 0, "{finished}");
    out
}

/// Stop `daemon` gracefully and serve `graph` on its folder and database.
pub fn serve_next(daemon: &mut Daemon, graph: PathBuf) -> Daemon {
    assert_eq!(
        daemon.stop_with(libc::SIGINT).code(),
        Some(0),
        "{}",
        daemon.report()
    );
    serve_stopped(daemon, graph)
}

/// Serve `graph` on the folder and database of `daemon`, which has stopped.
pub fn serve_stopped(daemon: &mut Daemon, graph: PathBuf) -> Daemon {
    let dir = std::mem::replace(&mut daemon.dir, tempfile::tempdir().unwrap());
    Setup::new(graph)
        .in_dir(dir, daemon.db.clone())
        .database_of(daemon)
        .start()
}

/// A daemon of v1 (its graph compiled into a folder of its own) and v2's path.
pub fn v1_then_v2() -> (Daemon, PathBuf, tempfile::TempDir) {
    let graphs = tempfile::tempdir().unwrap();
    let v1 = compiled(graphs.path(), "v1");
    let v2 = compiled(graphs.path(), "v2");
    (Setup::new(v1).start(), v2, graphs)
}

pub fn start(daemon: &Daemon, token: &str, context: Value) {
    let body = json!({"token": token, "context": context});
    daemon.post("/tokens", &body).expect(201);
}

pub fn fire(daemon: &Daemon, token: &str, event: &str) -> Value {
    daemon
        .post(&format!("/tokens/{token}/events/{event}"), &json!({}))
        .expect(200)
}

/// `(state, status)` of a token.
pub fn where_is(daemon: &Daemon, token: &str) -> (String, String) {
    let found = daemon.get(&format!("/tokens/{token}")).expect(200);
    let text = |key: &str| found[key].as_str().unwrap_or_default().to_string();
    (text("state"), text("status"))
}

fn at(state: &str, status: &str) -> (String, String) {
    (state.to_string(), status.to_string())
}

fn old_tokens_finish_under_their_own_graph_while_new_ones_start_on_the_served_one() {
    let (mut daemon, v2, _graphs) = v1_then_v2();
    let v1_checksum = daemon.get("/workflow").expect(200);
    let v1_checksum = harness_checksum(&v1_checksum);
    start(&daemon, "SMALL", json!({"amount": 50}));
    start(&daemon, "LARGE", json!({"amount": 500}));
    start(&daemon, "CHECKED", json!({"amount": 500}));
    fire(&daemon, "CHECKED", "submit");
    let daemon = serve_next(&mut daemon, v2);
    assert!(
        daemon.stderr().contains("of 'shop': 5 live token(s)"),
        "the start logs the live tokens of the old graph\n{}",
        daemon.report()
    );

    // A guard of v1: a small order goes to review (v2 would triage it), and its
    // review times out after v1's 3 s into v1's `expired`.
    fire(&daemon, "SMALL", "submit");
    assert_eq!(where_is(&daemon, "SMALL"), at("review", "active"));
    eventually(
        Duration::from_secs(15),
        "v1's timeout moves SMALL to expired",
        || daemon.report(),
        || where_is(&daemon, "SMALL") == at("expired", "active"),
    );
    fire(&daemon, "SMALL", "ok");
    assert_eq!(where_is(&daemon, "SMALL"), at("expired", "completed"));

    // A parallel state entered after v2 is served starts v1's two children.
    fire(&daemon, "LARGE", "submit");
    assert_eq!(where_is(&daemon, "LARGE"), at("checks", "active"));
    daemon.get("/tokens/LARGE.checks.1.stock").expect(200);
    daemon.get("/tokens/LARGE.checks.1.fraud").expect(200);

    // A join of v1 started before: it waits for both children, then moves.
    fire(&daemon, "CHECKED.checks.1.stock", "done");
    assert_eq!(where_is(&daemon, "CHECKED"), at("checks", "active"));
    fire(&daemon, "CHECKED.checks.1.fraud", "done");
    assert_eq!(where_is(&daemon, "CHECKED"), at("approved", "active"));
    fire(&daemon, "CHECKED", "ok");
    assert_eq!(where_is(&daemon, "CHECKED"), at("approved", "completed"));

    // New tokens run v2: the schema wants a customer, and submit triages.
    let refused = daemon
        .post(
            "/tokens",
            &json!({"token": "NEW", "context": {"amount": 5}}),
        )
        .refused(422, "invalid_context");
    assert!(refused.contains("customer"), "{refused}");
    start(&daemon, "NEW", json!({"amount": 5, "customer": "ACME"}));
    fire(&daemon, "NEW", "submit");
    assert_eq!(where_is(&daemon, "NEW"), at("triage", "active"));

    // The graphs as `GET /graphs` lists them, and an old token's detail.
    let graphs = daemon.get("/graphs").expect(200)["graphs"].clone();
    assert_eq!(graphs.as_array().map(Vec::len), Some(2), "{graphs}");
    assert_eq!(graphs[0]["checksum"], v1_checksum.as_str(), "{graphs}");
    assert_eq!(graphs[0]["served"], false, "{graphs}");
    assert_eq!(graphs[0]["tokens"]["completed"], 4, "{graphs}");
    assert_eq!(graphs[0]["tokens"]["active"], 3, "{graphs}");
    assert_eq!(graphs[1]["served"], true, "{graphs}");
    assert_eq!(graphs[1]["tokens"], json!({"active": 1}), "{graphs}");
    let prefix = &v1_checksum[..16];
    let document = daemon.get(&format!("/graphs/{prefix}")).expect(200);
    assert!(document["states"].get("expired").is_some(), "{document}");
    daemon.get("/graphs/sha256:0000").refused(404, "not_found");
    let detail = daemon.get("/tokens/LARGE/detail").expect(200);
    assert_eq!(detail["graph"], &v1_checksum[..19], "{detail}");
    assert_eq!(detail["graph_served"], false, "{detail}");
    let detail = daemon.get("/tokens/NEW/detail").expect(200);
    assert_eq!(detail["graph_served"], true, "{detail}");
    let show = |id: &str| {
        run(
            daemon.dir.path(),
            &["token", "show", id, "--url", &daemon.url],
        )
    };
    let shown = show("LARGE");
    let named = format!(
        "  runs on graph {}, not the served one (token migrate moves it)",
        &v1_checksum[..19]
    );
    assert_eq!(shown.stdout.lines().nth(1), Some(named.as_str()), "{shown}");
    assert!(!show("NEW").stdout.contains("runs on graph"));

    // A filter by graph, and one naming a state only v1 has.
    let filter = harness::encoded(&format!(
        "graph == '{}' and parent == null",
        &v1_checksum[7..15]
    ));
    let listed = daemon.get(&format!("/tokens?where={filter}")).expect(200);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["token"].as_str())
        .collect();
    assert_eq!(ids.len(), 3, "{listed}");
    assert!(!ids.contains(&"NEW"), "{listed}");
    let filter = harness::encoded("state == 'expired'");
    let listed = daemon.get(&format!("/tokens?where={filter}")).expect(200);
    assert_eq!(listed[0]["token"], "SMALL", "{listed}");
}

both!(old_tokens_finish_under_their_own_graph_while_new_ones_start_on_the_served_one);

/// The checksum of `GET /workflow`'s document, as the daemon computes it.
fn harness_checksum(document: &Value) -> String {
    stateous_shared::graph::checksum(document)
}

/// A graph that changes only timeouts or retries is of the same structure: its
/// tokens take the new timings at once, and both graphs read as served.
fn a_change_of_timings_alone_serves_every_token_by_the_new_graph() {
    let graphs = tempfile::tempdir().unwrap();
    let v1 = compiled(graphs.path(), "v1");
    let flow = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/versions/v1.yaml"),
    )
    .unwrap();
    let slower = graphs.path().join("v1b.yaml");
    std::fs::write(&slower, flow.replace("timeout: 3s", "timeout: 1h")).unwrap();
    let out = graphs.path().join("v1b.json");
    let (flow, target) = (slower.display().to_string(), out.display().to_string());
    let finished = run(graphs.path(), &["compile", &flow, "--out", &target]);
    assert_eq!(finished.code(), 0, "{finished}");
    let mut daemon = Setup::new(v1).start();
    start(&daemon, "SMALL", json!({"amount": 5}));
    let daemon = serve_next(&mut daemon, out);
    let graphs = daemon.get("/graphs").expect(200)["graphs"].clone();
    assert_eq!(graphs.as_array().map(Vec::len), Some(2), "{graphs}");
    assert_eq!(graphs[0]["served"], true, "{graphs}");
    assert_eq!(graphs[1]["served"], true, "{graphs}");
    // The old token takes the new timeout: an hour, not 3 s.
    fire(&daemon, "SMALL", "submit");
    let detail = daemon.get("/tokens/SMALL/detail").expect(200);
    assert_eq!(detail["graph_served"], true, "{detail}");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(where_is(&daemon, "SMALL"), at("review", "active"));
}

both!(a_change_of_timings_alone_serves_every_token_by_the_new_graph);

/// `stateous serve GRAPH` on `daemon`'s database (stopped), run to its end: a
/// refused start exits at once; one that serves is killed after 15 s.
fn serve_once(daemon: &Daemon, graph: &Path) -> harness::Finished {
    let socket = daemon.dir.path().join("once.sock").display().to_string();
    let (graph, url) = (graph.display().to_string(), daemon.database.url());
    let args = ["serve", &graph, "--db", &url, "--listen", "127.0.0.1:0"];
    let args = [&args[..], &["--socket", &socket]].concat();
    harness::run_within(daemon.dir.path(), &args, Duration::from_secs(15))
}

/// The rows a refused start must leave as they were: each kept graph, the graph
/// on record, and each token with its status.
fn kept_rows(daemon: &Daemon) -> Vec<Vec<Option<String>>> {
    let mut rows = daemon.rows("SELECT checksum, workflow FROM graphs ORDER BY checksum");
    rows.extend(daemon.rows("SELECT structure, checksum FROM control_plane"));
    rows.extend(daemon.rows("SELECT token, status, graph FROM tokens ORDER BY token"));
    rows
}

/// A graph whose workflow has another name than the live tokens' is given the
/// wrong database (its supervisors would claim their tasks by state name): the
/// start is refused in one line, exit 1, and changes nothing; the first graph
/// serves again, and once its tokens ended the other workflow is served.
fn a_graph_of_another_workflow_is_refused_while_tokens_of_the_first_live() {
    let graphs = tempfile::tempdir().unwrap();
    let v1 = compiled(graphs.path(), "v1");
    let mut daemon = Setup::new(v1.clone()).start();
    start(&daemon, "SMALL", json!({"amount": 50}));
    // A large order's two children are live too, but only top tokens count.
    start(&daemon, "LARGE", json!({"amount": 500}));
    fire(&daemon, "LARGE", "submit");
    start(&daemon, "DONE", json!({"amount": 50}));
    daemon.post_empty("/tokens/DONE/cancel").expect(200);
    assert_eq!(daemon.stop_with(libc::SIGINT).code(), Some(0));
    let before = kept_rows(&daemon);
    assert_eq!(before.len(), 1 + 1 + 5, "{before:?}");
    let tickets = harness::test_graph("tickets");
    let refused = serve_once(&daemon, &tickets);
    assert_eq!(refused.code(), 1, "{refused}");
    assert_eq!(
        refused.stderr,
        "error: the database holds 2 live token(s) of the workflow 'shop' and this graph is \
         the workflow 'tickets': serve it on a database of its own (--db), or end those \
         tokens first\n",
        "{refused}"
    );
    assert_eq!(
        kept_rows(&daemon),
        before,
        "the refused start changed nothing"
    );

    // The first graph serves again; a paused token is live too.
    let mut daemon = serve_stopped(&mut daemon, v1.clone());
    daemon.post_empty("/tokens/LARGE/cancel").expect(200);
    daemon.post_empty("/tokens/SMALL/pause").expect(200);
    assert_eq!(daemon.stop_with(libc::SIGINT).code(), Some(0));
    let refused = serve_once(&daemon, &tickets);
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("holds 1 live token(s) of the workflow 'shop'"),
        "{refused}"
    );

    // Once its tokens ended, the other workflow serves the database.
    let mut daemon = serve_stopped(&mut daemon, v1);
    daemon.post_empty("/tokens/SMALL/cancel").expect(200);
    let daemon = serve_next(&mut daemon, tickets);
    let graphs = daemon.get("/graphs").expect(200)["graphs"].clone();
    assert_eq!(graphs.as_array().map(Vec::len), Some(2), "{graphs}");
    assert_eq!(graphs[1]["workflow"], "tickets", "{graphs}");
    assert_eq!(graphs[1]["served"], true, "{graphs}");
}

both!(a_graph_of_another_workflow_is_refused_while_tokens_of_the_first_live);
