//! Black-box: the example supervisors of `assets/`, `supervise --url`, and
//! `serve --supervise`.

use crate::harness;
use crate::supervising;

use std::path::Path;

use harness::{asset_graph, run, Setup};
use serde_json::{json, Value};
use supervising::{
    example_folder, folder_for, history, sdlc, start_token, wait_for_status, write_script,
    Supervise, TIMINGS,
};

/// The routines of the `serve --supervise` test.
const CODING: &str = "stateous ctx note working\nstateous ctx emit done";
const TESTING: &str = r#"stateous ctx emit passed '{"passed": 1, "failed": 0}'"#;

#[test]
fn the_orders_example_supervisor_reviews_each_order_twice_unless_rushed() {
    let daemon = Setup::new(asset_graph("orders")).start();
    let folder = example_folder(&daemon, "orders-supervisor");
    let _sup = Supervise::start(&folder);
    for (id, title) in [("O-1", "desk"), ("O-2", "rush chair")] {
        daemon
            .post(
                "/tokens",
                &json!({"token": id, "context": {"title": title}}),
            )
            .expect(201);
    }
    wait_for_status(&daemon, "O-1", "completed");
    wait_for_status(&daemon, "O-2", "completed");
    let reviews = |id: &str| {
        history(&daemon, id)
            .iter()
            .filter(|e| e["kind"] == "event_accepted" && e["data"]["event"] == "reviewed")
            .count()
    };
    assert_eq!(reviews("O-1"), 2);
    assert_eq!(reviews("O-2"), 1);
}

#[test]
fn the_sdlc_example_supervisor_codes_and_tests_a_checkout() {
    let daemon = sdlc();
    let folder = example_folder(&daemon, "sdlc-supervisor");
    let checkout = folder.join("repo");
    std::fs::create_dir_all(&checkout).unwrap();
    write_script(&checkout.join("test_ok"), "exit 0");
    let _sup = Supervise::start(&folder);
    daemon
        .post(
            "/tokens",
            &json!({"token": "TICKET-1", "context": {"repo": "repo"}}),
        )
        .expect(201);
    daemon
        .post(
            "/tokens",
            &json!({"token": "TICKET-2", "context": {"repo": "nowhere"}}),
        )
        .expect(201);
    wait_for_status(&daemon, "TICKET-1", "completed");
    wait_for_status(&daemon, "TICKET-2", "completed");
    let last = |id: &str| {
        history(&daemon, id)
            .into_iter()
            .rfind(|e| e["kind"] == "event_accepted")
            .map(|e| e["data"]["event"].clone())
    };
    assert_eq!(last("TICKET-1"), Some(json!("passed")));
    assert_eq!(last("TICKET-2"), Some(json!("stuck")));
}

#[test]
fn the_example_contracts_are_those_of_the_example_graphs() {
    for (graph, folder) in [("orders", "orders-supervisor"), ("sdlc", "sdlc-supervisor")] {
        let daemon = Setup::new(asset_graph(graph)).start();
        let health = daemon.get("/health").expect(200);
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets")
            .join(folder)
            .join("contract.json");
        let contract: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(
            contract["checksum"], health["checksum"],
            "run `stateous init supervisor assets/{graph}/build/{graph}.json assets/{folder}`"
        );
    }
}

#[test]
fn url_on_the_command_line_wins_and_a_unix_socket_serves_as_well() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[("coding.sh", "stateous ctx emit stuck")]);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace(&daemon.url, "http://127.0.0.1:9");
    std::fs::write(&config, text).unwrap();
    let socket = format!("unix://{}", daemon.socket.display());
    let sup = Supervise::start_with(&folder, &["--url", &socket]);
    sup.wait_for_line(&format!("serves coding; the control plane is {socket}"));
    start_token(&daemon, "U-1");
    wait_for_status(&daemon, "U-1", "completed");
}

#[test]
fn serve_with_supervise_runs_the_folder_in_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("sdlc").display().to_string();
    let made = run(dir.path(), &["init", "supervisor", &graph, "sup"]);
    assert_eq!(made.code(), 0, "{made}");
    let folder = dir.path().join("sup");
    write_script(&folder.join("coding.sh"), CODING);
    write_script(&folder.join("testing.sh"), TESTING);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).unwrap() + TIMINGS;
    std::fs::write(&config, text).unwrap();
    let db = dir.path().join("stateous.db");
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .in_dir(dir, db)
        .args(&["--supervise", folder.to_str().unwrap()])
        .start();
    start_token(&daemon, "B-1");
    wait_for_status(&daemon, "B-1", "completed");
    let stderr = daemon.stderr();
    assert!(
        stderr.contains("box-1 serves coding, testing; the control plane is unix://"),
        "{stderr}"
    );
    // The supervisor logs its report once the answer came back, which may be
    // after the token's status reads completed.
    harness::eventually(
        std::time::Duration::from_secs(10),
        "the supervisor logs B-1's report",
        || daemon.stderr(),
        || daemon.stderr().contains("of B-1: reported passed"),
    );
    let status = daemon.stop_with(libc::SIGINT);
    assert_eq!(status.code(), Some(0), "{}", daemon.report());
}

#[test]
fn serve_with_a_folder_that_cannot_be_used_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("sdlc").display().to_string();
    let finished = run(
        dir.path(),
        &[
            "serve",
            &graph,
            "--listen",
            "127.0.0.1:0",
            "--supervise",
            "missing",
        ],
    );
    assert_eq!(finished.code(), 1, "{finished}");
    assert_eq!(
        finished.stderr, "error: missing is not a folder\n",
        "{finished}"
    );
}

#[test]
fn a_command_line_under_routines_serves_its_state() {
    let daemon = sdlc();
    let folder = folder_for(&daemon, &[]);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).unwrap()
        + "routines:\n  coding: stateous ctx note \"from $STATEOUS_STATE\" && stateous ctx emit stuck\n";
    std::fs::write(&config, text).unwrap();
    let sup = Supervise::start(&folder);
    sup.wait_for_line("box-1 serves coding; the control plane is");
    start_token(&daemon, "C-1");
    wait_for_status(&daemon, "C-1", "completed");
    let notes: Vec<Value> = history(&daemon, "C-1")
        .into_iter()
        .filter(|e| e["kind"] == "note")
        .map(|e| e["data"]["text"].clone())
        .collect();
    assert_eq!(notes, [json!("from coding")]);
}
