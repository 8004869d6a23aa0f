//! Traces and logs (`docs/reference/traces.md`): one trace per token through a
//! lease end, a restart of the control plane and a retry on another supervisor,
//! with the routines' spans in it; a collector that is down costs counted drops,
//! never the token; bad flags and headers; the JSON log.

mod collector;
mod logs;

use std::time::Duration;

use serde_json::json;

use crate::harness;
use crate::harness::{asset_graph, eventually, run, Daemon, Setup};
use crate::supervising::{folder_named, wait_for_status, Supervise};
use collector::{Collector, Received};

/// The caller's trace and span, as a `traceparent` header gives them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// A daemon serving `sdlc` (coding has 2 retries) that sends traces to `collector`.
fn traced_sdlc(collector: &Collector) -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--otlp-endpoint", &collector.url])
        .start()
}

fn start_in_trace(daemon: &Daemon, id: &str, traceparent: &str) {
    let body = json!({"token": id, "context": {"repo": "acme"}}).to_string();
    let headers = [
        ("content-type", "application/json"),
        ("traceparent", traceparent),
    ];
    daemon
        .request("POST", "/tokens", &headers, body.as_bytes())
        .expect(201);
}

fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn wait_for_file(path: &std::path::Path) -> String {
    let written = || std::fs::read_to_string(path).unwrap_or_default();
    let report = || format!("{} is still empty", path.display());
    eventually(WITHIN, "the routine writes its file", report, || {
        !written().is_empty()
    });
    written()
}

/// How long a test waits for what the processes do in their own time.
const WITHIN: Duration = Duration::from_secs(30);

fn a_token_retried_on_two_supervisors_is_one_trace_with_the_routines_spans() {
    let collector = Collector::start();
    let mut daemon = traced_sdlc(&collector);
    start_in_trace(&daemon, "T-1", &format!("00-{TRACE}-{CALLER_SPAN}-01"));
    // The first supervisor's routine hangs; the supervisor is killed, then the
    // control plane too: the attempt ends by its lease, after the restart.
    let hangs = "echo \"$TRACEPARENT\" > traceparent\nsleep 60";
    let a = folder_named(&daemon, "sup-a", "box-a", &[("coding.sh", hangs)]);
    let traced = ["--otlp-endpoint", collector.url.as_str()];
    let first = Supervise::start_with(&a, &traced);
    let seen_by_a = wait_for_file(&a.join("traceparent"));
    first.signal(libc::SIGKILL);
    daemon.crash_and_restart();
    let works = "cat > grant.json\necho \"$TRACEPARENT\" > traceparent\nstateous ctx emit done";
    let passes = "stateous ctx emit passed '{\"passed\": 1, \"failed\": 0}'";
    let routines = [("coding.sh", works), ("testing.sh", passes)];
    let b = folder_named(&daemon, "sup-b", "box-b", &routines);
    let _second = Supervise::start_with(&b, &traced);
    wait_for_status(&daemon, "T-1", "completed");

    let spans = collector.wait_for("the token's and the routines' spans", |spans| {
        named(spans, "token").len() == 1 && named(spans, "routine testing").len() == 1
    });
    assert!(spans.iter().all(|span| span.trace == TRACE), "{spans:#?}");
    let token = named(&spans, "token")[0];
    assert_eq!(
        token.parent, CALLER_SPAN,
        "the token's span is the caller's child"
    );
    assert_eq!(token.attribute("stateous.status"), "completed");
    assert_eq!(token.service, "stateous");
    let visits = named(&spans, "visit coding");
    assert_eq!(visits.len(), 1, "{spans:#?}");
    let coding = visits[0];
    assert_eq!(coding.parent, token.id);
    assert_eq!(coding.attribute("stateous.left_on"), "done");
    let attempts = named(&spans, "attempt coding");
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    let (first_try, second_try) = (attempts[0], attempts[1]);
    for attempt in [first_try, second_try] {
        assert_eq!(attempt.parent, coding.id, "an attempt is its visit's child");
    }
    // The visit and the first attempt began before the restart: their spans keep
    // their true start.
    assert!(coding.start <= first_try.start && first_try.end <= second_try.start);
    assert_eq!(first_try.attribute("stateous.supervisor"), "box-a");
    assert_eq!(first_try.attribute("stateous.attempt"), "1");
    assert_eq!(first_try.attribute("stateous.ended_by"), "lease_end");
    assert_eq!(
        first_try.status, 2,
        "a lease end is an error: {first_try:?}"
    );
    assert!(first_try.status_message.contains("box-a stopped answering"));
    assert_eq!(second_try.attribute("stateous.supervisor"), "box-b");
    assert_eq!(second_try.attribute("stateous.attempt"), "2");
    assert_eq!(second_try.attribute("stateous.outcome"), "done");
    assert_eq!(second_try.attribute("stateous.event"), "done");
    assert!(second_try.events.contains(&"task_claimed".to_string()));
    // Each routine was handed its attempt's span; the second one's span is its child.
    assert_eq!(seen_by_a.trim(), format!("00-{TRACE}-{}-01", first_try.id));
    let seen_by_b = std::fs::read_to_string(b.join("traceparent")).unwrap();
    assert_eq!(seen_by_b.trim(), format!("00-{TRACE}-{}-01", second_try.id));
    let grant: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("grant.json")).unwrap()).unwrap();
    assert_eq!(grant["traceparent"], seen_by_b.trim());
    let routine = named(&spans, "routine coding");
    assert_eq!(
        routine.len(),
        1,
        "box-a was killed before its routine ended"
    );
    assert_eq!(routine[0].parent, second_try.id);
    assert_eq!(routine[0].service, "stateous-supervisor");
    assert_eq!(routine[0].attribute("process.exit.code"), "0");
    let testing = named(&spans, "visit testing")[0];
    assert_eq!(testing.parent, token.id);
    assert_eq!(named(&spans, "attempt testing")[0].parent, testing.id);
}

both!(a_token_retried_on_two_supervisors_is_one_trace_with_the_routines_spans);

#[test]
fn with_the_collector_down_tokens_complete_and_the_drops_are_counted() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = format!("http://127.0.0.1:{port}");
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--otlp-endpoint", &down])
        .start();
    // A traceparent that does not parse is ignored and counted, never refused.
    let body = json!({"token": "O-1", "context": {"title": "x"}}).to_string();
    let headers = [("traceparent", "00-not-a-trace-01")];
    daemon
        .request("POST", "/tokens", &headers, body.as_bytes())
        .expect(201);
    let grant = daemon
        .post(
            "/tasks/claim",
            &json!({"supervisor": "s", "states": ["draft"]}),
        )
        .expect(200);
    assert!(grant["traceparent"].as_str().unwrap().starts_with("00-"));
    let report = json!({"kind": "event", "event": "submitted", "supervisor": "s"});
    daemon
        .post(&format!("/tasks/{}/report", grant["task"]), &report)
        .expect(200);
    let verdict = json!({"approved": true});
    daemon
        .post("/tokens/O-1/events/reviewed", &json!({"payload": verdict}))
        .expect(200);
    wait_for_status(&daemon, "O-1", "completed");
    let metrics = || String::from_utf8_lossy(&daemon.get("/metrics").body).into_owned();
    let failed = "stateous_trace_spans_dropped_total{reason=\"export_failed\"}";
    eventually(
        WITHIN,
        "the drop is counted",
        || daemon.report(),
        || {
            metrics()
                .lines()
                .any(|line| line.starts_with(failed) && !line.ends_with(" 0"))
        },
    );
    let dropped = metrics();
    assert!(
        dropped.contains("stateous_traceparent_ignored_total 1"),
        "{dropped}"
    );
    assert!(
        dropped.contains("stateous_trace_spans_exported_total 0"),
        "{dropped}"
    );
    assert!(
        daemon.stderr().contains("did not take"),
        "{}",
        daemon.report()
    );
}

#[test]
fn an_endpoint_that_is_not_a_url_stops_serve_and_supervise_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let graph = asset_graph("orders");
    let graph = graph.to_str().unwrap();
    let served = run(
        dir.path(),
        &["serve", graph, "--otlp-endpoint", "collector:4318"],
    );
    assert_eq!(served.code(), 1, "{served}");
    assert!(
        served
            .stderr
            .starts_with("error: --otlp-endpoint 'collector:4318' is not a URL"),
        "{served}"
    );
    let supervised = run(dir.path(), &["supervise", ".", "--otlp-endpoint", "nope"]);
    assert_eq!(supervised.code(), 1, "{supervised}");
    assert!(
        supervised
            .stderr
            .contains("error: --otlp-endpoint 'nope' is not a URL"),
        "{supervised}"
    );
}
