//! The workflow graph as lines of text: each state with its timeout and retries,
//! then its transitions (`event ──> target`, with the guard), as the graph file
//! lists them. Child workflows follow the main one.

use serde_json::Value;
use stateous_shared::graph::{Graph, START};
use stateous_shared::history::named;

/// The lines of the graph; the state `mark` (the selected token's) gets a `●`.
pub fn graph_lines(graph: &Graph, mark: Option<&str>) -> Vec<String> {
    let document = &graph.document;
    let mut lines = vec![format!("workflow {}  {}", graph.main.name, graph.checksum)];
    lines.extend(body_lines(document, mark));
    if let Some(Value::Object(children)) = document.get("workflows") {
        for (name, body) in children {
            lines.push(String::new());
            lines.push(format!("child workflow {name}"));
            lines.extend(body_lines(body, None));
        }
    }
    lines
}

/// One workflow body: START's transitions, then each state's.
fn body_lines(body: &Value, mark: Option<&str>) -> Vec<String> {
    let empty = Vec::new();
    let transitions = body["transitions"].as_array().unwrap_or(&empty);
    let mut lines = Vec::new();
    let from = |state: &str| -> Vec<&Value> {
        transitions
            .iter()
            .filter(|t| t["from"].as_str() == Some(state))
            .collect()
    };
    for t in from(START) {
        lines.push(format!(
            "  START ──> {}",
            named(t["to"].as_str().unwrap_or("?"))
        ));
    }
    let Some(states) = body["states"].as_object() else {
        return lines;
    };
    for (name, spec) in states {
        let here = if mark == Some(name.as_str()) {
            "● "
        } else {
            "  "
        };
        lines.push(format!("{here}{name}{}", settings(spec)));
        for t in from(name) {
            let event = t["on"].as_str().unwrap_or("?");
            let target = named(t["to"].as_str().unwrap_or("?"));
            let guard = match (t["when"].as_str(), t["otherwise"].as_bool()) {
                (Some(when), _) => format!("   when {when}"),
                (None, Some(true)) => "   otherwise".to_string(),
                _ => String::new(),
            };
            lines.push(format!("      {event} ──> {target}{guard}"));
        }
    }
    lines
}

/// ` (timeout 6h, retries 2, parallel a + b, join all)`, or nothing.
fn settings(spec: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(timeout) = spec["timeout"].as_str() {
        parts.push(format!("timeout {timeout}"));
    }
    if let Some(retries) = spec["retries"].as_u64() {
        parts.push(format!("retries {retries}"));
    }
    if let Some(children) = spec["parallel"].as_array() {
        let names: Vec<&str> = children.iter().filter_map(Value::as_str).collect();
        parts.push(format!("parallel {}", names.join(" + ")));
        if let Some(join) = spec["join"].as_str() {
            parts.push(format!("join {join}"));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
