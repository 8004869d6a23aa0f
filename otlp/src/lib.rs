//! `stateous-otlp`: OpenTelemetry traces out of Stateous (`docs/reference/traces.md`).
//!
//! The control plane and the supervisor build their spans by hand, as
//! `opentelemetry_sdk`'s [`SpanData`], with ids they derive
//! (`stateous_shared::trace_context`), and hand them to [`Spans::send`]. This crate
//! sends them to a collector with `opentelemetry-otlp`'s exporter, over HTTP with
//! protobuf ([`http`]: hyper and rustls), from a bounded queue ([`queue`]): a span
//! that finds the queue full is dropped and counted, never waited for, so a dead or
//! slow collector costs dropped spans, not a slower caller.
//!
//! Where to send is [`Endpoint::resolve`]: a command's `--otlp-endpoint`, else the
//! standard `OTEL_EXPORTER_OTLP_*` variables. It depends on nothing of ours.

pub mod http;
pub mod queue;

pub use opentelemetry::trace::{
    Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
pub use opentelemetry::{Array, InstrumentationScope, Key, KeyValue, Value};
pub use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
pub use queue::{start, Listener, Options, Spans};

/// The variables read, as the OpenTelemetry specification names them.
pub mod vars {
    /// The base URL of every signal; traces go to its `/v1/traces`.
    pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
    /// The URL of traces, used as it is.
    pub const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
    /// `http/protobuf` is the one protocol spoken.
    pub const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
    /// The protocol of traces, which wins over [`PROTOCOL`].
    pub const TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
    /// `none` turns traces off.
    pub const TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";
    /// `true` turns traces off.
    pub const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
    /// The service's name (`service.name`).
    pub const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
}

/// Where traces go: the full URL of the collector's traces route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http(s)://HOST[:PORT]/PATH`, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub url: String,
}

impl Endpoint {
    /// Where to send, if anywhere: `flag` (a base URL, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is: `/v1/traces` is added) wins; else
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is); else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. Without any, or with `OTEL_SDK_DISABLED=true`
    /// or `OTEL_TRACES_EXPORTER=none` and no flag: `None`, traces are off. A value
    /// that is not an http or https URL, or a protocol other than `http/protobuf`,
    /// is the error's sentence (`flag_name` names the flag in it). `env` reads a
    /// variable (the process's environment in use).
    pub fn resolve(
        flag: Option<&str>,
        flag_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Endpoint>, String> {
        let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        // The URL sent to, where it came from, and what was written there.
        let (url, from, given) = if let Some(base) = flag {
            (traces_of(base), flag_name.to_string(), base.to_string())
        } else {
            let off = set(vars::SDK_DISABLED).is_some_and(|v| v.trim() == "true")
                || set(vars::TRACES_EXPORTER).is_some_and(|v| v.trim() == "none");
            if off {
                return Ok(None);
            }
            if let Some(url) = set(vars::TRACES_ENDPOINT) {
                (url.clone(), vars::TRACES_ENDPOINT.to_string(), url)
            } else if let Some(base) = set(vars::ENDPOINT) {
                (traces_of(&base), vars::ENDPOINT.to_string(), base)
            } else {
                return Ok(None);
            }
        };
        if !is_http_url(&url) {
            return Err(format!(
                "{from} '{given}' is not a URL: give http://HOST:PORT or https://HOST:PORT \
                 (the collector's OTLP over HTTP, e.g. http://127.0.0.1:4318)"
            ));
        }
        let protocol = set(vars::TRACES_PROTOCOL).or_else(|| set(vars::PROTOCOL));
        if let Some(protocol) = protocol.filter(|p| p.trim() != "http/protobuf") {
            return Err(format!(
                "the OTLP protocol '{}' is not spoken here: traces go over HTTP as protobuf \
                 (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, or leave it unset)",
                protocol.trim()
            ));
        }
        Ok(Some(Endpoint { url }))
    }
}

/// The traces route under a base URL.
fn traces_of(base: &str) -> String {
    format!("{}/v1/traces", base.trim().trim_end_matches('/'))
}

/// Whether `url` is `http://` or `https://` with a host and, where it names a
/// port, a port from 1 to 65535, as the HTTP client reads it. The daemon's
/// subscriptions (`docs/notifications.md`) take their URLs by the same rule.
pub fn is_http_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<hyper::Uri>() else {
        return false;
    };
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let host_ok = uri.host().is_some_and(|host| !host.is_empty());
    // The URI reads `host:99999` and `host:` as a host without a port: a port
    // written is one that fits.
    let port_ok = uri.authority().is_none_or(|authority| {
        let text = authority.as_str();
        let text = text
            .rsplit_once('@')
            .map_or(text, |(_, host_port)| host_port);
        let after_host = text.rsplit_once(']').map_or(text, |(_, rest)| rest);
        match after_host.rsplit_once(':') {
            Some(_) => authority.port_u16().is_some_and(|port| port > 0),
            None => true,
        }
    });
    scheme_ok && host_ok && port_ok
}

/// A span's id as OpenTelemetry holds it.
pub fn span_id(bytes: [u8; 8]) -> SpanId {
    SpanId::from_bytes(bytes)
}

/// A trace's id as OpenTelemetry holds it.
pub fn trace_id(bytes: [u8; 16]) -> TraceId {
    TraceId::from_bytes(bytes)
}

/// The context of a span of `trace` with id `span`, sampled or not.
pub fn context(trace: [u8; 16], span: [u8; 8], sampled: bool) -> SpanContext {
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    SpanContext::new(
        trace_id(trace),
        span_id(span),
        flags,
        false,
        TraceState::default(),
    )
}

/// The instrumentation scope of the spans a part of Stateous makes, e.g.
/// `stateous.control_plane`.
pub fn scope(name: &'static str) -> InstrumentationScope {
    InstrumentationScope::builder(name)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_flag_wins_and_the_variables_follow_the_specification() {
        let flag = Endpoint::resolve(Some("http://c:4318/"), "--otlp-endpoint", env(&[]));
        assert_eq!(flag.unwrap().unwrap().url, "http://c:4318/v1/traces");
        let traces = [
            (vars::TRACES_ENDPOINT, "http://t:1/x"),
            (vars::ENDPOINT, "http://b:2"),
        ];
        let resolved = Endpoint::resolve(None, "--otlp-endpoint", env(&traces));
        assert_eq!(resolved.unwrap().unwrap().url, "http://t:1/x");
        let base = [(vars::ENDPOINT, "https://b:2")];
        let resolved = Endpoint::resolve(None, "--otlp-endpoint", env(&base));
        assert_eq!(resolved.unwrap().unwrap().url, "https://b:2/v1/traces");
        assert_eq!(Endpoint::resolve(None, "x", env(&[])), Ok(None));
        let off = [(vars::ENDPOINT, "http://b:2"), (vars::SDK_DISABLED, "true")];
        assert_eq!(Endpoint::resolve(None, "x", env(&off)), Ok(None));
    }

    #[test]
    fn what_is_not_an_http_url_is_refused_in_one_sentence() {
        for bad in [
            "not a url",
            "ftp://c:21",
            "c:4318",
            "http://",
            "http://c:99999",
            "http://c:0/x",
            "http://c:/x",
            "http://[::1]:70000",
        ] {
            let refused = Endpoint::resolve(Some(bad), "--otlp-endpoint", env(&[]));
            let sentence = refused.unwrap_err();
            assert!(sentence.starts_with("--otlp-endpoint '"), "{sentence}");
        }
        let base = [(vars::ENDPOINT, "collector:4318")];
        let refused = Endpoint::resolve(None, "--otlp-endpoint", env(&base));
        assert!(
            refused
                .unwrap_err()
                .starts_with("OTEL_EXPORTER_OTLP_ENDPOINT 'collector:4318' is not"),
            "the value as written, without /v1/traces"
        );
        let grpc = [(vars::PROTOCOL, "grpc")];
        let refused = Endpoint::resolve(Some("http://c:4317"), "f", env(&grpc));
        assert!(refused.unwrap_err().contains("'grpc'"));
    }
}
