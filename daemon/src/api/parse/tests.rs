//! Tests of the one place where raw bodies, queries and headers become inputs.

use super::*;
use crate::validated::ReportKind;
use serde_json::json;

fn body(value: Value) -> Object {
    match value {
        Value::Object(object) => object,
        _ => panic!("a test body is an object"),
    }
}

fn code<T: std::fmt::Debug>(result: Result<T, Refusal>) -> Code {
    result.unwrap_err().code
}

/// The token and the event of a fire whose body and key a test reads.
fn t() -> String {
    "T-1".to_string()
}

fn e() -> String {
    "done".to_string()
}

fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_start_needs_a_string_id_and_an_object_context() {
    let ok = StartInput::parse(&body(json!({"token": "T-1"}))).unwrap();
    assert_eq!(ok.context, Object::new());
    let null = StartInput::parse(&body(json!({"token": "T-1", "context": null}))).unwrap();
    assert_eq!(null.context, Object::new());
    for bad in [
        json!({"token": 7}),
        json!({"token": null}),
        json!({"token": 1.0}),
        json!({}),
    ] {
        assert_eq!(code(StartInput::parse(&body(bad))), Code::InvalidTokenId);
    }
    let listed = body(json!({"token": "T-1", "context": [1]}));
    assert_eq!(code(StartInput::parse(&listed)), Code::InvalidContext);
}

#[test]
fn a_listing_takes_known_statuses_and_limits_from_1_to_1000() {
    let plain = ListInput::parse(&[]).unwrap();
    assert_eq!((plain.status, plain.parent, plain.limit), (None, None, 100));
    let full = ListInput::parse(&query(&[("status", "paused"), ("limit", "1000")])).unwrap();
    assert_eq!((full.status.as_deref(), full.limit), (Some("paused"), 1000));
    let last_wins = ListInput::parse(&query(&[("limit", "0"), ("limit", "5")])).unwrap();
    assert_eq!(last_wins.limit, 5);
    let long = "9".repeat(30);
    let parent = "x".repeat(129);
    for bad in [
        ("status", "done"),
        ("status", ""),
        ("limit", "0"),
        ("limit", "1001"),
        ("limit", "abc"),
        ("limit", ""),
        ("limit", "-1"),
        ("limit", long.as_str()),
        ("parent", ""),
        ("parent", parent.as_str()),
    ] {
        assert_eq!(
            code(ListInput::parse(&query(&[bad]))),
            Code::InvalidArgument,
            "{bad:?}"
        );
    }
}

#[test]
fn an_idempotency_key_has_1_to_256_characters_and_no_control_characters() {
    let empty = Object::new();
    assert_eq!(
        FireInput::parse(t(), e(), &empty, Some(b"gh-1"))
            .unwrap()
            .key
            .as_ref()
            .map(Key::as_str),
        Some("gh-1")
    );
    assert!(FireInput::parse(t(), e(), &empty, Some("k".repeat(256).as_bytes())).is_ok());
    let accents = "é".repeat(256);
    let kept = FireInput::parse(t(), e(), &empty, Some(accents.as_bytes())).unwrap();
    assert_eq!(
        kept.key.as_ref().map(Key::as_str),
        Some(accents.as_str()),
        "counted in characters, kept as sent"
    );
    for bad in [
        b"".to_vec(),
        "k".repeat(257).into_bytes(),
        "é".repeat(257).into_bytes(),
        b"caf\xe9".to_vec(),
        b"a\tb".to_vec(),
        b"a\x7f".to_vec(),
    ] {
        assert_eq!(
            code(FireInput::parse(t(), e(), &empty, Some(&bad))),
            Code::InvalidPayload
        );
    }
    assert_eq!(
        code(FireInput::parse(
            t(),
            e(),
            &body(json!({"payload": 1})),
            None
        )),
        Code::InvalidPayload
    );
}

#[test]
fn a_claim_checks_its_supervisor_states_and_request_id() {
    let ok = ClaimInput::parse(&body(
        json!({"supervisor": "box-1", "states": ["a", "w/b"], "request": "r-1.x_y"}),
    ))
    .unwrap();
    assert_eq!(ok.request.as_ref().map(RequestId::as_str), Some("r-1.x_y"));
    let null = ClaimInput::parse(&body(
        json!({"supervisor": "b", "states": [], "request": null}),
    ))
    .unwrap();
    assert_eq!(null.request, None);
    let cases = [
        (
            json!({"supervisor": "", "states": []}),
            Code::InvalidArgument,
        ),
        (
            json!({"supervisor": "x".repeat(257), "states": []}),
            Code::InvalidArgument,
        ),
        (
            json!({"supervisor": "b", "states": [], "request": "no spaces"}),
            Code::InvalidArgument,
        ),
        (
            json!({"supervisor": "b", "states": [], "request": "x".repeat(65)}),
            Code::InvalidArgument,
        ),
        (json!({"supervisor": "b"}), Code::InvalidBody),
        (json!({"supervisor": "b", "states": [1]}), Code::InvalidBody),
        (
            json!({"supervisor": "b", "states": ["x".repeat(130)]}),
            Code::InvalidBody,
        ),
        (
            json!({"supervisor": "b", "states": vec!["s"; 1001]}),
            Code::InvalidArgument,
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            code(ClaimInput::parse(&body(raw.clone()))),
            expected,
            "{raw}"
        );
    }
    assert!(ClaimInput::parse(&body(
        json!({"supervisor": "x".repeat(256), "states": vec!["s"; 1000]})
    ))
    .is_ok());
}

#[test]
fn a_heartbeat_takes_up_to_1000_positive_task_ids() {
    assert_eq!(
        HeartbeatInput::parse(&body(json!({"supervisor": "b", "tasks": [1, 2]})))
            .unwrap()
            .tasks,
        vec![1, 2]
    );
    for tasks in [
        json!("1"),
        json!([true]),
        json!([-1]),
        json!([0]),
        json!([1.5]),
        json!(null),
        json!([1e30]),
    ] {
        let raw = body(json!({"supervisor": "b", "tasks": tasks}));
        assert_eq!(
            code(HeartbeatInput::parse(&raw)),
            Code::InvalidBody,
            "{tasks}"
        );
    }
    let many = body(json!({"supervisor": "b", "tasks": vec![1; 1001]}));
    assert_eq!(code(HeartbeatInput::parse(&many)), Code::InvalidArgument);
}

#[test]
fn a_heartbeat_may_name_the_attempt_of_each_task() {
    let named = HeartbeatInput::parse(&body(
        json!({"supervisor": "b", "tasks": [3, 12], "attempts": {"3": 1, "12": 4}}),
    ))
    .unwrap();
    assert_eq!(
        named.attempts.into_iter().collect::<Vec<_>>(),
        vec![(3, 1), (12, 4)]
    );
    for absent in [
        json!({"supervisor": "b", "tasks": [3]}),
        json!({"supervisor": "b", "tasks": [3], "attempts": null}),
    ] {
        assert!(HeartbeatInput::parse(&body(absent))
            .unwrap()
            .attempts
            .is_empty());
    }
    for attempts in [
        json!([1]),
        json!("3:1"),
        json!({"x": 1}),
        json!({"03": 1}),
        json!({"-3": 1}),
        json!({"0": 1}),
        json!({"3": 0}),
        json!({"3": "1"}),
        json!({"3": 1.5}),
        json!({"99999999999999999999": 1}),
    ] {
        let raw = body(json!({"supervisor": "b", "tasks": [3], "attempts": attempts}));
        assert_eq!(
            code(HeartbeatInput::parse(&raw)),
            Code::InvalidBody,
            "{attempts}"
        );
    }
    let many: serde_json::Map<String, Value> =
        (1..=1001).map(|id| (id.to_string(), json!(1))).collect();
    let raw = body(json!({"supervisor": "b", "tasks": [1], "attempts": many}));
    assert_eq!(code(HeartbeatInput::parse(&raw)), Code::InvalidArgument);
}

#[test]
fn a_report_reads_the_outcome_shape_of_the_reference() {
    let event = ReportInput::parse(
        1,
        &body(json!({
            "kind": "event", "event": "done", "payload": {"a": 1}, "supervisor": "box-1",
            "attempt": 2, "schedules": [{"event": "nudge", "after": "10m"}], "error": "ignored"
        })),
    )
    .unwrap();
    // The event is kept, and the error of another kind is not.
    assert_eq!(event.kind, ReportKind::Event("done".into()));
    assert_eq!(
        event.supervisor.as_ref().map(Supervisor::as_str),
        Some("box-1")
    );
    assert_eq!(event.attempt, Some(2));
    assert_eq!(event.schedules[0].after, "10m");
    let waiting = ReportInput::parse(1, &body(json!({"kind": "waiting"}))).unwrap();
    assert_eq!(
        (waiting.kind, waiting.supervisor),
        (ReportKind::Waiting, None)
    );
    let cases = [
        (json!({"kind": "nope"}), Code::InvalidBody),
        (json!({"event": "done"}), Code::InvalidBody),
        (json!({"kind": "event"}), Code::InvalidBody),
        (json!({"kind": "failed"}), Code::InvalidBody),
        (
            json!({"kind": "event", "event": "done", "supervisor": 3}),
            Code::InvalidArgument,
        ),
        (
            json!({"kind": "event", "event": "done", "payload": [1]}),
            Code::InvalidBody,
        ),
        (
            json!({"kind": "event", "event": "done", "context": 1}),
            Code::InvalidBody,
        ),
        (
            json!({"kind": "waiting", "schedules": {}}),
            Code::InvalidBody,
        ),
        (
            json!({"kind": "waiting", "schedules": [{"event": "x", "after": "soon"}]}),
            Code::InvalidBody,
        ),
        (
            json!({"kind": "waiting", "schedules": [{"after": "1m"}]}),
            Code::InvalidBody,
        ),
        (json!({"kind": "waiting", "attempt": 0}), Code::InvalidBody),
        (
            json!({"kind": "waiting", "attempt": "1"}),
            Code::InvalidBody,
        ),
        (
            json!({"kind": "waiting", "attempt": 1.5}),
            Code::InvalidBody,
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            code(ReportInput::parse(1, &body(raw.clone()))),
            expected,
            "{raw}"
        );
    }
}

#[test]
fn a_note_is_trimmed_and_holds_1_to_500_characters() {
    let raw = body(json!({"text": "  built  ", "attempt": 1}));
    let note = NoteInput::parse(1, &raw, None).unwrap();
    assert_eq!((note.text.as_str(), note.attempt), ("built", Some(1)));
    for text in [json!(" "), json!(""), json!(7), json!("x".repeat(501))] {
        assert_eq!(
            code(NoteInput::parse(1, &body(json!({"text": text})), None)),
            Code::InvalidPayload
        );
    }
    for attempt in [json!("1"), json!(0), json!(true), json!(1.5)] {
        let raw = body(json!({"text": "x", "attempt": attempt}));
        assert_eq!(
            code(NoteInput::parse(1, &raw, None)),
            Code::InvalidArgument,
            "{attempt}"
        );
    }
}

#[test]
fn a_memory_write_needs_a_key_and_a_value_that_may_be_null() {
    let write = MemoryInput::parse(1, &body(json!({"key": "session", "value": null}))).unwrap();
    assert_eq!(write.value, Value::Null);
    let cases = [
        (
            json!({"key": "k".repeat(129), "value": 1}),
            Code::InvalidPayload,
        ),
        (json!({"value": 1}), Code::InvalidPayload),
        (json!({"key": "k"}), Code::InvalidBody),
        (
            json!({"key": "k", "value": 1, "attempt": 0}),
            Code::InvalidArgument,
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            code(MemoryInput::parse(1, &body(raw.clone()))),
            expected,
            "{raw}"
        );
    }
}

/// The hot routes read their fields into slots (`fields::named_fields`); each
/// body must give the input, or the refusal, that the whole object gives.
#[test]
fn the_hot_inputs_read_from_slots_as_from_the_whole_object() {
    use super::super::body::json_object;
    use super::super::fields::named_fields;
    let same = |raw: &str| {
        let bytes = raw.as_bytes();
        let whole = json_object(bytes).unwrap();
        assert_eq!(
            StartInput::parse(&named_fields(bytes, StartInput::FIELDS).unwrap()),
            StartInput::parse(&whole),
            "{raw}"
        );
        assert_eq!(
            ClaimInput::parse(&named_fields(bytes, ClaimInput::FIELDS).unwrap()),
            ClaimInput::parse(&whole),
            "{raw}"
        );
        assert_eq!(
            ReportInput::parse(1, &named_fields(bytes, ReportInput::FIELDS).unwrap()),
            ReportInput::parse(1, &whole),
            "{raw}"
        );
    };
    for raw in [
        r#"{"token": "T-1", "context": {"title": "x"}}"#,
        r#"{"token": "T-1", "context": null}"#,
        r#"{"token": 7}"#,
        r#"{"supervisor": "s", "states": ["draft", "review"], "request": "b1-2", "outbox": 3}"#,
        r#"{"supervisor": "s", "states": "draft"}"#,
        r#"{"supervisor": "", "states": []}"#,
        r#"{"kind": "event", "event": "reviewed", "payload": {"approved": true},
            "context": {}, "schedules": [], "attempt": 1, "supervisor": "s"}"#,
        r#"{"kind": "failed", "error": "boom", "attempt": 1.0}"#,
        r#"{"kind": "waiting", "schedules": [{"event": "e", "after": "1m"}]}"#,
        r#"{"kind": "event", "kind": "failed", "error": "last wins"}"#,
        r#"{"kind": null}"#,
        r#"{}"#,
    ] {
        same(raw);
    }
}
