//! `stateous limit set|list|remove`: limits on claims, over `PUT /limits/{name}`,
//! `GET /limits` and `DELETE /limits/{name}` (`docs/reference/cli.md`,
//! `docs/limits.md`).

use std::io::Write;

use stateous_shared::claim_limits::{LimitRequest, LimitView};

use super::{line, pretty, print_list, CommandError};

/// One `stateous limit ...` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitCommand {
    /// `--url`, the access key (an admin key over TCP to change one) and the TLS
    /// flags.
    pub connection: stateous_client::Connection,
    /// `--json`: print the daemon's answer.
    pub json: bool,
    /// What to do.
    pub action: LimitAction,
}

/// The sub-command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitAction {
    /// `set NAME --states S,... --max N [--per EXPR] [--rate R]`.
    Set {
        /// The limit's name.
        name: String,
        /// The limit, whole.
        request: LimitRequest,
    },
    /// `list`.
    List,
    /// `remove NAME`.
    Remove(String),
    /// `retry STATE --delay D [--doubling] [--cap D] [--jitter D]`.
    Retry {
        /// The state.
        state: String,
        /// The policy, whole.
        request: stateous_shared::retry_policies::RetryPolicyRequest,
    },
    /// `retries`.
    Retries,
    /// `unretry STATE`.
    Unretry(String),
}

/// What `list` says on stderr when there is no limit.
pub const NO_LIMITS: &str =
    "no limit is set (stateous limit set coding --states coding --max 3 sets one)";

/// `coding  coding  2 used of 3, 30 per minute`; with a key,
/// `coding-per-repo  coding  2 used, 1 per ctx['repo']` (the max is each key's)
/// then a line per key holding slots: `  'acme/api'  1 of 1`.
fn limit_lines(limit: &LimitView) -> Vec<String> {
    let names = format!("{}  {}", limit.name, limit.states.join(","));
    let mut head = match &limit.per {
        Some(per) => format!("{names}  {} used, {} per {per}", limit.used, limit.max),
        None => format!("{names}  {} used of {}", limit.used, limit.max),
    };
    if let Some(rate) = &limit.rate {
        head.push_str(&format!(", {rate}"));
    }
    let mut lines = vec![head];
    if limit.per.is_some() {
        for key in &limit.keys {
            lines.push(format!("  {}  {} of {}", key.key, key.used, limit.max));
        }
    }
    lines
}

/// Run `command`: `set` prints the limit's lines, `list` each limit's (nothing,
/// and [`NO_LIMITS`] on stderr, when none), `remove` nothing (a line on stderr).
pub async fn run(command: &LimitCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let client = command
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, false)?;
    let refused = |error| CommandError::Client(error).with_code();
    match &command.action {
        LimitAction::Set { name, request } => {
            let set = client.set_limit(name, request).await.map_err(refused)?;
            if command.json {
                return line(out, &pretty(&set)?);
            }
            for text in limit_lines(&set) {
                line(out, &text)?;
            }
            Ok(())
        }
        LimitAction::List => {
            let list = client.limits().await.map_err(refused)?;
            if command.json {
                return line(out, &pretty(&list)?);
            }
            print_list(out, &list.limits, NO_LIMITS, limit_lines)
        }
        LimitAction::Retry { state, request } => {
            let set = client
                .set_retry_policy(state, request)
                .await
                .map_err(refused)?;
            if command.json {
                return line(out, &pretty(&set)?);
            }
            line(out, &set.line())
        }
        LimitAction::Retries => {
            let list = client.retry_policies().await.map_err(refused)?;
            if command.json {
                return line(out, &pretty(&list)?);
            }
            let none = "no retry policy is set (stateous limit retry coding --delay 2s sets one)";
            print_list(out, &list.policies, none, |policy| [policy.line()])
        }
        LimitAction::Unretry(state) => {
            client.remove_retry_policy(state).await.map_err(refused)?;
            if command.json {
                return line(out, &serde_json::json!({ "removed": true }).to_string());
            }
            eprintln!("removed the retry policy of {state}");
            Ok(())
        }
        LimitAction::Remove(name) => {
            client.remove_limit(name).await.map_err(refused)?;
            if command.json {
                return line(out, &serde_json::json!({ "removed": true }).to_string());
            }
            eprintln!("removed the limit {name}");
            Ok(())
        }
    }
}
