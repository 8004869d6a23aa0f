//! `contract.json`: all that a supervisor knows of its workflow (`docs/reference/files.md`):
//! the workflow's name, the graph's checksum, each state that has a routine with
//! the events it emits, and each event's payload schema.
//!
//! `stateous init supervisor` writes it from a graph document; `supervise` reads it,
//! compares the checksum with `GET /health`, and checks each routine's outcome
//! against it before anything is reported.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The contract's file name, in the supervisor's folder.
pub const CONTRACT_FILE: &str = "contract.json";

/// A state as the contract holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateContract {
    /// The events the state may emit, in the graph's order.
    pub emits: Vec<String>,
}

/// An event as the contract holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventContract {
    /// The JSON Schema of its payload; `None` for an event without a payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// The contract of one graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    /// The main workflow's name.
    pub workflow: String,
    /// The graph's checksum, `sha256:...`, as `GET /health` gives it.
    pub checksum: String,
    /// The states with a routine, by the name a claim uses: `S`, or `W/S` for a
    /// child workflow's state. Parallel states have no routine, so none here.
    pub states: BTreeMap<String, StateContract>,
    /// The events, by name; a child workflow's event is `W/E`.
    pub events: BTreeMap<String, EventContract>,
}

/// Why a contract cannot be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ContractError(pub String);

impl Contract {
    /// The contract of a graph document (format 1), with its checksum.
    pub fn from_graph(document: &Value, checksum: &str) -> Result<Contract, ContractError> {
        let bad = |why: &str| ContractError(format!("the graph is not valid: {why}"));
        let workflow = document
            .get("workflow")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("it has no 'workflow' name"))?;
        let schemas = document.get("schemas").and_then(Value::as_object);
        let mut contract = Contract {
            workflow: workflow.to_string(),
            checksum: checksum.to_string(),
            states: BTreeMap::new(),
            events: BTreeMap::new(),
        };
        contract.add_body(None, document, schemas)?;
        if let Some(children) = document.get("workflows").and_then(Value::as_object) {
            for (name, body) in children {
                contract.add_body(Some(name), body, schemas)?;
            }
        }
        Ok(contract)
    }

    fn add_body(
        &mut self,
        child: Option<&str>,
        body: &Value,
        schemas: Option<&Map<String, Value>>,
    ) -> Result<(), ContractError> {
        let qualified = |name: &str| match child {
            Some(workflow) => format!("{workflow}/{name}"),
            None => name.to_string(),
        };
        let where_ = child.unwrap_or("the main workflow");
        let states = body
            .get("states")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                ContractError(format!("the graph is not valid: {where_} has no 'states'"))
            })?;
        for (name, spec) in states {
            if spec.get("parallel").is_some() {
                continue;
            }
            let emits = spec
                .get("emits")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            self.states.insert(qualified(name), StateContract { emits });
        }
        let events = body.get("events").and_then(Value::as_object);
        for (name, spec) in events.into_iter().flatten() {
            let payload = match spec.get("payload").and_then(Value::as_str) {
                None => None,
                Some(model) => {
                    Some(schemas.and_then(|s| s.get(model)).cloned().ok_or_else(|| {
                        ContractError(format!(
                            "the graph is not valid: the payload model '{model}' of '{name}' \
                             is not in 'schemas'"
                        ))
                    })?)
                }
            };
            self.events
                .insert(qualified(name), EventContract { payload });
        }
        Ok(())
    }

    /// Read `contract.json` at `path`.
    pub fn load(path: &Path) -> Result<Contract, ContractError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ContractError(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| ContractError(format!("{} is not a contract: {e}", path.display())))
    }

    /// The contract as the file holds it: pretty JSON with a final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The event `event` of the workflow that `state` belongs to: `W/E` for a
    /// child's state `W/S`.
    fn event_key(state: &str, event: &str) -> String {
        match state.split_once('/') {
            Some((workflow, _)) => format!("{workflow}/{event}"),
            None => event.to_string(),
        }
    }

    /// The events `state` may emit, with their payloads, as one JSON Schema: one
    /// `oneOf` branch per event (as the reference's `outcome_schema`). An error
    /// when the state emits nothing.
    pub fn outcome_schema(&self, state: &str) -> Result<Value, ContractError> {
        let spec = self.state(state)?;
        if spec.emits.is_empty() {
            return Err(ContractError(format!(
                "'{state}' emits no event, so no outcome schema fits it"
            )));
        }
        let branches: Vec<Value> = spec
            .emits
            .iter()
            .map(|event| {
                let mut properties = json!({"event": {"const": event}});
                let mut required = vec![json!("event")];
                if let Some(schema) = self.payload_schema(state, event) {
                    properties["payload"] = schema.clone();
                    required.push(json!("payload"));
                }
                json!({"type": "object", "properties": properties,
                       "required": required, "additionalProperties": false})
            })
            .collect();
        Ok(json!({ "oneOf": branches }))
    }

    fn state(&self, state: &str) -> Result<&StateContract, ContractError> {
        self.states
            .get(state)
            .ok_or_else(|| ContractError(format!("the contract has no state '{state}'")))
    }

    /// The payload schema of `event` as emitted in `state`, if it has one.
    pub fn payload_schema(&self, state: &str, event: &str) -> Option<&Value> {
        self.events
            .get(&Contract::event_key(state, event))
            .and_then(|e| e.payload.as_ref())
    }

    /// Whether `state` may emit `event` with `payload`; the error is the sentence
    /// that goes into the failed attempt's reason.
    pub fn check_emit(
        &self,
        state: &str,
        event: &str,
        payload: Option<&Value>,
    ) -> Result<(), ContractError> {
        let spec = self.state(state)?;
        if !spec.emits.iter().any(|e| e == event) {
            let allowed = if spec.emits.is_empty() {
                "nothing".to_string()
            } else {
                spec.emits.join(", ")
            };
            return Err(ContractError(format!(
                "the routine emitted '{event}', which '{state}' may not emit (allowed: {allowed})"
            )));
        }
        self.check_payload(state, event, payload)
    }

    /// Whether `payload` fits the payload schema of `event` (of `state`'s workflow):
    /// none for an event without one, a valid one for an event with one.
    pub fn check_payload(
        &self,
        state: &str,
        event: &str,
        payload: Option<&Value>,
    ) -> Result<(), ContractError> {
        match (self.payload_schema(state, event), payload) {
            (None, None) | (None, Some(Value::Null)) => Ok(()),
            (None, Some(_)) => Err(ContractError(format!(
                "'{event}' has no payload, but the routine gave one"
            ))),
            (Some(_), None) | (Some(_), Some(Value::Null)) => Err(ContractError(format!(
                "'{event}' needs a payload; see `stateous ctx outcome-schema`"
            ))),
            (Some(schema), Some(payload)) => check_schema(schema, payload).map_err(|why| {
                ContractError(format!("the payload of '{event}' is not valid: {why}"))
            }),
        }
    }
}

/// `instance` against `schema`; the error names the first problems, on one line.
fn check_schema(schema: &Value, instance: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
    let problems: Vec<String> = validator
        .iter_errors(instance)
        .take(3)
        .map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sdlc() -> Value {
        json!({
            "stateous": 1, "workflow": "sdlc", "context": "Ticket",
            "states": {"coding": {"emits": ["done", "stuck"]},
                       "testing": {"emits": ["passed", "failed"]},
                       "reviews": {"parallel": ["sec"], "join": "all", "emits": []}},
            "events": {"done": {}, "stuck": {}, "passed": {"payload": "Tests"},
                       "failed": {"payload": "Tests"}},
            "transitions": [],
            "schemas": {"Tests": {"type": "object",
                "properties": {"passed": {"type": "integer"}, "failed": {"type": "integer"}},
                "required": ["passed", "failed"]}},
            "workflows": {"sec": {"states": {"triage": {"emits": ["ok"]}},
                                  "events": {"ok": {}}, "transitions": []}}
        })
    }

    #[test]
    fn states_events_and_payloads_come_from_the_graph() {
        let contract = Contract::from_graph(&sdlc(), "sha256:ab").unwrap();
        let states: Vec<&str> = contract.states.keys().map(String::as_str).collect();
        assert_eq!(states, ["coding", "sec/triage", "testing"]);
        assert_eq!(contract.states["testing"].emits, ["passed", "failed"]);
        assert!(contract.payload_schema("testing", "passed").is_some());
        assert!(contract.payload_schema("coding", "done").is_none());
        assert!(contract.events.contains_key("sec/ok"));
        let again: Contract = serde_json::from_str(&contract.to_text()).unwrap();
        assert_eq!(again, contract);
    }

    #[test]
    fn emits_are_checked_against_state_and_payload_schema() {
        let contract = Contract::from_graph(&sdlc(), "sha256:ab").unwrap();
        let good = json!({"passed": 3, "failed": 0});
        assert!(contract
            .check_emit("testing", "passed", Some(&good))
            .is_ok());
        assert!(contract.check_emit("coding", "done", None).is_ok());
        assert!(contract.check_emit("sec/triage", "ok", None).is_ok());
        let err = contract.check_emit("testing", "done", None).unwrap_err();
        assert_eq!(
            err.0,
            "the routine emitted 'done', which 'testing' may not emit (allowed: passed, failed)"
        );
        let err = contract
            .check_emit("testing", "passed", Some(&json!({"passed": "x"})))
            .unwrap_err();
        assert!(
            err.0.starts_with("the payload of 'passed' is not valid"),
            "{err}"
        );
        assert!(contract.check_emit("testing", "passed", None).is_err());
        assert!(contract
            .check_emit("coding", "done", Some(&json!({"a": 1})))
            .is_err());
    }

    #[test]
    fn the_outcome_schema_has_one_branch_per_event() {
        let contract = Contract::from_graph(&sdlc(), "sha256:ab").unwrap();
        let schema = contract.outcome_schema("testing").unwrap();
        let branches = schema["oneOf"].as_array().unwrap();
        assert_eq!(branches.len(), 2);
        assert_eq!(branches[0]["properties"]["event"]["const"], "passed");
        assert_eq!(branches[0]["required"], json!(["event", "payload"]));
        let done = &contract.outcome_schema("coding").unwrap()["oneOf"][0];
        assert_eq!(done["required"], json!(["event"]));
    }
}
