//! JSON values as both backends keep them: text, so that a value reads back byte
//! for byte (key order included) on SQLite and Postgres alike.

use serde_json::Value;
use stateous_shared::wire::Object;

use super::StoreError;

/// An object as stored JSON text.
pub fn to_text(value: &Object) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

/// Stored JSON text as an object.
pub fn object(text: &str) -> Result<Object, StoreError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(StoreError::Corrupt(format!("not an object: {other}"))),
        Err(error) => Err(StoreError::Corrupt(error.to_string())),
    }
}

/// Stored JSON text, or NULL, as an optional object.
pub fn optional_object(text: Option<String>) -> Result<Option<Object>, StoreError> {
    match text {
        None => Ok(None),
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Null) => Ok(None),
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(other) => Err(StoreError::Corrupt(format!("not an object: {other}"))),
            Err(error) => Err(StoreError::Corrupt(error.to_string())),
        },
    }
}

/// Stored JSON text as any value.
pub fn value(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}
