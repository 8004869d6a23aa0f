//! The outbox in a temporary folder: its messages kept through a reopen, in order, and its lock.

use super::*;
use serde_json::json;

#[test]
fn messages_survive_a_reopen_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = outbox_path(dir.path());
    {
        let outbox = Outbox::open(&path).unwrap();
        outbox
            .append(1, 1, "T-1", Kind::Note, &json!({"text": "a"}))
            .unwrap();
        outbox
            .append(1, 1, "T-1", Kind::Memory, &json!({"key": "k", "value": 1}))
            .unwrap();
        outbox
            .append(2, 3, "T-2", Kind::Report, &json!({"kind": "waiting"}))
            .unwrap();
    }
    let outbox = Outbox::open(&path).unwrap();
    let left = outbox.pending().unwrap();
    assert_eq!(left.len(), 3);
    assert_eq!(left[0].kind, Kind::Note);
    assert_eq!(left[1].body, json!({"key": "k", "value": 1}));
    assert_eq!((left[2].task, left[2].attempt), (2, 3));
    assert!(left[0].id < left[1].id && left[1].id < left[2].id);
    outbox.remove(left[1].id).unwrap();
    outbox.drop_attempt(1, 1).unwrap();
    assert_eq!(outbox.depth().unwrap(), 1);
}

#[test]
fn a_second_outbox_on_the_same_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = outbox_path(dir.path());
    let first = Outbox::open(&path).unwrap();
    first
        .append(1, 1, "T", Kind::Note, &json!({"text": "x"}))
        .unwrap();
    match Outbox::open(&path) {
        Err(OutboxError::Busy(p)) => assert_eq!(p, path),
        other => panic!("expected Busy, got {other:?}"),
    }
    drop(first);
    assert_eq!(Outbox::open(&path).unwrap().depth().unwrap(), 1);
}

#[test]
fn an_outbox_without_usage_takes_it_and_keeps_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = outbox_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(&SCHEMA.replace(", 'usage'", "")).unwrap();
        for text in ["a", "b", "c"] {
            old.execute(
                "INSERT INTO messages (task, attempt, token, kind, body, created_at)
                 VALUES (1, 1, 'T', 'note', ?1, 'x')",
                [json!({"text": text}).to_string()],
            )
            .unwrap();
        }
        old.execute("DELETE FROM messages WHERE id = 3", [])
            .unwrap();
    }
    let outbox = Outbox::open(&path).unwrap();
    assert_eq!(outbox.depth().unwrap(), 2);
    let usage = outbox
        .append(1, 1, "T", Kind::Usage, &json!({"usage": {"cost_usd": 1}}))
        .unwrap();
    assert_eq!(usage.id, 4, "ids are never handed out twice");
    outbox.drop_attempt(1, 1).unwrap();
    let left = outbox.pending().unwrap();
    assert_eq!(left.len(), 1, "a usage report outlives its attempt");
    assert_eq!(left[0].kind, Kind::Usage);
}
