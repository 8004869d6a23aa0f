//! A collector for the tests: an HTTP server on a free port that takes OTLP traces
//! (`POST /v1/traces`, protobuf), decodes them with the OpenTelemetry protobuf
//! definitions (`opentelemetry-proto`) and keeps each span.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;

/// One span as the collector received it; ids in lowercase hex ("" for none).
#[derive(Debug, Clone)]
pub struct Received {
    /// `service.name` of the resource that sent it.
    pub service: String,
    pub trace: String,
    pub id: String,
    pub parent: String,
    pub name: String,
    pub attributes: BTreeMap<String, String>,
    /// The names of its events, in order.
    pub events: Vec<String>,
    /// 2 for an error (OTLP's `STATUS_CODE_ERROR`), 1 for ok, 0 unset.
    pub status: i32,
    pub status_message: String,
    pub start: u64,
    pub end: u64,
}

impl Received {
    pub fn attribute(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

/// The collector: its base URL (for `--otlp-endpoint`) and what it received.
pub struct Collector {
    pub url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Collector {
    pub fn start() -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let kept = kept.clone();
                        async move { Ok::<_, Infallible>(take(request, &kept).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Collector {
            url,
            spans,
            _runtime: runtime,
        }
    }

    pub fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans received, once `enough` says they are all there (30 s at most).
    pub fn wait_for(&self, what: &str, enough: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans();
            if enough(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "never {what}; received: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

async fn take(
    request: hyper::Request<hyper::body::Incoming>,
    kept: &Mutex<Vec<Received>>,
) -> hyper::Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let status = match ExportTraceServiceRequest::decode(body) {
        Ok(export) if path == "/v1/traces" => {
            kept.lock().unwrap().extend(received(export));
            200
        }
        _ => 400,
    };
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn received(export: ExportTraceServiceRequest) -> Vec<Received> {
    let mut out = Vec::new();
    for resource_spans in export.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default();
        let service = attributes(&resource.attributes)
            .remove("service.name")
            .unwrap_or_default();
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                let status = span.status.unwrap_or_default();
                out.push(Received {
                    service: service.clone(),
                    trace: hex::encode(&span.trace_id),
                    id: hex::encode(&span.span_id),
                    parent: hex::encode(&span.parent_span_id),
                    name: span.name,
                    attributes: attributes(&span.attributes),
                    events: span.events.into_iter().map(|e| e.name).collect(),
                    status: status.code,
                    status_message: status.message,
                    start: span.start_time_unix_nano,
                    end: span.end_time_unix_nano,
                });
            }
        }
    }
    out
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::DoubleValue(f)) => f.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}
