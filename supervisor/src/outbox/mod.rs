//! The supervisor's outbox: the reports, notes, memory writes and usage reports
//! that the control plane has not answered yet (`docs/guarantees.md`, "The supervisor's outbox";
//! `docs/inside/data.md`).
//!
//! One SQLite file, `<folder>/.stateous/outbox.db`, with one table `messages`.
//! Each message is committed before its HTTP call starts, and removed when the
//! control plane accepts or refuses it. The file stays locked (SQLite's exclusive
//! locking mode) while the outbox is open, so a second supervisor on the same
//! folder cannot open it: two supervisors sharing one outbox would send each
//! other's messages.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, ErrorCode};
use serde_json::Value;

/// The folder of a supervisor's local state, inside its folder.
pub const STATE_FOLDER: &str = ".stateous";
/// The outbox's file name, inside [`STATE_FOLDER`].
pub const OUTBOX_FILE: &str = "outbox.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    token TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('report', 'note', 'memory', 'usage')),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
)";

/// Why the outbox cannot be opened or written. Each message is one sentence.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// Another process holds the file: another supervisor runs on the folder.
    #[error("{0} is open in another process")]
    Busy(PathBuf),
    /// The file or its folder cannot be made or opened.
    #[error("cannot open {path}: {why}")]
    Open {
        /// The outbox file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// A message cannot be written or read (a full disk, a broken file).
    #[error("the outbox cannot be used: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// What a message is: its `kind` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An outcome for `POST /tasks/{id}/report`; the body is the outcome.
    Report,
    /// A note for `POST /tasks/{id}/note`; the body is `{"text"}`.
    Note,
    /// A memory write for `PUT /tasks/{id}/memory`; the body is `{"key", "value"}`.
    Memory,
    /// Ours: a usage report for `POST /tasks/{id}/usage`; the body is `{"usage"}`.
    /// Spent is spent: it is sent even after its attempt is over
    /// (`docs/concepts/budgets.md`).
    Usage,
}

impl Kind {
    /// The word in the `kind` column and in log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Report => "report",
            Kind::Note => "note",
            Kind::Memory => "memory",
            Kind::Usage => "usage",
        }
    }

    fn parse(text: &str) -> Option<Kind> {
        match text {
            "report" => Some(Kind::Report),
            "note" => Some(Kind::Note),
            "memory" => Some(Kind::Memory),
            "usage" => Some(Kind::Usage),
            _ => None,
        }
    }
}

/// One message of the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The order of the messages: a later message has a higher id.
    pub id: i64,
    /// The task of the grant that wrote it.
    pub task: i64,
    /// The attempt of that grant.
    pub attempt: i64,
    /// The token of that grant.
    pub token: String,
    /// Report, note or memory write.
    pub kind: Kind,
    /// The body, as the column holds it (see [`Kind`]).
    pub body: Value,
    /// When it was written: ISO 8601 in UTC.
    pub created_at: String,
}

/// The messages not yet answered, in a locked SQLite file.
#[derive(Debug)]
pub struct Outbox {
    db: Connection,
}

/// The outbox file of the supervisor's folder `folder`.
pub fn outbox_path(folder: &Path) -> PathBuf {
    folder.join(STATE_FOLDER).join(OUTBOX_FILE)
}

impl Outbox {
    /// Open the outbox at `path`, making it and its folder when absent, and take
    /// its lock. [`OutboxError::Busy`] when another process holds the lock.
    pub fn open(path: &Path) -> Result<Outbox, OutboxError> {
        let open_error = |why: String| OutboxError::Open {
            path: path.to_path_buf(),
            why,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| open_error(e.to_string()))?;
        }
        let db = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        Outbox::lock(db, path)
    }

    /// An outbox that is not on disk; its messages end with it. For tests and
    /// in-process supervisors without a folder.
    pub fn in_memory() -> Result<Outbox, OutboxError> {
        let db = Connection::open_in_memory()?;
        Outbox::lock(db, Path::new(":memory:"))
    }

    fn lock(db: Connection, path: &Path) -> Result<Outbox, OutboxError> {
        // No busy timeout: a held lock means another supervisor, not a short wait.
        db.busy_timeout(std::time::Duration::ZERO)?;
        // WAL: one fsync per commit instead of the rollback journal's several. In
        // exclusive locking mode it needs no shared memory, and the lock stays.
        let taken = db.execute_batch(&format!(
            "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL; BEGIN EXCLUSIVE; {SCHEMA}; COMMIT;"
        ));
        match taken.and_then(|()| take_usage(&db)) {
            Ok(()) => Ok(Outbox { db }),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
            {
                Err(OutboxError::Busy(path.to_path_buf()))
            }
            Err(e) => Err(OutboxError::Open {
                path: path.to_path_buf(),
                why: e.to_string(),
            }),
        }
    }

    /// Write one message and commit it; returns it with its id.
    pub fn append(
        &self,
        task: i64,
        attempt: i64,
        token: &str,
        kind: Kind,
        body: &Value,
    ) -> Result<Message, OutboxError> {
        let created_at = stateous_shared::time::iso(chrono::Utc::now());
        let text = serde_json::to_string(body).map_err(|e| OutboxError::Open {
            path: PathBuf::from(":body:"),
            why: e.to_string(),
        })?;
        self.db.execute(
            "INSERT INTO messages (task, attempt, token, kind, body, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![task, attempt, token, kind.as_str(), text, created_at],
        )?;
        Ok(Message {
            id: self.db.last_insert_rowid(),
            task,
            attempt,
            token: token.to_string(),
            kind,
            body: body.clone(),
            created_at,
        })
    }

    /// Every message, in the order they were written. A row that cannot be read
    /// (a body that is not JSON, an unknown kind) is skipped: sent again, it would
    /// fail again.
    pub fn pending(&self) -> Result<Vec<Message>, OutboxError> {
        let mut query = self.db.prepare(
            "SELECT id, task, attempt, token, kind, body, created_at FROM messages ORDER BY id",
        )?;
        let rows = query.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
            ))
        })?;
        let mut found = Vec::new();
        for row in rows {
            let (id, task, attempt, token, kind, body, created_at) = row?;
            let (Some(kind), Ok(body)) = (Kind::parse(&kind), serde_json::from_str(&body)) else {
                continue;
            };
            found.push(Message {
                id,
                task,
                attempt,
                token,
                kind,
                body,
                created_at,
            });
        }
        Ok(found)
    }

    /// How many messages wait.
    pub fn depth(&self) -> Result<i64, OutboxError> {
        Ok(self
            .db
            .query_row("SELECT COUNT(*) FROM messages", [], |row| row.get(0))?)
    }

    /// Remove one message: the control plane answered it for good.
    pub fn remove(&self, id: i64) -> Result<(), OutboxError> {
        self.forget("DELETE FROM messages WHERE id = ?1", params![id])
    }

    /// Remove every message of one attempt of a task but its usage reports: the
    /// control plane took the task back, so it would refuse them, while what the
    /// attempt spent still counts.
    pub fn drop_attempt(&self, task: i64, attempt: i64) -> Result<(), OutboxError> {
        self.forget(
            "DELETE FROM messages WHERE task = ?1 AND attempt = ?2 AND kind <> 'usage'",
            params![task, attempt],
        )
    }

    /// A removal commits without its own fsync (WAL, `synchronous = NORMAL`): it
    /// survives a crash of the process, and one lost to a power cut only sends a
    /// message again, which the control plane refuses or takes once more. Appends
    /// keep `FULL`: a message is on disk before its request starts.
    fn forget(&self, sql: &str, values: impl rusqlite::Params) -> Result<(), OutboxError> {
        self.db.execute_batch("PRAGMA synchronous = NORMAL")?;
        let done = self.db.execute(sql, values);
        self.db.execute_batch("PRAGMA synchronous = FULL")?;
        done?;
        Ok(())
    }
}

/// An outbox made before usage reports existed has a `kind` CHECK without
/// `usage`: its table is made again with the new CHECK, its messages and its
/// sequence of ids kept, in one transaction.
fn take_usage(db: &Connection) -> rusqlite::Result<()> {
    let sql: String = db.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'",
        [],
        |row| row.get(0),
    )?;
    if sql.contains("'usage'") {
        return Ok(());
    }
    let seq: i64 = db
        .query_row(
            "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'messages'",
            [],
            |row| row.get(0),
        )
        .unwrap_or(0);
    let new = SCHEMA.replace("IF NOT EXISTS messages", "messages_usage");
    db.execute_batch(&format!(
        "BEGIN EXCLUSIVE; {new};
         INSERT INTO messages_usage SELECT * FROM messages;
         DROP TABLE messages;
         ALTER TABLE messages_usage RENAME TO messages;
         DELETE FROM sqlite_sequence WHERE name = 'messages';
         INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', {seq});
         COMMIT;"
    ))
}

#[cfg(test)]
mod tests;
