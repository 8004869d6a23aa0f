//! The bodies of usage and budgets (`docs/reference/http.md`, "Usage and budgets"):
//! `POST /tasks/{id}/usage`, `PUT /tokens/{id}/budget`, `PUT /budgets/{workflow}`,
//! and the `budget` of `POST /tokens`. These routes are ours, so a key they do not
//! take is refused (422 `invalid_body`) rather than read as absent. A usage name
//! or amount, or a budget, that is not a map of names to finite numbers from 0 is
//! 422 `invalid_argument` with its sentence.

use serde_json::Value;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

use super::{attempt, refuse};
use crate::api::fields::Fields;
use crate::validated::budgets::{
    BudgetChanges, DefaultBudgetInput, TokenBudgetInput, UsageAmounts, UsageInput,
};
use crate::validated::{Key, Supervisor};

/// The keys of a `POST /tasks/{id}/usage` body.
pub const USAGE_FIELDS: &[&str] = &["usage", "attempt", "supervisor"];

/// `invalid_body` naming the first key of `body` that is not among `fields`.
fn only(body: &Object, fields: &[&str], what: &str) -> Result<(), Refusal> {
    match body.keys().find(|key| !fields.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(refuse(
            Code::InvalidBody,
            format!(
                "{what} takes no field '{key}'; its fields are {}",
                fields.join(", ")
            ),
        )),
    }
}

/// A map of usage names to amounts, or `invalid_argument`.
fn map<'b>(value: Option<&'b Value>, what: &str) -> Result<&'b Object, Refusal> {
    match value {
        Some(Value::Object(object)) => Ok(object),
        _ => Err(refuse(
            Code::InvalidArgument,
            format!(
                "'{what}' must be a JSON object of usage names and amounts, such as \
                 {{\"cost_usd\": 5}}"
            ),
        )),
    }
}

impl UsageInput {
    /// What an attempt of `task` spent: `usage` (each name and amount checked;
    /// `invalid_argument`), `attempt` (`invalid_argument`), `supervisor`
    /// (`invalid_argument`), then the idempotency key (`invalid_payload`).
    pub fn parse(task: i64, body: &Object, key: Option<&[u8]>) -> Result<UsageInput, Refusal> {
        only(body, USAGE_FIELDS, "a usage report")?;
        let usage = UsageAmounts::new(map(body.get("usage"), "usage")?.clone(), "usage", false)?;
        let attempt = attempt(body.get("attempt"))?;
        let supervisor = match body.get("supervisor") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(Supervisor::new(name.clone())?),
            Some(_) => return Err(Supervisor::wrong()),
        };
        let key = key.map(Key::from_bytes).transpose()?;
        Ok(UsageInput {
            task,
            attempt,
            supervisor,
            usage,
            key,
        })
    }
}

/// The `budget` of a `POST /tokens` body: absent or null for none; else a map
/// of usage names to amounts, which may be empty (no budget, not even the
/// workflow's default).
pub fn start_budget(body: &impl Fields) -> Result<Option<UsageAmounts>, Refusal> {
    match body.field("budget") {
        None | Some(Value::Null) => Ok(None),
        value => UsageAmounts::new(map(value, "budget")?.clone(), "budget", true).map(Some),
    }
}

impl TokenBudgetInput {
    /// `{"budget": {NAME: NUMBER or null}}` for `token`.
    pub fn parse(token: String, body: &Object) -> Result<TokenBudgetInput, Refusal> {
        only(body, &["budget"], "a token's budget")?;
        let changes = BudgetChanges::new(map(body.get("budget"), "budget")?)?;
        Ok(TokenBudgetInput { token, changes })
    }
}

impl DefaultBudgetInput {
    /// `{"budget": {NAME: NUMBER}}` for `workflow`; an empty budget is refused
    /// (`DELETE /budgets/{workflow}` removes one).
    pub fn parse(workflow: String, body: &Object) -> Result<DefaultBudgetInput, Refusal> {
        only(body, &["budget"], "a default budget")?;
        let budget =
            UsageAmounts::new(map(body.get("budget"), "budget")?.clone(), "budget", false)?;
        Ok(DefaultBudgetInput { workflow, budget })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Object {
        value.as_object().cloned().unwrap()
    }

    fn code<T: std::fmt::Debug>(result: Result<T, Refusal>) -> Code {
        result.unwrap_err().code
    }

    #[test]
    fn a_usage_report_is_checked_name_by_name() {
        let ok = object(json!({"usage": {"cost_usd": 0.12, "input_tokens": 1200},
                               "attempt": 2, "supervisor": "box-1"}));
        let input = UsageInput::parse(7, &ok, Some(b"k-1")).unwrap();
        assert_eq!(input.attempt, Some(2));
        assert_eq!(input.usage.amounts()["input_tokens"], 1200.0);
        assert_eq!(input.usage.given()["input_tokens"], json!(1200));
        for bad in [
            json!({}),
            json!({"usage": {}}),
            json!({"usage": []}),
            json!({"usage": {"Cost": 1}}),
            json!({"usage": {"cost_usd": -1}}),
            json!({"usage": {"cost_usd": "1"}}),
            json!({"usage": {"cost_usd": null}}),
            json!({"usage": {"cost_usd": 2e15}}),
            json!({"usage": {"cost_usd": 1}, "attempt": 0}),
            json!({"usage": {"cost_usd": 1}, "supervisor": ""}),
        ] {
            let body = object(bad.clone());
            assert_eq!(
                code(UsageInput::parse(7, &body, None)),
                Code::InvalidArgument,
                "{bad}"
            );
        }
        let extra = object(json!({"usage": {"cost_usd": 1}, "cost": 1}));
        assert_eq!(code(UsageInput::parse(7, &extra, None)), Code::InvalidBody);
    }

    #[test]
    fn budgets_are_maps_of_numbers() {
        assert_eq!(start_budget(&object(json!({"token": "T"}))).unwrap(), None);
        let empty = object(json!({"budget": {}}));
        assert!(start_budget(&empty).unwrap().is_some());
        let five = object(json!({"budget": 5}));
        assert_eq!(code(start_budget(&five)), Code::InvalidArgument);
        let changes = object(json!({"budget": {"cost_usd": 8, "n": null}}));
        let input = TokenBudgetInput::parse("T-1".into(), &changes).unwrap();
        assert_eq!(input.changes.changes()["n"], None);
        let empty = object(json!({"budget": {}}));
        assert_eq!(
            code(TokenBudgetInput::parse("T-1".into(), &empty)),
            Code::InvalidArgument
        );
        let null = object(json!({"budget": {"cost_usd": null}}));
        assert_eq!(
            code(DefaultBudgetInput::parse("sdlc".into(), &null)),
            Code::InvalidArgument
        );
        let nan = object(json!({"budget": {"cost_usd": "NaN"}}));
        assert_eq!(
            code(DefaultBudgetInput::parse("sdlc".into(), &nan)),
            Code::InvalidArgument
        );
    }
}
