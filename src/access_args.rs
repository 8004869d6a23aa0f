//! The access key flags every client command takes (`token`, `access`, `tui`, `bench`,
//! `clock`, `supervise`), in one struct flattened into each, and the command
//! line of `stateous access ...` (`docs/reference/cli.md`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use stateous_client::AccessKey;
use stateous_shared::access::ACCESS_KEY_ENV;

use crate::client_args::{list_item, ConnectArgs};

/// Where a client finds its access key: `--access-key-file`, else
/// `STATEOUS_ACCESS_KEY`; neither: it sends none (the Unix socket and a control
/// plane without keys need none).
#[derive(Args, Debug, Clone, Default)]
pub struct AccessArgs {
    /// A file that holds the access key's secret (as `stateous access add`
    /// printed it); sent as Authorization: Bearer on every request. Wins over
    /// STATEOUS_ACCESS_KEY, the secret itself.
    #[arg(long, value_name = "FILE", global = true)]
    pub access_key_file: Option<PathBuf>,
}

impl AccessArgs {
    /// The key to send, or `None`; one sentence when the file or the variable
    /// does not hold a key.
    pub fn key(&self) -> Result<Option<AccessKey>, String> {
        if let Some(path) = &self.access_key_file {
            return AccessKey::from_file(path).map(Some);
        }
        match std::env::var(ACCESS_KEY_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                AccessKey::parse(&text, ACCESS_KEY_ENV).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// `stateous access ...`: the control plane's URL, then what to do with its keys.
#[derive(Args)]
pub struct AccessCommandArgs {
    // Without --url: STATEOUS_URL, else the default Unix socket (the command's
    // help says so); over http(s)://HOST:PORT, an admin key.
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub action: AccessAction,
}

/// What to do with the access keys.
#[derive(Subcommand)]
pub enum AccessAction {
    /// Make a key; its secret is printed once, alone on stdout
    Add {
        /// The key's name: 1 to 64 of A-Z a-z 0-9 . _ -; never reused.
        name: String,
        /// read, operate, supervise or admin.
        #[arg(long)]
        role: String,
        /// The supervisor a supervise key acts for (its stateous.yaml `name`).
        #[arg(long, value_name = "SNAME")]
        supervisor: Option<String>,
        /// Limit an operate key to reading and firing these events (comma
        /// separated), nothing else: a reviewer's key.
        #[arg(long, value_name = "EVENT,...", value_delimiter = ',', value_parser = list_item)]
        events: Vec<String>,
        /// With --events: only for tokens in these states (comma separated).
        #[arg(long, value_name = "STATE,...", value_delimiter = ',', value_parser = list_item)]
        #[arg(requires = "events")]
        states: Vec<String>,
        /// With --events: only for tokens this filter matches (the --where
        /// language of stateous token list).
        #[arg(long = "where", value_name = "FILTER", requires = "events")]
        filter: Option<String>,
        /// Make the first key without asking, even though supervisors or
        /// clients were seen over TCP without a key (they will be refused).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// List the keys: name, role, supervisor, created, last used (never a secret)
    List {
        /// Print the control plane's JSON answer instead of the lines.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: refused from the next request on
    Revoke {
        /// The key's name.
        name: String,
    },
}
