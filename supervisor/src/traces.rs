//! The supervisor's spans (`supervise --otlp-endpoint`; `docs/reference/traces.md`):
//! one span for each run of a program routine, from its spawn to its exit, a child
//! of the attempt's span whose `traceparent` the claim answered. They go to the
//! collector through `stateous-otlp`'s bounded queue: a dead collector costs
//! dropped spans (counted in the log), never a slower routine.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use stateous_otlp::{Endpoint, KeyValue, Listener, SpanData, SpanKind, Spans, Status};
use stateous_shared::trace_context::TraceParent;
use stateous_shared::wire::Grant;

use crate::log_line;
use crate::routines::Program;
use crate::runner::{Ended, Exit};

/// Where this process's routine spans go while `supervise --otlp-endpoint` runs:
/// one exporter for the process, as its log is one.
static SPANS: Mutex<Option<Spans>> = Mutex::new(None);

/// Send a span for each run of a program routine to `spans` from now on.
pub fn send_to(spans: Spans) {
    if let Ok(mut held) = SPANS.lock() {
        *held = Some(spans);
    }
}

/// Send no more spans: once the queue's last handle is gone, it sends what it
/// holds and ends.
pub fn stop_sending() {
    if let Ok(mut held) = SPANS.lock() {
        held.take();
    }
}

/// A program ran for `grant` from `started` to now and ended as `exit`: send its
/// span, when spans are sent and the grant is in a recorded trace.
pub fn ran(grant: &Grant, program: &Program, started: SystemTime, exit: &Exit) {
    let Some(spans) = SPANS.lock().ok().and_then(|held| held.clone()) else {
        return;
    };
    let span = routine_span(
        grant,
        &program.describe(),
        (started, SystemTime::now()),
        exit,
    );
    if let Some(span) = span {
        spans.send(span);
    }
}

/// The instrumentation scope of the supervisor's spans.
const SCOPE: &str = "stateous.supervisor";

/// The collector of `supervise --otlp-endpoint` (or of the `OTEL_EXPORTER_OTLP_*`
/// variables); `None`: off. The error is the `error:` line's sentence.
pub fn endpoint(flag: Option<&str>) -> Result<Option<Endpoint>, String> {
    Endpoint::resolve(flag, "--otlp-endpoint", |name| std::env::var(name).ok())
}

/// Start the queue to `endpoint` on the current runtime; its task ends once the
/// last handle is dropped and what was queued went out.
pub fn queue(endpoint: Endpoint) -> Result<(Spans, tokio::task::JoinHandle<()>), String> {
    let options = stateous_otlp::Options::new(endpoint, "stateous-supervisor", SCOPE);
    stateous_otlp::start(options, Arc::new(Logged::default()))
}

/// The queue's outcomes, in the supervisor's log.
#[derive(Default)]
struct Logged {
    dropped: AtomicU64,
}

impl Listener for Logged {
    fn exported(&self, _spans: u64) {}

    fn dropped(&self, spans: u64, _reason: &'static str) {
        self.dropped.fetch_add(spans, Ordering::Relaxed);
    }

    fn line(&self, text: &str, _warning: bool) {
        let dropped = self.dropped.load(Ordering::Relaxed);
        log_line!("{text} ({dropped} dropped so far)");
    }
}

/// The span of one run of a routine for `grant`, from `started` to `ended`: its
/// exit status, and on a failure the reason with the last lines of stderr.
/// `None` when the grant has no `traceparent` (a control plane that keeps no
/// traces), or one whose trace is not recorded.
pub fn routine_span(
    grant: &Grant,
    routine: &str,
    (started, ended): (SystemTime, SystemTime),
    exit: &Exit,
) -> Option<SpanData> {
    let parent = TraceParent::parse(grant.traceparent.as_deref()?).ok()?;
    if !parent.sampled {
        return None;
    }
    let mut attributes = vec![
        KeyValue::new("stateous.token", grant.token.clone()),
        KeyValue::new("stateous.task", grant.task),
        KeyValue::new("stateous.attempt", grant.attempt),
        KeyValue::new("stateous.state", grant.state.clone()),
        KeyValue::new("stateous.routine", routine.to_string()),
    ];
    match &exit.ended {
        Ended::Exited(code) => {
            attributes.push(KeyValue::new("process.exit.code", i64::from(*code)));
        }
        Ended::Signalled(signal) => {
            attributes.push(KeyValue::new("stateous.signal", i64::from(*signal)));
        }
        Ended::NotStarted(_) => {}
    }
    let status = match exit.failure() {
        Some(reason) => {
            attributes.push(KeyValue::new(
                "stateous.stderr_tail",
                exit.stderr_tail.join("\n"),
            ));
            Status::error(reason)
        }
        None => Status::Ok,
    };
    Some(SpanData {
        span_context: stateous_otlp::context(parent.trace.0, rand::random(), true),
        parent_span_id: stateous_otlp::span_id(parent.parent.0),
        parent_span_is_remote: true,
        span_kind: SpanKind::Internal,
        name: Cow::Owned(format!("routine {}", grant.state)),
        start_time: started,
        end_time: ended.max(started),
        attributes,
        dropped_attributes_count: 0,
        events: Default::default(),
        links: Default::default(),
        status,
        instrumentation_scope: stateous_otlp::scope(SCOPE),
    })
}
