//! The top-level fields of a request's JSON body, for the inputs (`parse/`) to
//! read by name.
//!
//! The hot routes (start, claim, report) read their few named fields straight into
//! slots ([`Named`]), without building the whole body as a `serde_json` object: that
//! took about a sixth of a request thread's instructions (measured with callgrind over
//! `stateous bench`). Any body the slots cannot take exactly as the object would (not
//! an object, not strict JSON, a name given twice) is read again as the whole object by
//! `body::json_object`, so that its refusal, or the value that wins, is the same one as
//! before.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use stateous_shared::refusal::Refusal;
use stateous_shared::wire::Object;

use super::body::{json_object, readable};

/// A body's top-level fields by name.
pub trait Fields {
    /// The value of the field `name`; `None` when the body has none.
    fn field(&self, name: &str) -> Option<&Value>;
}

impl Fields for Object {
    fn field(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// A body read for the fields `names` only: each slot holds the value of the name
/// at its index. Other fields were read (so that any JSON the whole object refuses
/// is refused here too) and dropped.
#[derive(Debug)]
pub struct Named {
    names: &'static [&'static str],
    values: Vec<Option<Value>>,
}

impl Fields for Named {
    fn field(&self, name: &str) -> Option<&Value> {
        let at = self.names.iter().position(|known| *known == name);
        // A name the route did not list would read as absent: a slip the tests
        // must catch.
        debug_assert!(
            at.is_some(),
            "the field '{name}' is not among {:?}",
            self.names
        );
        let at = at?;
        self.values.get(at)?.as_ref()
    }
}

/// The body's fields: the named ones read into slots, or the whole object where
/// the slots cannot stand for it (then with the object's refusals: `bad_request`,
/// `invalid_body`; see `body::json_object`).
pub enum BodyFields {
    /// Read straight into the slots.
    Named(Named),
    /// Read as the whole object.
    Whole(Object),
}

impl Fields for BodyFields {
    fn field(&self, name: &str) -> Option<&Value> {
        match self {
            BodyFields::Named(named) => named.field(name),
            BodyFields::Whole(object) => object.get(name),
        }
    }
}

/// Read the fields `names` of the body `raw`.
pub fn named_fields(raw: &[u8], names: &'static [&'static str]) -> Result<BodyFields, Refusal> {
    if let Some(body) = readable(raw) {
        let mut reader = serde_json::Deserializer::from_slice(body);
        let read = Slots { names }
            .deserialize(&mut reader)
            .and_then(|named| reader.end().map(|()| named));
        if let Ok(named) = read {
            return Ok(BodyFields::Named(named));
        }
    }
    json_object(raw).map(BodyFields::Whole)
}

/// Reads a JSON object into [`Named`]; fails on anything else, and on a name of
/// `names` given twice (the whole object keeps the last, which `json_object` then
/// finds).
struct Slots {
    names: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for Slots {
    type Value = Named;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Named, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Slots {
    type Value = Named;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Named, A::Error> {
        let mut values = vec![None; self.names.len()];
        while let Some(at) = map.next_key_seed(Key { names: self.names })? {
            // Every value is read whole, those of other names too, so that a value
            // the object refuses (a number out of range) is refused here.
            let value: Value = map.next_value()?;
            if let Some(at) = at {
                let slot = &mut values[at];
                if slot.is_some() {
                    return Err(serde::de::Error::custom("a field given twice"));
                }
                *slot = Some(value);
            }
        }
        Ok(Named {
            names: self.names,
            values,
        })
    }
}

/// Reads a key as its index among `names`, without keeping its text.
struct Key {
    names: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.names.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["kind", "payload"];

    fn same_as_whole(raw: &str) {
        let whole = json_object(raw.as_bytes());
        let named = named_fields(raw.as_bytes(), NAMES);
        match (whole, named) {
            (Ok(object), Ok(fields)) => {
                for &name in NAMES {
                    assert_eq!(fields.field(name), object.get(name), "{raw}: {name}");
                }
            }
            (Err(whole), Err(named)) => assert_eq!(whole, named, "{raw}"),
            (whole, named) => panic!("{raw}: {whole:?} against {:?}", named.is_ok()),
        }
    }

    #[test]
    fn the_named_fields_read_as_the_whole_object_reads_them() {
        for raw in [
            r#"{"kind": "event", "payload": {"a": [1, 2]}, "other": 3}"#,
            r#"{"kind": "event", "kind": "failed"}"#,
            r#"{"other": 1, "other": 2, "kind": null}"#,
            r#"{"k\u0069nd": "escaped"}"#,
            r#"{"payload": 1e400}"#,
            r#"{"other": 1e400}"#,
            "\u{feff}{\"kind\": \"bom\"}",
            "\u{feff}",
            "\u{feff}  ",
            "",
            "  ",
            "[1]",
            "null",
            "{\"kind\": 1} x",
            "{not json",
        ] {
            same_as_whole(raw);
        }
    }

    #[test]
    fn the_hot_bodies_are_read_into_slots() {
        let raw = br#"{"kind": "event", "payload": {}, "supervisor": "s"}"#;
        assert!(matches!(
            named_fields(raw, NAMES).unwrap(),
            BodyFields::Named(_)
        ));
        let twice = br#"{"kind": "event", "kind": "failed"}"#;
        let fields = named_fields(twice, NAMES).unwrap();
        assert!(matches!(fields, BodyFields::Whole(_)));
        assert_eq!(fields.field("kind"), Some(&Value::from("failed")));
    }
}
