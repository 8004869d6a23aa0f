//! The validated inputs of usage and budgets (`docs/concepts/budgets.md`): a
//! usage report, a token's budget, a workflow's default. Each usage name and
//! amount is checked by the one rule of `stateous_shared::usage`; a refusal is
//! 422 `invalid_argument` with its sentence.

use std::collections::BTreeMap;

use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::usage::{amounts_of, Amounts};
use stateous_shared::wire::Object;

use super::{Key, Supervisor};

fn refuse(sentence: impl Into<String>) -> Refusal {
    Refusal::new(Code::InvalidArgument, sentence)
}

/// Amounts by usage name, every name and amount checked: the JSON numbers as
/// given (the ledger keeps `1200` an integer), and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageAmounts {
    given: Object,
    amounts: Amounts,
}

impl UsageAmounts {
    /// Check `given` (`what` names it in the sentences: `usage`, `budget`); an
    /// empty object is refused unless `may_be_empty`.
    pub fn new(given: Object, what: &str, may_be_empty: bool) -> Result<UsageAmounts, Refusal> {
        if given.is_empty() && !may_be_empty {
            return Err(refuse(format!(
                "'{what}' names at least one usage name with its amount, such as \
                 {{\"cost_usd\": 0.12}}"
            )));
        }
        let read = amounts_of(&given, what, false).map_err(refuse)?;
        let amounts = read
            .into_iter()
            .filter_map(|(name, amount)| Some((name, amount?)))
            .collect();
        Ok(UsageAmounts { given, amounts })
    }

    /// The amounts as JSON numbers, as given.
    pub fn given(&self) -> &Object {
        &self.given
    }

    /// The amounts as numbers.
    pub fn amounts(&self) -> &Amounts {
        &self.amounts
    }
}

/// A change of a token's budget: each name with its new most, or `None` to
/// remove the name.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetChanges(BTreeMap<String, Option<f64>>);

impl BudgetChanges {
    /// Check `given`: numbers, or null to remove a name; at least one name.
    pub fn new(given: &Object) -> Result<BudgetChanges, Refusal> {
        if given.is_empty() {
            return Err(refuse(
                "'budget' names at least one usage name with its most (or null to remove \
                 it), such as {\"cost_usd\": 8}",
            ));
        }
        amounts_of(given, "budget", true)
            .map(BudgetChanges)
            .map_err(refuse)
    }

    /// Each name with its new most, or `None` to remove it.
    pub fn changes(&self) -> &BTreeMap<String, Option<f64>> {
        &self.0
    }
}

/// `POST /tasks/{id}/usage` (ours): what an attempt of a task spent.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageInput {
    /// The task.
    pub task: i64,
    /// The attempt that spent it; the task's current attempt when `None`.
    pub attempt: Option<i64>,
    /// The supervisor that ran the attempt.
    pub supervisor: Option<Supervisor>,
    /// The amounts.
    pub usage: UsageAmounts,
    /// The idempotency key: a report sent again with it is recorded once.
    pub key: Option<Key>,
}

/// `PUT /tokens/{id}/budget` (ours): a change of a token's own budget.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBudgetInput {
    /// The token.
    pub token: String,
    /// The names to set or remove.
    pub changes: BudgetChanges,
}

/// `PUT /budgets/{workflow}` (ours): a workflow's default budget, whole.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultBudgetInput {
    /// The main workflow's name; the engine checks that a graph has it.
    pub workflow: String,
    /// The most a token of it may use, by name.
    pub budget: UsageAmounts,
}
