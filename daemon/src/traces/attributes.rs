//! The names of the spans' attributes (`docs/reference/traces.md`, "Attributes"),
//! a ledger entry as a span event's attributes, and a routine's usage as the
//! OpenTelemetry GenAI attributes; all as OTLP's messages (`stateous_otlp::proto`).

use std::borrow::Cow;

use serde_json::Value as Json;
use stateous_otlp::proto::common::v1::{any_value::Value, AnyValue, ArrayValue, KeyValue};
use stateous_shared::wire::Object;

use crate::store::{Closed, EntryKind, LedgerRow};

/// The instrumentation scope of the control plane's spans.
pub const SCOPE: &str = "stateous.control_plane";
/// The token's id (every span).
pub const TOKEN: &str = "stateous.token";
/// A child token's parent (the token span).
pub const PARENT: &str = "stateous.parent";
/// How the token ended: `completed`, `failed`, `cancelled` (the token span).
pub const STATUS: &str = "stateous.status";
/// The state (visit and attempt spans).
pub const STATE: &str = "stateous.state";
/// The visit's number, from 1 (visit span).
pub const VISIT: &str = "stateous.visit";
/// The event that moved the token out of the state (visit span).
pub const LEFT_ON: &str = "stateous.left_on";
/// The task's id (attempt span).
pub const TASK: &str = "stateous.task";
/// The attempt's number, from 1 (attempt span).
pub const ATTEMPT: &str = "stateous.attempt";
/// The supervisor that claimed it (attempt span).
pub const SUPERVISOR: &str = "stateous.supervisor";
/// `done`, `waiting`, `failed` or `cancelled` (attempt span).
pub const OUTCOME: &str = "stateous.outcome";
/// The event a `done` attempt ended with (attempt span).
pub const EVENT: &str = "stateous.event";
/// What ended the attempt: `report`, `lease_end`, `cancel` or `token_end`.
pub const ENDED_BY: &str = "stateous.ended_by";
/// The ledger entry's seq (each span event).
pub const SEQ: &str = "stateous.seq";
/// Where a span event puts a field of the entry's `data`: `stateous.data.FIELD`.
pub const DATA: &str = "stateous.data.";
/// The most characters of a text kept in an attribute.
const MAX_TEXT: usize = 1024;

/// The attributes of a ledger entry as a span event: its seq, the access key that
/// wrote it, and each field of its `data` that is a number, a boolean, a text or a
/// list of texts. Objects (contexts, payloads, a hook's delivery) are left out:
/// what a token carries stays in the database, not in a collector.
pub fn entry_attributes(row: &LedgerRow) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(row.data.len() + 2);
    attributes.push(kv(SEQ, Value::IntValue(row.seq)));
    if let Some(by) = &row.by {
        attributes.push(kv("stateous.by", Value::StringValue(by.clone())));
    }
    for (key, value) in &row.data {
        if let Some(value) = scalar(value) {
            let key = match data_key(key) {
                Some(named) => named.to_string(),
                None => format!("{DATA}{key}"),
            };
            attributes.push(kv(key, value));
        }
    }
    attributes
}

/// An attribute: `key` is `value`.
pub fn kv(key: impl Into<String>, value: Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        key_strindex: 0,
    }
}

/// The value of an attribute.
pub fn value_of(kv: &KeyValue) -> Option<&Value> {
    kv.value.as_ref()?.value.as_ref()
}

/// `stateous.data.FIELD` for the fields most entries carry, without formatting
/// the text each time (an entry's attributes are built for every ledger row).
fn data_key(field: &str) -> Option<&'static str> {
    macro_rules! named {
        ($($field:literal),*) => {
            match field {
                $($field => Some(concat!("stateous.data.", $field)),)*
                _ => None,
            }
        };
    }
    named!(
        "task",
        "state",
        "event",
        "visit",
        "attempt",
        "supervisor",
        "error",
        "reason",
        "parent",
        "routine",
        "timer",
        "request",
        "wait",
        "until",
        "child",
        "key"
    )
}

/// A ledger entry's kind as its span event's name; the kinds the engine writes
/// ([`EntryKind`]) are not copied.
pub fn entry_name(kind: &str) -> Cow<'static, str> {
    match EntryKind::parse(kind) {
        Some(known) => Cow::Borrowed(known.as_str()),
        None => Cow::Owned(kind.to_string()),
    }
}

/// A JSON value as an attribute's value, when it is one a collector shows well.
fn scalar(value: &Json) -> Option<Value> {
    Some(match value {
        Json::Bool(b) => Value::BoolValue(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::IntValue(i),
            None => Value::DoubleValue(n.as_f64()?),
        },
        Json::String(s) => Value::StringValue(clip(s)),
        Json::Array(items) => {
            let texts: Option<Vec<_>> = items
                .iter()
                .map(|item| {
                    let text = Value::StringValue(clip(item.as_str()?));
                    Some(AnyValue { value: Some(text) })
                })
                .collect();
            Value::ArrayValue(ArrayValue { values: texts? })
        }
        Json::Null | Json::Object(_) => return None,
    })
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

/// The usage a ledger entry reports for its task's attempt, as attributes of the
/// attempt's span; `None` for an entry without usage. An entry of kind `usage`
/// carries it, in `data.usage` or as `data` itself. The OpenTelemetry GenAI
/// names are used where there is one: `input_tokens` is
/// `gen_ai.usage.input_tokens`, `output_tokens` `gen_ai.usage.output_tokens`,
/// `model` `gen_ai.request.model`; the rest is `stateous.usage.NAME`
/// (`cost_usd` has no GenAI name yet). Numbers add up over an attempt's entries.
pub fn usage_attributes(kind: &str, data: &Object) -> Option<Vec<KeyValue>> {
    let usage = match data.get("usage") {
        Some(Json::Object(usage)) => usage,
        _ if kind == "usage" => data,
        _ => return None,
    };
    let attributes = usage
        .iter()
        .filter(|(name, _)| name.as_str() != "task" && name.as_str() != "attempt")
        .filter_map(|(name, value)| {
            let key = match name.as_str() {
                "input_tokens" => "gen_ai.usage.input_tokens".to_string(),
                "output_tokens" => "gen_ai.usage.output_tokens".to_string(),
                "model" => "gen_ai.request.model".to_string(),
                other => format!("stateous.usage.{other}"),
            };
            Some(kv(key, scalar(value)?))
        })
        .collect();
    Some(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_takes_the_genai_names() {
        let data = json!({"task": 3, "usage": {"input_tokens": 120, "output_tokens": 30,
            "cost_usd": 0.12, "model": "claude"}});
        let attributes = usage_attributes("usage", data.as_object().unwrap()).unwrap();
        let named = |key: &str| {
            attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .and_then(value_of)
                .cloned()
        };
        assert_eq!(
            named("gen_ai.usage.input_tokens"),
            Some(Value::IntValue(120))
        );
        assert_eq!(
            named("gen_ai.usage.output_tokens"),
            Some(Value::IntValue(30))
        );
        assert_eq!(
            named("gen_ai.request.model"),
            Some(Value::StringValue("claude".into()))
        );
        assert_eq!(
            named("stateous.usage.cost_usd"),
            Some(Value::DoubleValue(0.12))
        );
        assert!(usage_attributes("note", &Object::new()).is_none());
    }

    #[test]
    fn each_scalar_field_is_named_after_the_data_prefix() {
        let data = json!({"task": 3, "state": "draft", "custom_field": true, "context": {}});
        let row = LedgerRow {
            id: 1,
            token: "T-1".into(),
            seq: 2,
            at: 0,
            kind: "task_queued".into(),
            key: None,
            data: data.as_object().unwrap().clone(),
            by: None,
        };
        let mut keys: Vec<String> = entry_attributes(&row)
            .iter()
            .map(|kv| kv.key.as_str().to_string())
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "stateous.data.custom_field",
                "stateous.data.state",
                "stateous.data.task",
                "stateous.seq"
            ]
        );
        assert_eq!(entry_name("task_queued"), "task_queued");
        assert_eq!(entry_name("a_new_kind"), "a_new_kind");
    }
}
