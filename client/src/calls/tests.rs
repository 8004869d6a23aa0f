//! The paths, bodies and headers of the calls.

use super::*;

#[test]
fn names_are_percent_encoded_whole() {
    assert_eq!(Call::history("a/b").path, "/tokens/a%2Fb/history");
}

#[test]
fn calls_carry_the_documented_paths_and_bodies() {
    let query = TokenQuery {
        status: Some("active".into()),
        parent: Some("P 1".into()),
        limit: Some(5),
        ..TokenQuery::default()
    };
    assert_eq!(
        Call::tokens(&query).path,
        "/tokens?status=active&parent=P%201&limit=5"
    );
    assert_eq!(Call::tokens(&TokenQuery::default()).path, "/tokens");
    let filtered = TokenQuery {
        filter: Some("moved > 60 and state == 'a b'".into()),
        state: Some("review".into()),
        offset: Some(40),
        ..TokenQuery::default()
    };
    assert_eq!(
        Call::tokens(&filtered).path,
        "/tokens?where=moved%20%3E%2060%20and%20state%20%3D%3D%20%27a%20b%27\
         &state=review&offset=40"
    );
    let fire = Call::fire("T-1", "done", None, Some("k-1"));
    assert_eq!(fire.body, Some(serde_json::json!({})));
    assert_eq!(fire.key.as_deref(), Some("k-1"));
    let claim = Call::claim(&ClaimRequest {
        supervisor: "box".into(),
        states: vec!["a".into()],
        ..ClaimRequest::default()
    });
    assert_eq!(
        claim.body,
        Some(serde_json::json!({"supervisor": "box", "states": ["a"]}))
    );
    assert_eq!(claim.waits, None);
    let waiting = Call::claim(&ClaimRequest {
        supervisor: "box".into(),
        states: vec!["a".into()],
        wait: Some(std::time::Duration::from_millis(2500)),
        ..ClaimRequest::default()
    });
    assert_eq!(
        waiting.body,
        Some(serde_json::json!({"supervisor": "box", "states": ["a"], "wait": 2.5}))
    );
    assert_eq!(
        waiting.waits,
        Some(std::time::Duration::from_millis(2500)),
        "the answer may take the wait longer than the timeout"
    );
    let beat = Call::heartbeat(&HeartbeatRequest {
        supervisor: "box".into(),
        tasks: vec![1, 2],
        outbox: Some(3),
        ..HeartbeatRequest::default()
    });
    assert_eq!(
        beat.body,
        Some(serde_json::json!({"supervisor": "box", "tasks": [1, 2], "outbox": 3}))
    );
    let named = HeartbeatRequest::of_attempts("box", &BTreeMap::from([(10, 2), (7, 1)]), None);
    assert_eq!(
        serde_json::to_string(&Call::heartbeat(&named).body).unwrap(),
        r#"{"supervisor":"box","tasks":[7,10],"attempts":{"7":1,"10":2}}"#
    );
    assert_eq!(Call::steer("T", Steer::Cancel).path, "/tokens/T/cancel");
    let advance = Call::clock_advance("10m");
    assert_eq!(
        (advance.method, advance.path.as_str()),
        ("POST", "/clock/advance")
    );
    assert_eq!(advance.body, Some(serde_json::json!({"by": "10m"})));
    assert_eq!(Call::clock_freeze(false).path, "/clock/thaw");
    assert_eq!(Call::states().path, "/states");
    let memory = Call::set_memory(4, "k", &Value::Null, Some(2));
    assert_eq!(memory.method, "PUT");
    assert_eq!(
        serde_json::to_string(&memory.body).unwrap(),
        r#"{"key":"k","value":null,"attempt":2}"#
    );
    assert_eq!(
        serde_json::to_string(&Call::note(4, "n", None).body).unwrap(),
        r#"{"text":"n"}"#
    );
}

#[test]
fn a_call_with_an_empty_name_is_not_sent() {
    assert!(Call::schedule_remove("").problem().is_some());
    assert!(Call::why("").problem().is_some());
    assert!(Call::token("").problem().is_some());
    assert!(Call::schedule_remove("nightly").problem().is_none());
    assert!(Call::tokens(&TokenQuery::default()).problem().is_none());
}
