//! Each scenario of `tests/scenarios/` runs on our control plane, and its answers
//! and tables must equal what the reference control plane (Python stateous 0.2.2)
//! answered and wrote for the same steps (`<scenario>.expected.json`, written by
//! `scenarios/reference.py`): the ledger row for row, with the same kinds, `data`
//! fields in the same order, `seq`, `at` and idempotency keys; tasks, timers,
//! memory and claims too.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::{json, Value};
use stateous_daemon::control::Control;
use stateous_daemon::store::{Closed, TokenStatus};
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::{
    ClaimInput, FireInput, HeartbeatInput, MemoryInput, NoteInput, ReportInput, StartInput,
};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::Refusal;
use stateous_shared::time::{from_micros, iso, parse_iso, to_micros};
use stateous_shared::wire::{Object, Outcome};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The moment the reference runner's clock starts at.
fn start_micros() -> i64 {
    to_micros(parse_iso("2026-10-06T09:00:00Z").unwrap())
}

async fn open(graph: &str, db: &Db, clock: &Clock) -> Control {
    let text =
        std::fs::read_to_string(here().join("graphs").join(format!("{graph}.json"))).unwrap();
    let graph = Arc::new(Graph::load(&text).unwrap());
    let mut options = db.options();
    options.clock = clock.clone();
    options.holder = Some("test-box:1:0000".into());
    Control::open(graph, options).await.unwrap()
}

fn text(step: &Value, key: &str) -> String {
    step[key].as_str().unwrap().to_string()
}

fn object(value: &Value) -> Option<Object> {
    value.as_object().cloned()
}

fn answer<T: serde::Serialize>(result: Result<T, Refusal>) -> Value {
    match result {
        Ok(value) => json!({"ok": serde_json::to_value(value).unwrap()}),
        Err(refusal) => json!({"code": refusal.code.as_str()}),
    }
}

/// The answer of `call` on a validated input, or the refusal of its check: the
/// scenarios send raw values, as a request's body would.
async fn through<I, T, F, Fut>(input: Result<I, Refusal>, call: F) -> Result<T, Refusal>
where
    F: FnOnce(I) -> Fut,
    Fut: std::future::Future<Output = Result<T, Refusal>>,
{
    call(input?).await
}

async fn run_step(control: &Control, clock: &Clock, step: &Value) -> Value {
    let task = step["task"].as_i64().unwrap_or(0);
    let attempt = step["attempt"].as_i64();
    match step["op"].as_str().unwrap() {
        "start" => {
            let context = object(&step["context"]).unwrap();
            let input = StartInput::new(text(step, "token"), context);
            answer(through(input, |i| control.start(i)).await.map(|s| s.token))
        }
        "fire" => {
            let key = step["key"].as_str().map(str::to_string);
            let (token, event) = (text(step, "token"), text(step, "event"));
            let input = FireInput::new(token, event, object(&step["payload"]), key);
            let fired = through(input, |i| control.fire(i)).await;
            answer(fired.map(|f| json!({"duplicate": f.duplicate, "token": f.token})))
        }
        "claim" => {
            let states = serde_json::from_value(step["states"].clone()).unwrap();
            let request = step["request"].as_str().map(str::to_string);
            let input = ClaimInput::new(text(step, "supervisor"), states, request);
            let mut claimed = answer(through(input, |i| control.claim(i)).await);
            // Ours: the attempt's `traceparent` is an addition the reference lacks.
            if let Some(grant) = claimed["ok"].as_object_mut() {
                grant.remove("traceparent");
            }
            claimed
        }
        "report" => {
            let mut outcome: Outcome = serde_json::from_value(step["outcome"].clone()).unwrap();
            outcome.supervisor = step["supervisor"].as_str().map(str::to_string);
            let input = ReportInput::new(task, outcome);
            answer(through(input, |i| control.report(i)).await)
        }
        "heartbeat" => {
            let tasks = serde_json::from_value(step["tasks"].clone()).unwrap();
            let input = HeartbeatInput::new(text(step, "supervisor"), tasks, Default::default());
            let lost = through(input, |i| control.heartbeat(i)).await;
            answer(lost.map(|lost| json!({"lost": lost})))
        }
        "note" => {
            let input = NoteInput::new(task, text(step, "text"), attempt, None);
            answer(through(input, |i| control.note(i)).await)
        }
        "memory" => {
            let value = step["value"].clone();
            let input = MemoryInput::new(task, text(step, "key"), value, attempt);
            answer(through(input, |i| control.set_memory(i)).await)
        }
        "pause" => answer(control.pause(text(step, "token")).await),
        "resume" => answer(control.resume(text(step, "token")).await),
        "cancel" => answer(control.cancel(text(step, "token")).await),
        "token" => answer(control.token(text(step, "token")).await),
        "tokens" => {
            let status = step["status"].as_str().and_then(TokenStatus::parse);
            let parent = step["parent"].as_str().map(str::to_string);
            let limit = step["limit"].as_i64().unwrap_or(100);
            answer(control.tokens(status, parent, limit).await)
        }
        "history" => answer(control.history(text(step, "token")).await),
        "advance" => {
            clock.advance(Duration::from_secs(step["seconds"].as_u64().unwrap()));
            json!({"ok": null})
        }
        "tick" => answer(control.tick().await),
        other => panic!("unknown step {other}"),
    }
}

fn at(micros: &Option<String>) -> Value {
    micros.as_ref().map_or(Value::Null, |m| {
        Value::from(iso(from_micros(m.parse().unwrap())))
    })
}

fn json_text(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |t| serde_json::from_str(t).unwrap())
}

fn int(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |t| Value::from(t.parse::<i64>().unwrap()))
}

fn string(text: &Option<String>) -> Value {
    text.as_ref()
        .map_or(Value::Null, |t| Value::from(t.as_str()))
}

/// Our tables in the shape the reference runner writes them.
fn tables(db: &Db) -> Value {
    let rows = |sql: &str, f: &dyn Fn(&[Option<String>]) -> Value| -> Value {
        Value::from(db.rows(sql).iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    let ledger = rows(
        "SELECT token, seq, at, kind, key, data FROM ledger ORDER BY token, seq",
        &|r| {
            json!({"token": string(&r[0]), "seq": int(&r[1]), "at": at(&r[2]),
            "kind": string(&r[3]), "key": string(&r[4]), "data": json_text(&r[5])})
        },
    );
    let tasks = rows(
        "SELECT id, token, state, visit, status, attempt, claimed_by, lease_until, queued_at
         FROM tasks ORDER BY id",
        &|r| {
            json!({"id": int(&r[0]), "token": string(&r[1]), "state": string(&r[2]),
            "visit": int(&r[3]), "status": string(&r[4]), "attempt": int(&r[5]),
            "claimed_by": string(&r[6]), "lease_until": at(&r[7]), "queued_at": at(&r[8])})
        },
    );
    let timers = rows(
        "SELECT id, token, state, visit, event, payload, set_at, due_at, status, kind
         FROM timers ORDER BY id",
        &|r| {
            json!({"id": int(&r[0]), "token": string(&r[1]), "state": string(&r[2]),
            "visit": int(&r[3]), "event": string(&r[4]), "payload": json_text(&r[5]),
            "set_at": at(&r[6]), "due_at": at(&r[7]), "status": string(&r[8]),
            "kind": string(&r[9])})
        },
    );
    let memory = rows(
        "SELECT token, state, key, value FROM memory ORDER BY 1, 2, 3",
        &|r| {
            json!({"token": string(&r[0]), "state": string(&r[1]), "key": string(&r[2]),
            "value": json_text(&r[3])})
        },
    );
    let claims = rows(
        "SELECT supervisor, request, task_id, attempt FROM claims ORDER BY 1",
        &|r| {
            json!({"supervisor": string(&r[0]), "request": string(&r[1]),
            "task_id": int(&r[2]), "attempt": int(&r[3])})
        },
    );
    json!({"ledger": ledger, "tasks": tasks, "timers": timers, "memory": memory, "claims": claims})
}

/// Compare as JSON text, so that the order of keys in `data` counts too.
fn same(what: &str, ours: &Value, theirs: &Value) {
    let (a, b) = (ours.to_string(), theirs.to_string());
    assert!(
        a == b,
        "{what} differs from the reference\n ours: {}\n ref:  {}",
        serde_json::to_string_pretty(ours).unwrap(),
        serde_json::to_string_pretty(theirs).unwrap()
    );
}

async fn check(name: &str, db: Db) {
    let scenario = read_json(&here().join("scenarios").join(format!("{name}.json")));
    let expected = read_json(
        &here()
            .join("scenarios")
            .join(format!("{name}.expected.json")),
    );
    let clock = Clock::manual(start_micros());
    let control = open(scenario["graph"].as_str().unwrap(), &db, &clock).await;
    let steps = scenario["steps"].as_array().unwrap();
    for (index, step) in steps.iter().enumerate() {
        let ours = run_step(&control, &clock, step).await;
        let mut theirs = expected["answers"][index].clone();
        if let Some(map) = theirs.as_object_mut() {
            map.remove("error"); // the sentences of HTTP refusals are ours
        }
        same(&format!("{name}: step {index} {step}"), &ours, &theirs);
    }
    let ours = tables(&db);
    for table in ["ledger", "tasks", "timers", "memory", "claims"] {
        let (a, b) = (&ours[table], &expected[table]);
        let rows = a.as_array().unwrap().len().max(b.as_array().unwrap().len());
        for row in 0..rows {
            same(&format!("{name}: {table} row {row}"), &a[row], &b[row]);
        }
    }
}

async fn the_orders_worked_example_writes_the_reference_ledger(db: Db) {
    check("orders_worked_example", db).await;
}

async fn refusals_record_what_the_reference_records(db: Db) {
    check("orders_refusals", db).await;
}

async fn claims_heartbeats_notes_memory_and_reports_match_the_reference(db: Db) {
    check("orders_tasks", db).await;
}

async fn leases_that_end_and_retries_match_the_reference(db: Db) {
    check("sdlc_leases_and_retries", db).await;
}

async fn timeouts_timers_and_counted_guards_match_the_reference(db: Db) {
    check("sdlc_timeout_and_count", db).await;
}

async fn pause_resume_and_cancel_match_the_reference(db: Db) {
    check("sdlc_pause_resume", db).await;
}

async fn start_guards_error_transitions_and_timeouts_match_the_reference(db: Db) {
    check("triage_errors_and_timeouts", db).await;
}

async fn the_error_route_routine_timers_and_outside_reports_match_the_reference(db: Db) {
    check("triage_error_route_timers_and_outside_reports", db).await;
}

async fn guards_that_both_hold_fail_the_token_as_the_reference_does(db: Db) {
    check("overlapping_guards", db).await;
}

async fn parallel_joins_failing_children_and_branch_guards_match_the_reference(db: Db) {
    check("release_joins", db).await;
}

async fn steering_timeouts_held_events_and_nesting_of_parallel_states_match_the_reference(db: Db) {
    check("release_steering", db).await;
}

async fn children_that_end_as_they_start_and_children_that_cannot_start_match_the_reference(
    db: Db,
) {
    check("instant_children", db).await;
}

both!(
    the_orders_worked_example_writes_the_reference_ledger,
    refusals_record_what_the_reference_records,
    claims_heartbeats_notes_memory_and_reports_match_the_reference,
    leases_that_end_and_retries_match_the_reference,
    timeouts_timers_and_counted_guards_match_the_reference,
    pause_resume_and_cancel_match_the_reference,
    start_guards_error_transitions_and_timeouts_match_the_reference,
    the_error_route_routine_timers_and_outside_reports_match_the_reference,
    guards_that_both_hold_fail_the_token_as_the_reference_does,
    parallel_joins_failing_children_and_branch_guards_match_the_reference,
    steering_timeouts_held_events_and_nesting_of_parallel_states_match_the_reference,
    children_that_end_as_they_start_and_children_that_cannot_start_match_the_reference,
);
