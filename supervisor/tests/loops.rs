//! The supervisor's loops against a scripted control plane, with in-process
//! routines: what is sent, in which order, and what each refusal leads to.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use stateous_supervisor::api::Api;
use stateous_supervisor::config::Timings;
use stateous_supervisor::contract::Contract;
use stateous_supervisor::fake::{FakeControlPlane, Seen};
use stateous_supervisor::inprocess::{routine, Ctx, Routine};
use stateous_supervisor::outbox::{outbox_path, Kind, Outbox};
use stateous_supervisor::supervisor::{Handle, Parts, Supervisor};

const CHECKSUM: &str = "sha256:00";

fn contract() -> Contract {
    let doc = json!({"workflow": "sdlc",
        "states": {"coding": {"emits": ["done", "stuck"]}},
        "events": {"done": {}, "stuck": {}}});
    Contract::from_graph(&doc, CHECKSUM).unwrap()
}

fn grant(task: i64, attempt: i64) -> Value {
    json!({"task": task, "token": format!("T-{task}"), "state": "coding", "visit": 1,
           "attempt": attempt, "context": {"repo": "r"}, "memory": {}})
}

fn timings() -> Timings {
    Timings {
        heartbeat: Duration::from_millis(150),
        idle: Duration::from_millis(30),
        // The fake answers at once, as a control plane that does not wait does.
        claim_wait: Duration::from_secs(30),
        grace: Duration::from_millis(500),
        cancel_wait: Duration::from_millis(500),
        request_timeout: Duration::from_secs(5),
        backoff: vec![Duration::from_millis(50)],
    }
}

struct Running {
    fake: FakeControlPlane,
    handle: Handle,
    run: tokio::task::JoinHandle<i32>,
    folder: tempfile::TempDir,
}

fn start_in(
    folder: tempfile::TempDir,
    fake: FakeControlPlane,
    coding: Routine,
    tasks: usize,
) -> Running {
    let t = timings();
    let api = Api::new(&fake.url, t.request_timeout, t.backoff.clone()).unwrap();
    let supervisor = Supervisor::new(Parts {
        api,
        name: "box-1".into(),
        outbox: Outbox::open(&outbox_path(folder.path())).unwrap(),
        contract: contract(),
        routines: BTreeMap::from([("coding".to_string(), coding)]),
        folder: folder.path().to_path_buf(),
        timings: t,
        tasks,
    })
    .unwrap();
    let handle = supervisor.handle();
    let run = tokio::spawn(supervisor.run());
    Running {
        fake,
        handle,
        run,
        folder,
    }
}

fn start(coding: Routine) -> Running {
    let fake = FakeControlPlane::start(CHECKSUM, json!({}));
    start_in(tempfile::tempdir().unwrap(), fake, coding, 4)
}

async fn until(fake: &FakeControlPlane, check: impl Fn(&[Seen]) -> bool) {
    for _ in 0..250 {
        if check(&fake.seen()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the control plane never saw it; it saw {:#?}", fake.seen());
}

fn reports(seen: &[Seen]) -> Vec<Seen> {
    seen.iter()
        .filter(|s| s.path.ends_with("/report"))
        .cloned()
        .collect()
}

impl Running {
    async fn stop(self) -> (i32, tempfile::TempDir) {
        self.handle.signal();
        let code = tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("the supervisor stops")
            .unwrap();
        (code, self.folder)
    }

    fn depth(folder: &tempfile::TempDir) -> i64 {
        Outbox::open(&outbox_path(folder.path()))
            .unwrap()
            .depth()
            .unwrap()
    }
}

#[tokio::test]
async fn notes_and_memory_go_before_the_report_which_names_the_attempt() {
    let sup = start(routine(|ctx: Ctx| async move {
        ctx.note("step 1")?;
        ctx.memory_set("dev", json!("s-1"))?;
        ctx.set("n", json!(2))?;
        ctx.emit("done", None)
    }));
    sup.fake.grant(grant(7, 2));
    until(&sup.fake, |seen| !reports(seen).is_empty()).await;
    let order: Vec<String> = sup
        .fake
        .seen()
        .into_iter()
        .filter(|s| s.path.starts_with("/tasks/7"))
        .map(|s| s.path)
        .collect();
    assert_eq!(
        order,
        ["/tasks/7/note", "/tasks/7/memory", "/tasks/7/report"]
    );
    let seen = sup.fake.seen();
    let note = &seen
        .iter()
        .find(|s| s.path == "/tasks/7/note")
        .unwrap()
        .body;
    assert_eq!(note, &json!({"text": "step 1", "attempt": 2}));
    let report = &reports(&seen)[0].body;
    assert_eq!(report["kind"], "event");
    assert_eq!(report["event"], "done");
    assert_eq!(report["attempt"], 2);
    assert_eq!(report["supervisor"], "box-1");
    assert_eq!(report["context"], json!({"n": 2}));
    let (code, folder) = sup.stop().await;
    assert_eq!(code, 0);
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn a_report_for_an_attempt_that_is_over_is_dropped() {
    let sup = start(routine(|ctx: Ctx| async move { ctx.emit("done", None) }));
    sup.fake
        .answer_next_report(409, json!({"error": "over", "code": "attempt_over"}));
    sup.fake.grant(grant(3, 1));
    until(&sup.fake, |seen| !reports(seen).is_empty()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        reports(&sup.fake.seen()).len(),
        1,
        "no failed report follows"
    );
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn a_refused_event_becomes_a_failed_report() {
    let sup = start(routine(|ctx: Ctx| async move { ctx.emit("done", None) }));
    sup.fake.answer_next_report(
        409,
        json!({"error": "no guard", "code": "event_not_allowed"}),
    );
    sup.fake.grant(grant(4, 1));
    until(&sup.fake, |seen| reports(seen).len() == 2).await;
    let seen = sup.fake.seen();
    assert!(seen
        .iter()
        .any(|s| s.path == "/tasks/heartbeat" && s.body["tasks"] == json!([4])));
    let failed = &reports(&seen)[1].body;
    assert_eq!(failed["kind"], "failed");
    assert_eq!(
        failed["error"],
        "the control plane refused the report: no guard"
    );
    assert_eq!(failed["attempt"], 1);
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn a_task_not_held_is_checked_with_a_heartbeat_then_dropped() {
    let sup = start(routine(|ctx: Ctx| async move { ctx.emit("done", None) }));
    sup.fake
        .answer_next_report(409, json!({"error": "not yours", "code": "task_not_held"}));
    sup.fake.set_lost(vec![5]);
    sup.fake.grant(grant(5, 1));
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/heartbeat")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(reports(&sup.fake.seen()).len(), 1);
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn a_lost_task_is_cancelled_and_its_messages_dropped() {
    let ran_on = Arc::new(AtomicUsize::new(0));
    let seen_end = ran_on.clone();
    let sup = start(routine(move |ctx: Ctx| {
        let seen_end = seen_end.clone();
        async move {
            ctx.note("started")?;
            tokio::time::sleep(Duration::from_secs(30)).await;
            seen_end.fetch_add(1, Ordering::SeqCst);
            ctx.emit("done", None)
        }
    }));
    sup.fake.set_lost(vec![6]);
    sup.fake.grant(grant(6, 1));
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/heartbeat")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(reports(&sup.fake.seen()).is_empty());
    assert_eq!(ran_on.load(Ordering::SeqCst), 0);
    let (code, folder) = sup.stop().await;
    assert_eq!(code, 0, "no routine was left to wait for");
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn an_in_process_routines_usage_is_sent_at_once_and_outlives_its_lost_task() {
    let sup = start(routine(|ctx: Ctx| async move {
        ctx.usage(&[("cost_usd", 0.5), ("input_tokens", 1200.0)])?;
        assert!(
            ctx.usage(&[("Cost", 1.0)]).is_err(),
            "a bad name is refused at once"
        );
        tokio::time::sleep(Duration::from_secs(30)).await;
        ctx.emit("done", None)
    }));
    sup.fake.set_lost(vec![6]);
    sup.fake.grant(grant(6, 1));
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/6/usage")
            && seen.iter().any(|s| s.path == "/tasks/heartbeat")
    })
    .await;
    let usage: Vec<Seen> = sup.fake.seen_at("/tasks/6/usage");
    assert_eq!(usage.len(), 1, "{usage:#?}");
    assert_eq!(
        usage[0].body,
        json!({"usage": {"cost_usd": 0.5, "input_tokens": 1200}, "attempt": 1,
               "supervisor": "box-1"})
    );
    assert!(reports(&sup.fake.seen()).is_empty());
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn leftovers_go_in_order_before_the_first_claim() {
    let folder = tempfile::tempdir().unwrap();
    {
        let outbox = Outbox::open(&outbox_path(folder.path())).unwrap();
        outbox
            .append(9, 1, "T-9", Kind::Note, &json!({"text": "a"}))
            .unwrap();
        let done = json!({"kind": "event", "event": "done", "context": {}, "schedules": []});
        outbox.append(9, 1, "T-9", Kind::Report, &done).unwrap();
    }
    let fake = FakeControlPlane::start(CHECKSUM, json!({}));
    let sup = start_in(
        folder,
        fake,
        routine(|ctx: Ctx| async move { ctx.wait() }),
        4,
    );
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/claim")
    })
    .await;
    let paths: Vec<String> = sup
        .fake
        .seen()
        .into_iter()
        .map(|s| s.path)
        .filter(|path| path != "/watch")
        .take(3)
        .collect();
    assert_eq!(paths, ["/tasks/9/note", "/tasks/9/report", "/tasks/claim"]);
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn an_unreachable_control_plane_at_the_stop_keeps_the_report() {
    let sup = start(routine(|ctx: Ctx| async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        ctx.emit("done", None)
    }));
    sup.fake.grant(grant(8, 1));
    until(&sup.fake, |seen| {
        seen.iter()
            .any(|s| s.body.get("task").is_some() || s.path == "/tasks/claim")
    })
    .await;
    sup.fake.set_down(true);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (code, folder) = sup.stop().await;
    assert_eq!(code, 0);
    let left = Outbox::open(&outbox_path(folder.path()))
        .unwrap()
        .pending()
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].task, left[0].kind), (8, Kind::Report));
}

#[tokio::test]
async fn a_lost_claim_answer_is_claimed_again_with_the_same_request_id() {
    let sup = start(routine(|ctx: Ctx| async move { ctx.wait() }));
    sup.fake.drop_claim_answers(1);
    sup.fake.grant(grant(10, 1));
    until(&sup.fake, |seen| {
        !reports(seen).is_empty() && seen.iter().filter(|s| s.path == "/tasks/claim").count() >= 3
    })
    .await;
    let claims = sup.fake.seen_at("/tasks/claim");
    assert_eq!(claims[0].body["request"], claims[1].body["request"]);
    assert_ne!(claims[1].body["request"], claims[2].body["request"]);
    assert_eq!(claims[0].body["states"], json!(["coding"]));
    sup.stop().await;
}

#[tokio::test]
async fn at_most_tasks_routines_run_at_once() {
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (n, m) = (now.clone(), most.clone());
    let fake = FakeControlPlane::start(CHECKSUM, json!({}));
    let sup = start_in(
        tempfile::tempdir().unwrap(),
        fake,
        routine(move |ctx: Ctx| {
            let (n, m) = (n.clone(), m.clone());
            async move {
                let running = n.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(running, Ordering::SeqCst);
                // Stay until a second routine runs (or a while passed), so that
                // the most at once does not depend on how fast claims are.
                for _ in 0..100 {
                    if n.load(Ordering::SeqCst) >= 2 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                n.fetch_sub(1, Ordering::SeqCst);
                ctx.emit("done", None)
            }
        }),
        2,
    );
    for task in 1..=5 {
        sup.fake.grant(grant(task, 1));
    }
    until(&sup.fake, |seen| reports(seen).len() == 5).await;
    assert_eq!(most.load(Ordering::SeqCst), 2);
    sup.stop().await;
}

#[tokio::test]
async fn a_second_stop_cancels_the_routines_and_returns_1() {
    let sup = start(routine(|ctx: Ctx| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ctx.emit("done", None)
    }));
    sup.fake.grant(grant(11, 1));
    until(&sup.fake, |seen| {
        seen.iter().filter(|s| s.path == "/tasks/claim").count() >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    sup.handle.signal();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !sup.run.is_finished(),
        "the first signal waits for the routine"
    );
    let fake = sup.fake.clone();
    let (code, folder) = sup.stop().await;
    assert_eq!(code, 1);
    // The stopped attempt is reported failed at once, so that its task is tried
    // again now rather than when its lease ends.
    let sent = reports(&fake.seen());
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].path, "/tasks/11/report");
    assert_eq!(sent[0].body["kind"], "failed");
    assert_eq!(sent[0].body["error"], "the supervisor was stopped");
    assert_eq!(sent[0].body["attempt"], 1);
    assert_eq!(Running::depth(&folder), 0);
    assert!(
        fake.seen()
            .iter()
            .any(|s| s.method == "POST" && s.path.ends_with("/stop")),
        "the supervisor says it stopped"
    );
}

#[tokio::test]
async fn a_second_stop_keeps_the_messages_of_the_routines_it_stops_while_the_control_plane_is_down()
{
    let sup = start(routine(|ctx: Ctx| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ctx.note("written while the control plane is down")?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        ctx.emit("done", None)
    }));
    sup.fake.grant(grant(12, 1));
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/claim")
    })
    .await;
    sup.fake.set_down(true);
    until(&sup.fake, |seen| {
        seen.iter().any(|s| s.path == "/tasks/12/note")
    })
    .await;
    sup.handle.signal();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (code, folder) = sup.stop().await;
    assert_eq!(code, 1);
    // The note that got no answer, then the failed report behind it, wait for
    // the next start.
    let left = Outbox::open(&outbox_path(folder.path()))
        .unwrap()
        .pending()
        .unwrap();
    let kinds: Vec<&str> = left.iter().map(|m| m.kind.as_str()).collect();
    assert_eq!(kinds, ["note", "report"], "{left:#?}");
    assert_eq!(left[1].body["error"], "the supervisor was stopped");
}

#[tokio::test]
async fn an_answer_503_is_tried_again_and_a_422_is_a_refusal() {
    let sup = start(routine(|ctx: Ctx| async move { ctx.emit("done", None) }));
    sup.fake
        .answer_next_report(503, json!({"error": "busy", "code": "database_busy"}));
    sup.fake.answer_next_report(
        422,
        json!({"error": "bad context", "code": "invalid_context"}),
    );
    sup.fake.grant(grant(13, 1));
    until(&sup.fake, |seen| reports(seen).len() == 3).await;
    let seen = reports(&sup.fake.seen());
    assert_eq!(
        seen[0].body, seen[1].body,
        "the same report again after a 503"
    );
    assert_eq!(seen[2].body["kind"], "failed");
    assert_eq!(
        seen[2].body["error"],
        "the control plane refused the report: bad context"
    );
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}

#[tokio::test]
async fn the_heartbeat_names_each_attempt_and_comes_thrice_per_granted_lease() {
    let sup = start(routine(|ctx: Ctx| async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        ctx.emit("done", None)
    }));
    // A lease of 90 ms: a heartbeat every 30 ms, not every 150 ms as configured.
    let mut granted = grant(6, 3);
    granted["lease_seconds"] = json!(0.09);
    sup.fake.grant(granted);
    until(&sup.fake, |seen| !reports(seen).is_empty()).await;
    let beats = sup.fake.seen_at("/tasks/heartbeat");
    assert!(beats.len() >= 8, "{} heartbeats", beats.len());
    for beat in &beats {
        assert_eq!(beat.body["tasks"], json!([6]));
        assert_eq!(beat.body["attempts"], json!({"6": 3}));
    }
    let (_, folder) = sup.stop().await;
    assert_eq!(Running::depth(&folder), 0);
}
