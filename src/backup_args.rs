//! The command line of `stateous backup`.

use std::path::PathBuf;

use clap::Args;
use stateous_daemon::serve::options as serve_options;
use stateous_shared::durations::{parse_timing, TimingOf};

/// The flags of `stateous backup`.
#[derive(Args)]
pub struct BackupFlags {
    /// The new file to write the copy to; a file that exists is never overwritten.
    pub file: PathBuf,
    /// The database to copy, as `serve --db` names it: sqlite:///FILE or
    /// sqlite:////ABSOLUTE/PATH.
    #[arg(long, value_name = "URL", env = "STATEOUS_DB", default_value = serve_options::DEFAULT_DB)]
    pub db: String,
    /// How long to wait for a lock on the database before giving up.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, env = "STATEOUS_BUSY_TIMEOUT", default_value = serve_options::DEFAULT_BUSY_TIMEOUT)]
    pub busy_timeout: String,
}

/// Copy the database and print what the copy holds; 1 and `error: ...` when it
/// could not be made (nothing is then left at FILE).
pub fn run(flags: BackupFlags) -> i32 {
    let made = serve_options::parse_database(&flags.db).and_then(|database| {
        let wait = parse_timing(&flags.busy_timeout, TimingOf::Flag("--busy-timeout"))?;
        stateous_daemon::backup::backup(&database, &flags.file, wait).map_err(|e| e.to_string())
    });
    match made {
        Ok(backup) => {
            println!(
                "wrote {} ({} bytes, {} tokens, {} ledger entries); it opens and checks whole",
                backup.file.display(),
                backup.bytes,
                backup.tokens,
                backup.entries
            );
            0
        }
        Err(error) => crate::cli_errors::failed(error),
    }
}
