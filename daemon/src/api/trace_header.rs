//! The `traceparent` header (W3C Trace Context) of a start or of a webhook
//! delivery: the token it starts continues the caller's trace
//! (`docs/reference/traces.md`). A header that does not parse never refuses the
//! request: it is ignored, counted (`stateous_traceparent_ignored_total`) and
//! logged, and the token starts a trace of its own.

use hyper::http::request::Parts;
use stateous_shared::trace_context::{TokenTrace, TraceParent};

use crate::metrics::Metrics;

/// The header's name, as HTTP spells it in lowercase.
pub const TRACEPARENT: &str = "traceparent";

/// The trace the request's `traceparent` header asks for; `None` without one, or
/// for one that does not parse (counted in `metrics` and logged).
pub fn caller_trace(parts: &Parts, metrics: &Metrics) -> Option<TokenTrace> {
    let header = parts.headers.get(TRACEPARENT)?;
    let parsed = header
        .to_str()
        .map_err(|_| "it is not ASCII text")
        .and_then(TraceParent::parse);
    match parsed {
        Ok(header) => Some(TokenTrace::continuing(&header)),
        Err(why) => {
            metrics.traceparent_ignored();
            tracing::warn!(
                target: "stateous.serve",
                "a traceparent header was ignored ({why}): the token starts a trace of its own"
            );
            None
        }
    }
}
