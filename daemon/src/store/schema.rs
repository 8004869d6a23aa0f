//! The schema's versions, the same on both backends (`docs/inside/data.md`, "Versions";
//! `docs/how-to/use-postgres.md`, "Start").
//!
//! Each version is one migration, numbered, and the database records the version it
//! is at in `stateous_version`. Each backend writes the SQL of each migration in its
//! own `schema.rs` (the types differ); at every version both have the same tables
//! and columns. This module decides what to run, and refuses a database this build
//! cannot use, in one sentence each:
//! - a version this build does not know (a newer Stateous made it);
//! - tables with our names but no recorded version (someone else's tables);
//! - a table that its version should have, missing;
//! - a table that an upgrade must make, already there.

use std::collections::BTreeSet;

use super::StoreError;

/// The versions, oldest first; the migration of each makes the database that.
pub const VERSIONS: [&str; 22] = [
    "0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009", "0010", "0011", "0012",
    "0013", "0014", "0015", "0016", "0017", "0018", "0019", "0020", "0021", "0022",
];

/// The table where the version is recorded: its own name, so that an application
/// that keeps `alembic_version` in the same database keeps it for itself.
pub const VERSION_TABLE: &str = "stateous_version";

/// The tables of version 0001.
const BASELINE: [&str; 7] = [
    "control_plane",
    "tokens",
    "ledger",
    "tasks",
    "timers",
    "memory",
    "claims",
];

/// Version 0009 adds the access keys (`docs/inside/data.md`, `access_keys`).
pub const ACCESS_KEYS: &str = "access_keys";

/// The index of 0009 in [`VERSIONS`]: a database that still needs it has no
/// access key.
pub const ACCESS_KEYS_FROM: usize = 8;

/// `ledger_feed` numbered the ledger for `GET /watch` in versions 0002 and 0003;
/// version 0004 reads `ledger.id` up to the feed's safe point instead.
const FEED: &str = "ledger_feed";

/// Version 0010 keeps every graph served, by checksum (`docs/inside/data.md`).
const GRAPHS: &str = "graphs";

/// Version 0012 adds the journal: the ledger of what is not a token
/// (`docs/inside/data.md`, `journal`).
const JOURNAL: &str = "journal";

/// Version 0013 adds usage and budgets: each token's sums of what its routines
/// spent, and the budgets of tokens and of workflows (`docs/inside/data.md`).
const USAGE: [&str; 2] = ["usage", "budgets"];

/// Version 0015 adds schedules (`docs/inside/data.md`, `schedules`).
const SCHEDULES: &str = "schedules";

/// Version 0016 adds notifications: the subscriptions, the outbox of their
/// notifications and each delivery attempt (`docs/inside/data.md`).
const NOTIFICATIONS: [&str; 3] = ["subscriptions", "notifications", "notification_attempts"];

/// Version 0016's indexes, the same SQL on both backends: each subscription's
/// queue of notifications not yet delivered (a sender reads its head), the dead
/// ones, at most one `no_move` notification per visit, and a subscription's
/// latest attempts.
pub const NOTIFICATION_INDEXES: &str = "
CREATE INDEX notifications_pending ON notifications (subscription, id) WHERE status = 'pending';
CREATE INDEX notifications_dead ON notifications (id) WHERE status = 'dead';
CREATE UNIQUE INDEX notifications_visit ON notifications (subscription, token, state, visit) WHERE kind = 'no_move';
CREATE INDEX notification_attempts_latest ON notification_attempts (subscription, at);
";

/// Version 0021 adds the batches of the outbox: the notifications of
/// ledger entries that one write of the write path made for one subscription, as
/// one row, which its queue turns into rows of `notifications` before it reads
/// them (`docs/inside/data.md`, `notification_batches`; `docs/notifications.md`,
/// "The outbox"). SQLite's write path writes there from 0022 on.
const NOTIFICATION_BATCHES: &str = "notification_batches";

/// Version 0021's index, the same SQL on both backends: a subscription's batches
/// in the order they were written.
pub const NOTIFICATION_BATCHES_INDEX: &str =
    "CREATE INDEX notification_batches_subscription ON notification_batches (subscription, id);\n";

/// Version 0021 also deletes the notifications, and their attempts, of
/// subscriptions that are gone: an earlier version wrote some for a
/// subscription removed while tokens were being written, which a new
/// subscription of the same name would have sent.
pub const ORPHANS_DELETED: &str = "
DELETE FROM notification_attempts WHERE subscription NOT IN (SELECT name FROM subscriptions);
DELETE FROM notifications WHERE subscription NOT IN (SELECT name FROM subscriptions);
";

/// Version 0017 adds limits on claims, their slots and the tokens' priorities
/// (`docs/inside/data.md`, `limits`, `slots` and `priorities`; `docs/limits.md`).
const LIMITS: [&str; 6] = [
    "limits",
    "slots",
    "priorities",
    "key_turns",
    "retry_policies",
    "task_delays",
];

/// Version 0018 adds the key of each queued task in each limit with `per`
/// (`docs/inside/data.md`, `task_keys`; `docs/limits.md`).
const TASK_KEYS: &str = "task_keys";

/// Version 0018's index of a task's rows (deleted as it leaves the queue), after
/// the table's key `(pool, key, task)`: a pool's keys in order and each key's
/// queued tasks in id order (a claim walks the keys and reads the first task of
/// each that is not full). Postgres makes it a hash index
/// (`store/postgres/schema.rs`, `task_keys`): no ordered index of tasks alone,
/// which its generic plan of a claim chose over the key's (reading every row of a
/// full key to find another key's first).
pub const TASK_KEYS_INDEX: &str = "CREATE INDEX task_keys_task ON task_keys";

/// Version 0017, the same SQL on both backends but for the types (each backend's
/// `schema.rs` writes its own): a limit's settings and its rate's bucket, and the
/// slots claims took, by pool and key.
pub const LIMITS_INDEXES: &str = "
CREATE INDEX slots_pool ON slots (pool, key);
CREATE INDEX task_delays_due ON task_delays (not_before);
";

/// Version 0019's indexes, the same SQL on both backends (each backend's
/// `schema.rs` adds the column `subscriptions.delivered`): a subscription's
/// pending notifications by the moment each is due (a queue reads the due ones
/// from the head, never those waiting for a retry), and, by token, those that
/// were tried or moved (`next_at > 0`; one never tried has `next_at` 0, so that
/// the write path writes no entry of this index): whether an earlier one of a
/// token waits, so that a token's notifications go in order. They replace
/// `notifications_pending`, by id. Each index's second term is one that only
/// the statements meant for it state (the due read and the counts say
/// `attempts >= 0`, the look-up by token `next_at > 0`): with both open to the
/// look-up, a plan made on a nearly empty table took `notifications_due` and
/// read every pending row of the subscription for each row.
pub const QUEUE_INDEXES: &str = "
DROP INDEX notifications_pending;
CREATE INDEX notifications_due ON notifications (subscription, next_at, id) WHERE status = 'pending' AND attempts >= 0;
CREATE INDEX notifications_token ON notifications (subscription, token, id) WHERE status = 'pending' AND next_at > 0;
";

/// Version 0019 counts each subscription's delivered notifications in its row
/// (`subscriptions.delivered`), from those the table holds at the migration,
/// and writes `next_at` 0 for the notifications never tried (due at once).
pub const DELIVERED_COUNTED: &str = "
UPDATE subscriptions SET delivered = (SELECT count(*) FROM notifications n
    WHERE n.subscription = subscriptions.name AND n.status = 'delivered');
UPDATE notifications SET next_at = 0 WHERE status = 'pending' AND attempts = 0;
";

/// Version 0006, the same SQL on both backends: indexes for the write path's hot
/// reads: the queue in id order (a claim takes the oldest queued task), the claimed
/// tasks by the end of their leases and the pending timers by their due time (the
/// clock's tick), all partial, so that they hold only the rows those reads look for;
/// and idempotency keys indexed only where a key was given.
pub const HOT_INDEXES: &str = "
CREATE INDEX tasks_queued ON tasks (id) WHERE status = 'queued';
CREATE INDEX tasks_leases ON tasks (lease_until) WHERE status = 'claimed';
DROP INDEX timers_due;
CREATE INDEX timers_due ON timers (due_at) WHERE status = 'pending';
DROP INDEX ledger_key;
CREATE UNIQUE INDEX ledger_key ON ledger (token, key) WHERE key IS NOT NULL;
";

/// Version 0015's indexes, the same SQL on both backends: the active schedules by
/// due moment (a tick reads the due ones from the head of it), the few with an
/// occurrence waiting for a live token, and a subject's journal entries of one kind
/// newest first (a schedule's latest skipped occurrences).
pub const SCHEDULE_INDEXES: &str = "
CREATE INDEX schedules_due ON schedules (next_due) WHERE status = 'active';
CREATE INDEX schedules_buffered ON schedules (name) WHERE buffered IS NOT NULL AND status = 'active';
CREATE INDEX journal_kind ON journal (subject, name, kind, id);
";

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
    VERSIONS[VERSIONS.len() - 1]
}

/// The tables of ours that a database at `version` has. Version 0005 adds a
/// column (`control_plane.clock`), no table; 0009 adds `access_keys`; 0010 adds
/// `graphs` (and the column `tokens.graph`); 0011 adds a column
/// (`access_keys.scope`), no table; 0012 adds `journal`; 0013 adds `usage` and
/// `budgets`; 0014 adds a column (`tokens.trace`), no table; 0015 adds `schedules`; 0016 adds
/// `subscriptions`, `notifications` and `notification_attempts`; 0017 adds `limits`,
/// `slots`, `priorities`, `key_turns`, `retry_policies` and `task_delays`; 0018
/// adds `task_keys`; 0019 adds a column (`subscriptions.delivered`) and indexes,
/// no table; 0020 changes Postgres's sequences, no table; 0021 adds
/// `notification_batches`; 0022 changes no table (SQLite's write path writes
/// there too).
pub fn tables_at(version: &str) -> BTreeSet<&'static str> {
    let mut tables: BTreeSet<&'static str> = BASELINE.into_iter().collect();
    if version == "0002" || version == "0003" {
        tables.insert(FEED);
    }
    // Versions are four digits, so they compare as text.
    if version >= "0009" {
        tables.insert(ACCESS_KEYS);
    }
    if version >= "0010" {
        tables.insert(GRAPHS);
    }
    if version >= "0012" {
        tables.insert(JOURNAL);
    }
    if version >= "0013" {
        tables.extend(USAGE);
    }
    if version >= "0015" {
        tables.insert(SCHEDULES);
    }
    if version >= "0016" {
        tables.extend(NOTIFICATIONS);
    }
    if version >= "0017" {
        tables.extend(LIMITS);
    }
    if version >= "0018" {
        tables.insert(TASK_KEYS);
    }
    if version >= "0021" {
        tables.insert(NOTIFICATION_BATCHES);
    }
    tables
}

/// Every table name this product ever made.
fn ours_ever() -> BTreeSet<&'static str> {
    let mut tables = tables_at(newest());
    tables.insert(FEED);
    tables
}

/// From the recorded version (`None`: no `stateous_version` table) and the tables
/// present, the index in [`VERSIONS`] of the first migration to run: 0 for a new
/// database, `VERSIONS.len()` for one that is up to date.
pub fn plan(current: Option<&str>, present: &BTreeSet<String>) -> Result<usize, MigrateError> {
    let Some(current) = current else {
        let foreign: Vec<&str> = ours_ever()
            .into_iter()
            .filter(|t| present.contains(*t))
            .collect();
        if let Some(table) = foreign.first() {
            return Err(MigrateError::Foreign(format!(
                "this database has a table named {table} but no version of Stateous; \
                 start a new database"
            )));
        }
        return Ok(0);
    };
    let Some(index) = VERSIONS.iter().position(|v| *v == current) else {
        return Err(MigrateError::Foreign(format!(
            "this database was made by another version of Stateous (schema {current}); \
             use that version, or start a new database"
        )));
    };
    let expected = tables_at(current);
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|t| !present.contains(*t))
        .collect();
    if !missing.is_empty() {
        return Err(MigrateError::Foreign(format!(
            "this database is at schema {current} but has no {} table; start a new database",
            missing.join(", ")
        )));
    }
    let made: Vec<&str> = VERSIONS[index + 1..]
        .iter()
        .flat_map(|v| tables_at(v))
        .filter(|t| !expected.contains(t) && present.contains(*t))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !made.is_empty() {
        return Err(MigrateError::Foreign(format!(
            "this database has a table named {} that Stateous did not make; start a new \
             database",
            made.join(", ")
        )));
    }
    Ok(index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_access_keys_come_with_0009() {
        assert_eq!(VERSIONS[ACCESS_KEYS_FROM], "0009");
        assert!(!tables_at("0008").contains(ACCESS_KEYS));
        assert!(tables_at("0009").contains(ACCESS_KEYS));
    }

    #[test]
    fn a_new_database_runs_every_migration_and_a_current_one_none() {
        assert_eq!(plan(None, &present(&["other_app"])).unwrap(), 0);
        let now: Vec<&str> = tables_at(newest()).into_iter().collect();
        assert_eq!(
            plan(Some(newest()), &present(&now)).unwrap(),
            VERSIONS.len()
        );
    }

    #[test]
    fn an_older_database_runs_the_migrations_after_its_version() {
        let at_0003: Vec<&str> = tables_at("0003").into_iter().collect();
        assert_eq!(plan(Some("0003"), &present(&at_0003)).unwrap(), 3);
        let at_0004: Vec<&str> = tables_at("0004").into_iter().collect();
        assert_eq!(plan(Some("0004"), &present(&at_0004)).unwrap(), 4);
    }

    #[test]
    fn databases_this_build_cannot_use_are_refused_in_one_sentence() {
        let error = plan(None, &present(&["tokens"])).unwrap_err().to_string();
        assert!(
            error.contains("a table named tokens but no version"),
            "{error}"
        );
        let error = plan(Some("0099"), &present(&[])).unwrap_err().to_string();
        assert!(
            error.contains("another version of Stateous (schema 0099)"),
            "{error}"
        );
        let error = plan(Some("0004"), &present(&["tokens"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("has no claims, control_plane"), "{error}");
    }
}
