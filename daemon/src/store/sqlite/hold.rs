//! The hold on a SQLite database: a file lock beside the database file, which the
//! operating system ends with the process that holds it (one control plane serves one
//! database: `docs/guarantees.md`).
//!
//! So a control plane killed with SIGKILL frees its database at once, a stopped
//! (SIGSTOP) one never loses it, and no setting of a newcomer can decide that a
//! healthy holder is stale. The `control_plane` row still says who holds the
//! database and since when, for the sentence a second `serve` prints, and its epoch
//! fences every commit (`writer.rs`).

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file of the database at `db`: `<db>.lock`.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// The held lock; dropping it (or the process ending) lets it go.
#[derive(Debug)]
pub struct FileHold {
    _file: File,
}

/// What taking the lock found.
#[derive(Debug)]
pub enum Taken {
    /// This process holds the database now.
    Held(FileHold),
    /// Another process holds it.
    Busy,
}

/// Take the lock of the database at `db` without waiting. An error is one
/// sentence (a folder that cannot be written, say).
pub fn take(db: &Path) -> Result<Taken, String> {
    let path = lock_path(db);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(Taken::Held(FileHold { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(Taken::Busy),
        Err(TryLockError::Error(e)) => {
            Err(format!("cannot lock the lock file {}: {e}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hold_on_the_same_database_is_busy_until_the_first_ends() {
        let folder = tempfile::tempdir().unwrap();
        let db = folder.path().join("s.db");
        let first = take(&db).unwrap();
        assert!(matches!(first, Taken::Held(_)));
        assert!(matches!(take(&db).unwrap(), Taken::Busy));
        drop(first);
        assert!(matches!(take(&db).unwrap(), Taken::Held(_)));
    }
}
