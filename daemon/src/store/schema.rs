//! The SQLite schema as numbered migrations, with the version recorded in
//! `stateous_version` (reference `docs/inside/data.md`, STYLE point 5).
//!
//! The tables and columns are the reference's; times are integers (microseconds
//! since 1970, UTC) instead of text, so comparisons in SQL are plain integer ones.
//! CHECK constraints mirror the status enums. Postgres differs in the types
//! (`BIGINT`, `JSONB`, `BIGSERIAL`) and keeps the same constraints.

use rusqlite::{Connection, OptionalExtension};

use super::{StoreError, StoreResult};

/// The migrations, in order: (version, SQL). A new one goes at the end.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001", BASELINE),
    ("0002", FEED),
    ("0003", FEED_WITHOUT_TRIGGER),
];

/// Version 0003: `Ledger::append` writes the `ledger_feed` row itself, in the same
/// savepoint, instead of the trigger of 0002. An INSERT that fires a trigger runs
/// in a statement journal of its own, which copied every page it touched once
/// more: about a third of the write path's time (SPEC section 5).
const FEED_WITHOUT_TRIGGER: &str = "DROP TRIGGER IF EXISTS ledger_feed_append;";

/// Version 0002: the order of the ledger across tokens, for `GET /watch` (SPEC
/// section 3.3). A trigger numbers each ledger row as it is written, inside the
/// writing transaction, so a rolled-back savepoint takes its numbers with it and
/// the one writer commits them in increasing order. Rows written before 0002 are
/// numbered by time. Postgres would use a `BIGSERIAL` column instead.
const FEED: &str = "
CREATE TABLE ledger_feed (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1)
);
CREATE INDEX ledger_feed_token ON ledger_feed (token, id);
INSERT INTO ledger_feed (token, seq) SELECT token, seq FROM ledger ORDER BY at, token, seq;
CREATE TRIGGER ledger_feed_append AFTER INSERT ON ledger BEGIN
    INSERT INTO ledger_feed (token, seq) VALUES (NEW.token, NEW.seq);
END;
";

/// The tables of version 0001.
const BASELINE: &str = "
CREATE TABLE control_plane (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    structure TEXT,
    checksum TEXT,
    serving TEXT,
    since INTEGER
);
INSERT INTO control_plane (id) VALUES (1);

CREATE TABLE tokens (
    token TEXT PRIMARY KEY CHECK (length(token) BETWEEN 1 AND 256),
    state TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('active', 'paused', 'completed', 'failed', 'cancelled')),
    visit INTEGER NOT NULL CHECK (visit >= 0),
    context TEXT NOT NULL,
    entered_at INTEGER NOT NULL,
    parent TEXT,
    workflow TEXT
);
-- Ids that differ only in case are one id (token ids are ASCII, so lower() is enough).
CREATE UNIQUE INDEX tokens_folded ON tokens (lower(token));
CREATE INDEX tokens_parent ON tokens (parent);
CREATE INDEX tokens_moved ON tokens (entered_at DESC, token);

CREATE TABLE ledger (
    -- Global and increasing: the watch stream's event id (Last-Event-ID resumes).
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    key TEXT CHECK (key IS NULL OR length(key) BETWEEN 1 AND 256),
    data TEXT NOT NULL,
    UNIQUE (token, seq)
);
CREATE UNIQUE INDEX ledger_key ON ledger (token, key);

CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT NOT NULL,
    state TEXT NOT NULL,
    visit INTEGER NOT NULL CHECK (visit >= 1),
    status TEXT NOT NULL
        CHECK (status IN ('queued', 'claimed', 'waiting', 'done', 'failed', 'cancelled')),
    attempt INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    claimed_by TEXT,
    lease_until INTEGER,
    queued_at INTEGER NOT NULL,
    CHECK (status <> 'claimed' OR claimed_by IS NOT NULL)
);
CREATE INDEX tasks_queue ON tasks (status, state, id);
CREATE INDEX tasks_token ON tasks (token, status);

CREATE TABLE timers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT NOT NULL,
    state TEXT NOT NULL,
    visit INTEGER NOT NULL,
    event TEXT NOT NULL,
    payload TEXT,
    set_at INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'fired', 'cancelled')),
    kind TEXT NOT NULL CHECK (kind IN ('timeout', 'timer'))
);
CREATE INDEX timers_due ON timers (status, due_at);
CREATE INDEX timers_token ON timers (token, status);

CREATE TABLE memory (
    token TEXT NOT NULL,
    state TEXT NOT NULL,
    key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    value TEXT NOT NULL,
    PRIMARY KEY (token, state, key)
) WITHOUT ROWID;

CREATE TABLE claims (
    supervisor TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    task_id INTEGER,
    attempt INTEGER
);
";

/// The table names Stateous makes; a database that has one of them but no
/// `stateous_version` belongs to someone else.
const OURS: &[&str] = &[
    "control_plane",
    "tokens",
    "ledger",
    "tasks",
    "timers",
    "memory",
    "claims",
];

/// Why the schema cannot be brought to this version.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The database is not one this version can use; one sentence.
    #[error("{0}")]
    Foreign(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The newest version this build knows.
pub fn newest() -> &'static str {
    MIGRATIONS
        .last()
        .map(|(version, _)| *version)
        .unwrap_or("0000")
}

/// Bring the database to the newest schema inside one immediate transaction: a
/// migration that fails halfway changes nothing.
pub fn migrate(conn: &Connection) -> Result<(), MigrateError> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(StoreError::from)?;
    let result = migrate_inside(conn);
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = conn.execute_batch(end).map_err(StoreError::from);
    result?;
    ended?;
    Ok(())
}

fn migrate_inside(conn: &Connection) -> Result<(), MigrateError> {
    let current = current_version(conn)?;
    let start = match current.as_deref() {
        None => {
            if let Some(table) = first_present(conn, OURS)? {
                return Err(MigrateError::Foreign(format!(
                    "this database has a table named {table} but no version of Stateous; \
                     start a new database"
                )));
            }
            conn.execute_batch("CREATE TABLE stateous_version (version_num TEXT PRIMARY KEY)")
                .map_err(StoreError::from)?;
            0
        }
        Some(version) => match MIGRATIONS.iter().position(|(v, _)| *v == version) {
            Some(index) => index + 1,
            None => {
                return Err(MigrateError::Foreign(format!(
                    "this database was made by another version of Stateous (schema {version}); \
                     use that version, or start a new database"
                )))
            }
        },
    };
    for (version, sql) in &MIGRATIONS[start..] {
        conn.execute_batch(sql).map_err(StoreError::from)?;
        conn.execute("DELETE FROM stateous_version", [])
            .map_err(StoreError::from)?;
        conn.execute(
            "INSERT INTO stateous_version (version_num) VALUES (?1)",
            [version],
        )
        .map_err(StoreError::from)?;
    }
    Ok(())
}

/// The recorded version, or `None` when the database has no `stateous_version`.
pub fn current_version(conn: &Connection) -> StoreResult<Option<String>> {
    if first_present(conn, &["stateous_version"])?.is_none() {
        return Ok(None);
    }
    let version: Option<String> = conn
        .query_row("SELECT version_num FROM stateous_version", [], |row| {
            row.get(0)
        })
        .optional()?;
    Ok(Some(version.unwrap_or_default()))
}

fn first_present(conn: &Connection, names: &[&str]) -> StoreResult<Option<String>> {
    let mut statement =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1")?;
    for name in names {
        if statement.exists([name])? {
            return Ok(Some((*name).to_string()));
        }
    }
    Ok(None)
}
