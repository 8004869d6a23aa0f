//! The requests of usage and budgets (`docs/concepts/budgets.md`): a usage
//! report, a token's budget, and the workflows' default budgets. Each is one
//! transaction of `engine::usage` or `engine::budget`; a usage report that was
//! recorded is counted in `/metrics` after its commit.

use stateous_shared::refusal::Refusal;
use stateous_shared::usage::{BudgetDefault, BudgetDefaults, TokenBudget, UsageAnswer};

use super::{Control, Started};
use crate::engine;
use crate::validated::budgets::{DefaultBudgetInput, TokenBudgetInput, UsageAmounts, UsageInput};
use crate::validated::StartInput;

impl Control {
    /// `POST /tokens` with the token's own budget or a priority (`docs/limits.md`):
    /// the start, then (for a token it made) the budget and its `budget_set`
    /// entry and the priority, in one transaction.
    pub async fn start_with_budget(
        &self,
        input: StartInput,
        budget: Option<UsageAmounts>,
        priority: Option<i64>,
    ) -> Result<Started, Refusal> {
        let about = input.token.clone();
        let (token, created) = self
            .write_about(Some(&about), move |rules, tx| {
                let (token, created) = engine::start::start(rules, tx, &input)?;
                if created {
                    if let Some(budget) = &budget {
                        engine::budget::given_at_start(tx, &token.token, budget)?;
                    }
                    if let Some(priority) = priority.filter(|p| *p != 0) {
                        engine::priority::keep(tx, &token.token, priority)?;
                    }
                }
                Ok((token, created))
            })
            .await?;
        Ok(Started { token, created })
    }

    /// `PUT /tokens/{id}/priority`: change a live token's priority.
    pub async fn set_token_priority(
        &self,
        token: String,
        priority: i64,
    ) -> Result<serde_json::Value, Refusal> {
        self.write(move |_, tx| engine::priority::set_token_priority(tx, &token, priority))
            .await
    }

    /// `POST /tasks/{id}/usage`: record what an attempt spent; a report that took
    /// its token over its budget stopped its family's running attempts and paused it.
    pub async fn report_usage(&self, input: UsageInput) -> Result<UsageAnswer, Refusal> {
        let amounts = input.usage.amounts().clone();
        let answer = self
            .write(move |rules, tx| engine::usage::report_usage(rules, tx, &input))
            .await?;
        if answer.recorded {
            self.inner.metrics.used(&amounts);
        }
        Ok(answer)
    }

    /// `PUT /tokens/{id}/budget`: change a top token's own budget.
    pub async fn set_token_budget(&self, input: TokenBudgetInput) -> Result<TokenBudget, Refusal> {
        self.write(move |rules, tx| engine::budget::set_token_budget(rules, tx, &input))
            .await
    }

    /// `PUT /budgets/{workflow}`: set a workflow's default budget, whole.
    pub async fn set_default_budget(
        &self,
        input: DefaultBudgetInput,
    ) -> Result<BudgetDefault, Refusal> {
        self.write(move |rules, tx| engine::budget::set_default(rules, tx, &input))
            .await
    }

    /// `DELETE /budgets/{workflow}`: remove a workflow's default budget; whether
    /// it had one.
    pub async fn remove_default_budget(&self, workflow: String) -> Result<bool, Refusal> {
        self.write(move |_, tx| engine::budget::remove_default(tx, &workflow))
            .await
    }

    /// `GET /budgets`: every workflow's default budget.
    pub async fn default_budgets(&self) -> Result<BudgetDefaults, Refusal> {
        let budgets = self.read(engine::budget::defaults).await?;
        Ok(BudgetDefaults { budgets })
    }
}
