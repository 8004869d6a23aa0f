//! What values a guard's operand can take, as its model's JSON Schema says
//! (`docs/concepts/guards.md`): an `integer` is never 3.5, an enum of
//! `'high'` and `'low'` is never `'medium'`, a count is never negative.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// A kind of JSON value that a schema allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `integer`
    Int,
    /// `number`
    Number,
    /// `string`
    String,
    /// `boolean`
    Bool,
    /// `null`
    Null,
    /// `object`
    Object,
    /// `array`
    Array,
    /// No schema, or one that says nothing of the type: any value.
    Any,
}

/// The values an operand can take.
#[derive(Debug, Clone, PartialEq)]
pub struct Domain {
    /// The kinds of value allowed.
    pub kinds: BTreeSet<Kind>,
    /// When the schema lists the values (`enum`, `const`): exactly those.
    pub values: Option<Vec<Value>>,
    /// The least integer allowed (counts: 0, or 1 for the event being routed).
    pub minimum: Option<i64>,
}

/// How deeply `$ref`, `anyOf` and `oneOf` are followed; a schema that refers to
/// itself past this reads as any value, which is always a safe guess.
const MAX_DEPTH: usize = 32;

impl Domain {
    /// Any value at all.
    pub fn any() -> Domain {
        Domain::of_kinds([Kind::Any])
    }

    /// The values of the given kinds.
    pub fn of_kinds(kinds: impl IntoIterator<Item = Kind>) -> Domain {
        Domain {
            kinds: kinds.into_iter().collect(),
            values: None,
            minimum: None,
        }
    }

    /// A count of an event: an integer, at least 1 for the event being routed
    /// (it is counted already), else at least 0.
    pub fn count(routed: bool) -> Domain {
        Domain {
            minimum: Some(i64::from(routed)),
            ..Domain::of_kinds([Kind::Int])
        }
    }

    /// Whether this is exactly "any value".
    pub fn is_any(&self) -> bool {
        self.kinds.len() == 1 && self.kinds.contains(&Kind::Any)
    }

    /// Whether values of `kind` (or of any kind) are allowed.
    pub fn allows(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind) || self.kinds.contains(&Kind::Any)
    }

    /// The domain of the property `name` of a model's JSON Schema (an object
    /// schema with `properties`; a `$ref` is read through the model's `$defs` or
    /// `definitions`). No model, or no such property: any value. A field the model
    /// does not require, and gives no default, may be missing: it reads as null.
    pub fn of_field(model: Option<&Value>, name: &str) -> Domain {
        Domain::of_field_among(model, name, None, true)
    }

    /// Like [`Domain::of_field`], where a `$ref` that the model's own definitions
    /// lack is read from `schemas`, the workflow's schemas by name (a flow.yaml
    /// refers to another schema as `{$ref: "#/schemas/NAME"}`). `defaults_filled`:
    /// whether the data gets each missing field's `default` (the context does, when
    /// a token starts); if not, any field the model does not require may be
    /// missing, and read as null (a payload is kept as it was sent).
    pub fn of_field_among(
        model: Option<&Value>,
        name: &str,
        schemas: Option<&Map<String, Value>>,
        defaults_filled: bool,
    ) -> Domain {
        let Some(model) = model else {
            return Domain::any();
        };
        let Some(property) = model.get("properties").and_then(|p| p.get(name)) else {
            return Domain::any();
        };
        // Not in the reference, whose pydantic models hold every field: a field
        // left out reads as null, so null is tried for it.
        let required = model
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)));
        let filled = defaults_filled && property.get("default").is_some();
        let may_be_absent = !(required || filled);
        let mut definitions = schemas.cloned().unwrap_or_default();
        let own = model.get("$defs").or_else(|| model.get("definitions"));
        if let Some(own) = own.and_then(Value::as_object) {
            definitions.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let definitions = &definitions;
        let mut domain = Domain::of_schema(property, definitions, 0);
        if may_be_absent && !domain.allows(Kind::Null) {
            domain.kinds.insert(Kind::Null);
        }
        domain
    }

    fn of_schema(schema: &Value, definitions: &Map<String, Value>, depth: usize) -> Domain {
        let Some(schema) = schema.as_object() else {
            return Domain::any();
        };
        if depth > MAX_DEPTH {
            return Domain::any();
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            let Some(Value::Object(target)) = definitions.get(name) else {
                return Domain::any();
            };
            // The keys beside `$ref` win over the target's, as in the reference.
            let mut merged = target.clone();
            for (key, value) in schema.iter().filter(|(key, _)| *key != "$ref") {
                merged.insert(key.clone(), value.clone());
            }
            return Domain::of_schema(&Value::Object(merged), definitions, depth + 1);
        }
        for combined in ["anyOf", "oneOf"] {
            if let Some(parts) = schema.get(combined) {
                return Domain::union(parts, definitions, depth);
            }
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return Domain::listed(values.clone());
        }
        if let Some(value) = schema.get("const") {
            return Domain::listed(vec![value.clone()]);
        }
        let names: Vec<&str> = match schema.get("type") {
            Some(Value::String(name)) => vec![name],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => return Domain::any(),
        };
        Domain::of_kinds(names.into_iter().map(|name| match name {
            "integer" => Kind::Int,
            "number" => Kind::Number,
            "string" => Kind::String,
            "boolean" => Kind::Bool,
            "null" => Kind::Null,
            "object" => Kind::Object,
            "array" => Kind::Array,
            _ => Kind::Any,
        }))
    }

    /// `anyOf`/`oneOf`: the union of the parts; listed values stay listed when
    /// every part lists its values or is `null`.
    fn union(parts: &Value, definitions: &Map<String, Value>, depth: usize) -> Domain {
        let Some(parts) = parts.as_array() else {
            return Domain::any();
        };
        let parts: Vec<Domain> = parts
            .iter()
            .map(|part| Domain::of_schema(part, definitions, depth + 1))
            .collect();
        if parts.iter().any(Domain::is_any) {
            return Domain::any();
        }
        let kinds: BTreeSet<Kind> = parts.iter().flat_map(|p| p.kinds.iter().copied()).collect();
        let only_null = |p: &Domain| p.kinds.len() == 1 && p.kinds.contains(&Kind::Null);
        let listed = parts.iter().any(|p| p.values.is_some())
            && parts.iter().all(|p| p.values.is_some() || only_null(p));
        let values = listed.then(|| {
            parts
                .iter()
                .filter_map(|p| p.values.clone())
                .flatten()
                .collect()
        });
        Domain {
            kinds,
            values,
            minimum: None,
        }
    }

    /// An `enum` or `const`: exactly these values; their kinds, less `null`.
    fn listed(values: Vec<Value>) -> Domain {
        let kinds = values
            .iter()
            .filter_map(|value| match value {
                Value::Null => None,
                Value::Bool(_) => Some(Kind::Bool),
                Value::Number(n) if n.is_f64() => Some(Kind::Number),
                Value::Number(_) => Some(Kind::Int),
                // The reference files lists and objects under strings too.
                _ => Some(Kind::String),
            })
            .collect();
        Domain {
            kinds,
            values: Some(values),
            minimum: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_become_domains() {
        let model = json!({
            "required": ["n", "maybe", "sev", "opt_sev", "lit", "free", "loop", "many"],
            "properties": {
                "n": {"type": "integer"},
                "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "sev": {"$ref": "#/$defs/Sev"},
                "opt_sev": {"anyOf": [{"$ref": "#/$defs/Sev"}, {"type": "null"}]},
                "lit": {"enum": ["high", "low"], "type": "string"},
                "free": {},
                "loop": {"$ref": "#/$defs/Loop"},
                "many": {"type": ["string", "null"]},
            },
            "$defs": {"Sev": {"enum": ["high", "low"]}, "Loop": {"$ref": "#/$defs/Loop"}},
        });
        let of = |name| Domain::of_field(Some(&model), name);
        assert_eq!(of("n"), Domain::of_kinds([Kind::Int]));
        assert_eq!(of("maybe"), Domain::of_kinds([Kind::Int, Kind::Null]));
        assert_eq!(of("sev").values, Some(vec![json!("high"), json!("low")]));
        let optional = of("opt_sev");
        assert_eq!(optional.values, Some(vec![json!("high"), json!("low")]));
        assert!(optional.kinds.contains(&Kind::Null));
        assert_eq!(of("lit").kinds, BTreeSet::from([Kind::String]));
        assert!(of("free").is_any());
        assert!(of("loop").is_any());
        assert!(of("absent").is_any());
        assert_eq!(of("many"), Domain::of_kinds([Kind::String, Kind::Null]));
        assert!(Domain::of_field(None, "x").is_any());
        let optional = json!({"properties": {"n": {"type": "integer"}, "d": {"type": "integer", "default": 0}}});
        assert_eq!(
            Domain::of_field(Some(&optional), "n"),
            Domain::of_kinds([Kind::Int, Kind::Null])
        );
        assert_eq!(
            Domain::of_field(Some(&optional), "d"),
            Domain::of_kinds([Kind::Int])
        );
    }
}
