//! The control plane's handle on real SQLite files with a clock moved by hand: the
//! serving record, the structure check, busy databases, atomicity, group commit
//! under concurrent requests, and what survives a restart.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use stateous_daemon::clock::Clock;
use stateous_daemon::control::{Control, Options};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::Code;
use stateous_shared::time::{parse_iso, to_micros};
use stateous_shared::wire::{Object, Outcome};

fn graph(name: &str) -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/graphs/{name}.json"));
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn clock() -> Clock {
    Clock::manual(to_micros(parse_iso("2026-10-06T09:00:00Z").unwrap()))
}

fn options(db: &Path, clock: &Clock, holder: &str) -> Options {
    let mut options = Options::new(db);
    options.clock = clock.clone();
    options.holder = Some(holder.into());
    options
}

fn ctx(value: Value) -> Object {
    value.as_object().unwrap().clone()
}

fn ledger_kinds(db: &Path, token: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare("SELECT kind FROM ledger WHERE token = ?1 ORDER BY seq")
        .unwrap();
    let kinds = statement
        .query_map([token], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    kinds
}

#[tokio::test]
async fn a_second_control_plane_is_refused_while_the_record_is_fresh() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("s.db");
    let clock = clock();
    let first = Control::open(graph("orders"), options(&db, &clock, "a:1:1")).unwrap();
    let refused = Control::open(graph("orders"), options(&db, &clock, "b:2:2"))
        .err()
        .unwrap();
    assert_eq!(
        refused,
        "another control plane serves this database (a:1:1, last seen at 09:00:00 UTC); \
         stop it first"
    );
    // The first renews its record on its ticks; a record 20 s old is still fresh.
    clock.advance(Duration::from_secs(20));
    first.tick().await.unwrap();
    clock.advance(Duration::from_secs(20));
    assert!(Control::open(graph("orders"), options(&db, &clock, "b:2:2")).is_err());
    first.tick().await.unwrap();
    assert!(!first.lost());
}

#[tokio::test]
async fn a_lapsed_record_is_taken_and_the_old_control_plane_stops_serving() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("s.db");
    let clock = clock();
    let first = Control::open(graph("orders"), options(&db, &clock, "a:1:1")).unwrap();
    first
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(31));
    let second = Control::open(graph("orders"), options(&db, &clock, "b:2:2")).unwrap();
    let lost = first.tick().await.unwrap_err();
    assert_eq!(lost.code, Code::NotServing);
    assert!(first.lost());
    let refused = first.token("ORDER-1".into()).await.unwrap_err();
    assert_eq!(refused.code, Code::NotServing);
    assert_eq!(second.token("ORDER-1".into()).await.unwrap().state, "draft");
    second.tick().await.unwrap();
}

#[tokio::test]
async fn a_graceful_stop_frees_the_database_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("s.db");
    let clock = clock();
    let first = Control::open(graph("orders"), options(&db, &clock, "a:1:1")).unwrap();
    first.shutdown().await.unwrap();
    assert!(Control::open(graph("orders"), options(&db, &clock, "b:2:2")).is_ok());
}

#[tokio::test]
async fn a_new_structure_is_refused_while_tokens_are_live() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("s.db");
    let clock = clock();
    let orders = Control::open(graph("orders"), options(&db, &clock, "a:1:1")).unwrap();
    orders
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    orders.shutdown().await.unwrap();
    let refused = Control::open(graph("sdlc"), options(&db, &clock, "b:2:2"))
        .err()
        .unwrap();
    assert_eq!(
        refused,
        "refusing to serve: 1 token(s) are active or paused on another structure of the \
         workflow 'sdlc'; serve the graph file they started on until they end, or cancel them"
    );
    let again = Control::open(graph("orders"), options(&db, &clock, "c:3:3")).unwrap();
    again.cancel("ORDER-1".into()).await.unwrap();
    again.shutdown().await.unwrap();
    let sdlc = Control::open(graph("sdlc"), options(&db, &clock, "d:4:4")).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (structure, checksum): (String, String) = conn
        .query_row("SELECT structure, checksum FROM control_plane", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(structure, sdlc.graph().structure);
    assert_eq!(checksum, sdlc.graph().checksum);
    let version: String = conn
        .query_row("SELECT version_num FROM stateous_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, stateous_daemon::store::schema::newest());
}

#[tokio::test]
async fn a_database_of_someone_else_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("other.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE tokens (x TEXT)").unwrap();
    let refused = Control::open(graph("orders"), options(&db, &clock(), "a:1:1"))
        .err()
        .unwrap();
    assert!(refused.contains("has a table named tokens"), "{refused}");
}

#[tokio::test]
async fn a_refused_request_writes_nothing_but_its_event_rejected_row() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("a.db");
    let control = Control::open(graph("orders"), options(&db, &clock(), "a:1:1")).unwrap();
    control
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    let before = ledger_kinds(&db, "ORDER-1");
    let bad = ctx(json!({"approved": "yes"}));
    let refused = control
        .fire(
            "ORDER-1".into(),
            "reviewed".into(),
            Some(bad),
            Some("k".into()),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::InvalidPayload);
    assert_eq!(ledger_kinds(&db, "ORDER-1"), before);
    let refused = control
        .fire(
            "ORDER-1".into(),
            "reviewed".into(),
            Some(ctx(json!({"approved": true}))),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::EventNotAllowed);
    let mut expected = before.clone();
    expected.push("event_rejected".into());
    assert_eq!(ledger_kinds(&db, "ORDER-1"), expected);
    let refused = control
        .start("ORDER-2".into(), ctx(json!({"title": 1})))
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::InvalidContext);
    assert!(ledger_kinds(&db, "ORDER-2").is_empty());
    assert_eq!(
        control.token("ORDER-2".into()).await.unwrap_err().code,
        Code::TokenNotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_commits_and_each_gets_its_own_answer() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("c.db");
    let control = Control::open(graph("orders"), options(&db, &clock(), "a:1:1")).unwrap();
    let tokens = 200;
    let mut handles = Vec::new();
    for n in 0..tokens {
        let control = control.clone();
        handles.push(tokio::spawn(async move {
            let id = format!("ORDER-{n}");
            let started = control
                .start(id.clone(), ctx(json!({"title": "t"})))
                .await?;
            assert!(started.created);
            // Every other token also gets a refused request, which rolls back alone.
            if n % 2 == 0 {
                let bad = control.start(format!("order-{n}"), Object::new()).await;
                assert_eq!(bad.unwrap_err().code, Code::InvalidTokenId);
            }
            let fired = control
                .fire(
                    id.clone(),
                    "submitted".into(),
                    None,
                    Some(format!("key-{n}")),
                )
                .await?;
            assert_eq!(fired.token.state, "review");
            Ok::<_, stateous_shared::refusal::Refusal>(())
        }));
    }
    for handle in handles {
        handle.await.unwrap().unwrap();
    }
    let commits_before_claims = control.commits();
    assert!(commits_before_claims <= 3 * tokens as u64);
    let mut claimed = Vec::new();
    for _ in 0..tokens {
        let grant = control
            .claim("box".into(), vec!["review".into()], None)
            .await
            .unwrap()
            .unwrap();
        claimed.push(grant.task);
    }
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), tokens, "no task is handed out twice");
    for n in 0..tokens {
        let kinds = ledger_kinds(&db, &format!("ORDER-{n}"));
        assert_eq!(kinds.len(), 9, "{kinds:?}");
    }
}

#[tokio::test]
async fn a_database_locked_by_another_process_answers_database_busy() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("b.db");
    let mut options = options(&db, &clock(), "a:1:1");
    options.busy_timeout = Duration::from_millis(100);
    let control = Control::open(graph("orders"), options).unwrap();
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let refused = control
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::DatabaseBusy);
    other.execute_batch("ROLLBACK").unwrap();
    let started = control
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    assert!(started.created);
}

#[tokio::test]
async fn acknowledged_changes_survive_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("r.db");
    let clock = clock();
    {
        let control = Control::open(graph("orders"), options(&db, &clock, "a:1:1")).unwrap();
        control
            .start("ORDER-1".into(), ctx(json!({"title": "t"})))
            .await
            .unwrap();
        let grant = control
            .claim("box".into(), vec!["draft".into()], Some("r-1".into()))
            .await
            .unwrap()
            .unwrap();
        let outcome = Outcome {
            kind: "event".into(),
            event: Some("submitted".into()),
            payload: None,
            error: None,
            context: Object::new(),
            schedules: Vec::new(),
            attempt: Some(grant.attempt),
            supervisor: Some("box".into()),
        };
        control.report(grant.task, outcome).await.unwrap();
        control.shutdown().await.unwrap();
    }
    let control = Control::open(graph("orders"), options(&db, &clock, "b:2:2")).unwrap();
    let token = control.token("ORDER-1".into()).await.unwrap();
    assert_eq!((token.state.as_str(), token.visit), ("review", 1));
    assert_eq!(control.history("ORDER-1".into()).await.unwrap().len(), 9);
}

#[tokio::test]
async fn a_lease_in_seconds_says_so_in_the_history() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("l.db");
    let clock = clock();
    let mut options = options(&db, &clock, "a:1:1");
    options.lease = Duration::from_secs(5);
    let control = Control::open(graph("orders"), options).unwrap();
    control
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    control
        .claim("box".into(), vec!["draft".into()], None)
        .await
        .unwrap()
        .unwrap();
    clock.advance(Duration::from_secs(6));
    control.tick().await.unwrap();
    let history = control.history("ORDER-1".into()).await.unwrap();
    let failed = history.iter().find(|e| e.kind == "task_failed").unwrap();
    assert_eq!(
        failed.data["error"],
        "box stopped answering: no heartbeat for 5 seconds"
    );
    assert_eq!(history.last().unwrap().kind, "failed");
}

#[tokio::test]
async fn entering_a_parallel_state_starts_its_children_unless_an_id_is_too_long() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("p.db");
    let control = Control::open(graph("parallel"), options(&db, &clock(), "a:1:1")).unwrap();
    let context = ctx(json!({"repo": "acme/api", "branch": "b"}));
    control.start("T-1".into(), context.clone()).await.unwrap();
    control
        .fire("T-1".into(), "done".into(), None, None)
        .await
        .unwrap();
    let token = control.token("T-1".into()).await.unwrap();
    assert_eq!(token.state, "reviews");
    let child = control.token("T-1.reviews.1.design".into()).await.unwrap();
    assert_eq!(child.parent.as_deref(), Some("T-1"));
    assert_eq!(
        (child.state.as_str(), child.status.as_str()),
        ("triage", "active")
    );
    assert_eq!(child.context["branch"], "b");

    let long = "x".repeat(110);
    control.start(long.clone(), context).await.unwrap();
    let refused = control
        .fire(long.clone(), "done".into(), None, None)
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::EventNotAllowed);
    let history = control.history(long.clone()).await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.kind, "event_rejected");
    let reason = last.data["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "the child '{long}.reviews.1.security' of 'reviews' would"
        )),
        "{reason}"
    );
    assert!(reason.ends_with("longer than 128 characters; use a shorter token id"));
}

#[tokio::test]
async fn watchers_get_each_committed_row_once_and_can_resume_by_id() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("w.db");
    let control = Control::open(graph("orders"), options(&db, &clock(), "a:1:1")).unwrap();
    let mut watch = control.subscribe();
    control
        .start("ORDER-1".into(), ctx(json!({"title": "t"})))
        .await
        .unwrap();
    // Rolled back: nothing to publish. Recorded refusal: its event_rejected row.
    let bad = Some(ctx(json!({"approved": "yes"})));
    assert!(control
        .fire("ORDER-1".into(), "reviewed".into(), bad, None)
        .await
        .is_err());
    assert!(control
        .fire("ORDER-1".into(), "nope".into(), None, None)
        .await
        .is_err());
    let stored = control.entries_since(0, None, 100).await.unwrap();
    let kinds: Vec<&str> = stored.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "started",
            "event_accepted",
            "entered",
            "task_queued",
            "event_rejected"
        ]
    );
    for entry in &stored {
        let got = watch.try_recv().unwrap();
        assert_eq!(
            stateous_daemon::control::Committed::from(got.as_ref()),
            *entry
        );
    }
    assert!(watch.try_recv().is_err(), "nothing else was published");
    let ids: Vec<i64> = stored.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let rest = control
        .entries_since(ids[2], Some("ORDER-1".into()), 100)
        .await
        .unwrap();
    assert_eq!(rest, stored[3..]);
    assert!(control
        .entries_since(0, Some("OTHER".into()), 100)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn the_detail_shows_tasks_timers_and_held_events() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("d.db");
    let control = Control::open(graph("sdlc"), options(&db, &clock(), "a:1:1")).unwrap();
    control
        .start("T-1".into(), ctx(json!({"repo": "r"})))
        .await
        .unwrap();
    control
        .claim("box".into(), vec!["coding".into()], None)
        .await
        .unwrap()
        .unwrap();
    control.pause("T-1".into()).await.unwrap();
    control
        .fire("T-1".into(), "stuck".into(), None, Some("k".into()))
        .await
        .unwrap();
    let detail = control.detail("T-1".into()).await.unwrap();
    assert_eq!(detail.token.status, "paused");
    let task = &detail.tasks[0];
    assert_eq!(
        (
            task.status.as_str(),
            task.attempt,
            task.claimed_by.as_deref()
        ),
        ("claimed", 1, Some("box"))
    );
    assert_eq!(task.lease_until.as_deref(), Some("2026-10-06T09:02:00Z"));
    assert_eq!(detail.timers.len(), 1);
    assert_eq!(detail.timers[0].due_at, "2026-10-06T15:00:00Z");
    assert_eq!(detail.held.len(), 1);
    assert_eq!(
        (detail.held[0].event.as_str(), detail.held[0].arrival),
        ("stuck", 1)
    );
}

#[test]
fn a_database_that_cannot_be_opened_is_refused_with_the_reason() {
    let folder = tempfile::tempdir().unwrap();
    let db = folder.path().join("no-such-folder").join("x.db");
    let refused = Control::open(graph("orders"), options(&db, &clock(), "a:1:1"))
        .err()
        .unwrap();
    assert!(
        refused.starts_with("cannot open the database "),
        "{refused}"
    );
    assert!(
        refused.ends_with("unable to open database file"),
        "{refused}"
    );
}
