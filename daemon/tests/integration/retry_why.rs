//! Retry of a failed token and "why is this token here?" through the control plane's
//! handle, on both backends, with a clock moved by hand.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::{json, Value};
use stateous_daemon::control::{Control, Options};
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::RetryInput;
use stateous_daemon::validated::{ClaimInput, FireInput, ReportInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::Code;
use stateous_shared::time::{parse_iso, to_micros};
use stateous_shared::wire::{Object, Outcome};

fn desk() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/desk/build/desk.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn clock() -> Clock {
    Clock::manual(to_micros(parse_iso("2026-10-06T09:00:00Z").unwrap()))
}

async fn open(db: &Db, clock: &Clock) -> Control {
    let mut options: Options = db.options();
    options.clock = clock.clone();
    options.holder = Some("a:1:1".into());
    Control::open(desk(), options).await.unwrap()
}

fn ctx(value: Value) -> Object {
    value.as_object().unwrap().clone()
}

fn outcome(kind: &str, event: Option<&str>, error: Option<&str>, attempt: i64) -> Outcome {
    Outcome {
        kind: kind.into(),
        event: event.map(str::to_string),
        payload: None,
        error: error.map(str::to_string),
        context: Object::new(),
        schedules: Vec::new(),
        attempt: Some(attempt),
        supervisor: Some("box".into()),
    }
}

/// Claim the task of `state` and report it failed.
async fn fail_once(control: &Control, state: &str) {
    let grant = control
        .claim(ClaimInput::new("box".into(), vec![state.into()], None).unwrap())
        .await
        .unwrap()
        .unwrap();
    let failed = outcome(
        "failed",
        None,
        Some("the CRM did not answer"),
        grant.attempt,
    );
    control
        .report(ReportInput::new(grant.task, failed).unwrap())
        .await
        .unwrap();
}

fn retry_input(token: &str, state: Option<&str>) -> RetryInput {
    RetryInput {
        token: token.into(),
        state: state.map(str::to_string),
        reason: Some("the CRM is back".into()),
        by: "ann".into(),
    }
}

async fn a_failed_token_is_retried_in_its_state_with_fresh_retries(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    control
        .start(StartInput::new("C-1".into(), ctx(json!({"customer": "ACME"}))).unwrap())
        .await
        .unwrap();
    fail_once(&control, "intake").await;
    fail_once(&control, "intake").await;
    assert_eq!(control.token("C-1".into()).await.unwrap().status, "failed");
    clock.advance(Duration::from_secs(30));
    let token = control.retry(retry_input("C-1", None)).await.unwrap();
    assert_eq!(
        (token.state.as_str(), token.status.as_str(), token.visit),
        ("intake", "active", 2)
    );
    assert_eq!(token.context, ctx(json!({"customer": "ACME"})));
    let history = control.history("C-1".into()).await.unwrap();
    let tail: Vec<&str> = history
        .iter()
        .rev()
        .take(4)
        .map(|e| e.kind.as_str())
        .rev()
        .collect();
    assert_eq!(tail, ["failed", "retried", "entered", "task_queued"]);
    let retried = &history[history.len() - 3].data;
    assert_eq!(
        Value::Object(retried.clone()),
        json!({"state": "intake", "from": "intake", "by": "ann", "reason": "the CRM is back"})
    );
    // Fresh retries: it may fail once more and be tried again.
    let why = control.why("C-1".into()).await.unwrap();
    let task = why.task.unwrap();
    assert_eq!(
        (task.status.as_str(), task.attempt, task.retries_left),
        ("queued", 0, 1)
    );
    fail_once(&control, "intake").await;
    assert_eq!(control.token("C-1".into()).await.unwrap().status, "active");
    let grant = control
        .claim(ClaimInput::new("box".into(), vec!["intake".into()], None).unwrap())
        .await
        .unwrap()
        .unwrap();
    let done = outcome("event", Some("submitted"), None, grant.attempt);
    let token = control
        .report(ReportInput::new(grant.task, done).unwrap())
        .await
        .unwrap();
    assert_eq!(token.state, "review");
    // Into another state of its workflow, when named.
    control
        .start(StartInput::new("C-2".into(), ctx(json!({"customer": "B"}))).unwrap())
        .await
        .unwrap();
    fail_once(&control, "intake").await;
    fail_once(&control, "intake").await;
    let token = control
        .retry(retry_input("C-2", Some("review")))
        .await
        .unwrap();
    assert_eq!((token.state.as_str(), token.visit), ("review", 1));
}

async fn a_retry_is_refused_with_a_clear_code(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    control
        .start(StartInput::new("C-1".into(), ctx(json!({"customer": "A"}))).unwrap())
        .await
        .unwrap();
    let refused = control.retry(retry_input("C-1", None)).await.unwrap_err();
    assert_eq!(refused.code, Code::TokenNotActive);
    assert_eq!(
        refused.error,
        "token 'C-1' is active; only a failed token can be retried"
    );
    let refused = control.retry(retry_input("NOPE", None)).await.unwrap_err();
    assert_eq!(refused.code, Code::TokenNotFound);
    fail_once(&control, "intake").await;
    fail_once(&control, "intake").await;
    for state in ["nowhere", "__end__", "__start__"] {
        let refused = control
            .retry(retry_input("C-1", Some(state)))
            .await
            .unwrap_err();
        assert_eq!(refused.code, Code::InvalidArgument, "{state}");
    }
    assert_eq!(control.token("C-1".into()).await.unwrap().status, "failed");
}

/// C-1 in `sign` with its two children, which start in `check`.
async fn signing(control: &Control) {
    let context = ctx(json!({"customer": "ACME", "score": 5}));
    control
        .start(StartInput::new("C-1".into(), context).unwrap())
        .await
        .unwrap();
    control
        .fire(FireInput::new("C-1".into(), "submitted".into(), None, None).unwrap())
        .await
        .unwrap();
    control
        .fire(FireInput::new("C-1".into(), "approve".into(), None, None).unwrap())
        .await
        .unwrap();
}

async fn a_parent_retried_in_a_parallel_state_starts_new_children(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    signing(&control).await;
    // The legal child fails; once finance completes, the join's guard (all
    // completed) is false and the parent fails.
    fail_once(&control, "legal/check").await;
    control
        .fire(FireInput::new("C-1.sign.1.finance".into(), "ok".into(), None, None).unwrap())
        .await
        .unwrap();
    let parent = control.token("C-1".into()).await.unwrap();
    assert_eq!(
        (parent.state.as_str(), parent.status.as_str()),
        ("sign", "failed")
    );
    let refused = control
        .retry(retry_input("C-1.sign.1.legal", None))
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::ChildToken);
    let token = control.retry(retry_input("C-1", None)).await.unwrap();
    assert_eq!((token.state.as_str(), token.visit), ("sign", 2));
    for workflow in ["legal", "finance"] {
        let child = control
            .token(format!("C-1.sign.2.{workflow}"))
            .await
            .unwrap();
        assert_eq!(
            (child.state.as_str(), child.status.as_str()),
            ("check", "active")
        );
    }
    let old = control.token("C-1.sign.1.legal".into()).await.unwrap();
    assert_eq!(old.status, "failed", "the old children stay as they ended");
    let why = control.why("C-1".into()).await.unwrap();
    let join = why.join.unwrap();
    assert_eq!(
        (join.join.as_str(), join.ended, join.children),
        ("all", 0, 2)
    );
    assert_eq!(why.children.len(), 2);
}

async fn why_gathers_the_facts_of_a_waiting_token(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    let context = ctx(json!({"customer": "ACME", "score": 1}));
    control
        .start(StartInput::new("C-1".into(), context).unwrap())
        .await
        .unwrap();
    control
        .fire(FireInput::new("C-1".into(), "submitted".into(), None, None).unwrap())
        .await
        .unwrap();
    clock.advance(Duration::from_secs(90));
    let refused = control
        .fire(FireInput::new("C-1".into(), "approve".into(), None, None).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::EventNotAllowed);
    let why = control.why("C-1".into()).await.unwrap();
    assert_eq!(why.moved, 90);
    assert_eq!(why.timeout.as_deref(), Some("10m"));
    let approve = &why.transitions[0];
    assert_eq!(
        (approve.event.as_str(), approve.to.as_str(), approve.holds),
        ("approve", "sign", Some(false))
    );
    assert_eq!(approve.guard.as_deref(), Some("ctx['score'] > 3"));
    let reviewed = &why.transitions[1];
    assert!(reviewed.reads_payload && reviewed.holds.is_none());
    assert_eq!(why.rejected.as_ref().unwrap().data["event"], "approve");
    assert_eq!(why.timers.len(), 1);
    assert_eq!(
        (why.timers[0].kind.as_str(), why.timers[0].left),
        ("timeout", 510.0)
    );
    let task = why.task.as_ref().unwrap();
    assert_eq!(
        (task.state.as_str(), task.status.as_str()),
        ("review", "queued")
    );
    // Paused: the timer stands still, the held event shows.
    control.pause("C-1".into()).await.unwrap();
    clock.advance(Duration::from_secs(100));
    control
        .fire(FireInput::new("C-1".into(), "approve".into(), None, None).unwrap())
        .await
        .unwrap();
    let why = control.why("C-1".into()).await.unwrap();
    assert!(why.timers[0].frozen);
    assert_eq!(why.timers[0].left, 510.0);
    assert_eq!(why.held.len(), 1);
    // A failed token names the entry that failed it.
    control
        .start(StartInput::new("C-2".into(), ctx(json!({"customer": "B"}))).unwrap())
        .await
        .unwrap();
    fail_once(&control, "intake").await;
    fail_once(&control, "intake").await;
    let why = control.why("C-2".into()).await.unwrap();
    let failure = why.failure.unwrap();
    assert_eq!(failure.kind, "failed");
    assert!(
        failure.data["reason"]
            .as_str()
            .unwrap()
            .contains("the CRM did not answer"),
        "{failure:?}"
    );
}

both!(
    a_failed_token_is_retried_in_its_state_with_fresh_retries,
    a_retry_is_refused_with_a_clear_code,
    a_parent_retried_in_a_parallel_state_starts_new_children,
    why_gathers_the_facts_of_a_waiting_token,
);
