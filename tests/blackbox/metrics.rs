//! Black-box: `GET /metrics` parses with a Prometheus text parser (the
//! `prometheus-parse` crate), has `# HELP` and `# TYPE` for each family, and counts
//! what happened: tokens by workflow, state and status, tasks by state and status,
//! request latency by route, lease ends, retries, timer fires, refusals by code and
//! outbox depth by supervisor. The dev clock makes the lease end and the timeout fire
//! at once.

use crate::harness;

use std::collections::HashMap;

use harness::{asset_graph, run, Daemon, Setup};
use prometheus_parse::{Sample, Scrape, Value};
use serde_json::json;

fn scrape(daemon: &Daemon) -> Scrape {
    let reply = daemon.get("/metrics");
    assert_eq!(reply.status, 200, "{reply}");
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = String::from_utf8(reply.body).expect("UTF-8 text");
    let lines = text.lines().map(|line| Ok(line.to_string()));
    Scrape::parse(lines).expect("the Prometheus text format")
}

/// The one sample of `name` whose labels include `labels`.
fn sample<'a>(scrape: &'a Scrape, name: &str, labels: &[(&str, &str)]) -> &'a Sample {
    let found: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?} in {:#?}", scrape.samples);
    found[0]
}

fn counter(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, name, labels).value {
        Value::Counter(value) => value,
        ref other => panic!("{name} is not a counter: {other:?}"),
    }
}

fn gauge(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, name, labels).value {
        Value::Gauge(value) => value,
        ref other => panic!("{name} is not a gauge: {other:?}"),
    }
}

fn advance(daemon: &Daemon, by: &str) {
    let finished = run(
        daemon.dir.path(),
        &["clock", "advance", by, "--url", &daemon.url],
    );
    assert_eq!(finished.code(), 0, "{finished}");
}

#[test]
fn metrics_parse_as_prometheus_text_and_count_what_happened() {
    let daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--dev-clock"])
        .start();
    for token in ["T-1", "T-2"] {
        daemon
            .post(
                "/tokens",
                &json!({"token": token, "context": {"repo": "r"}}),
            )
            .expect(201);
    }
    // A claim whose supervisor then goes quiet: its lease (2 s here) ends, and
    // coding has retries left.
    let claim = json!({"supervisor": "box-1", "states": ["coding"], "outbox": 3});
    daemon.post("/tasks/claim", &claim).expect(200);
    advance(&daemon, "1m");
    // T-2 goes on to testing, whose 1h timeout then fires.
    daemon
        .post("/tokens/T-2/events/done", &json!({}))
        .expect(200);
    advance(&daemon, "1h");
    daemon.get("/tokens/NOPE").refused(404, "token_not_found");
    daemon
        .post_empty("/tokens/T-2/pause")
        .refused(409, "token_not_active");

    let scrape = scrape(&daemon);
    for family in [
        "stateous_tokens",
        "stateous_tasks",
        "stateous_timers",
        "stateous_request_duration_seconds",
        "stateous_lease_ends_total",
        "stateous_retries_total",
        "stateous_timer_fires_total",
        "stateous_refusals_total",
        "stateous_outbox_depth",
        "stateous_ledger_entries_total",
        "stateous_commits_total",
        "stateous_supervisors",
    ] {
        assert!(scrape.docs.contains_key(family), "no # HELP for {family}");
    }
    let main = [("workflow", "sdlc")];
    let t1 = [main[0], ("state", "coding"), ("status", "active")];
    assert_eq!(gauge(&scrape, "stateous_tokens", &t1), 1.0);
    let t2 = [main[0], ("state", "testing"), ("status", "failed")];
    assert_eq!(gauge(&scrape, "stateous_tokens", &t2), 1.0);
    let queued = [("state", "coding"), ("status", "queued")];
    assert_eq!(gauge(&scrape, "stateous_tasks", &queued), 1.0);
    assert_eq!(counter(&scrape, "stateous_lease_ends_total", &[]), 1.0);
    assert_eq!(counter(&scrape, "stateous_retries_total", &[]), 1.0);
    assert_eq!(counter(&scrape, "stateous_timer_fires_total", &[]), 1.0);
    for code in ["token_not_found", "token_not_active"] {
        let refused = counter(&scrape, "stateous_refusals_total", &[("code", code)]);
        assert_eq!(refused, 1.0, "{code}");
    }
    let depth = gauge(&scrape, "stateous_outbox_depth", &[("supervisor", "box-1")]);
    assert_eq!(depth, 3.0);
    let retrying = [("kind", "task_retrying")];
    assert_eq!(
        counter(&scrape, "stateous_ledger_entries_total", &retrying),
        1.0
    );
    // Two starts, each timed under its route's template.
    let started = sample(
        &scrape,
        "stateous_request_duration_seconds",
        &[("route", "POST /tokens")],
    );
    let Value::Histogram(buckets) = &started.value else {
        panic!("not a histogram: {started:?}");
    };
    let all = buckets
        .iter()
        .find(|b| b.less_than.is_infinite())
        .expect("a +Inf bucket");
    assert_eq!(all.count, 2.0);
    let routes: HashMap<&str, usize> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "stateous_request_duration_seconds")
        .filter_map(|s| s.labels.get("route"))
        .fold(HashMap::new(), |mut seen, route| {
            *seen.entry(route).or_default() += 1;
            seen
        });
    for route in [
        "POST /tasks/claim",
        "POST /clock/advance",
        "GET /tokens/:id",
        "POST /tokens/:id/pause",
    ] {
        assert!(routes.contains_key(route), "no {route} in {routes:?}");
    }
    assert!(!routes.keys().any(|r| r.contains("T-2")), "{routes:?}");
}

/// `stateous_timers` is there from the first scrape, every status at zero, as a
/// dashboard's query of it expects; it had no sample until a timer existed.
#[test]
fn timers_are_listed_by_every_status_before_any_timer_exists() {
    let daemon = Daemon::tickets();
    let before = scrape(&daemon);
    daemon
        .post(
            "/tokens",
            &json!({"token": "T-1", "context": {"repo": "r"}}),
        )
        .expect(201);
    // coding has no timeout: still no timer.
    for scrape in [before, scrape(&daemon)] {
        assert!(scrape.docs.contains_key("stateous_timers"), "no # HELP");
        for status in ["pending", "fired", "cancelled"] {
            let timers = gauge(&scrape, "stateous_timers", &[("status", status)]);
            assert_eq!(timers, 0.0, "{status}");
        }
    }
}
