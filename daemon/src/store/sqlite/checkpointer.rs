//! WAL checkpoints off the write path. SQLite's own (`wal_autocheckpoint`, 1000
//! pages) runs inside the COMMIT of the transaction that filled the WAL: that
//! batch's answers, a clock tick among them, waited for the copy of some 4 MB
//! into the database file and its fsync (the scale example's slow ticks,
//! `docs/how-to/measure.md`). Here a thread of its own, on a connection of its
//! own, copies the WAL into the database after commits, at most every
//! [`PACE`]; the writer only nudges it. A checkpoint is PASSIVE: it never waits
//! for the writer or a reader, and copies what it can.
//!
//! Durability does not change: a commit is durable once its WAL frames are
//! synced (`synchronous=FULL`), before any checkpoint. Should this thread fall
//! behind, the writer's own checkpoint, at [`WRITER_PAGES`], still bounds the
//! WAL.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;

use super::open;

/// The most often a checkpoint runs while commits come.
pub const PACE: Duration = Duration::from_millis(200);

/// The writer connection's own `wal_autocheckpoint`: far above what this thread
/// leaves in the WAL, so that it runs only if this thread cannot keep up.
pub const WRITER_PAGES: i64 = 20_000;

/// A handle that nudges the checkpoint thread; the thread ends once every
/// handle is dropped.
#[derive(Debug, Clone)]
pub struct Checkpointer {
    nudge: mpsc::SyncSender<()>,
}

impl Checkpointer {
    /// Start the thread on its own connection to `path`.
    pub fn spawn(path: &Path, busy_timeout: Duration) -> Result<Checkpointer, String> {
        let conn = open(path, busy_timeout, false).map_err(|e| e.to_string())?;
        let (nudge, nudged) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("stateous-checkpoint".into())
            .spawn(move || run(&conn, &nudged))
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
        Ok(Checkpointer { nudge })
    }

    /// Something committed: a checkpoint is due (never blocks).
    pub fn nudge(&self) {
        let _ = self.nudge.try_send(());
    }
}

fn run(conn: &Connection, nudged: &mpsc::Receiver<()>) {
    while nudged.recv().is_ok() {
        // A failed checkpoint (a busy file) leaves the frames for the next one.
        let _ = checkpoint(conn);
        std::thread::sleep(PACE);
    }
}

/// One PASSIVE checkpoint: (frames in the WAL, frames copied), or its error.
pub fn checkpoint(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get(1)?, row.get(2)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_copied_into_the_database_file_by_the_thread_not_the_writer() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("c.db");
        let writer = open(&path, Duration::from_secs(5), false).unwrap();
        // As the writer runs with a checkpointer: its own checkpoint only far on.
        writer
            .pragma_update(None, "wal_autocheckpoint", WRITER_PAGES)
            .unwrap();
        writer
            .execute_batch("CREATE TABLE t (x TEXT); BEGIN; INSERT INTO t VALUES (randomblob(200000)); COMMIT;")
            .unwrap();
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = size();
        assert!(before < 100_000, "the commit is in the WAL only: {before}");
        let checkpoints = Checkpointer::spawn(&path, Duration::from_secs(5)).unwrap();
        checkpoints.nudge();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size() < 200_000 {
            assert!(std::time::Instant::now() < deadline, "no checkpoint");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The writer goes on while the thread lives; every frame gets copied.
        writer
            .execute("INSERT INTO t VALUES (randomblob(1000))", [])
            .unwrap();
        checkpoints.nudge();
        let (frames, copied) = checkpoint(&writer).unwrap();
        assert_eq!(frames, copied);
    }
}
