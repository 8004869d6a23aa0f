//! The SQLite SQL of each schema version ([`crate::store::schema::VERSIONS`]), and the
//! migration that brings a database file to the newest one (`docs/inside/data.md`).
//!
//! The tables and columns are the reference's; times are integers (microseconds
//! since 1970, UTC) instead of text, so comparisons in SQL are plain integer ones.
//! CHECK constraints mirror the status enums of `store::status`. Postgres keeps
//! the same tables and constraints (`store/postgres/schema.rs`).

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension};

use crate::store::schema::{
    plan, MigrateError, DELIVERED_COUNTED, HOT_INDEXES, LIMITS_INDEXES, NOTIFICATION_BATCHES_INDEX,
    NOTIFICATION_INDEXES, ORPHANS_DELETED, QUEUE_INDEXES, SCHEDULE_INDEXES, TASK_KEYS_INDEX,
    VERSIONS, VERSION_TABLE,
};
use crate::store::status::{
    check_list, CatchUp, ClockKind, Overlap, ScheduleStatus, TaskStatus, TimerKind, TimerStatus,
    TokenStatus,
};
use crate::store::{StoreError, StoreResult};

/// A step of a migration that SQL alone cannot write, run in its transaction.
pub type Step = fn(&Connection) -> Result<(), MigrateError>;

/// One version's migration: its SQL, then what SQL alone cannot do.
pub struct Migration {
    /// The statements, run as one batch.
    pub sql: String,
    /// Run after `sql`, inside the same transaction.
    pub then: Option<Step>,
}

impl Migration {
    fn sql(sql: impl Into<String>) -> Migration {
        Migration {
            sql: sql.into(),
            then: None,
        }
    }
}

/// The migration of each version, in the order of [`VERSIONS`].
pub fn migrations() -> [Migration; 22] {
    [
        Migration::sql(baseline()),
        Migration::sql(FEED),
        Migration::sql(FEED_WITHOUT_TRIGGER),
        Migration::sql(FEED_BY_ID),
        Migration::sql(clock_kind()),
        Migration::sql(HOT_INDEXES),
        Migration {
            sql: QUEUE_INDEX.to_string(),
            then: Some(rewrite_checks),
        },
        Migration {
            sql: WRITE_LESS.to_string(),
            then: Some(without_autoincrement),
        },
        Migration::sql(access_keys()),
        Migration::sql(GRAPHS),
        Migration::sql(KEY_SCOPES),
        Migration::sql(JOURNAL),
        Migration::sql(USAGE),
        Migration::sql(TOKEN_TRACES),
        Migration::sql(schedules()),
        Migration::sql(notifications()),
        Migration::sql(limits()),
        Migration::sql(task_keys()),
        Migration::sql(queue()),
        // 0020 changes Postgres's sequences only (`store/postgres/schema.rs`,
        // `id_blocks`): SQLite's writer numbers its rows itself.
        Migration::sql(""),
        Migration::sql(format!(
            "{NOTIFICATION_BATCHES}{NOTIFICATION_BATCHES_INDEX}{ORPHANS_DELETED}"
        )),
        // 0022 changes no table: from it on, the write path writes the
        // notifications of ledger entries as batches here too, which a build
        // before it would never send (so it refuses the database).
        Migration::sql(""),
    ]
}

/// Version 0021: `notification_batches`, as Postgres's 0021
/// (`store/postgres/schema.rs`): each array a JSON array. Until 0022 the
/// table stayed empty here.
const NOTIFICATION_BATCHES: &str = "
CREATE TABLE notification_batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription TEXT NOT NULL,
    entries TEXT NOT NULL,
    tokens TEXT NOT NULL,
    kinds TEXT NOT NULL,
    ats TEXT NOT NULL
);
";

/// Version 0018, the key of each queued task in each limit with `per`
/// (`docs/inside/data.md`, `task_keys`; `store/task_keys.rs`): written as the task
/// is queued and deleted as it leaves the queue, so that a claim finds the first
/// queued task of each key that is not full without reading the full keys' tasks.
/// A database that had such a limit gets its pool's rows at its next open
/// (`engine::claim_limits::key_pools`). `store/postgres/schema.rs` makes the same.
pub fn task_keys() -> String {
    format!(
        "
CREATE TABLE task_keys (
    pool TEXT NOT NULL,
    key TEXT NOT NULL,
    task INTEGER NOT NULL,
    PRIMARY KEY (pool, key, task)
);
{TASK_KEYS_INDEX} (task);"
    )
}

/// Version 0019, the sender's queue (`docs/inside/data.md`, `notifications`;
/// `docs/notifications.md`, "The guarantee"): the pending notifications indexed by
/// the moment each is due and by token, and each subscription's count of
/// delivered notifications kept in its row (`subscriptions.delivered`), so that
/// counting does not read the delivered ones. `store/postgres/schema.rs` makes
/// the same.
pub fn queue() -> String {
    format!(
        "ALTER TABLE subscriptions ADD COLUMN delivered INTEGER NOT NULL DEFAULT 0;
{DELIVERED_COUNTED}{QUEUE_INDEXES}"
    )
}

/// Version 0017, limits on claims (`docs/inside/data.md`, `limits` and `slots`;
/// `docs/limits.md`): each limit's settings and its rate's bucket, and the slots
/// claims took. A slot counts only while its task is claimed with its attempt
/// (`store/claim_limits.rs`). `store/postgres/schema.rs` makes the same.
pub fn limits() -> String {
    format!(
        "
CREATE TABLE limits (
    name TEXT PRIMARY KEY,
    states TEXT NOT NULL,
    max INTEGER NOT NULL CHECK (max >= 1),
    per TEXT,
    rate_count INTEGER,
    rate_period INTEGER,
    bucket REAL NOT NULL,
    bucket_at INTEGER NOT NULL,
    set_at INTEGER NOT NULL
);
CREATE TABLE slots (
    task INTEGER NOT NULL,
    pool TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (task, pool)
);
CREATE TABLE priorities (
    token TEXT PRIMARY KEY,
    priority INTEGER NOT NULL
);
CREATE TABLE key_turns (
    pool TEXT NOT NULL,
    key TEXT NOT NULL,
    last_at INTEGER NOT NULL,
    PRIMARY KEY (pool, key)
);
CREATE TABLE retry_policies (
    state TEXT PRIMARY KEY,
    delay INTEGER NOT NULL,
    doubling INTEGER NOT NULL,
    cap INTEGER NOT NULL,
    jitter INTEGER NOT NULL,
    set_at INTEGER NOT NULL
);
CREATE TABLE task_delays (
    task INTEGER PRIMARY KEY,
    not_before INTEGER NOT NULL
);
{LIMITS_INDEXES}"
    )
}

/// Version 0014, traces (`docs/inside/data.md`, `tokens`): each token keeps the
/// trace it was started in (`stateous_shared::trace_context::TokenTrace::stored`);
/// null for a token made before, whose trace is derived from its id.
/// `store/postgres/schema.rs` adds the same column.
const TOKEN_TRACES: &str = "
ALTER TABLE tokens ADD COLUMN trace TEXT;
";

/// Version 0013, usage and budgets (`docs/inside/data.md`, `usage` and `budgets`):
/// each token's sums of what its routines reported they spent, by usage name; and
/// the budgets, a token's own (`subject` `token`, named by its id) or a workflow's
/// default (`workflow`, named by the main workflow's name), as a JSON object of
/// numbers. `store/postgres/schema.rs` makes the same.
const USAGE: &str = "
CREATE TABLE usage (
    token TEXT NOT NULL,
    name TEXT NOT NULL,
    total REAL NOT NULL,
    PRIMARY KEY (token, name)
);
CREATE TABLE budgets (
    subject TEXT NOT NULL CHECK (subject IN ('token', 'workflow')),
    name TEXT NOT NULL,
    budget TEXT NOT NULL,
    set_at INTEGER NOT NULL,
    PRIMARY KEY (subject, name)
);
";

/// Version 0016, notifications (`docs/inside/data.md`; `docs/notifications.md`):
/// the subscriptions, the outbox of their notifications (ids never reused: the
/// `webhook-id` names one) and each delivery attempt. `store/postgres/schema.rs`
/// makes the same.
pub fn notifications() -> String {
    format!(
        "
CREATE TABLE subscriptions (
    name TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    kinds TEXT NOT NULL,
    states TEXT NOT NULL,
    workflow TEXT,
    filter TEXT,
    format TEXT NOT NULL CHECK (format = 'json' OR format = 'slack'),
    no_move_for INTEGER,
    status TEXT NOT NULL CHECK (status = 'active' OR status = 'paused'),
    secrets TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
);
CREATE TABLE notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription TEXT NOT NULL,
    entry INTEGER,
    token TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT,
    visit INTEGER,
    at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status = 'pending' OR status = 'delivered' OR status = 'dead'),
    attempts INTEGER NOT NULL,
    next_at INTEGER NOT NULL,
    last_error TEXT
);
CREATE TABLE notification_attempts (
    subscription TEXT NOT NULL,
    notification INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    at INTEGER NOT NULL,
    status INTEGER,
    latency INTEGER NOT NULL,
    reason TEXT,
    PRIMARY KEY (notification, attempt)
);
{NOTIFICATION_INDEXES}"
    )
}

/// Version 0015, schedules (`docs/inside/data.md`, `schedules`; `docs/schedules.md`):
/// each schedule's settings and where it stands. The clock reads the active ones
/// by due moment through `schedules_due`, so a tick costs the same with ten or ten
/// thousand schedules; `schedules_buffered` holds the few with an occurrence
/// waiting. What happens to a schedule is in `journal`, where
/// `journal_kind` finds a schedule's latest entries of one kind (its skipped
/// occurrences) without reading its others. `store/postgres/schema.rs` makes the
/// same.
pub fn schedules() -> String {
    format!(
        "
CREATE TABLE schedules (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    zone TEXT NOT NULL,
    token TEXT NOT NULL,
    context TEXT NOT NULL,
    jitter INTEGER NOT NULL,
    overlap TEXT NOT NULL CHECK ({overlap}),
    catch_up TEXT NOT NULL CHECK ({catch_up}),
    catch_up_window INTEGER NOT NULL,
    catch_up_cap INTEGER NOT NULL,
    status TEXT NOT NULL CHECK ({status}),
    next_at INTEGER,
    next_due INTEGER,
    last_token TEXT,
    last_at INTEGER,
    buffered INTEGER,
    created_at INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
);
{indexes}",
        overlap = any_of("overlap", &check_list::<Overlap>()),
        catch_up = any_of("catch_up", &check_list::<CatchUp>()),
        status = any_of("status", &check_list::<ScheduleStatus>()),
        indexes = SCHEDULE_INDEXES,
    )
}

/// Version 0012, the journal (`docs/inside/data.md`, `journal`): the ledger of what
/// is not a token, one row for each change to a runtime setting (a limit, a
/// schedule, a subscription) and for each thing that happens to one, with the
/// access key that made it (`key_name`, as `ledger.key_name`). The subjects and
/// kinds grow with the features that write them, so they have no CHECK list: each
/// feature writes and reads its own. `store/postgres/schema.rs` makes the same.
const JOURNAL: &str = "
CREATE TABLE journal (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    subject TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    key_name TEXT,
    data TEXT NOT NULL
);
CREATE INDEX journal_subject ON journal (subject, name, id);
";

/// Version 0011, scoped keys (`docs/inside/data.md`, `access_keys`): an `operate`
/// key may be limited to firing named events, in named states, for tokens a
/// filter matches; `scope` holds that limit as JSON, and only an `operate` key has
/// one. `store/postgres/schema.rs` adds the same column.
const KEY_SCOPES: &str = "
ALTER TABLE access_keys ADD COLUMN scope TEXT CHECK (scope IS NULL OR role = 'operate');
";

/// Version 0009: `access_keys` (`docs/inside/data.md`). Only the SHA-256 of a
/// secret is kept, never the secret. A `supervise` key, and only it, names its
/// supervisor. Times are microseconds, as everywhere; `last_used_at` moves at most
/// once a minute per key. A revoked key keeps its row (`revoked_at`), so that the
/// names in the ledger stay explained and a name is never given twice.
/// `ledger.key_name` names the key whose request wrote an entry (`None` without
/// one: the Unix socket, an open TCP port, the clock).
/// `store/postgres/schema.rs` makes the same table.
pub fn access_keys() -> String {
    format!(
        "
CREATE TABLE access_keys (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK ({roles}),
    supervisor TEXT,
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER,
    CHECK ((role = 'supervise') = (supervisor IS NOT NULL))
);
ALTER TABLE ledger ADD COLUMN key_name TEXT;
",
        roles = any_of("role", &crate::store::access::role_list())
    )
}

/// Version 0010, workflow versions (`docs/inside/data.md`): `graphs` keeps each
/// graph a control plane served, by checksum, with its document; `tokens.graph`
/// names the one a token started on (a child's is its parent's). Tokens of an
/// older database started on the graph on record. `store/postgres/schema.rs`
/// makes the same.
const GRAPHS: &str = "
CREATE TABLE graphs (
    checksum TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    structure TEXT NOT NULL,
    document TEXT NOT NULL,
    first_served INTEGER NOT NULL,
    last_served INTEGER NOT NULL
);
ALTER TABLE tokens ADD COLUMN graph TEXT;
UPDATE tokens SET graph = (SELECT checksum FROM control_plane WHERE id = 1);
";

/// Version 0008, for the write path's speed:
/// - `ledger`, `tasks` and `timers` without AUTOINCREMENT. With it, each INSERT
///   reads the table's row of `sqlite_sequence` and writes it back, about 4,000
///   instructions per row (callgrind, the ledger's INSERT), some 16 rows per
///   token of `orders`. Without it a new row takes the largest id plus one; the
///   newest row of these tables is never deleted (a prune keeps a token that holds
///   one: `tokens.rs` `holds_newest_id`), so that is the id AUTOINCREMENT gave, and
///   ids still only grow (the watch stream's `Last-Event-ID` relies on it). The
///   rows and pages stay as they are: only the tables' text changes
///   (`without_autoincrement`).
/// - fewer index entries to move when a task or timer changes status:
///   `tasks_token` and `timers_token` hold the token only (a token has a few rows;
///   its open ones are found among them), and `tasks_queued` goes (`tasks_queue`,
///   by state, serves every walk of the queue). `store/postgres/schema.rs` makes
///   the same indexes.
const WRITE_LESS: &str = "
DELETE FROM sqlite_sequence WHERE name IN ('ledger', 'tasks', 'timers');
DROP INDEX tasks_queued;
DROP INDEX tasks_token;
CREATE INDEX tasks_token ON tasks (token);
DROP INDEX timers_token;
CREATE INDEX timers_token ON timers (token);
";

/// Version 0008's rewrite: see [`WRITE_LESS`].
fn without_autoincrement(conn: &Connection) -> Result<(), MigrateError> {
    let old = "id INTEGER PRIMARY KEY AUTOINCREMENT,";
    let new = "id INTEGER PRIMARY KEY,";
    let edits: Vec<(&str, String, String)> = ["ledger", "tasks", "timers"]
        .into_iter()
        .map(|table| (table, old.to_string(), new.to_string()))
        .collect();
    rewrite_tables(conn, &edits, "the id column that Stateous made")
}

/// Version 0007, its index: the claim's walk (`Tasks::queued_tasks`: queued tasks
/// of one state in id order) reads `tasks_queue`, which held every task by its
/// status, so each change of a task's status moved its entry. Holding only queued
/// tasks, it changes when a task is queued and when it leaves the queue.
const QUEUE_INDEX: &str = "
DROP INDEX tasks_queue;
CREATE INDEX tasks_queue ON tasks (state, id) WHERE status = 'queued';
";

/// Version 0007, its CHECKs: SQLite evaluates `status IN (three or more
/// constants)` by building a temporary b-tree of the constants on every run of
/// the statement, so each INSERT or UPDATE of a token, task or timer built one
/// (about half the time of a task's status UPDATE). The same sets written as
/// `status = 'a' OR status = 'b' ...` are plain comparisons. The rows need no
/// rewrite, since the set is the same: only the tables' text changes
/// (`rewrite_tables`).
fn rewrite_checks(conn: &Connection) -> Result<(), MigrateError> {
    let edits: Vec<(&str, String, String)> = [
        ("tokens", check_list::<TokenStatus>()),
        ("tasks", check_list::<TaskStatus>()),
        ("timers", check_list::<TimerStatus>()),
    ]
    .into_iter()
    .map(|(table, list)| {
        let old = format!("CHECK (status IN ({list}))");
        let new = format!("CHECK ({})", any_of("status", &list));
        (table, old, new)
    })
    .collect();
    rewrite_tables(conn, &edits, "the CHECK of its status that Stateous made")
}

/// Replace, in the statement of each table, one text by another, with
/// `writable_schema`, then move `schema_version` on so that every connection
/// reads the schema again (sqlite.org `lang_altertable.html`, "Making Other Kinds
/// Of Table Schema Changes"). Only for changes that leave the rows' format as it
/// is. Runs inside the migration's transaction; a table whose statement does not
/// hold its old text is refused (`Foreign`: someone changed it; `what` names the
/// text) and nothing changes.
fn rewrite_tables(
    conn: &Connection,
    edits: &[(&str, String, String)],
    what: &str,
) -> Result<(), MigrateError> {
    let version: i64 = conn
        .query_row("PRAGMA schema_version", [], |row| row.get(0))
        .map_err(StoreError::from)?;
    conn.execute_batch("PRAGMA writable_schema = ON")
        .map_err(StoreError::from)?;
    let rewritten = edits.iter().try_for_each(|(table, old, new)| {
        let changed = conn
            .execute(
                "UPDATE sqlite_schema SET sql = replace(sql, ?2, ?3)
                 WHERE type = 'table' AND name = ?1 AND instr(sql, ?2) > 0",
                [*table, old.as_str(), new.as_str()],
            )
            .map_err(StoreError::from)?;
        if changed != 1 {
            return Err(MigrateError::Foreign(format!(
                "the {table} table of this database does not have {what}; \
                 start a new database"
            )));
        }
        Ok(())
    });
    let bumped = rewritten.and_then(|()| {
        conn.execute_batch(&format!("PRAGMA schema_version = {}", version + 1))
            .map_err(|e| MigrateError::from(StoreError::from(e)))
    });
    conn.execute_batch("PRAGMA writable_schema = OFF")
        .map_err(StoreError::from)?;
    bumped
}

/// `column = 'a' OR column = 'b' ...` from a CHECK list `'a', 'b', ...`.
fn any_of(column: &str, list: &str) -> String {
    list.split(", ")
        .map(|member| format!("{column} = {member}"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Version 0005: `control_plane.clock`, the kind of clock that served the database
/// (`store::status::ClockKind`), so that `serve --dev-clock` is refused on a database a
/// control plane on the real clock served. A database that has a graph on record was
/// served before this version, and so on the real clock; a new one has no kind until
/// its first control plane.
fn clock_kind() -> String {
    let kinds = check_list::<ClockKind>();
    format!(
        "
ALTER TABLE control_plane ADD COLUMN clock TEXT CHECK (clock IS NULL OR clock IN ({kinds}));
UPDATE control_plane SET clock = 'system' WHERE structure IS NOT NULL;
"
    )
}

/// Version 0004: `GET /watch` numbers entries by `ledger.id` and reads them up to
/// the feed's safe point (`store::feed`), as Postgres does, so `ledger_feed` goes;
/// `control_plane.epoch` counts the control planes that took the database, so that
/// a write commits only while its control plane's epoch is the recorded one.
const FEED_BY_ID: &str = "
DROP TABLE IF EXISTS ledger_feed;
ALTER TABLE control_plane ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
";

/// Version 0003: `Ledger::append` wrote the `ledger_feed` row itself, in the same
/// savepoint, instead of the trigger of 0002. An INSERT that fires a trigger runs in a
/// statement journal of its own, which copied every page it touched once more: about a
/// third of the write path's time.
const FEED_WITHOUT_TRIGGER: &str = "DROP TRIGGER IF EXISTS ledger_feed_append;";

/// Version 0002: the order of the ledger across tokens, for `GET /watch`. A trigger
/// numbered each ledger row as it was written, inside the writing transaction. Rows
/// written before 0002 were numbered by time.
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
fn baseline() -> String {
    let tokens = check_list::<TokenStatus>();
    let tasks = check_list::<TaskStatus>();
    let timers = check_list::<TimerStatus>();
    let kinds = check_list::<TimerKind>();
    format!(
        "
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
    status TEXT NOT NULL CHECK (status IN ({tokens})),
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
    status TEXT NOT NULL CHECK (status IN ({tasks})),
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
    status TEXT NOT NULL CHECK (status IN ({timers})),
    kind TEXT NOT NULL CHECK (kind IN ({kinds}))
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
"
    )
}

/// Bring the database to the newest schema inside one immediate transaction: a
/// migration that fails halfway changes nothing.
pub fn migrate(conn: &Connection) -> Result<(), MigrateError> {
    migrate_to(conn, VERSIONS.len())
}

/// Bring the database to version `VERSIONS[upto - 1]` (tests make older databases).
pub fn migrate_to(conn: &Connection, upto: usize) -> Result<(), MigrateError> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(StoreError::from)?;
    let result = migrate_inside(conn, upto);
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = conn.execute_batch(end).map_err(StoreError::from);
    result?;
    ended?;
    Ok(())
}

fn migrate_inside(conn: &Connection, upto: usize) -> Result<(), MigrateError> {
    let current = current_version(conn)?;
    let start = plan(current.as_deref(), &present_tables(conn)?)?;
    if current.is_none() {
        conn.execute_batch(&format!(
            "CREATE TABLE {VERSION_TABLE} (version_num TEXT PRIMARY KEY)"
        ))
        .map_err(StoreError::from)?;
    }
    let migrations = migrations();
    for index in start..upto.min(VERSIONS.len()) {
        let migration = &migrations[index];
        conn.execute_batch(&migration.sql)
            .map_err(StoreError::from)?;
        if let Some(then) = migration.then {
            then(conn)?;
        }
        conn.execute(&format!("DELETE FROM {VERSION_TABLE}"), [])
            .map_err(StoreError::from)?;
        conn.execute(
            &format!("INSERT INTO {VERSION_TABLE} (version_num) VALUES (?1)"),
            [VERSIONS[index]],
        )
        .map_err(StoreError::from)?;
    }
    Ok(())
}

/// The index in [`VERSIONS`] of the first migration the database needs, read
/// without changing it (0: no tables of ours yet; `VERSIONS.len()`: up to date).
/// A database this build cannot use is refused as a migration would refuse it.
pub fn first_to_run(conn: &Connection) -> Result<usize, MigrateError> {
    let current = current_version(conn)?;
    plan(current.as_deref(), &present_tables(conn)?)
}

/// The recorded version, or `None` when the database has no `stateous_version`.
pub fn current_version(conn: &Connection) -> StoreResult<Option<String>> {
    if !present_tables(conn)?.contains(VERSION_TABLE) {
        return Ok(None);
    }
    let version: Option<String> = conn
        .query_row(
            &format!("SELECT version_num FROM {VERSION_TABLE}"),
            [],
            |row| row.get(0),
        )
        .optional()?;
    Ok(Some(version.unwrap_or_default()))
}

fn present_tables(conn: &Connection) -> StoreResult<BTreeSet<String>> {
    let mut statement = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = statement.query_map([], |row| row.get::<_, String>(0))?;
    Ok(names.collect::<Result<_, _>>()?)
}
