//! `stateous budget set|list|remove`: the workflows' default budgets, over `PUT
//! /budgets/{workflow}`, `GET /budgets` and `DELETE /budgets/{workflow}`
//! (`docs/reference/cli.md`, `docs/concepts/budgets.md`).

use std::io::Write;

use super::{line, pretty, print_list, CommandError};
use stateous_shared::usage::{amounts, listed, parse_pairs, BudgetDefault};

/// One `stateous budget ...` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetCommand {
    /// `--url`, the access key (an admin key over TCP to change one) and the TLS
    /// flags.
    pub connection: stateous_client::Connection,
    /// `--json`: print the daemon's answer.
    pub json: bool,
    /// What to do.
    pub action: BudgetAction,
}

/// The sub-command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetAction {
    /// `set WORKFLOW NAME=NUMBER...`.
    Set {
        /// The workflow.
        workflow: String,
        /// `NAME=NUMBER`, one or more.
        amounts: Vec<String>,
    },
    /// `list`.
    List,
    /// `remove WORKFLOW`.
    Remove(String),
}

/// What `list` says on stderr when no workflow has a default budget.
pub const NO_BUDGETS: &str = "no workflow has a default budget (stateous budget set WORKFLOW \
                              cost_usd=5 sets one)";

/// `sdlc: cost_usd 5, input_tokens 100000`.
fn budget_line(default: &BudgetDefault) -> String {
    format!(
        "{}: {}",
        default.workflow,
        listed(&amounts(&default.budget))
    )
}

/// Run `command`: `set` prints the workflow's line, `list` a line per workflow
/// (nothing, and [`NO_BUDGETS`] on stderr, when none), `remove` nothing (a line
/// on stderr).
pub async fn run(command: &BudgetCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let client = command
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, false)?;
    let refused = |error| CommandError::Client(error).with_code();
    match &command.action {
        BudgetAction::Set { workflow, amounts } => {
            let budget = parse_pairs(amounts, false).map_err(CommandError::Usage)?;
            let set = client
                .set_budget(workflow, &budget)
                .await
                .map_err(refused)?;
            if command.json {
                return line(out, &pretty(&set)?);
            }
            line(out, &budget_line(&set))
        }
        BudgetAction::List => {
            let list = client.budgets().await.map_err(refused)?;
            if command.json {
                return line(out, &pretty(&list)?);
            }
            print_list(out, &list.budgets, NO_BUDGETS, |default| {
                [budget_line(default)]
            })
        }
        BudgetAction::Remove(workflow) => {
            let removed = client.remove_budget(workflow).await.map_err(refused)?;
            if command.json {
                return line(out, &serde_json::json!({ "removed": removed }).to_string());
            }
            if removed {
                eprintln!("removed the default budget of {workflow}");
            } else {
                eprintln!("{workflow} had no default budget; nothing changed");
            }
            Ok(())
        }
    }
}
