//! The validated input of `PUT /limits/{name}` (`docs/limits.md`): the name, the
//! states, `max`, the `per` expression and the rate, each checked by the one rule
//! of `stateous_shared::claim_limits`; a refusal is 422 `invalid_limit` with its
//! sentence. Whether each state is one of the served graph is the engine's check
//! (`engine/claim_limits.rs`).

use serde_json::Value;
use stateous_shared::claim_limits::{
    max_problem, name_problem, parse_rate, Rate, MOST_LIMIT_STATES,
};
use stateous_shared::guards::{parse_guard, Guard};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

fn refuse(sentence: impl Into<String>) -> Refusal {
    Refusal::new(Code::InvalidLimit, sentence)
}

/// A limit, whole, every field checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitInput {
    /// Its name.
    pub name: String,
    /// The states it covers, each once.
    pub states: Vec<String>,
    /// Slots at once (in each key, with `per`).
    pub max: i64,
    /// The key expression, reading only the token's context.
    pub per: Option<Guard>,
    /// The rate of claims.
    pub rate: Option<Rate>,
}

/// A limit's name, checked (422 `invalid_limit`).
pub fn limit_name(name: &str) -> Result<String, Refusal> {
    match name_problem(name) {
        Some(problem) => Err(refuse(problem)),
        None => Ok(name.to_string()),
    }
}

impl LimitInput {
    /// Read the body of `PUT /limits/{name}`: `{"states": [...], "max": N, "per":
    /// "ctx['repo']", "rate": "30 per minute"}` (`per` and `rate` may be left out
    /// or null).
    pub fn parse(name: &str, body: &Object) -> Result<LimitInput, Refusal> {
        let name = limit_name(name)?;
        for key in body.keys() {
            if !matches!(key.as_str(), "states" | "max" | "per" | "rate") {
                return Err(refuse(format!(
                    "a limit has the fields states, max, per and rate, not {key:?}"
                )));
            }
        }
        let states = match body.get("states") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|item| item.as_str().map(str::to_string))
                .collect::<Option<Vec<String>>>(),
            _ => None,
        };
        let Some(mut states) = states.filter(|s| s.len() <= MOST_LIMIT_STATES) else {
            return Err(refuse(
                "'states' is a list of 1 to 64 state names (a child workflow's state is \
                 <workflow>/<state>)",
            ));
        };
        if states.iter().any(|state| state.is_empty()) {
            return Err(refuse(
                "'states' holds an empty name; give each state's name (a child workflow's \
                 state is <workflow>/<state>)",
            ));
        }
        states.sort();
        // Named twice is most likely another state mistyped: said, not merged.
        if let Some(twice) = states.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(refuse(format!(
                "'states' names {:?} twice; name each state once",
                twice[0]
            )));
        }
        let max = match body.get("max") {
            Some(value) => value.as_i64().ok_or_else(|| {
                refuse(format!(
                    "a limit's max is a whole number from 1 to 1000000, not {value}"
                ))
            })?,
            None => return Err(refuse("a limit has a 'max': slots at once, 1 to 1000000")),
        };
        if let Some(problem) = max_problem(max) {
            return Err(refuse(problem));
        }
        let per = match body.get("per") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(per_expression(text)?),
            Some(other) => {
                return Err(refuse(format!(
                    "'per' is an expression over the token's context, such as \
                     \"ctx['repo']\", not {other}"
                )))
            }
        };
        let rate = match body.get("rate") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(parse_rate(text).map_err(refuse)?),
            Some(other) => {
                return Err(refuse(format!(
                    "'rate' is written like \"30 per minute\", not {other}"
                )))
            }
        };
        Ok(LimitInput {
            name,
            states,
            max,
            per,
            rate,
        })
    }
}

/// A `per` expression: of the guard language, reading only the token's context.
fn per_expression(text: &str) -> Result<Guard, Refusal> {
    let guard = parse_guard(text).map_err(|e| refuse(format!("'per': {e}")))?;
    let reads = &guard.reads;
    if !reads.payload_fields.is_empty() || !reads.events.is_empty() || reads.branches {
        return Err(refuse(format!(
            "'per' reads only the token's context (ctx['key']), not {:?}",
            guard.text
        )));
    }
    if reads.context_keys.is_empty() {
        return Err(refuse(format!(
            "'per' reads the token's context, as ctx['repo'] does: {:?} gives every token \
             the same key (leave 'per' out for one pool of max slots)",
            guard.text
        )));
    }
    Ok(guard)
}
