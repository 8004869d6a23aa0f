//! The routes of usage and budgets, additions of ours (routed by
//! [`super::routes::TABLE`]; `docs/concepts/budgets.md`): a usage report, a
//! token's budget, and the workflows' default budgets.

use hyper::http::request::Parts;
use stateous_shared::refusal::{Code, Refusal};

use super::access::Caller;
use super::routes::Route;
use super::{body, json, known_task, Answer, Api};
use crate::validated::budgets::{DefaultBudgetInput, TokenBudgetInput, UsageInput};
use crate::validated::Supervisor;

impl Api {
    /// Answer one route of usage and budgets.
    pub(super) async fn budgets(
        &self,
        route: Route,
        parts: &Parts,
        raw: &[u8],
        caller: &Caller,
    ) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Usage(task) => {
                let task = known_task(task)?;
                let key = parts
                    .headers
                    .get("idempotency-key")
                    .map(|value| value.as_bytes());
                let mut input = UsageInput::parse(task, &body::json_object(raw)?, key)?;
                // A supervise key reports only under its own name: the usage of an
                // attempt that is over counts, whoever claims the task now.
                if let Some(bound) = caller.bound() {
                    match &input.supervisor {
                        Some(named) => caller.may_act_for(named.as_str())?,
                        None => input.supervisor = Some(Supervisor::new(bound.to_string())?),
                    }
                }
                Ok(json(200, &control.report_usage(input).await?))
            }
            Route::TokenBudget(token) => {
                let input = TokenBudgetInput::parse(token, &body::json_object(raw)?)?;
                Ok(json(200, &control.set_token_budget(input).await?))
            }
            Route::Budgets => Ok(json(200, &control.default_budgets().await?)),
            Route::BudgetSet(workflow) => {
                let input = DefaultBudgetInput::parse(workflow, &body::json_object(raw)?)?;
                Ok(json(200, &control.set_default_budget(input).await?))
            }
            Route::BudgetRemove(workflow) => {
                let removed = control.remove_default_budget(workflow).await?;
                Ok(json(200, &serde_json::json!({ "removed": removed })))
            }
            _ => Err(Refusal::new(
                Code::Unexpected,
                "the request reached no handler",
            )),
        }
    }
}
