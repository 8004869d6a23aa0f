//! The bounded queue between the parts that finish spans and the collector.
//!
//! [`Spans::send`] never waits: a span that finds the queue full is dropped and
//! counted. One task takes the spans in batches (up to [`Options::batch`], or what
//! came within [`Options::every`]) and exports one batch at a time, each within
//! [`Options::timeout`]; a batch the collector refuses or does not answer is
//! dropped and counted too, and not sent again (a collector that is down would
//! otherwise hold every later span back). `opentelemetry_sdk`'s own batch processor
//! drops the same way but counts only for itself; this queue tells a [`Listener`],
//! so that the drops reach `/metrics` and the log.
//!
//! The spans wait encoded ([`Encoded`]): a batch's request is their bytes inside a
//! framing made once ([`Framing`]), posted as OTLP/HTTP protobuf with the headers
//! of `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (else `OTEL_EXPORTER_OTLP_HEADERS`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry_http::HttpClient;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
use opentelemetry_proto::tonic::trace::v1::Span as ProtoSpan;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;
use tokio::sync::mpsc;

use crate::http::Http;
use crate::wire::{Encoded, Events, Framing};
use crate::{vars, Endpoint};

/// How often at most a line says that spans are dropped.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// What the queue tells about itself. Each call is quick: it runs on the caller's
/// thread ([`Listener::dropped`]) or on the queue's task.
pub trait Listener: Send + Sync {
    /// A batch of `spans` reached the collector.
    fn exported(&self, spans: u64);
    /// `spans` were dropped: the queue was full (`queue_full`) or the collector did
    /// not take them (`export_failed`).
    fn dropped(&self, spans: u64, reason: &'static str);
    /// A line for the log: drops began (at most one a minute), or stopped.
    fn line(&self, text: &str, warning: bool);
}

/// The queue's shape.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to send.
    pub endpoint: Endpoint,
    /// `service.name`, unless `OTEL_SERVICE_NAME` names another.
    pub service: &'static str,
    /// The instrumentation scope of every span sent (e.g. `stateous.control_plane`).
    pub scope: &'static str,
    /// The most spans waiting; more are dropped.
    pub capacity: usize,
    /// The most spans in one export.
    pub batch: usize,
    /// How long a batch waits for more spans before it goes.
    pub every: Duration,
    /// How long one export may take.
    pub timeout: Duration,
}

impl Options {
    /// The defaults (2048 spans waiting, 512 a batch, at least one batch a second,
    /// 10 s an export) for `endpoint`, the spans of `scope` from `service`.
    pub fn new(endpoint: Endpoint, service: &'static str, scope: &'static str) -> Options {
        Options {
            endpoint,
            service,
            scope,
            capacity: 2048,
            batch: 512,
            every: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Where finished spans go: a cheap handle to the queue.
#[derive(Clone)]
pub struct Spans {
    queue: mpsc::Sender<Encoded>,
    listener: Arc<dyn Listener>,
    drops: Arc<Drops>,
}

/// When the queue last said it dropped spans, so that it says so at most once a
/// [`LINE_EVERY`].
struct Drops {
    since: Instant,
    /// Milliseconds after `since` of the last line; `u64::MAX`: none yet.
    said_at: AtomicU64,
}

impl Drops {
    /// True when a line about drops may be written now.
    fn may_say(&self) -> bool {
        let now = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        let said = self.said_at.load(Ordering::Relaxed);
        let due = said == u64::MAX
            || now.saturating_sub(said) >= u64::try_from(LINE_EVERY.as_millis()).unwrap_or(0);
        due && self
            .said_at
            .compare_exchange(said, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

impl Spans {
    /// How many spans the queue has room for now; a caller that may wait (one
    /// not in a request's way) waits for room rather than have spans dropped.
    pub fn room(&self) -> usize {
        self.queue.capacity()
    }

    /// The most spans the queue holds ([`Options::capacity`]).
    pub fn size(&self) -> usize {
        self.queue.max_capacity()
    }

    /// Queue a finished span; false when it was dropped (the queue is full: the
    /// collector is slow or down), which the listener is told. Its instrumentation
    /// scope is the queue's ([`Options::scope`]).
    pub fn send(&self, span: SpanData) -> bool {
        self.send_encoded(Encoded::new(&ProtoSpan::from(span), &Events::default()))
    }

    /// Queue a finished span already encoded, as [`Spans::send`] does.
    pub fn send_encoded(&self, span: Encoded) -> bool {
        match self.queue.try_send(span) {
            Ok(()) => true,
            Err(_) => {
                self.listener.dropped(1, "queue_full");
                if self.drops.may_say() {
                    self.listener.line(
                        "traces: the queue of spans is full (the collector is slow or down); \
                         spans are dropped and counted",
                        true,
                    );
                }
                false
            }
        }
    }
}

/// Build the exporter for `options` and start the queue's task on the current
/// tokio runtime: the handle to send spans to, and the task, which ends once every
/// handle is dropped and what was queued went out (or failed). The error is one
/// sentence.
pub fn start(
    options: Options,
    listener: Arc<dyn Listener>,
) -> Result<(Spans, tokio::task::JoinHandle<()>), String> {
    // The exporter of `opentelemetry-otlp` is not used to send (it would build
    // each span again from `SpanData`), but it still says which settings of the
    // `OTEL_EXPORTER_OTLP_*` variables cannot be used.
    exporter(&options)?;
    let post = Post::new(&options)?;
    let (queue, taken) = mpsc::channel(options.capacity.max(1));
    let drops = Arc::new(Drops {
        since: Instant::now(),
        said_at: AtomicU64::new(u64::MAX),
    });
    let spans = Spans {
        queue,
        listener: Arc::clone(&listener),
        drops: Arc::clone(&drops),
    };
    let task = tokio::spawn(run(post, taken, options, listener, drops));
    Ok((spans, task))
}

/// The OTLP exporter of `options`; the error is one sentence (a variable the
/// exporter reads, such as `OTEL_EXPORTER_OTLP_COMPRESSION`, that it cannot use).
pub fn exporter(options: &Options) -> Result<opentelemetry_otlp::SpanExporter, String> {
    // No retries: the exporter's would sleep on the caller's thread (without a
    // runtime feature it sleeps with `std::thread::sleep`), and a batch that failed
    // is dropped and counted here rather than sent again behind later ones.
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_http_client(Http::new(options.timeout))
        .with_endpoint(options.endpoint.url.clone())
        .with_timeout(options.timeout)
        .build()
        .map_err(|e| format!("cannot set up the export of traces: {e}"))
}

/// The service's resource: `service.name` from `OTEL_SERVICE_NAME`, else `service`;
/// `OTEL_RESOURCE_ATTRIBUTES` too, and the SDK's own (`telemetry.sdk.*`).
fn resource(service: &'static str) -> Resource {
    let named = std::env::var(vars::SERVICE_NAME).is_ok_and(|name| !name.trim().is_empty());
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name(service).build()
    }
}

/// Take batches and export them one at a time until every handle is gone.
async fn run(
    post: Post,
    mut taken: mpsc::Receiver<Encoded>,
    options: Options,
    listener: Arc<dyn Listener>,
    drops: Arc<Drops>,
) {
    let mut failing = false;
    loop {
        let Some(first) = taken.recv().await else {
            return;
        };
        let mut batch = vec![first];
        let until = tokio::time::Instant::now() + options.every;
        while batch.len() < options.batch {
            match tokio::time::timeout_at(until, taken.recv()).await {
                Ok(Some(span)) => batch.push(span),
                Ok(None) | Err(_) => break,
            }
        }
        let count = batch.len() as u64;
        let body = post.framing.request(&batch);
        drop(batch);
        let exported = tokio::time::timeout(options.timeout, post.send(body)).await;
        let problem = match exported {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error),
            Err(_) => Some(format!("no answer within {:?}", options.timeout)),
        };
        match problem {
            None => {
                listener.exported(count);
                if failing {
                    failing = false;
                    let text = format!(
                        "traces: the collector at {} takes spans again",
                        options.endpoint.url
                    );
                    listener.line(&text, false);
                }
            }
            Some(problem) => {
                listener.dropped(count, "export_failed");
                failing = true;
                if drops.may_say() {
                    let text = format!(
                        "traces: the collector at {} did not take {count} spans ({problem}); \
                         they are dropped and counted",
                        options.endpoint.url
                    );
                    listener.line(&text, true);
                }
            }
        }
    }
}

/// How a batch goes out: its request's framing, and the POST to the collector.
struct Post {
    framing: Framing,
    url: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    http: Http,
}

impl Post {
    /// The framing and the POST of `options`; the error is one sentence.
    fn new(options: &Options) -> Result<Post, String> {
        let resource = ResourceAttributesWithSchema::from(&resource(options.service));
        let resource = (
            ProtoResource {
                attributes: resource.attributes.0,
                dropped_attributes_count: 0,
                entity_refs: Vec::new(),
            },
            resource.schema_url.unwrap_or_default(),
        );
        let scope = crate::scope(options.scope);
        let scope = (
            opentelemetry_proto::tonic::common::v1::InstrumentationScope::from((&scope, None)),
            scope.schema_url().unwrap_or_default().to_string(),
        );
        let url = options
            .endpoint
            .url
            .parse()
            .map_err(|e| format!("cannot set up the export of traces: {e}"))?;
        let given = std::env::var(vars::TRACES_HEADERS).or_else(|_| std::env::var(vars::HEADERS));
        let mut headers = vec![
            (
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/x-protobuf"),
            ),
            (
                hyper::header::USER_AGENT,
                hyper::header::HeaderValue::from_static(concat!(
                    "stateous-otlp/",
                    env!("CARGO_PKG_VERSION")
                )),
            ),
        ];
        headers.extend(given.ok().iter().flat_map(|given| parse_headers(given)));
        Ok(Post {
            framing: Framing::new(resource.0, resource.1, scope.0, scope.1),
            url,
            headers,
            http: Http::new(options.timeout),
        })
    }

    /// POST `body`; the error says why the collector did not take it.
    async fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let mut request = hyper::Request::new(Bytes::from(body));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.url.clone();
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let answer = self
            .http
            .send_bytes(request)
            .await
            .map_err(|error| format!("HTTP export failed: {error}"))?;
        if answer.status().is_success() {
            Ok(())
        } else {
            Err(format!(
                "HTTP export failed with status code: {}",
                answer.status().as_u16()
            ))
        }
    }
}

/// The headers of `OTEL_EXPORTER_OTLP_HEADERS`' form: `key=value` pairs apart by
/// commas, each value percent-decoded (kept as given when it does not decode); a pair
/// without `=`, or a name or value a header cannot have, is left out.
fn parse_headers(given: &str) -> Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)> {
    given
        .split_terminator(',')
        .filter_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() || value.is_empty() {
                return None;
            }
            // A broken escape stays as written; a value that does not decode to
            // UTF-8 is kept as given.
            let value = percent_encoding::percent_decode_str(value)
                .decode_utf8()
                .map_or_else(|_| value.to_string(), |decoded| decoded.into_owned());
            Some((
                hyper::header::HeaderName::from_bytes(key.as_bytes()).ok()?,
                hyper::header::HeaderValue::from_str(&value).ok()?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_as_the_specification_writes_them() {
        let headers = parse_headers("api-key=a%20b, x-team = ops ,broken,=v,k=");
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
            .collect();
        assert_eq!(pairs, [("api-key", "a b"), ("x-team", "ops")]);
        let kept = parse_headers("k=100%");
        assert_eq!(
            kept[0].1.to_str().unwrap(),
            "100%",
            "a broken escape is kept"
        );
    }
}
