//! The command line of `stateous budget set|list|remove` (`docs/reference/cli.md`):
//! the workflows' default budgets (`docs/concepts/budgets.md`).

use clap::Subcommand;

use crate::client_args::CommandArgs;
use crate::commands::budget::{BudgetAction as Action, BudgetCommand};

/// `stateous budget ...`: the control plane's URL, then what to do.
pub type BudgetArgs = CommandArgs<BudgetAction>;

/// What to do with the default budgets.
#[derive(Subcommand)]
pub enum BudgetAction {
    /// Set WORKFLOW's default budget, whole: the most each of its tokens (with its
    /// children) may use, unless the token has a budget of its own
    ///
    /// A usage report that takes a token over it pauses the token and stops its
    /// routine. It applies from the next usage report of each token; every change
    /// is on the journal (GET /journal?subject=budget). Needs an admin key over TCP.
    Set {
        /// The workflow (its main workflow's name, as GET /workflow says).
        workflow: String,
        /// NAME=NUMBER, one or more, e.g. cost_usd=5.
        #[arg(required = true, value_name = "NAME=NUMBER")]
        amounts: Vec<String>,
    },
    /// List the workflows' default budgets
    List,
    /// Remove WORKFLOW's default budget: its tokens without a budget of their own
    /// have none
    Remove {
        /// The workflow.
        workflow: String,
    },
}

impl TryFrom<BudgetArgs> for BudgetCommand {
    type Error = String;

    fn try_from(args: BudgetArgs) -> Result<BudgetCommand, String> {
        let action = match args.action {
            BudgetAction::Set { workflow, amounts } => Action::Set { workflow, amounts },
            BudgetAction::List => Action::List,
            BudgetAction::Remove { workflow } => Action::Remove(workflow),
        };
        Ok(BudgetCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}
