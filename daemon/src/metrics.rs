//! `GET /metrics`: the control plane's families in the Prometheus text format, kept and
//! written by the `prometheus` crate.
//!
//! The engine counts nothing (it has no I/O and no globals); the edges do:
//! - the HTTP server times each request by its route and counts each refusal by
//!   its code (`api::measure`);
//! - the TCP listener counts its open connections and those it closed without an
//!   answer, by reason ([`Connections`], adopted by [`Metrics::adopt`]);
//! - `Control::tick` counts the leases it ended and the timers it fired, and a
//!   prune the tokens it deleted (`control/prune.rs`);
//! - each scrape counts the ledger entries committed since the last one by kind
//!   (retries are the `task_retrying` entries), and sets the gauges from the
//!   tables (tokens by workflow, state and status; tasks by state and status;
//!   timers by status, each status listed even at zero) and from the
//!   supervisors heard from (outbox depth);
//! - the hooks' handler (`api::hooks`) counts each delivery by hook and outcome,
//!   and each refused signature by hook and reason.
//!
//! Counters start at zero when the control plane starts, as Prometheus expects of
//! a process; the ledger is counted from the id it had then.

use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    CounterVec, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use stateous_shared::refusal::{Code, Refusal};

use crate::store::{Closed, TimerStatus, Tx};

/// The upper bounds of the request latency buckets, in seconds: most requests
/// take well under a millisecond; a slow disk or a busy lock takes seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The ledger kind of a failed attempt that runs again (`engine::route`).
const RETRY_KIND: &str = "task_retrying";

/// The ledger kind of a budget crossed (`engine::usage`).
const CROSSING_KIND: &str = "budget_exceeded";

/// The server's connections: how many TCP connections are open, and how many
/// connections (TCP or the Unix socket) it closed without an answer, by reason. Made before the control plane holds the
/// database (a standby's listener counts too), then adopted by its [`Metrics`].
/// Cheap to clone: clones share the same families.
#[derive(Clone)]
pub struct Connections {
    open: IntGauge,
    closed: IntCounterVec,
}

impl Default for Connections {
    /// Each reason listed at zero.
    fn default() -> Connections {
        let connections = Connections {
            open: IntGauge::new(
                "stateous_connections_open",
                "TCP connections open now (serve --max-connections caps them).",
            )
            .expect("a valid metric name"),
            closed: IntCounterVec::new(
                Opts::new(
                    "stateous_connections_closed_total",
                    "Connections closed without an answer, by reason: tls_handshake \
                     (not TLS, or a certificate refused), header_timeout (no whole request \
                     head, or no handshake, within serve --header-timeout).",
                ),
                &["reason"],
            )
            .expect("a valid metric name"),
        };
        for reason in [Connections::TLS_HANDSHAKE, Connections::HEADER_TIMEOUT] {
            connections.closed.with_label_values(&[reason]);
        }
        connections
    }
}

/// Counts one open connection until dropped.
pub struct Open(IntGauge);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Connections {
    /// The reason of a connection whose TLS handshake failed.
    pub const TLS_HANDSHAKE: &'static str = "tls_handshake";
    /// The reason of a connection that sent no whole request head (or did not
    /// finish its handshake) in time.
    pub const HEADER_TIMEOUT: &'static str = "header_timeout";

    /// A connection opened; it counts as open until the guard is dropped.
    pub fn opened(&self) -> Open {
        self.open.inc();
        Open(self.open.clone())
    }

    /// A connection was closed without an answer, for `reason`.
    pub fn closed(&self, reason: &str) {
        self.closed.with_label_values(&[reason]).inc();
    }
}

/// The families, and the ledger id up to which entries were counted. Cheap to
/// clone: clones share the same families.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Families>,
}

struct Families {
    registry: Registry,
    requests: HistogramVec,
    refusals: IntCounterVec,
    lease_ends: IntCounter,
    timer_fires: IntCounter,
    pruned: IntCounter,
    retries: IntCounter,
    entries: IntCounterVec,
    commits: IntCounter,
    tokens: IntGaugeVec,
    tasks: IntGaugeVec,
    timers: IntGaugeVec,
    outbox: IntGaugeVec,
    supervisors: IntGauge,
    claims_waiting: IntGauge,
    hook_deliveries: IntCounterVec,
    bad_signatures: IntCounterVec,
    /// Ours: usage reported, summed by name, and budgets crossed (the
    /// `budget_exceeded` entries; `docs/concepts/budgets.md`).
    usage: CounterVec,
    budget_crossings: IntCounter,
    schedule_occurrences: IntCounterVec,
    schedule_late: IntCounter,
    /// Ours: limits on claims (`docs/limits.md`), by limit: slots held, the
    /// most, queued tasks waiting in its states, and seconds until its rate lets
    /// the next claim through (0 when it does now).
    limit_slots: IntGaugeVec,
    /// One scrape at a time, so that the gauges are cleared and set whole, and a
    /// ledger entry is counted once; holds the id counted up to.
    scrape: tokio::sync::Mutex<i64>,
    /// Traces (`traces/mod.rs`): spans sent, spans dropped by reason, and
    /// `traceparent` headers ignored.
    trace_spans: IntCounter,
    trace_drops: IntCounterVec,
    traceparents_ignored: IntCounter,
}

/// The counts one scrape reads from the tables, in one snapshot.
pub struct Tables {
    /// `(workflow, state, status, count)`; the main workflow by its name.
    pub tokens: Vec<(String, String, String, i64)>,
    /// `(state, status, count)`.
    pub tasks: Vec<(String, String, i64)>,
    /// `(status, count)` of every status, zero where there is none.
    pub timers: Vec<(String, i64)>,
    /// `(kind, count)` of the entries with an id above the last scrape's and at
    /// most `upto`.
    pub entries: Vec<(String, i64)>,
    /// The ledger id counted up to.
    pub upto: i64,
    /// Ours: `(limit, used, max, waiting, rate_wait_seconds)` of each limit.
    pub limits: Vec<(String, i64, i64, i64, i64)>,
}

/// What the API layer knows at a scrape: each supervisor's outbox depth.
pub struct Heard {
    /// `(supervisor, outbox depth)`, of those that sent one.
    pub outbox: Vec<(String, u64)>,
    /// How many supervisors were heard from.
    pub supervisors: usize,
    /// How many write transactions committed.
    pub commits: u64,
    /// How many claims wait for a task now (`POST /tasks/claim` with `wait`).
    pub claims_waiting: usize,
}

fn registered<T: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    family: T,
) -> T {
    // Each name is registered once, on a registry of its own: this cannot clash.
    let _ = registry.register(Box::new(family.clone()));
    family
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let family = IntCounter::new(name, help).expect("a valid metric name");
    registered(registry, family)
}

fn counters(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let family = IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric name");
    registered(registry, family)
}

fn gauges(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let family = IntGaugeVec::new(Opts::new(name, help), labels).expect("a valid metric name");
    registered(registry, family)
}

impl Metrics {
    /// The families, counting the ledger from the entry after `last`.
    pub fn new(last: i64) -> Metrics {
        let registry = Registry::new();
        let requests = HistogramVec::new(
            HistogramOpts::new(
                "stateous_request_duration_seconds",
                "How long the API took to answer a request, by route, in seconds.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["route"],
        )
        .expect("a valid metric name");
        let r = &registry;
        Metrics {
            inner: Arc::new(Families {
                requests: registered(r, requests),
                refusals: counters(
                    r,
                    "stateous_refusals_total",
                    "Requests the API refused, by refusal code.",
                    &["code"],
                ),
                lease_ends: counter(
                    r,
                    "stateous_lease_ends_total",
                    "Leases the clock ended (each a failed attempt).",
                ),
                timer_fires: counter(
                    r,
                    "stateous_timer_fires_total",
                    "Timers and timeouts the clock fired.",
                ),
                pruned: counter(
                    r,
                    "stateous_tokens_pruned_total",
                    "Ended tokens pruned (serve --retain-ended and token prune), each with \
                     its children.",
                ),
                retries: counter(
                    r,
                    "stateous_retries_total",
                    "Failed attempts whose task was queued again (task_retrying entries).",
                ),
                entries: counters(
                    r,
                    "stateous_ledger_entries_total",
                    "Ledger entries committed, by kind.",
                    &["kind"],
                ),
                commits: counter(r, "stateous_commits_total", "Write transactions committed."),
                tokens: gauges(
                    r,
                    "stateous_tokens",
                    "Tokens by workflow, state and status.",
                    &["workflow", "state", "status"],
                ),
                tasks: gauges(
                    r,
                    "stateous_tasks",
                    "Tasks by state and status.",
                    &["state", "status"],
                ),
                timers: gauges(r, "stateous_timers", "Timers by status.", &["status"]),
                outbox: gauges(
                    r,
                    "stateous_outbox_depth",
                    "Messages waiting in each supervisor's outbox, as it last said.",
                    &["supervisor"],
                ),
                supervisors: registered(
                    r,
                    IntGauge::new(
                        "stateous_supervisors",
                        "Supervisors heard from since the control plane started, less those that said they stopped.",
                    )
                    .expect("a valid metric name"),
                ),
                claims_waiting: registered(
                    r,
                    IntGauge::new(
                        "stateous_claims_waiting",
                        "Claims waiting for a task now (POST /tasks/claim with wait).",
                    )
                    .expect("a valid metric name"),
                ),
                hook_deliveries: counters(
                    r,
                    "stateous_hook_deliveries_total",
                    "Webhook deliveries by hook and outcome (accepted, duplicate, ignored, refused, bad_signature).",
                    &["hook", "outcome"],
                ),
                bad_signatures: counters(
                    r,
                    "stateous_hook_bad_signatures_total",
                    "Webhook deliveries refused for their signature, by hook and reason.",
                    &["hook", "reason"],
                ),
                usage: registered(
                    r,
                    CounterVec::new(
                        Opts::new(
                            "stateous_usage_total",
                            "Usage that routines reported (POST /tasks/{id}/usage), summed \
                             over tokens, by usage name.",
                        ),
                        &["name"],
                    )
                    .expect("a valid metric name"),
                ),
                budget_crossings: counter(
                    r,
                    "stateous_budget_crossings_total",
                    "Usage reports that took a token over its budget (budget_exceeded \
                     entries): each stopped its running attempts and paused it.",
                ),
                trace_spans: counter(
                    r,
                    "stateous_trace_spans_exported_total",
                    "Spans the collector of serve --otlp-endpoint took.",
                ),
                trace_drops: trace_drops(r),
                traceparents_ignored: counter(
                    r,
                    "stateous_traceparent_ignored_total",
                    "traceparent headers (of a start or a webhook delivery) that did not \
                     parse and were ignored: the token began a trace of its own.",
                ),
                schedule_occurrences: counters(
                    r,
                    "stateous_schedule_occurrences_total",
                    "Schedules' occurrences by outcome: fired (a token started), skipped \
                     (overlap, catch-up, a token of that id), buffered (waits for a live token).",
                    &["outcome"],
                ),
                schedule_late: counter(
                    r,
                    "stateous_schedule_late_total",
                    "Schedules' occurrences that fired later than 10 s after they were due \
                     (a catch-up after no control plane ran).",
                ),
                limit_slots: gauges(
                    r,
                    "stateous_limit_slots",
                    "Limits on claims: slots used, their max, queued tasks waiting in the \
                     limit's states, and rate_wait_seconds until its rate admits a claim.",
                    &["limit", "kind"],
                ),
                registry,
                scrape: tokio::sync::Mutex::new(last),
            }),
        }
    }

    /// Write the listener's `connections` too from now on (once: a second
    /// adoption changes nothing).
    pub fn adopt(&self, connections: &Connections) {
        let _ = self
            .inner
            .registry
            .register(Box::new(connections.open.clone()));
        let _ = self
            .inner
            .registry
            .register(Box::new(connections.closed.clone()));
    }

    /// A request to `route` took `took`; `refused` is its refusal code, if any.
    pub fn answered(&self, route: &str, took: Duration, refused: Option<Code>) {
        let inner = &self.inner;
        inner
            .requests
            .with_label_values(&[route])
            .observe(took.as_secs_f64());
        if let Some(code) = refused {
            inner.refusals.with_label_values(&[code.as_str()]).inc();
        }
    }

    /// A delivery to `hook` ended with `outcome` (`api::hooks::Outcome`).
    pub fn hook_delivered(&self, hook: &str, outcome: &str) {
        self.inner
            .hook_deliveries
            .with_label_values(&[hook, outcome])
            .inc();
    }

    /// A delivery to `hook` was refused for its signature, for `reason`.
    pub fn hook_bad_signature(&self, hook: &str, reason: &str) {
        self.hook_delivered(hook, "bad_signature");
        self.inner
            .bad_signatures
            .with_label_values(&[hook, reason])
            .inc();
    }

    /// How many deliveries to `hook` ended with `outcome` since the start.
    pub fn hook_count(&self, hook: &str, outcome: &str) -> u64 {
        self.inner
            .hook_deliveries
            .with_label_values(&[hook, outcome])
            .get()
    }

    /// A usage report was recorded with `amounts`.
    pub fn used(&self, amounts: &stateous_shared::usage::Amounts) {
        for (name, amount) in amounts {
            self.inner.usage.with_label_values(&[name]).inc_by(*amount);
        }
    }

    /// The clock ended `leases` leases and fired `timers` timers.
    pub fn ticked(&self, leases: u64, timers: u64) {
        self.inner.lease_ends.inc_by(leases);
        self.inner.timer_fires.inc_by(timers);
    }

    /// A schedule's write started, skipped and buffered these occurrences
    /// (`docs/schedules.md`).
    pub fn schedules_fired(&self, fired: &crate::engine::occurrence::Fired) {
        let inner = &self.inner;
        for (outcome, count) in [
            ("fired", fired.started),
            ("skipped", fired.skipped),
            ("buffered", fired.buffered),
        ] {
            inner
                .schedule_occurrences
                .with_label_values(&[outcome])
                .inc_by(count);
        }
        inner.schedule_late.inc_by(fired.late);
    }

    /// A prune deleted `tokens` ended tokens (each with its children).
    pub fn pruned(&self, tokens: u64) {
        self.inner.pruned.inc_by(tokens);
    }

    /// The collector took `spans` spans.
    pub fn trace_spans_exported(&self, spans: u64) {
        self.inner.trace_spans.inc_by(spans);
    }

    /// `spans` spans were dropped, for `reason` (`queue_full`, `export_failed`).
    pub fn trace_spans_dropped(&self, spans: u64, reason: &str) {
        self.inner
            .trace_drops
            .with_label_values(&[reason])
            .inc_by(spans);
    }

    /// A `traceparent` header did not parse and was ignored.
    pub fn traceparent_ignored(&self) {
        self.inner.traceparents_ignored.inc();
    }

    /// The text of a scrape: the tables read by `read` (given the ledger id
    /// counted up to, it returns the counts), and what the API layer heard.
    pub async fn render<F, Fut>(&self, read: F, heard: Heard) -> Result<String, Refusal>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future<Output = Result<Tables, Refusal>>,
    {
        let inner = &self.inner;
        let mut tallied = inner.scrape.lock().await;
        let tables = read(*tallied).await?;
        *tallied = tables.upto.max(*tallied);
        for (kind, count) in &tables.entries {
            let count = u64::try_from(*count).unwrap_or(0);
            inner.entries.with_label_values(&[kind]).inc_by(count);
            if kind == RETRY_KIND {
                inner.retries.inc_by(count);
            }
            if kind == CROSSING_KIND {
                inner.budget_crossings.inc_by(count);
            }
        }
        // Gauges are set whole: a state that emptied since the last scrape goes.
        inner.tokens.reset();
        for (workflow, state, status, count) in &tables.tokens {
            inner
                .tokens
                .with_label_values(&[workflow, state, status])
                .set(*count);
        }
        inner.tasks.reset();
        for (state, status, count) in &tables.tasks {
            inner.tasks.with_label_values(&[state, status]).set(*count);
        }
        inner.limit_slots.reset();
        for (name, used, max, waiting, wait) in &tables.limits {
            for (kind, value) in [
                ("used", used),
                ("max", max),
                ("waiting", waiting),
                ("rate_wait_seconds", wait),
            ] {
                inner
                    .limit_slots
                    .with_label_values(&[name, kind])
                    .set(*value);
            }
        }
        inner.timers.reset();
        for (status, count) in &tables.timers {
            inner.timers.with_label_values(&[status]).set(*count);
        }
        inner.outbox.reset();
        for (supervisor, depth) in &heard.outbox {
            let depth = i64::try_from(*depth).unwrap_or(i64::MAX);
            inner.outbox.with_label_values(&[supervisor]).set(depth);
        }
        inner
            .supervisors
            .set(i64::try_from(heard.supervisors).unwrap_or(i64::MAX));
        inner
            .claims_waiting
            .set(i64::try_from(heard.claims_waiting).unwrap_or(i64::MAX));
        let commits = heard.commits.saturating_sub(inner.commits.get());
        inner.commits.inc_by(commits);
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&inner.registry.gather(), &mut text)
            .map_err(|e| {
                Refusal::new(Code::Unexpected, format!("cannot write the metrics: {e}"))
            })?;
        Ok(String::from_utf8_lossy(&text).into_owned())
    }
}

/// `stateous_trace_spans_dropped_total`, each reason listed at zero.
fn trace_drops(registry: &Registry) -> IntCounterVec {
    let family = counters(
        registry,
        "stateous_trace_spans_dropped_total",
        "Spans not sent, by reason: queue_full (the collector is slow or down and the \
         queue of 2048 spans was full), export_failed (the collector refused a batch or \
         did not answer within 10 s).",
        &["reason"],
    );
    for reason in ["queue_full", "export_failed"] {
        family.with_label_values(&[reason]);
    }
    family
}

/// The tables' counts in one snapshot, the main workflow named `main`; entries
/// counted above `after` and up to `upto`.
pub fn read_tables(
    tx: &dyn Tx,
    main: &str,
    after: i64,
    upto: i64,
) -> crate::store::StoreResult<Tables> {
    let tokens = tx
        .token_counts()?
        .into_iter()
        .map(|(workflow, state, status, count)| {
            let workflow = workflow.unwrap_or_else(|| main.to_string());
            (workflow, state, status.as_str().to_string(), count)
        })
        .collect();
    let tasks: Vec<(String, String, i64)> = tx
        .task_counts()?
        .into_iter()
        .map(|(state, status, count)| (state, status.as_str().to_string(), count))
        .collect();
    // Timers have a closed set of labels: each status is listed, zero where there
    // is none, so that the family is there before the first timer.
    let counted = tx.timer_counts()?;
    let timers = TimerStatus::ALL
        .iter()
        .map(|status| {
            let count = counted
                .iter()
                .find(|(counted, _)| counted == status)
                .map_or(0, |(_, count)| *count);
            (status.as_str().to_string(), count)
        })
        .collect();
    let entries = if upto > after {
        tx.entry_kinds(after, upto)?
    } else {
        Vec::new()
    };
    let mut limits = Vec::new();
    for row in tx.limits()? {
        let pool = crate::engine::claim_limits::Pool::of(row);
        let used = tx.held_slots(&pool.row)?.len() as i64;
        let waiting = tasks
            .iter()
            .filter(|(state, status, _)| {
                status == "queued"
                    && pool
                        .row
                        .states
                        .iter()
                        .any(|covered| covered.rsplit('/').next() == Some(state.as_str()))
            })
            .map(|(_, _, count)| *count)
            .sum();
        let now = tx.now();
        let wait = pool
            .rate_opens_at(now)
            .map_or(0, |at| (at - now + 999_999) / 1_000_000);
        limits.push((pool.row.name.clone(), used, pool.row.max, waiting, wait));
    }
    Ok(Tables {
        tokens,
        tasks,
        timers,
        entries,
        upto,
        limits,
    })
}

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
