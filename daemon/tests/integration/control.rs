//! The control plane's handle on real databases (SQLite files, and Postgres when
//! `STATEOUS_TEST_POSTGRES` names a server: each test runs on both) with a clock
//! moved by hand: the hold on the database, the structure check, busy databases,
//! atomicity, concurrent requests, and what survives a restart.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{Backend, Db};
use serde_json::{json, Value};
use stateous_daemon::control::{Control, Options};
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::{ClaimInput, FireInput, ReportInput, StartInput};
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

fn options(db: &Db, clock: &Clock, holder: &str) -> Options {
    let mut options = db.options();
    options.clock = clock.clone();
    options.holder = Some(holder.into());
    options
}

fn ctx(value: Value) -> Object {
    value.as_object().unwrap().clone()
}

fn ledger_kinds(db: &Db, token: &str) -> Vec<String> {
    db.rows(&format!(
        "SELECT kind FROM ledger WHERE token = '{token}' ORDER BY seq"
    ))
    .into_iter()
    .map(|row| row[0].clone().unwrap())
    .collect()
}

async fn open(graph_name: &str, db: &Db, clock: &Clock, holder: &str) -> Result<Control, String> {
    Control::open(graph(graph_name), options(db, clock, holder)).await
}

async fn a_second_control_plane_is_refused_while_the_first_holds_the_database(db: Db) {
    let clock = clock();
    let first = open("orders", &db, &clock, "a:1:1").await.unwrap();
    let refused = open("orders", &db, &clock, "b:2:2").await.err().unwrap();
    assert_eq!(
        refused,
        "another control plane serves this database (a:1:1, last seen at 09:00:00 UTC); \
         stop it first"
    );
    // However long the first goes quiet, it holds the database (its lock ends with
    // its process, not with a time).
    clock.advance(Duration::from_secs(3600));
    assert!(open("orders", &db, &clock, "b:2:2").await.is_err());
    first.tick().await.unwrap();
    assert!(!first.lost());
}

async fn a_control_plane_whose_epoch_moved_on_commits_nothing_and_stops(db: Db) {
    let clock = clock();
    let first = open("orders", &db, &clock, "a:1:1").await.unwrap();
    first
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    // Another control plane took the database (as after a takeover): the epoch on
    // record is no longer this one's.
    db.execute("UPDATE control_plane SET epoch = epoch + 1, serving = 'b:2:2'");
    let refused = first
        .start(StartInput::new("ORDER-2".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::NotServing);
    assert!(first.lost());
    assert!(ledger_kinds(&db, "ORDER-2").is_empty());
    assert_eq!(first.tick().await.unwrap_err().code, Code::NotServing);
    let refused = first.token("ORDER-1".into()).await.unwrap_err();
    assert_eq!(refused.code, Code::NotServing);
}

async fn a_graceful_stop_frees_the_database_at_once(db: Db) {
    let clock = clock();
    let first = open("orders", &db, &clock, "a:1:1").await.unwrap();
    first.shutdown().await.unwrap();
    let second = open("orders", &db, &clock, "b:2:2").await;
    assert!(second.is_ok(), "{:?}", second.err());
}

async fn a_new_structure_serves_while_tokens_live_on_the_old_one_which_is_kept(db: Db) {
    let clock = clock();
    let orders = open("orders", &db, &clock, "a:1:1").await.unwrap();
    orders
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    let old = orders.graph().checksum.clone();
    orders.shutdown().await.unwrap();
    // A graph of another workflow is given the wrong database: refused, and
    // nothing of it is kept.
    let refused = open("sdlc", &db, &clock, "b:2:2").await.err().unwrap();
    assert_eq!(
        refused,
        "the database holds 1 live token(s) of the workflow 'orders' and this graph is the \
         workflow 'sdlc': serve it on a database of its own (--db), or end those tokens first"
    );
    assert_eq!(
        db.rows("SELECT checksum FROM graphs"),
        [[Some(old.clone())]]
    );
    let next = Control::open(
        common::orders_of_another_structure(),
        options(&db, &clock, "b:2:2"),
    )
    .await
    .unwrap();
    let row = db.rows("SELECT structure, checksum FROM control_plane");
    assert_eq!(row[0][0].as_deref(), Some(next.graph().structure.as_str()));
    assert_eq!(row[0][1].as_deref(), Some(next.graph().checksum.as_str()));
    let kept = db.rows("SELECT checksum FROM graphs ORDER BY first_served, checksum");
    let kept: Vec<_> = kept
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.contains(&old) && kept.contains(&next.graph().checksum));
    let graph = db.rows("SELECT graph FROM tokens WHERE token = 'ORDER-1'");
    assert_eq!(graph[0][0].as_deref(), Some(old.as_str()));
    // The old token goes on by its own graph's events.
    next.cancel("ORDER-1".into()).await.unwrap();
    next.shutdown().await.unwrap();
    // Its tokens ended, the database serves another workflow.
    let sdlc = open("sdlc", &db, &clock, "c:3:3").await;
    assert!(sdlc.is_ok(), "{:?}", sdlc.err());
    sdlc.unwrap().shutdown().await.unwrap();
    let version = db.rows("SELECT version_num FROM stateous_version");
    assert_eq!(
        version[0][0].as_deref(),
        Some(stateous_daemon::store::schema::newest())
    );
}

async fn a_database_of_someone_else_is_refused(db: Db) {
    db.execute("CREATE TABLE tokens (x TEXT)");
    let refused = open("orders", &db, &clock(), "a:1:1").await.err().unwrap();
    assert!(refused.contains("has a table named tokens"), "{refused}");
}

async fn a_refused_request_writes_nothing_but_its_event_rejected_row(db: Db) {
    let control = open("orders", &db, &clock(), "a:1:1").await.unwrap();
    control
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    let before = ledger_kinds(&db, "ORDER-1");
    let bad = ctx(json!({"approved": "yes"}));
    let refused = control
        .fire(
            FireInput::new(
                "ORDER-1".into(),
                "reviewed".into(),
                Some(bad),
                Some("k".into()),
            )
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::InvalidPayload);
    assert_eq!(ledger_kinds(&db, "ORDER-1"), before);
    let refused = control
        .fire(
            FireInput::new(
                "ORDER-1".into(),
                "reviewed".into(),
                Some(ctx(json!({"approved": true}))),
                None,
            )
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::EventNotAllowed);
    let mut expected = before.clone();
    expected.push("event_rejected".into());
    assert_eq!(ledger_kinds(&db, "ORDER-1"), expected);
    let refused = control
        .start(StartInput::new("ORDER-2".into(), ctx(json!({"title": 1}))).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::InvalidContext);
    assert!(ledger_kinds(&db, "ORDER-2").is_empty());
    assert_eq!(
        control.token("ORDER-2".into()).await.unwrap_err().code,
        Code::TokenNotFound
    );
}

async fn concurrent_requests_each_get_their_own_answer_and_no_task_goes_twice(db: Db) {
    let control = open("orders", &db, &clock(), "a:1:1").await.unwrap();
    let tokens = 200;
    let mut handles = Vec::new();
    for n in 0..tokens {
        let control = control.clone();
        handles.push(tokio::spawn(async move {
            let id = format!("ORDER-{n}");
            let started = control
                .start(StartInput::new(id.clone(), ctx(json!({"title": "t"}))).unwrap())
                .await?;
            assert!(started.created);
            // Every other token also gets a refused request, which rolls back alone.
            if n % 2 == 0 {
                let bad = control
                    .start(StartInput::new(format!("order-{n}"), Object::new()).unwrap())
                    .await;
                assert_eq!(bad.unwrap_err().code, Code::InvalidTokenId);
            }
            let fired = control
                .fire(
                    FireInput::new(
                        id.clone(),
                        "submitted".into(),
                        None,
                        Some(format!("key-{n}")),
                    )
                    .unwrap(),
                )
                .await?;
            assert_eq!(fired.token.state, "review");
            Ok::<_, stateous_shared::refusal::Refusal>(())
        }));
    }
    for handle in handles {
        handle.await.unwrap().unwrap();
    }
    assert!(control.commits() <= 3 * tokens as u64);
    // Claims side by side: each task goes to exactly one claim.
    let mut claims = Vec::new();
    for n in 0..tokens {
        let control = control.clone();
        claims.push(tokio::spawn(async move {
            control
                .claim(
                    ClaimInput::new(format!("box-{}", n % 8), vec!["review".into()], None).unwrap(),
                )
                .await
        }));
    }
    let mut claimed = Vec::new();
    for claim in claims {
        if let Some(grant) = claim.await.unwrap().unwrap() {
            claimed.push(grant.task);
        }
    }
    while let Some(grant) = control
        .claim(ClaimInput::new("box".into(), vec!["review".into()], None).unwrap())
        .await
        .unwrap()
    {
        claimed.push(grant.task);
    }
    let total = claimed.len();
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), total, "no task is handed out twice");
    assert_eq!(claimed.len(), tokens, "every task is handed out");
    for n in 0..tokens {
        let kinds = ledger_kinds(&db, &format!("ORDER-{n}"));
        assert_eq!(kinds.len(), 9, "{kinds:?}");
    }
}

async fn acknowledged_changes_survive_a_restart(db: Db) {
    let clock = clock();
    {
        let control = open("orders", &db, &clock, "a:1:1").await.unwrap();
        control
            .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
            .await
            .unwrap();
        let grant = control
            .claim(ClaimInput::new("box".into(), vec!["draft".into()], Some("r-1".into())).unwrap())
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
        control
            .report(ReportInput::new(grant.task, outcome).unwrap())
            .await
            .unwrap();
        control.shutdown().await.unwrap();
    }
    let control = open("orders", &db, &clock, "b:2:2").await.unwrap();
    let token = control.token("ORDER-1".into()).await.unwrap();
    assert_eq!((token.state.as_str(), token.visit), ("review", 1));
    assert_eq!(control.history("ORDER-1".into()).await.unwrap().len(), 9);
}

async fn a_lease_in_seconds_says_so_in_the_history(db: Db) {
    let clock = clock();
    let mut options = options(&db, &clock, "a:1:1");
    options.lease = Duration::from_secs(5);
    let control = Control::open(graph("orders"), options).await.unwrap();
    control
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    control
        .claim(ClaimInput::new("box".into(), vec!["draft".into()], None).unwrap())
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

async fn entering_a_parallel_state_starts_its_children_unless_an_id_is_too_long(db: Db) {
    let control = open("parallel", &db, &clock(), "a:1:1").await.unwrap();
    let context = ctx(json!({"repo": "acme/api", "branch": "b"}));
    control
        .start(StartInput::new("T-1".into(), context.clone()).unwrap())
        .await
        .unwrap();
    control
        .fire(FireInput::new("T-1".into(), "done".into(), None, None).unwrap())
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
    control
        .start(StartInput::new(long.clone(), context).unwrap())
        .await
        .unwrap();
    let refused = control
        .fire(FireInput::new(long.clone(), "done".into(), None, None).unwrap())
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

async fn committed_rows_are_read_in_id_order_and_can_be_resumed_by_id(db: Db) {
    let control = open("orders", &db, &clock(), "a:1:1").await.unwrap();
    control
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    // Rolled back: nothing to read. Recorded refusal: its event_rejected row.
    let bad = Some(ctx(json!({"approved": "yes"})));
    assert!(control
        .fire(FireInput::new("ORDER-1".into(), "reviewed".into(), bad, None).unwrap())
        .await
        .is_err());
    assert!(control
        .fire(FireInput::new("ORDER-1".into(), "nope".into(), None, None).unwrap())
        .await
        .is_err());
    let upto = control.mark().safe();
    let stored = control.entries_since(0, upto, None, 100).await.unwrap();
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
    let ids: Vec<i64> = stored.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(upto, *ids.last().unwrap());
    let rest = control
        .entries_since(ids[2], upto, Some("ORDER-1".into()), 100)
        .await
        .unwrap();
    assert_eq!(rest, stored[3..]);
    assert!(control
        .entries_since(0, upto, Some("OTHER".into()), 100)
        .await
        .unwrap()
        .is_empty());
}

async fn the_detail_shows_tasks_timers_and_held_events(db: Db) {
    let control = open("sdlc", &db, &clock(), "a:1:1").await.unwrap();
    control
        .start(StartInput::new("T-1".into(), ctx(json!({"repo": "r"}))).unwrap())
        .await
        .unwrap();
    control
        .claim(ClaimInput::new("box".into(), vec!["coding".into()], None).unwrap())
        .await
        .unwrap()
        .unwrap();
    control.pause("T-1".into()).await.unwrap();
    control
        .fire(FireInput::new("T-1".into(), "stuck".into(), None, Some("k".into())).unwrap())
        .await
        .unwrap();
    let detail = control.detail("T-1".into()).await.unwrap();
    assert_eq!(detail.token.status, "paused");
    let task = &detail.tasks[0];
    assert_eq!(
        (task.status.as_str(), task.attempt, task.holder.as_deref()),
        ("claimed", 1, Some("box"))
    );
    assert_eq!(task.lease_until.as_deref(), Some("2026-10-06T09:02:00Z"));
    assert_eq!(task.lease_left, Some(120.0));
    assert_eq!(detail.timers.len(), 1);
    assert_eq!(detail.timers[0].due_at, "2026-10-06T15:00:00Z");
    // The held events in the order of arrival: `stuck` arrived first (and alone).
    assert_eq!(detail.held.len(), 1);
    assert_eq!(
        (detail.held[0].event.as_str(), detail.held[0].at.as_deref()),
        ("stuck", Some("2026-10-06T09:00:00Z"))
    );
}

both!(
    a_second_control_plane_is_refused_while_the_first_holds_the_database,
    a_control_plane_whose_epoch_moved_on_commits_nothing_and_stops,
    a_graceful_stop_frees_the_database_at_once,
    a_new_structure_serves_while_tokens_live_on_the_old_one_which_is_kept,
    a_database_of_someone_else_is_refused,
    a_refused_request_writes_nothing_but_its_event_rejected_row,
    concurrent_requests_each_get_their_own_answer_and_no_task_goes_twice,
    acknowledged_changes_survive_a_restart,
    a_lease_in_seconds_says_so_in_the_history,
    entering_a_parallel_state_starts_its_children_unless_an_id_is_too_long,
    committed_rows_are_read_in_id_order_and_can_be_resumed_by_id,
    the_detail_shows_tasks_timers_and_held_events,
);

#[tokio::test]
async fn a_sqlite_database_locked_by_another_process_answers_database_busy() {
    let db = Db::new(Backend::Sqlite).unwrap();
    let mut options = options(&db, &clock(), "a:1:1");
    options.busy_timeout = Duration::from_millis(100);
    let control = Control::open(graph("orders"), options).await.unwrap();
    let other = rusqlite::Connection::open(db.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let refused = control
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::DatabaseBusy);
    other.execute_batch("ROLLBACK").unwrap();
    let started = control
        .start(StartInput::new("ORDER-1".into(), ctx(json!({"title": "t"}))).unwrap())
        .await
        .unwrap();
    assert!(started.created);
}

#[tokio::test]
async fn a_sqlite_database_that_cannot_be_opened_is_refused_with_the_reason() {
    let db = Db::new(Backend::Sqlite).unwrap();
    let mut options = options(&db, &clock(), "a:1:1");
    options.database = stateous_daemon::store::backend::Database::Sqlite(
        db.dir.path().join("no-such-folder").join("x.db"),
    );
    let refused = Control::open(graph("orders"), options).await.err().unwrap();
    assert!(refused.starts_with("cannot "), "{refused}");
    assert!(refused.contains("x.db"), "{refused}");
}
