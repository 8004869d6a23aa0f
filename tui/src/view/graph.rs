//! The workflow graph as rows of text: each state with its timeout and retries,
//! then its transitions (`event ──> target`, with the guard), as the graph file
//! lists them; child workflows follow the main one. The graph view
//! (`popups::graph`) puts each state's tokens by status beside its row.

use serde_json::Value;
use stateous_shared::graph::{Graph, START};
use stateous_shared::history::named;

use crate::model::StateKey;

/// What a row of the graph is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// A workflow's title: the count columns' names go beside it.
    Title,
    /// "every state": the counts of all states; picking it clears the filter.
    Every,
    /// A state: its counts go beside it.
    State(StateKey),
    /// A transition, or a blank line.
    Other,
}

/// One row of the graph view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphRow {
    /// The text.
    pub text: String,
    /// What it is.
    pub kind: RowKind,
}

/// The rows of the graph; the state `mark` (the selected token's, in the main
/// workflow) gets a `●`.
pub fn graph_rows(graph: &Graph, mark: Option<&str>) -> Vec<GraphRow> {
    let document = &graph.document;
    let row = |text: String, kind| GraphRow { text, kind };
    let mut rows = vec![
        row(
            format!("workflow {}  {}", graph.main.name, graph.checksum),
            RowKind::Title,
        ),
        row("  every state".into(), RowKind::Every),
    ];
    rows.extend(body_rows(document, None, mark));
    if let Some(Value::Object(children)) = document.get("workflows") {
        for (name, body) in children {
            rows.push(row(String::new(), RowKind::Other));
            rows.push(row(format!("child workflow {name}"), RowKind::Title));
            rows.extend(body_rows(body, Some(name), None));
        }
    }
    rows
}

/// One workflow body: START's transitions, then each state's.
fn body_rows(body: &Value, workflow: Option<&String>, mark: Option<&str>) -> Vec<GraphRow> {
    let empty = Vec::new();
    let transitions = body["transitions"].as_array().unwrap_or(&empty);
    let mut rows = Vec::new();
    let other = |text: String| GraphRow {
        text,
        kind: RowKind::Other,
    };
    let from = |state: &str| -> Vec<&Value> {
        transitions
            .iter()
            .filter(|t| t["from"].as_str() == Some(state))
            .collect()
    };
    for t in from(START) {
        rows.push(other(format!(
            "  START ──> {}",
            named(t["to"].as_str().unwrap_or("?"))
        )));
    }
    let Some(states) = body["states"].as_object() else {
        return rows;
    };
    for (name, spec) in states {
        let here = if mark == Some(name.as_str()) {
            "● "
        } else {
            "  "
        };
        rows.push(GraphRow {
            text: format!("{here}{name}{}", settings(spec)),
            kind: RowKind::State((workflow.cloned(), name.clone())),
        });
        for t in from(name) {
            let event = t["on"].as_str().unwrap_or("?");
            let target = named(t["to"].as_str().unwrap_or("?"));
            let guard = match (t["when"].as_str(), t["otherwise"].as_bool()) {
                (Some(when), _) => format!("   when {when}"),
                (None, Some(true)) => "   otherwise".to_string(),
                _ => String::new(),
            };
            rows.push(other(format!("      {event} ──> {target}{guard}")));
        }
    }
    rows
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
