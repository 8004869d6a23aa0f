//! The tables of usage and budgets (`docs/inside/data.md`, `usage` and `budgets`;
//! `docs/concepts/budgets.md`): what each token's routines reported they spent,
//! summed by name, and the most a token, or by default a workflow's tokens, may
//! spend. What a budget means (whose usage it covers, when it is crossed) is the
//! engine's (`engine/usage.rs`); the store keeps numbers and JSON.

use stateous_shared::usage::Amounts;
use stateous_shared::wire::Object;

use super::through::passed_through;
use super::StoreResult;

/// The subject of a token's own budget in `budgets`; its name is the token's id.
pub const OF_TOKEN: &str = "token";
/// The subject of a workflow's default budget in `budgets`; its name is the main
/// workflow's name.
pub const OF_WORKFLOW: &str = "workflow";

/// A row of `budgets`.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetRow {
    /// [`OF_TOKEN`] or [`OF_WORKFLOW`].
    pub subject: String,
    /// The token's id, or the workflow's name.
    pub name: String,
    /// The most it may use, by usage name (JSON numbers).
    pub budget: Object,
    /// When it was last set, in microseconds since 1970.
    pub set_at: i64,
}

passed_through! {
    /// The table `usage`: one row per token and usage name, its sum.
    pub trait Usage {
        /// Add `amounts` to the token's sums (a name it has none of starts at 0).
        fn add_usage(&self, token: &str, amounts: &Amounts) -> StoreResult<()>;
        /// The token's sums, by name; empty when it reported none.
        fn usage_of(&self, token: &str) -> StoreResult<Amounts>;
        /// Delete the token's sums and its own budget (a prune).
        fn forget_usage(&self, token: &str) -> StoreResult<()>;
    }
}

passed_through! {
    /// The table `budgets`: a token's own budget, or a workflow's default.
    pub trait Budgets {
        /// The budget of `subject` named `name`, if one is set.
        fn budget(&self, subject: &str, name: &str) -> StoreResult<Option<Object>>;
        /// Set the budget of `subject` named `name` (at `Tx::now`), replacing one.
        fn set_budget(&self, subject: &str, name: &str, budget: &Object) -> StoreResult<()>;
        /// Remove it; whether there was one.
        fn remove_budget(&self, subject: &str, name: &str) -> StoreResult<bool>;
        /// Every budget of `subject`, by name.
        fn budgets(&self, subject: &str) -> StoreResult<Vec<BudgetRow>>;
    }
}
