//! The models of a graph document as compiled JSON Schema validators (Draft 2020-12),
//! built once when the graph loads, so that no request compiles a schema.
//!
//! A model `NAME` is checked as `{"$ref": "#/schemas/NAME", "schemas": {...}}`, so a
//! model's own `$ref`s to `#/schemas/OTHER` resolve against the document's schemas.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};

use crate::pyrepr::{repr_json, repr_str};
use crate::wire::Object;

/// The validators of the models a graph document names, by model name.
#[derive(Default)]
pub(crate) struct Models {
    validators: BTreeMap<String, jsonschema::Validator>,
}

impl fmt::Debug for Models {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.validators.keys()).finish()
    }
}

impl Models {
    /// Compile the validator of model `name` unless it is compiled already. The error
    /// is one sentence: the model is missing, or it is not valid JSON Schema.
    pub(crate) fn add(&mut self, name: &str, schemas: &Object) -> Result<(), String> {
        if self.validators.contains_key(name) {
            return Ok(());
        }
        let validator = compile(name, schemas)?;
        self.validators.insert(name.to_owned(), validator);
        Ok(())
    }

    /// The problems of `value` against model `name`, one sentence each:
    /// `<dotted path, or the model's name>: <message>`.
    pub(crate) fn errors(&self, name: &str, value: &Value) -> Vec<String> {
        let Some(validator) = self.validators.get(name) else {
            return vec![format!("{name}: the graph has no such model")];
        };
        validator
            .iter_errors(value)
            .map(|error| {
                let path = dotted(error.instance_path.as_str());
                let at = if path.is_empty() { name } else { &path };
                format!("{at}: {}", message(&error))
            })
            .collect()
    }
}

/// An error's message as the reference's validator (Python `jsonschema`) words the
/// common kinds, with values quoted as Python's `repr` quotes them: these messages
/// end up in ledger reasons (`event_dropped`, `event_rejected`), which must read the
/// same. Other kinds keep the Rust validator's words.
fn message(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind};
    match &error.kind {
        ValidationErrorKind::Required { property } => {
            format!("{} is a required property", repr_json(property))
        }
        ValidationErrorKind::Type { kind } => {
            let types: Vec<String> = match kind {
                TypeKind::Single(one) => vec![repr_str(&one.to_string())],
                TypeKind::Multiple(set) => set.iter().map(|t| repr_str(&t.to_string())).collect(),
            };
            format!(
                "{} is not of type {}",
                repr_json(&error.instance),
                types.join(", ")
            )
        }
        _ => error.to_string(),
    }
}

/// The validator of model `name`, against the document's `schemas`.
pub(crate) fn compile(name: &str, schemas: &Object) -> Result<jsonschema::Validator, String> {
    if !schemas.contains_key(name) {
        return Err(format!("the model '{name}' is not in 'schemas'"));
    }
    let root = json!({"$ref": format!("#/schemas/{name}"), "schemas": schemas});
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(&root)
        .map_err(|error| {
            format!(
                "the model '{name}' is not valid JSON Schema: {}",
                unbuilt(&error)
            )
        })
}

/// Why the validator of model `name` could not be built. The validator's own
/// words for a type it does not know ("Unexpected type") name neither the keyword
/// nor the value, so that one says both: where in the model (`properties.repo.type`)
/// and what it holds.
fn unbuilt(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind;
    let ValidationErrorKind::Custom { message } = &error.kind else {
        return error.to_string();
    };
    // The validator walks the root of `compile`, `{"$ref": "#/schemas/NAME"}`, so its
    // path starts at that `$ref`; a model another one refers to reads as a `$ref`.
    let pointer = error.instance_path.as_str();
    let inside = pointer.strip_prefix("/$ref").unwrap_or(pointer);
    let at = if inside.is_empty() {
        "the model".to_string()
    } else {
        dotted(inside)
    };
    let value = repr_json(&error.instance);
    if message == "Unexpected type" {
        format!(
            "{at} is {value}, which is not a type \
             (array, boolean, integer, null, number, object or string)"
        )
    } else {
        format!("{at} is {value}: {message}")
    }
}

/// A JSON pointer (`/items/0/name`) as a dotted path (`items.0.name`), as the
/// reference joins `absolute_path`.
fn dotted(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|part| part.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> Object {
        serde_json::from_value(json!({
            "Item": {"type": "object", "properties": {
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"$ref": "#/schemas/Tag"}}
            }, "required": ["title"]},
            "Tag": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }))
        .unwrap()
    }

    #[test]
    fn errors_name_the_path_or_the_model() {
        let mut models = Models::default();
        models.add("Item", &schemas()).unwrap();
        assert!(models.errors("Item", &json!({"title": "x"})).is_empty());
        let missing = models.errors("Item", &json!({}));
        assert_eq!(missing.len(), 1);
        assert!(missing[0].starts_with("Item: "), "{missing:?}");
        assert!(missing[0].contains("title"), "{missing:?}");
        let nested = models.errors("Item", &json!({"title": "x", "tags": [{"name": 3}]}));
        assert_eq!(nested.len(), 1);
        assert!(nested[0].starts_with("tags.0.name: "), "{nested:?}");
    }

    #[test]
    fn required_and_type_errors_are_worded_as_the_reference_words_them() {
        let mut models = Models::default();
        models.add("Item", &schemas()).unwrap();
        assert_eq!(
            models.errors("Item", &json!({})),
            ["Item: 'title' is a required property"]
        );
        assert_eq!(
            models.errors("Item", &json!({"title": "x", "tags": [{"name": 3}]})),
            ["tags.0.name: 3 is not of type 'string'"]
        );
    }

    #[test]
    fn an_unknown_type_names_the_model_the_keywords_path_and_the_value() {
        let mut broken = schemas();
        broken.insert(
            "Ticket".into(),
            json!({"type": "object", "properties": {"repo": {"type": "strin"}}}),
        );
        assert_eq!(
            compile("Ticket", &broken).unwrap_err(),
            "the model 'Ticket' is not valid JSON Schema: properties.repo.type is 'strin', \
             which is not a type (array, boolean, integer, null, number, object or string)"
        );
    }

    #[test]
    fn a_missing_or_broken_model_is_refused_with_a_sentence() {
        let mut broken = schemas();
        broken.insert("Bad".into(), json!({"type": 12}));
        assert!(compile("Nope", &broken)
            .unwrap_err()
            .contains("not in 'schemas'"));
        assert!(compile("Bad", &broken)
            .unwrap_err()
            .contains("not valid JSON Schema"));
    }
}
