//! The calls of usage and budgets (ours; `docs/reference/http.md`, "Usage and
//! budgets"): a usage report, a token's budget, the workflows' default budgets,
//! and a start with a budget.

use stateous_shared::usage::{BudgetRequest, UsageReport};
use stateous_shared::wire::Object;

use super::Call;
use crate::routes;

impl Call {
    /// `POST /tokens` with the token's own budget (ours): `{"token", "context",
    /// "budget"}`.
    pub fn start_with_budget(token: &str, context: &Object, budget: &Object) -> Call {
        Call::start_with(token, context, Some(budget), None)
    }

    /// `POST /tasks/{id}/usage` (ours): what an attempt spent.
    pub fn usage(task: i64, report: &UsageReport) -> Call {
        Call::post(routes::of_task(task, "usage"), report)
    }

    /// `PUT /tokens/{id}/budget` (ours): set (or, null, remove) names of a token's
    /// budget.
    pub fn token_budget(token: &str, budget: &Object) -> Call {
        let body = BudgetRequest {
            budget: budget.clone(),
        };
        Call::put(routes::of_token(token, "budget"), &body)
    }

    /// `GET /budgets` (ours): the workflows' default budgets.
    pub fn budgets() -> Call {
        Call::get(routes::BUDGETS)
    }

    /// `PUT /budgets/{workflow}` (ours): a workflow's default budget, whole.
    pub fn set_budget(workflow: &str, budget: &Object) -> Call {
        let body = BudgetRequest {
            budget: budget.clone(),
        };
        Call::put(routes::budget(workflow), &body)
    }

    /// `DELETE /budgets/{workflow}` (ours): remove a workflow's default budget.
    pub fn remove_budget(workflow: &str) -> Call {
        Call::new("DELETE", routes::budget(workflow), None)
    }
}
