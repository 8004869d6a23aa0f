//! The OTLP wire format: `opentelemetry-proto`'s messages, encoded with prost. A
//! span is encoded once, when its maker ends it ([`Encoded`]), its events as they
//! happen ([`Events`]); a batch's request is put together from encoded spans
//! without building the messages again ([`Framing::request`]).

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span::Event, ResourceSpans, ScopeSpans, Span};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

/// `ExportTraceServiceRequest.resource_spans`.
const REQUEST_RESOURCE_SPANS: u32 = 1;
/// `ResourceSpans.scope_spans`.
const RESOURCE_SCOPE_SPANS: u32 = 2;
/// `ScopeSpans.spans`.
const SCOPE_SPANS: u32 = 2;
/// `Span.events`.
const SPAN_EVENTS: u32 = 11;

/// The protobuf bytes of one `Span` message, ready for a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded(Vec<u8>);

impl Encoded {
    /// `span` (whose own `events` are sent too) followed by `events`: the fields of
    /// a message may come in any order, and a repeated field's items add up.
    pub fn new(span: &Span, events: &Events) -> Encoded {
        let mut bytes = Vec::with_capacity(span.encoded_len() + events.bytes.len());
        // Encoding into a Vec cannot run out of room.
        let _ = span.encode(&mut bytes);
        bytes.extend_from_slice(&events.bytes);
        Encoded(bytes)
    }

    /// The bytes: one `Span` message.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The span decoded again (a test's reading); `None` if the bytes are not one.
    pub fn decode(&self) -> Option<Span> {
        Span::decode(self.0.as_slice()).ok()
    }
}

/// A span's events, each encoded as it is added (field `Span.events`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Events {
    bytes: Vec<u8>,
    count: usize,
}

impl Events {
    /// Add `event` after those already here.
    pub fn push(&mut self, event: &Event) {
        prost::encoding::message::encode(SPAN_EVENTS, event, &mut self.bytes);
        self.count += 1;
    }

    /// How many events were added.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// What surrounds a batch's spans in an `ExportTraceServiceRequest`: one resource
/// (the service) and one instrumentation scope, encoded once.
#[derive(Debug, Clone)]
pub struct Framing {
    /// `ResourceSpans` without its `scope_spans`.
    resource: Vec<u8>,
    /// `ScopeSpans` without its `spans`.
    scope: Vec<u8>,
}

impl Framing {
    /// The framing of spans of `scope` from `resource` (with their schema URLs,
    /// empty for none).
    pub fn new(
        resource: Resource,
        resource_schema: String,
        scope: InstrumentationScope,
        scope_schema: String,
    ) -> Framing {
        let resource = ResourceSpans {
            resource: Some(resource),
            scope_spans: Vec::new(),
            schema_url: resource_schema,
        };
        let scope = ScopeSpans {
            scope: Some(scope),
            spans: Vec::new(),
            schema_url: scope_schema,
        };
        Framing {
            resource: resource.encode_to_vec(),
            scope: scope.encode_to_vec(),
        }
    }

    /// The `ExportTraceServiceRequest` that carries `spans`, in their order.
    pub fn request(&self, spans: &[Encoded]) -> Vec<u8> {
        let field = |len: usize, tag: u32| key_len(tag) + encoded_len_varint(len as u64) + len;
        let scope_len = self.scope.len()
            + spans
                .iter()
                .map(|span| field(span.0.len(), SCOPE_SPANS))
                .sum::<usize>();
        let resource_len = self.resource.len() + field(scope_len, RESOURCE_SCOPE_SPANS);
        let mut body = Vec::with_capacity(field(resource_len, REQUEST_RESOURCE_SPANS));
        let head = |body: &mut Vec<u8>, tag: u32, len: usize| {
            encode_key(tag, WireType::LengthDelimited, body);
            encode_varint(len as u64, body);
        };
        head(&mut body, REQUEST_RESOURCE_SPANS, resource_len);
        body.extend_from_slice(&self.resource);
        head(&mut body, RESOURCE_SCOPE_SPANS, scope_len);
        body.extend_from_slice(&self.scope);
        for span in spans {
            head(&mut body, SCOPE_SPANS, span.0.len());
            body.extend_from_slice(&span.0);
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};

    fn text(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.into())),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_put_together_decodes_as_the_messages_built_whole() {
        let resource = Resource {
            attributes: vec![text("service.name", "stateous")],
            ..Default::default()
        };
        let scope = InstrumentationScope {
            name: "stateous.control_plane".into(),
            version: "1.0".into(),
            ..Default::default()
        };
        let framing = Framing::new(
            resource.clone(),
            String::new(),
            scope.clone(),
            String::new(),
        );
        let event = |name: &str| Event {
            time_unix_nano: 7,
            name: name.into(),
            attributes: vec![text("stateous.seq", "1")],
            dropped_attributes_count: 0,
        };
        let mut spans = Vec::new();
        let mut encoded = Vec::new();
        for n in 0..3u8 {
            let mut span = Span {
                trace_id: vec![n; 16],
                span_id: vec![n; 8],
                name: format!("span {n}"),
                attributes: vec![text("stateous.token", "T-1")],
                ..Default::default()
            };
            let mut events = Events::default();
            for name in ["entered", "task_queued"].iter().take(usize::from(n)) {
                events.push(&event(name));
            }
            encoded.push(Encoded::new(&span, &events));
            span.events = (0..usize::from(n))
                .map(|i| event(["entered", "task_queued"][i]))
                .collect();
            spans.push(span);
        }
        let whole = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(resource),
                scope_spans: vec![ScopeSpans {
                    scope: Some(scope),
                    spans,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        let body = framing.request(&encoded);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded, whole);
        assert_eq!(body.len(), whole.encoded_len());
    }
}
