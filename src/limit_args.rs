//! The command line of `stateous limit set|list|remove` (`docs/reference/cli.md`):
//! limits on claims (`docs/limits.md`).

use clap::Subcommand;

use crate::client_args::{list_item, named, CommandArgs};
use crate::commands::limit::{LimitAction as Action, LimitCommand};

/// `stateous limit ...`: the control plane's URL, then what to do.
pub type LimitArgs = CommandArgs<LimitAction>;

/// What to do with the limits.
#[derive(Subcommand)]
pub enum LimitAction {
    /// Set limit NAME, whole: at most MAX claimed attempts at once of STATES
    ///
    /// With --per, each distinct value of the expression over the token's
    /// context has MAX slots of its own; with --rate, claims of the pool are at
    /// most N per second, minute or hour. A lowered limit stops no routine: no
    /// new claim is granted until fewer run. Every change is on the journal
    /// (GET /journal?subject=limit). Needs an admin key over TCP.
    Set {
        /// The limit's name: 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-', a letter or
        /// digit first.
        name: String,
        /// The states it covers, comma-separated (a child workflow's state is
        /// WORKFLOW/STATE).
        #[arg(long, required = true, value_delimiter = ',', value_parser = list_item)]
        states: Vec<String>,
        /// Slots at once: 1 to 1000000.
        #[arg(long, allow_negative_numbers = true)]
        max: i64,
        /// A key expression over the token's context, e.g. "ctx['repo']".
        #[arg(long, value_name = "EXPR")]
        per: Option<String>,
        /// A rate of claims, e.g. "30 per minute".
        #[arg(long, value_name = "N per UNIT")]
        rate: Option<String>,
    },
    /// List the limits with the slots each holds now
    List,
    /// Remove limit NAME: its states' tasks are claimed without it at once
    Remove {
        /// The limit.
        name: String,
    },
    /// Set STATE's retry policy: the pause between a failed attempt and the next
    ///
    /// The next attempt is queued at once but not claimed before DELAY (doubled
    /// after each further failure with --doubling, up to --cap), plus up to
    /// --jitter. How many retries stays the graph's. Needs an admin key over TCP.
    Retry {
        /// The state (a child workflow's state is WORKFLOW/STATE).
        state: String,
        /// The first pause, e.g. 2s.
        #[arg(long)]
        delay: String,
        /// Double the pause after each further failure.
        #[arg(long)]
        doubling: bool,
        /// With --doubling, the longest pause, e.g. 1m.
        #[arg(long)]
        cap: Option<String>,
        /// The most a pause is lengthened by, e.g. 1s.
        #[arg(long)]
        jitter: Option<String>,
    },
    /// List the retry policies
    Retries,
    /// Remove STATE's retry policy: its next attempts are claimed at once again
    Unretry {
        /// The state.
        state: String,
    },
}

impl TryFrom<LimitArgs> for LimitCommand {
    type Error = String;

    fn try_from(args: LimitArgs) -> Result<LimitCommand, String> {
        let action = match args.action {
            LimitAction::Set {
                name,
                states,
                max,
                per,
                rate,
            } => Action::Set {
                // Refused as the control plane refuses it, before a request whose
                // path would reach no route (an empty one by the client, as empty).
                name: match stateous_shared::claim_limits::name_problem(&name) {
                    Some(problem) if !name.is_empty() => return Err(problem),
                    _ => name,
                },
                request: stateous_shared::claim_limits::LimitRequest {
                    states,
                    max,
                    per,
                    rate,
                },
            },
            LimitAction::List => Action::List,
            LimitAction::Remove { name } => Action::Remove(named("limit", name)?),
            LimitAction::Retry {
                state,
                delay,
                doubling,
                cap,
                jitter,
            } => Action::Retry {
                state,
                request: stateous_shared::retry_policies::RetryPolicyRequest {
                    delay,
                    backoff: doubling.then(|| "doubling".to_string()),
                    cap,
                    jitter,
                },
            },
            LimitAction::Retries => Action::Retries,
            LimitAction::Unretry { state } => Action::Unretry(state),
        };
        Ok(LimitCommand {
            connection: args.connect.connection()?,
            json: args.json,
            action,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Limit {
        #[command(flatten)]
        args: LimitArgs,
    }

    #[test]
    fn the_states_of_a_limit_are_read_without_the_spaces_around_them() {
        let argv = [
            "limit",
            "set",
            "coding",
            "--states",
            "coding, review",
            "--max",
            "2",
        ];
        let args = Limit::try_parse_from(argv).unwrap().args;
        let LimitAction::Set { states, .. } = args.action else {
            panic!("not a set");
        };
        assert_eq!(states, ["coding", "review"]);
    }
}
