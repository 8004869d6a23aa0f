//! The workflow as a Mermaid state diagram, for `stateous token show --graph`
//! (`docs/reference/cli.md`): the same lines as the reference's diagram.
//!
//! A pure function of the graph document. START and END are Mermaid's `[*]`; each
//! edge is labelled with its event (Stateous's own in parentheses) and its guard or
//! `[otherwise]`; a parallel state is a composite state with a region per child
//! workflow. A token's state can be lit, or drawn as finished.

use serde_json::{Map, Value};

use crate::graph::{END, ERROR, JOINED, START, TIMEOUT};

/// The diagram of `document`. `current`: the state to light; `finished`: the token
/// has ended, so `current` is the state it ended from and is drawn as finished.
pub fn mermaid(document: &Value, current: Option<&str>, finished: bool) -> String {
    let mut lines = vec!["stateDiagram-v2".to_owned(), "    direction LR".to_owned()];
    let empty = Map::new();
    let children = document
        .get("workflows")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    draw(document, children, "", 1, &mut lines);
    if let Some(state) = current {
        let (class, style) = if finished {
            ("finished", "fill:#e5e7eb,stroke:#4b5563,stroke-width:2px")
        } else {
            ("current", "fill:#fde68a,stroke:#b45309,stroke-width:2px")
        };
        lines.push(format!("    classDef {class} {style}"));
        lines.push(format!("    class {} {class}", state_id(state)));
    }
    lines.join("\n") + "\n"
}

/// A state or workflow name as a Mermaid id: `-` becomes `_`.
pub fn state_id(name: &str) -> String {
    name.replace('-', "_")
}

/// One workflow's states and transitions, at `depth` levels of indentation.
fn draw(
    body: &Value,
    children: &Map<String, Value>,
    prefix: &str,
    depth: usize,
    lines: &mut Vec<String>,
) {
    let pad = "    ".repeat(depth);
    let empty = Map::new();
    let states = body
        .get("states")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, spec) in states {
        let sid = format!("{prefix}{}", state_id(name));
        match spec.get("parallel").and_then(Value::as_array) {
            Some(parallel) => {
                lines.push(format!("{pad}state {}{{", declared(&sid, name)));
                for (i, workflow) in parallel.iter().filter_map(Value::as_str).enumerate() {
                    if i > 0 {
                        lines.push(format!("{pad}    --"));
                    }
                    let region = format!("{sid}__{}", state_id(workflow));
                    lines.push(format!("{pad}    state {}{{", declared(&region, workflow)));
                    if let Some(child) = children.get(workflow) {
                        draw(child, children, &format!("{region}__"), depth + 2, lines);
                    }
                    lines.push(format!("{pad}    }}"));
                }
                lines.push(format!("{pad}}}"));
            }
            None if sid != *name => lines.push(format!("{pad}state \"{name}\" as {sid}")),
            None => {}
        }
    }
    let transitions = body.get("transitions").and_then(Value::as_array);
    for edge in transitions.into_iter().flatten() {
        let text = |key: &str| edge.get(key).and_then(Value::as_str);
        let point = |name: Option<&str>| match name {
            Some(n) if n != START && n != END => format!("{prefix}{}", state_id(n)),
            _ => "[*]".to_owned(),
        };
        let mut label = match text("on") {
            Some(TIMEOUT) => "(timeout)".to_owned(),
            Some(ERROR) => "(error)".to_owned(),
            Some(JOINED) => "(joined)".to_owned(),
            Some(event) => event.to_owned(),
            None => String::new(),
        };
        match text("when").filter(|w| !w.is_empty()) {
            Some(when) => label.push_str(&format!(" [{when}]")),
            None if edge.get("otherwise") == Some(&Value::Bool(true)) => {
                label.push_str(" [otherwise]")
            }
            None => {}
        }
        let label = label.trim();
        let suffix = if label.is_empty() {
            String::new()
        } else {
            format!(": {label}")
        };
        lines.push(format!(
            "{pad}{} --> {}{suffix}",
            point(text("from")),
            point(text("to"))
        ));
    }
}

/// How a composite state or region is declared: its id, with its name as a label
/// when they differ; it ends with a space, before `{`.
fn declared(sid: &str, name: &str) -> String {
    if sid == name {
        format!("{sid} ")
    } else {
        format!("\"{name}\" as {sid} ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(path: &str) -> Value {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets");
        serde_json::from_str(&std::fs::read_to_string(root.join(path)).unwrap()).unwrap()
    }

    #[test]
    fn sdlc_is_drawn_with_events_and_guards() {
        let text = mermaid(&asset("sdlc/build/sdlc.json"), Some("testing"), false);
        assert_eq!(
            text,
            "stateDiagram-v2\n    direction LR\n    [*] --> coding\n    coding --> testing: done\n    \
             coding --> [*]: stuck\n    testing --> [*]: passed\n    testing --> coding: failed \
             [count('failed') < 3]\n    testing --> [*]: failed [otherwise]\n    classDef current \
             fill:#fde68a,stroke:#b45309,stroke-width:2px\n    class testing current\n"
        );
    }

    #[test]
    fn parallel_states_hold_regions() {
        let doc = serde_json::json!({
            "states": {"fan-out": {"parallel": ["a-b", "c"], "join": "all"}},
            "transitions": [{"from": "__start__", "to": "fan-out"}, {"from": "fan-out", "to": "__end__", "on": "joined"}],
            "workflows": {
                "a-b": {"states": {"x": {"emits": []}}, "transitions": [{"from": "__start__", "to": "x"}]},
                "c": {"states": {}, "transitions": []}
            }
        });
        let text = mermaid(&doc, Some("fan-out"), true);
        let expected = "stateDiagram-v2\n    direction LR\n    state \"fan-out\" as fan_out {\n        \
            state \"a-b\" as fan_out__a_b {\n            state \"x\" as fan_out__a_b__x\n            \
            [*] --> fan_out__a_b__x\n        }\n        --\n        state \"c\" as fan_out__c {\n        }\n    \
            }\n    [*] --> fan_out\n    fan_out --> [*]: (joined)\n    classDef finished \
            fill:#e5e7eb,stroke:#4b5563,stroke-width:2px\n    class fan_out finished\n";
        assert_eq!(text, expected);
    }
}
