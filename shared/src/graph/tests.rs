//! Tests of the graph file: checksums against the reference's known values, every
//! load refusal, and the model checks.

use serde_json::{json, Value};

use super::*;

/// The text of a graph file kept in the repository's `assets/`.
fn asset(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join("assets").join(path)).expect("asset file")
}

fn asset_value(path: &str) -> Value {
    serde_json::from_str(&asset(path)).expect("asset JSON")
}

/// The sdlc document without its one guard, so that it loads before the guard
/// parser lands in this branch.
fn unguarded_sdlc() -> Value {
    let mut doc = asset_value("sdlc/build/sdlc.json");
    let transitions = doc["transitions"].as_array_mut().unwrap();
    transitions[4].as_object_mut().unwrap().remove("when");
    transitions.remove(5);
    doc
}

fn load_err(doc: &Value) -> String {
    Graph::load(&doc.to_string()).unwrap_err().0
}

#[test]
fn checksums_match_the_reference() {
    assert_eq!(
        checksum(&asset_value("orders/build/orders.json")),
        "sha256:77510d7465e1e6d8061c1018f6f152e6136aa15304b08e92be3efa62174d7851"
    );
    assert_eq!(
        checksum(&asset_value("sdlc/build/sdlc.json")),
        "sha256:ce35bf077678e6aa975cf404a1417ecdb9f5283b037a34d00d5418cbc9123881"
    );
}

#[test]
fn structure_ignores_timeout_and_retries_only() {
    let sdlc = asset_value("sdlc/build/sdlc.json");
    assert_eq!(
        structure(&sdlc),
        "sha256:2b5d9db42e1de6a5c7cb7d345e0d561cc2891b230a11c61734227b9bdbafc72e"
    );
    let orders = asset_value("orders/build/orders.json");
    assert_eq!(structure(&orders), checksum(&orders));
    let mut changed = sdlc.clone();
    changed["states"]["coding"]["timeout"] = json!("1d");
    changed["states"]["coding"]["retries"] = json!(5);
    assert_eq!(structure(&changed), structure(&sdlc));
    assert_ne!(checksum(&changed), checksum(&sdlc));
    changed["states"]["testing"]["emits"] = json!(["passed"]);
    assert_ne!(structure(&changed), structure(&sdlc));
}

#[test]
fn structure_strips_child_workflows_too() {
    let doc = json!({"states": {}, "workflows": {"w": {"states": {"a": {"timeout": "1h", "emits": []}}}}});
    let bare = json!({"states": {}, "workflows": {"w": {"states": {"a": {"emits": []}}}}});
    assert_eq!(structure(&doc), checksum(&bare));
}

#[test]
fn a_graph_loads_into_workflows() {
    let graph = Graph::load(&unguarded_sdlc().to_string()).unwrap();
    assert_eq!(graph.checksum, checksum(&graph.document));
    let main = &graph.main;
    assert_eq!(main.name, "sdlc");
    assert_eq!(main.context.as_deref(), Some("Ticket"));
    let coding = &main.states["coding"];
    assert_eq!(coding.timeout.as_deref(), Some("6h"));
    assert_eq!(coding.retries, 2);
    assert_eq!(coding.emits, ["done", "stuck"]);
    assert_eq!(coding.join, "all");
    assert_eq!(main.starts().count(), 1);
    assert_eq!(main.starts().next().unwrap().event, STARTED);
    let targets: Vec<_> = main
        .candidates("coding", "done")
        .map(|t| &t.target)
        .collect();
    assert_eq!(targets, ["testing"]);
    assert!(main.declares("passed") && !main.declares("timeout"));
    assert_eq!(main.events["failed"].as_deref(), Some("Tests"));
    assert!(graph.workflow("sdlc").is_some() && graph.workflow("other").is_none());
}

#[test]
fn payloads_and_contexts_are_checked_against_their_models() {
    let graph = Graph::load(&unguarded_sdlc().to_string()).unwrap();
    let main = &graph.main;
    let ok = json!({"passed": 3, "failed": 0});
    assert!(main.payload_errors("passed", ok.as_object()).is_empty());
    let bad = json!({"passed": "3", "failed": 0});
    let errors = main.payload_errors("passed", bad.as_object());
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("passed: "), "{errors:?}");
    let missing = main.payload_errors("passed", None);
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(
        missing.iter().all(|e| e.starts_with("Tests: ")),
        "{missing:?}"
    );
    assert!(main.payload_errors("done", None).is_empty());
    assert!(main.payload_errors("done", Some(&Object::new())).is_empty());
    assert_eq!(
        main.payload_errors("done", json!({"a": 1}).as_object()),
        ["'done' carries no payload"]
    );
    assert!(main
        .context_errors(json!({"repo": "r"}).as_object().unwrap())
        .is_empty());
    let errors = main.context_errors(&Object::new());
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("Ticket: ") && errors[0].contains("repo"));
}

#[test]
fn defaults_fill_the_context() {
    let mut doc = unguarded_sdlc();
    doc["schemas"]["Ticket"]["properties"]["branch"] = json!({"type": "string", "default": "main"});
    let graph = Graph::load(&doc.to_string()).unwrap();
    let filled = graph
        .main
        .with_defaults(json!({"repo": "r"}).as_object().unwrap());
    assert_eq!(
        Value::Object(filled),
        json!({"branch": "main", "repo": "r"})
    );
    let kept = graph
        .main
        .with_defaults(json!({"branch": "dev"}).as_object().unwrap());
    assert_eq!(kept["branch"], "dev");
}

#[test]
fn bad_json_names_its_line() {
    let err = Graph::load("{\"a\": 1,\n\"b\" 2}").unwrap_err().0;
    assert!(
        err.starts_with("the graph file is not valid JSON: "),
        "{err}"
    );
    assert!(err.ends_with(" at line 2"), "{err}");
    assert_eq!(
        Graph::load("[1]").unwrap_err().0,
        "the graph file is not a JSON object"
    );
}

#[test]
fn missing_keys_and_other_formats_are_refused() {
    for key in [
        "stateous",
        "workflow",
        "states",
        "events",
        "transitions",
        "schemas",
    ] {
        let mut doc = unguarded_sdlc();
        doc.as_object_mut().unwrap().remove(key);
        let err = load_err(&doc);
        assert!(err.contains(&format!("has no '{key}'")), "{err}");
    }
    for format in [json!(2), json!(1.0), json!("1"), json!(true)] {
        let mut doc = unguarded_sdlc();
        doc["stateous"] = format;
        assert!(load_err(&doc).contains("reads format 1"));
    }
}

#[test]
fn bad_state_settings_are_refused() {
    let cases = [
        ("timeout", json!("90x"), "is not a duration"),
        ("timeout", json!(5), "is not a duration"),
        ("timeout", json!("9999d"), "too long"),
        ("retries", json!(-1), "retries must be a whole number"),
        ("retries", json!(1.5), "retries must be a whole number"),
        ("retries", json!(true), "retries must be a whole number"),
        ("inputs", json!("repo"), "'inputs' must be a list"),
        ("inputs", json!([1]), "'inputs' must be a list"),
        (
            "parallel",
            json!(["nope"]),
            "'parallel' must name workflows",
        ),
        ("parallel", json!([]), "'parallel' must name workflows"),
        ("join", json!("some"), "'join' must be 'all' or 'any'"),
    ];
    for (key, value, expected) in cases {
        let mut doc = unguarded_sdlc();
        doc["states"]["coding"][key] = value;
        let err = load_err(&doc);
        assert!(
            err.starts_with("the graph file's state 'coding': "),
            "{err}"
        );
        assert!(err.contains(expected), "{key}: {err}");
    }
    let mut doc = unguarded_sdlc();
    doc["states"]["coding"] = json!([]);
    assert!(load_err(&doc).contains("state 'coding' is not an object"));
}

#[test]
fn child_workflows_are_checked() {
    let mut doc = unguarded_sdlc();
    doc["workflows"] = json!([]);
    assert!(load_err(&doc).contains("'workflows' is not an object"));
    doc["workflows"] = json!({"review": {"states": {}, "events": {}}});
    assert!(load_err(&doc).contains("workflow 'review' has no 'transitions'"));
    doc["workflows"] =
        json!({"review": {"states": {"look": {"retries": -2}}, "events": {}, "transitions": []}});
    assert!(load_err(&doc).contains("state 'look': retries"));
    doc["workflows"] = json!({"review": {
        "states": {"look": {"emits": ["ok"]}},
        "events": {"ok": {}},
        "transitions": [{"from": START, "to": "look"}, {"from": "look", "to": END, "on": "ok"}]
    }});
    doc["states"]["fan"] = json!({"parallel": ["review"], "join": "any", "inputs": ["repo"]});
    let graph = Graph::load(&doc.to_string()).unwrap();
    assert_eq!(graph.main.states["fan"].parallel, ["review"]);
    assert_eq!(graph.main.states["fan"].join, "any");
    assert_eq!(graph.children["review"].states["look"].emits, ["ok"]);
    assert!(graph.workflow("review").is_some());
}

#[test]
fn bad_transitions_events_and_models_are_refused() {
    let mut doc = unguarded_sdlc();
    doc["transitions"][1]["to"] = json!("nowhere");
    assert!(load_err(&doc).contains("enters a state the workflow does not have"));
    let mut doc = unguarded_sdlc();
    doc["transitions"][1]["on"] = json!("nothing");
    assert!(load_err(&doc).contains("taken on an event"));
    let mut doc = unguarded_sdlc();
    doc["transitions"][1]
        .as_object_mut()
        .unwrap()
        .remove("from");
    assert!(load_err(&doc).contains("has no 'from' state"));
    let mut doc = unguarded_sdlc();
    doc["events"]["done"] = json!({"payload": "Missing"});
    assert!(load_err(&doc).contains("not in 'schemas'"));
    let mut doc = unguarded_sdlc();
    doc["schemas"]["Tests"] = json!({"type": "nonsense"});
    assert!(load_err(&doc).contains("not valid JSON Schema"));
    let mut doc = unguarded_sdlc();
    doc["transitions"][1]["otherwise"] = json!("yes");
    assert!(load_err(&doc).contains("'otherwise' must be true or false"));
}

#[test]
fn the_reference_graph_files_load_with_their_guards() {
    let sdlc = Graph::load(&asset("sdlc/build/sdlc.json")).unwrap();
    assert_eq!(
        sdlc.checksum,
        "sha256:ce35bf077678e6aa975cf404a1417ecdb9f5283b037a34d00d5418cbc9123881"
    );
    let guarded: Vec<_> = sdlc.main.candidates("testing", "failed").collect();
    assert_eq!(
        guarded[0].when.as_ref().unwrap().text,
        "count('failed') < 3"
    );
    assert!(guarded[1].otherwise && guarded[1].when.is_none());
    let orders = Graph::load(&asset("orders/build/orders.json")).unwrap();
    assert_eq!(
        orders.checksum,
        "sha256:77510d7465e1e6d8061c1018f6f152e6136aa15304b08e92be3efa62174d7851"
    );
    let mut doc = asset_value("orders/build/orders.json");
    doc["transitions"][2]["when"] = json!("payload.approved ==");
    assert!(load_err(&doc).contains("has a bad guard: guard 'payload.approved ==': "));
}
