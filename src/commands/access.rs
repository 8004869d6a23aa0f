//! `stateous access add|list|revoke`: the control plane's access keys, over
//! `POST /access`, `GET /access` and `DELETE /access/{name}`
//! (`docs/reference/cli.md`). By default over the daemon's Unix socket, where its
//! own user acts as admin: that is how the first key is made.

use std::io::Write;

use super::token::{Console, Terminal};
use super::{print_list, CommandError};
use stateous_client::{Client, ClientError, TransportError};
use stateous_shared::access::{KeyView, NewKey};
use stateous_shared::time::to_the_minute;

/// One `stateous access ...` command line.
#[derive(Debug, Clone)]
pub struct AccessCommand {
    /// `--url` (`None`: `STATEOUS_URL`, else the default socket), the key to send
    /// (an admin key, over TCP) and the TLS flags.
    pub connection: stateous_client::Connection,
    /// What to do.
    pub action: AccessAction,
}

/// The sub-command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessAction {
    /// `add NAME --role R [--supervisor SNAME] [--events ... [--states ...]
    /// [--where ...]] [--yes]`.
    Add {
        /// The key to make.
        key: NewKey,
        /// `--yes`: make the first key even though TCP callers without a key
        /// were seen, without asking.
        yes: bool,
    },
    /// `list [--json]`.
    List {
        /// Print the JSON answer.
        json: bool,
    },
    /// `revoke NAME`.
    Revoke(String),
}

/// Run `command`: `add` writes the secret alone on a line of `out`, `list` a
/// line per key (or the JSON; no key: nothing, and [`NO_KEYS`] on stderr),
/// `revoke` nothing (a line on stderr).
pub async fn run(command: &AccessCommand, out: &mut dyn Write) -> Result<(), CommandError> {
    let url = match &command.connection.url {
        Some(url) => url.clone(),
        None => stateous_client::url_from_env()?
            .unwrap_or_else(|| format!("unix://{}", stateous_client::default_socket().display())),
    };
    let client = command
        .connection
        .client_at(&url, stateous_client::DEFAULT_TIMEOUT, false)?;
    let refused = |error: ClientError| match &error {
        // Keys are made over a serving daemon's socket: say so when none answers.
        ClientError::Unreachable {
            source: TransportError::Connect(_),
            ..
        } if url.starts_with("unix://") => CommandError::Usage(format!(
            "{error}: access keys are made over the socket of a daemon that serves \
             (start it with stateous serve), or give --url"
        )),
        _ => CommandError::Client(error).with_code(),
    };
    match &command.action {
        AccessAction::Add { key, yes } => {
            let keys = client.access_keys().await.map_err(refused)?;
            if keys.is_empty() {
                first_key_check(&client, *yes, &mut Terminal).await?;
            }
            let made = client.add_access_key(key).await.map_err(refused)?;
            let secret = made.secret.unwrap_or_default();
            writeln!(out, "{secret}")?;
            eprintln!(
                "made the {} key {}: its secret went to standard output, once; keep it in a file \
                 only its user reads",
                made.role, made.name
            );
        }
        AccessAction::List { json } => {
            let keys = client.access_keys().await.map_err(refused)?;
            if *json {
                writeln!(out, "{}", serde_json::to_string(&keys).unwrap_or_default())?;
            } else {
                print_list(out, &keys, NO_KEYS, |key| [line(key)])?;
            }
        }
        AccessAction::Revoke(name) => {
            client.revoke_access_key(name).await.map_err(refused)?;
            eprintln!("revoked the key {name}: it is refused from the next request on");
        }
    }
    Ok(())
}

/// Before the first key: the TCP callers the control plane served without a key
/// in the last ten minutes will be refused once it exists. Name them and ask to
/// go on (`--yes` answers yes; without a terminal to ask, the key is not made).
/// A control plane that cannot list them (an older one) is not asked.
async fn first_key_check(
    client: &Client,
    yes: bool,
    console: &mut dyn Console,
) -> Result<(), CommandError> {
    let Ok(callers) = client.open_callers().await else {
        return Ok(());
    };
    if callers.is_empty() {
        return Ok(());
    }
    console.note(
        "this is the control plane's first access key: once it exists, every request over \
         TCP needs a key, and these callers, served over TCP without one in the last 10 \
         minutes, will be refused (401):",
    );
    for caller in &callers {
        let who = if caller.supervisors.is_empty() {
            "a client (no supervisor)".to_string()
        } else {
            format!(
                "the supervisor {}",
                caller.supervisors.join(", the supervisor ")
            )
        };
        console.note(&format!(
            "  {who} at {}, last seen {}",
            caller.address,
            to_the_minute(&caller.last_seen)
        ));
    }
    console.note(
        "make their keys first (a supervisor's: stateous access add NAME --role supervise \
         --supervisor NAME; docs/how-to/approve-with-keys.md gives a safe order)",
    );
    if yes {
        return Ok(());
    }
    if console.can_ask() {
        let answer = console.ask("make the key anyway? [y/N] ")?;
        if matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok(());
        }
    }
    Err(CommandError::Usage(format!(
        "the first access key was not made: it would lock out the {} TCP caller{} above; \
         make their keys first, or give --yes to make it anyway",
        callers.len(),
        if callers.len() == 1 { "" } else { "s" }
    )))
}

/// What `list` says, on stderr, when the control plane has no key.
pub const NO_KEYS: &str = "no access key: make one with stateous access add NAME --role ROLE";

/// `NAME  ROLE  SUPERVISOR  created TIME  last used TIME`, and `  revoked TIME`
/// when it was; each time to the minute in UTC (`2026-12-02 13:48Z`), `never`
/// for a key no request carried.
pub fn line(key: &KeyView) -> String {
    let mut line = format!(
        "{}  {}  {}  created {}  last used {}",
        key.name,
        key.role,
        key.supervisor.as_deref().unwrap_or("-"),
        to_the_minute(&key.created),
        key.last_used
            .as_deref()
            .map_or("never".to_string(), to_the_minute)
    );
    if let Some(scope) = &key.scope {
        line.push_str(&format!("  may fire {}", scope.describe()));
    }
    if let Some(revoked) = &key.revoked {
        line.push_str(&format!("  revoked {}", to_the_minute(revoked)));
    }
    line
}
