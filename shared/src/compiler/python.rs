//! The names that must work as Python names: the reference's `stateous init
//! supervisor` writes a `contract.py` from any graph file, and its `compile` refuses
//! a workflow whose contract could not be written, so we refuse the same names.
//! Our graph files stay usable by its supervisor.

use std::collections::BTreeSet;

use serde_json::Value;

use super::declare::{Declared, Flow};
use crate::guards::PYTHON_KEYWORDS as KEYWORDS;
use crate::wire::Object;

/// Names that `contract.py` uses itself; no model may take one.
const TAKEN: [&str; 10] = [
    "Any",
    "BaseModel",
    "Context",
    "Field",
    "Literal",
    "Never",
    "Occurrence",
    "StateRef",
    "events",
    "states",
];

/// Whether `name` is a Python identifier that is not a keyword.
fn is_python_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic());
    first && chars.all(|c| c == '_' || c.is_alphanumeric()) && !KEYWORDS.contains(&name)
}

/// A workflow, state or event name as `contract.py` writes it: `-` becomes `_`.
fn identifier(name: &str) -> String {
    name.replace('-', "_")
}

/// Every problem with the names `contract.py` would be written with.
pub(crate) fn problems(declared: &Declared, children: &[&Flow]) -> Vec<String> {
    let mut problems = Vec::new();
    let flows: Vec<&Flow> = std::iter::once(&declared.main)
        .chain(children.iter().copied())
        .collect();
    for flow in &flows {
        problems.extend(words("event", flow.events.iter().map(|e| e.name.as_str())));
        problems.extend(words("state", flow.states.iter().map(|s| s.name.as_str())));
    }
    problems.extend(words(
        "child workflow",
        children.iter().map(|c| c.name.as_str()),
    ));
    problems.extend(namespaces(declared, children));
    problems.extend(models(&declared.schemas, &flows));
    problems
}

/// Each name becomes its own Python name, and no keyword.
fn words<'a>(what: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    let mut problems = Vec::new();
    for name in names {
        // A name that is not a name at all was said so as it was declared.
        if super::declare::name_problem(what, name).is_some() {
            continue;
        }
        let word = identifier(name);
        if !is_python_name(&word) {
            problems.push(format!(
                "the {what} '{name}' cannot be a Python name in contract.py; rename it"
            ));
        } else if let Some((_, first)) = seen.iter().find(|(w, _)| *w == word) {
            problems.push(format!(
                "the {what}s '{first}' and '{name}' are both '{word}' in Python; rename one"
            ));
        }
        seen.push((word, name));
    }
    problems
}

/// Each child workflow is a class beside the main workflow's events and task states.
fn namespaces(declared: &Declared, children: &[&Flow]) -> Vec<String> {
    let main = &declared.main;
    let taken: Vec<&str> = main
        .events
        .iter()
        .map(|e| e.name.as_str())
        .chain(
            main.states
                .iter()
                .filter(|s| s.parallel.is_empty())
                .map(|s| s.name.as_str()),
        )
        .collect();
    let mut problems = Vec::new();
    for child in children {
        let word = identifier(&child.name);
        if let Some(other) = taken.iter().find(|t| identifier(t) == word) {
            problems.push(format!(
                "the child workflow '{}' and '{other}' of workflow '{}' are both '{word}' in \
                 Python; rename one",
                child.name, main.name
            ));
        }
    }
    problems
}

/// Model names, their field names, and models that refer to themselves.
fn models(schemas: &Object, flows: &[&Flow]) -> Vec<String> {
    let mut problems = Vec::new();
    let contexts: BTreeSet<&str> = flows.iter().filter_map(|f| f.context.as_deref()).collect();
    for (name, schema) in schemas {
        if !is_python_name(name) {
            problems.push(format!(
                "the schema name '{name}' cannot be a Python name in contract.py; rename it"
            ));
        } else if TAKEN.contains(&name.as_str()) {
            problems.push(format!(
                "a schema is named '{name}', which contract.py uses itself; rename the schema"
            ));
        }
        if let Some(context) = name
            .strip_suffix("Context")
            .filter(|c| contexts.contains(c))
        {
            problems.push(format!(
                "a schema is named '{name}', which contract.py uses for the context of \
                 {context}; rename the schema"
            ));
        }
        let is_enum = schema.get("enum").is_some() || schema.get("const").is_some();
        let properties = schema.get("properties").and_then(Value::as_object);
        for field in properties
            .into_iter()
            .flatten()
            .map(|(f, _)| f)
            .filter(|_| !is_enum)
        {
            if !is_python_name(field) {
                problems.push(format!(
                    "the field '{field}' of {name} cannot be a Python name in contract.py"
                ));
            }
        }
    }
    problems.extend(self_references(schemas));
    problems
}

/// The models that refer to themselves, directly or through others.
fn self_references(schemas: &Object) -> Vec<String> {
    fn refs(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    match (key.as_str(), item) {
                        ("$ref", Value::String(r)) => {
                            out.insert(r.rsplit('/').next().unwrap_or(r).to_owned());
                        }
                        _ => refs(item, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| refs(i, out)),
            _ => {}
        }
    }
    let mut problems = Vec::new();
    for name in schemas.keys() {
        // Walk what `name` reaches; reaching `name` again is a cycle through it.
        let mut seen = BTreeSet::new();
        let mut frontier = vec![name.clone()];
        while let Some(current) = frontier.pop() {
            let mut found = BTreeSet::new();
            if let Some(schema) = schemas.get(&current) {
                refs(schema, &mut found);
            }
            for next in found {
                if seen.insert(next.clone()) {
                    frontier.push(next);
                }
            }
        }
        if seen.contains(name) {
            problems.push(format!(
                "the schema '{name}' refers to itself; that is not supported"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_names() {
        assert!(is_python_name("coding") && is_python_name("Ticket") && is_python_name("a_b"));
        assert!(!is_python_name("class") && !is_python_name("None") && !is_python_name("1a"));
        assert!(!is_python_name("a-b") && !is_python_name(""));
    }
}
