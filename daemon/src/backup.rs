//! `stateous backup FILE`: a consistent copy of a SQLite database, made while a
//! control plane serves it.
//!
//! The copy is SQLite's `VACUUM INTO`, run on a read-only connection of its own. In
//! WAL mode a reader holds a snapshot and never blocks the writer, so the control
//! plane keeps committing while the copy is made, and the copy holds exactly the
//! transactions committed when it began: no token is half-moved in it. The copy is
//! written beside the target under a temporary name, synced, checked (it opens,
//! `PRAGMA integrity_check` says `ok`, it has the control plane's tables), and only
//! then renamed to the target, so a target that exists is always a whole backup.
//!
//! A Postgres database is backed up with the server's own tools (`pg_dump`,
//! `pg_basebackup`); README.md "Back up and restore" says how to restore either.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::store::backend::{without_password, Database};

/// What a backup wrote: the file and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// The backup's file.
    pub file: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// The tokens in it, children included.
    pub tokens: i64,
    /// The ledger entries in it.
    pub entries: i64,
}

/// Why a backup was not made. The `Display` text is the command's `error: ` line;
/// nothing is left at the target.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The database is a Postgres server.
    #[error(
        "{0} is a Postgres database: back it up with the server's own tools \
         (pg_dump, or pg_basebackup for a whole server); this command copies SQLite files"
    )]
    Postgres(String),
    /// The database file does not exist.
    #[error("there is no database at {0}; give the file the control plane serves with --db")]
    NoDatabase(String),
    /// The folder the target names does not exist; a backup makes no folders.
    #[error("the folder {0} does not exist; make it first")]
    NoFolder(String),
    /// The target exists already; a backup never overwrites one.
    #[error("{0} exists already; give a new file (a backup never overwrites one)")]
    TargetExists(String),
    /// SQLite refused or failed (the sentence says which step).
    #[error("{0}")]
    Failed(String),
}

/// Copy the SQLite database `database` into the new file `target`; `busy_timeout`
/// is how long to wait for a lock (a control plane holds none that a reader waits
/// on in WAL mode, but a checkpoint or a recovery may).
pub fn backup(
    database: &Database,
    target: &Path,
    busy_timeout: Duration,
) -> Result<Backup, BackupError> {
    let source = match database {
        Database::Sqlite(path) => path,
        Database::Postgres(url) => return Err(BackupError::Postgres(without_password(url))),
    };
    if !source.is_file() {
        return Err(BackupError::NoDatabase(source.display().to_string()));
    }
    if target.exists() {
        return Err(BackupError::TargetExists(target.display().to_string()));
    }
    if let Some(folder) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !folder.exists() {
            return Err(BackupError::NoFolder(folder.display().to_string()));
        }
    }
    let partial = partial_name(target);
    // A partial copy from an earlier run that was stopped is ours to replace.
    let _ = std::fs::remove_file(&partial);
    let made = copy(source, &partial, busy_timeout).and_then(|()| check(&partial, target));
    match made {
        Ok(backup) => Ok(backup),
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            Err(error)
        }
    }
}

/// The temporary name the copy is written under, beside the target.
fn partial_name(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    target.with_file_name(name)
}

fn failed(step: &str, path: &Path, error: impl std::fmt::Display) -> BackupError {
    BackupError::Failed(format!("cannot {step} {}: {error}", path.display()))
}

/// `VACUUM INTO` from a read-only connection to `source`, then an fsync of the copy.
fn copy(source: &Path, partial: &Path, busy_timeout: Duration) -> Result<(), BackupError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(source, flags).map_err(|e| failed("open", source, e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failed("open", source, e))?;
    let into = partial
        .to_str()
        .ok_or_else(|| failed("write", partial, "the path is not UTF-8"))?;
    conn.execute("VACUUM INTO ?1", [into])
        .map_err(|e| failed("copy the database into", partial, e))?;
    let file = std::fs::File::open(partial).map_err(|e| failed("sync", partial, e))?;
    file.sync_all().map_err(|e| failed("sync", partial, e))
}

/// Open the copy, check it whole, count what it holds, and rename it to `target`.
fn check(partial: &Path, target: &Path) -> Result<Backup, BackupError> {
    let backup = {
        let conn = Connection::open_with_flags(partial, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| failed("open the copy", partial, e))?;
        let verdict: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .map_err(|e| failed("check the copy", partial, e))?;
        if verdict != "ok" {
            return Err(failed("check the copy", partial, verdict));
        }
        let count = |table: &str| -> Result<i64, BackupError> {
            conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .map_err(|e| failed("read the copy (is it a Stateous database?)", partial, e))
        };
        Backup {
            file: target.to_path_buf(),
            bytes: 0,
            tokens: count("tokens")?,
            entries: count("ledger")?,
        }
    };
    std::fs::rename(partial, target).map_err(|e| failed("rename the copy to", target, e))?;
    sync_folder(target);
    let bytes = std::fs::metadata(target)
        .map_err(|e| failed("read", target, e))?
        .len();
    Ok(Backup { bytes, ..backup })
}

/// Sync the folder that holds `file`, so that its new name survives a crash. A
/// folder that cannot be opened for it (some file systems) leaves the name to the
/// next sync of the file system; the copy itself is already synced.
fn sync_folder(file: &Path) {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(handle) = std::fs::File::open(folder) {
        let _ = handle.sync_all();
    }
}
