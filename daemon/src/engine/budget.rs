//! Budgets (`docs/concepts/budgets.md`): the most a token may spend, by usage name.
//! A top token's budget covers its whole family (its children's usage is summed
//! into it); it is the token's own when one was given (at start, or later with
//! `PUT /tokens/{id}/budget`), else the default of its main workflow at that
//! moment (`PUT /budgets/{workflow}`). A change of a budget never pauses or
//! resumes a token by itself: the next usage report judges it
//! (`engine/usage.rs`), and a token over its budget is not resumed.

use serde_json::json;
use stateous_shared::refusal::Code;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::usage::{
    self, amounts, object_of, over, over_reason, BudgetDefault, TokenBudget,
};
use stateous_shared::wire::Object;

use super::{append, lock, py, refuse, Rules, Step};
use crate::store::usage::{OF_TOKEN, OF_WORKFLOW};
use crate::store::{EntryKind, TokenRow, Tx};
use crate::validated::budgets::{DefaultBudgetInput, TokenBudgetInput, UsageAmounts};

/// The journal's subject of the workflows' default budgets (`GET /journal?subject=budget`).
pub const JOURNAL_SUBJECT: &str = "budget";

/// Where a top token's budget comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// Its own.
    Token,
    /// Its main workflow's default.
    Workflow,
}

impl From {
    fn as_str(self) -> &'static str {
        match self {
            From::Token => "token",
            From::Workflow => "workflow",
        }
    }
}

/// The budget of the top token `top` now, and where it comes from; `None` when
/// it has none (neither its own nor its workflow's).
pub fn budget_of(rules: &Rules, tx: &dyn Tx, top: &TokenRow) -> Step<Option<(Object, From)>> {
    if let Some(own) = tx.budget(OF_TOKEN, &top.token)? {
        return Ok(Some((own, From::Token)));
    }
    let workflow = &rules.graph_of(top).main.name;
    Ok(tx
        .budget(OF_WORKFLOW, workflow)?
        .map(|default| (default, From::Workflow)))
}

/// What `top` used that is over its budget: each name with its use and its most.
pub fn overspent(rules: &Rules, tx: &dyn Tx, top: &TokenRow) -> Step<Vec<(String, f64, f64)>> {
    let Some((budget, _)) = budget_of(rules, tx, top)? else {
        return Ok(Vec::new());
    };
    Ok(over(&tx.usage_of(&top.token)?, &amounts(&budget)))
}

/// A token's usage and budget as the API shows them. A child shows its own usage;
/// its family's budget is its top token's.
pub fn view_of(rules: &Rules, tx: &dyn Tx, row: &TokenRow) -> Step<TokenBudget> {
    let used = tx.usage_of(&row.token)?;
    let mut view = TokenBudget {
        usage: object_of(&used),
        ..TokenBudget::default()
    };
    if row.parent.is_some() {
        return Ok(view);
    }
    if let Some((budget, from)) = budget_of(rules, tx, row)? {
        view.over = over(&used, &amounts(&budget))
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        view.budget = budget;
        view.budget_from = Some(from.as_str().to_string());
    }
    Ok(view)
}

/// Refuse to resume `top` while it is over its budget: 409 `over_budget`.
pub fn refuse_over_budget(rules: &Rules, tx: &dyn Tx, top: &TokenRow) -> Step<()> {
    let spent = overspent(rules, tx, top)?;
    if spent.is_empty() {
        return Ok(());
    }
    let name = &spent[0].0;
    refuse(
        Code::OverBudget,
        format!(
            "token {} is {}; raise its budget first (stateous token budget {} {name}=N), \
             then resume it",
            py(&top.token),
            over_reason(&spent),
            top.token
        ),
    )
}

/// The budget a new token was started with: kept as its own, with a
/// `budget_set` entry after the start's entries.
pub fn given_at_start(tx: &dyn Tx, token: &str, budget: &UsageAmounts) -> Step<()> {
    keep(tx, token, budget.given().clone())
}

fn keep(tx: &dyn Tx, token: &str, budget: Object) -> Step<()> {
    tx.set_budget(OF_TOKEN, token, &budget)?;
    append(
        tx,
        token,
        EntryKind::BudgetSet,
        None,
        json!({"budget": budget}),
    )
}

/// Change a live top token's own budget: each name given is set (or, null,
/// removed) on the budget it has now (its own, else its workflow's default,
/// which it then keeps as its own). 404 `token_not_found`, 409 `child_token`,
/// 409 `token_not_active` for an ended token.
pub fn set_token_budget(rules: &Rules, tx: &dyn Tx, input: &TokenBudgetInput) -> Step<TokenBudget> {
    let row = lock(tx, &input.token)?;
    if let Some(parent) = &row.parent {
        let top = super::join::top(tx, &row)?;
        return refuse(
            Code::ChildToken,
            format!(
                "token {} is a child of {}: its top token's budget covers it; set the \
                 budget of {} instead",
                py(&row.token),
                py(parent),
                py(&top.token)
            ),
        );
    }
    if row.status.ended() {
        return Err(super::not_now(&row, "only a live token's budget can change").into());
    }
    let mut budget = budget_of(rules, tx, &row)?.map_or_else(Object::new, |(b, _)| b);
    for (name, most) in input.changes.changes() {
        match most {
            Some(most) => budget.insert(name.clone(), usage::number(*most)),
            None => budget.remove(name),
        };
    }
    keep(tx, &row.token, budget)?;
    view_of(rules, tx, &row)
}

/// The main workflows of the graphs kept, by name: the names a default may have.
fn workflows(rules: &Rules) -> Vec<&str> {
    let mut names: Vec<&str> = rules
        .graphs()
        .iter()
        .map(|g| g.main.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn known_workflow(rules: &Rules, workflow: &str) -> Step<()> {
    let names = workflows(rules);
    if names.contains(&workflow) {
        return Ok(());
    }
    let served: Vec<String> = names.iter().map(|name| py(name)).collect();
    refuse(
        Code::InvalidArgument,
        format!(
            "no graph of this control plane has the workflow {}; a default budget is \
             set for a main workflow: {}",
            py(workflow),
            served.join(", ")
        ),
    )
}

/// Set a workflow's default budget, whole; the change goes on the journal
/// (subject `budget`, kind `set`). 422 `invalid_argument` for a workflow no kept
/// graph has as its main workflow.
pub fn set_default(rules: &Rules, tx: &dyn Tx, input: &DefaultBudgetInput) -> Step<BudgetDefault> {
    known_workflow(rules, &input.workflow)?;
    let budget = input.budget.given().clone();
    tx.set_budget(OF_WORKFLOW, &input.workflow, &budget)?;
    let data = json!({"budget": budget});
    tx.journal_append(
        JOURNAL_SUBJECT,
        &input.workflow,
        "set",
        data.as_object().unwrap_or(&Object::new()),
    )?;
    Ok(BudgetDefault {
        workflow: input.workflow.clone(),
        budget,
        set_at: iso(from_micros(tx.now())),
    })
}

/// Remove a workflow's default budget; whether it had one. A removal goes on the
/// journal (kind `removed`); removing none writes nothing.
pub fn remove_default(tx: &dyn Tx, workflow: &str) -> Step<bool> {
    let removed = tx.remove_budget(OF_WORKFLOW, workflow)?;
    if removed {
        tx.journal_append(JOURNAL_SUBJECT, workflow, "removed", &Object::new())?;
    }
    Ok(removed)
}

/// Every workflow's default budget, by workflow name.
pub fn defaults(tx: &dyn Tx) -> Step<Vec<BudgetDefault>> {
    Ok(tx
        .budgets(OF_WORKFLOW)?
        .into_iter()
        .map(|row| BudgetDefault {
            workflow: row.name,
            budget: row.budget,
            set_at: iso(from_micros(row.set_at)),
        })
        .collect())
}
