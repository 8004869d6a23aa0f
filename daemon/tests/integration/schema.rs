//! The schema on both backends (`docs/how-to/use-postgres.md`, "Start"): the first
//! start makes the tables; an older version is upgraded in place and keeps its data; a
//! newer version, a missing table, or a table that an upgrade must make are each
//! refused in one sentence.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{Backend, Db};
use stateous_daemon::control::Control;
use stateous_daemon::store::schema::{newest, ACCESS_KEYS_FROM};
use stateous_daemon::store::sqlite::schema as sqlite_schema;
use stateous_shared::graph::Graph;

fn graph() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/orders.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// Make the database of `db` at the version `VERSIONS[upto - 1]`.
fn make_at(db: &Db, upto: usize) {
    db.make_at(upto);
}

async fn open(db: &Db) -> Result<Control, String> {
    Control::open(graph(), db.options()).await
}

fn version(db: &Db) -> String {
    db.rows("SELECT version_num FROM stateous_version")[0][0]
        .clone()
        .unwrap()
}

async fn an_older_database_is_upgraded_in_place_and_keeps_its_data(db: Db) {
    make_at(&db, 3);
    assert_eq!(version(&db), "0003");
    db.execute(
        "INSERT INTO tokens (token, state, status, visit, context, entered_at)
         VALUES ('OLD-1', 'draft', 'active', 1, '{\"title\": \"kept\"}', 1)",
    );
    let control = open(&db).await.unwrap();
    assert_eq!(version(&db), newest());
    let token = control.token("OLD-1".into()).await.unwrap();
    assert_eq!(token.context["title"], "kept");
    let tables: Vec<String> = db
        .rows("SELECT epoch FROM control_plane")
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    assert_eq!(tables, ["1"], "this control plane took epoch 1");
}

/// Make the database of `db` at `version`, with the subscription `ops`.
fn at_with_ops(db: &Db, version: &str) {
    let index = stateous_daemon::store::schema::VERSIONS
        .iter()
        .position(|v| *v == version)
        .unwrap();
    make_at(db, index + 1);
    db.execute(
        "INSERT INTO subscriptions (name, url, kinds, states, format, status, secrets,
             created_at, changed_at)
         VALUES ('ops', 'http://127.0.0.1:9/hook', '[\"completed\"]', '[]', 'json', 'active',
             '[\"whsec_c2VjcmV0\"]', 1, 1)",
    );
}

/// Schema 0019 counts each subscription's delivered notifications in its row:
/// the upgrade sets the count from the rows a database at 0017 holds.
async fn an_upgrade_to_0019_counts_the_delivered_notifications_it_finds(db: Db) {
    at_with_ops(&db, "0017");
    for (status, attempts) in [
        ("delivered", 1),
        ("delivered", 2),
        ("pending", 1),
        ("dead", 9),
    ] {
        db.execute(&format!(
            "INSERT INTO notifications (subscription, token, kind, at, status, attempts, next_at)
             VALUES ('ops', 'T', 'completed', 1, '{status}', {attempts}, 1)"
        ));
    }
    let control = open(&db).await.unwrap();
    assert_eq!(version(&db), newest());
    let list = control.subscriptions().await.unwrap();
    let counts = list.subscriptions[0].counts;
    assert_eq!(
        (
            counts.pending,
            counts.retrying,
            counts.delivered,
            counts.dead
        ),
        (0, 1, 2, 1)
    );
}

/// Schema 0021 deletes the notifications and attempts of subscriptions that
/// are gone (an earlier version wrote some for a subscription removed while
/// tokens were being written), and keeps those of the ones that are there.
async fn an_upgrade_to_0021_deletes_the_notifications_of_removed_subscriptions(db: Db) {
    at_with_ops(&db, "0020");
    for name in ["ops", "gone", "gone"] {
        db.execute(&format!(
            "INSERT INTO notifications (subscription, token, kind, at, status, attempts, next_at)
             VALUES ('{name}', 'T', 'completed', 1, 'pending', 1, 1)"
        ));
    }
    db.execute(
        "INSERT INTO notification_attempts (subscription, notification, attempt, at, latency)
         VALUES ('gone', 2, 1, 1, 5)",
    );
    let _control = open(&db).await.unwrap();
    assert_eq!(version(&db), newest());
    let left = db.rows("SELECT subscription FROM notifications");
    assert_eq!(left, [[Some("ops".to_string())]]);
    assert!(db
        .rows("SELECT notification FROM notification_attempts")
        .is_empty());
}

/// A wide `--listen` is judged before the database is opened: a database older
/// than the access keys has none, and is left as it is; one that has the table
/// but needs a later upgrade is judged after the open.
async fn a_database_older_than_the_access_keys_is_known_to_have_none(db: Db) {
    make_at(&db, ACCESS_KEYS_FROM);
    assert_eq!(Control::keys_known(&db.options()).await, Ok(Some(false)));
    assert_eq!(version(&db), "0008", "nothing was upgraded");
    make_at(&db, ACCESS_KEYS_FROM + 1);
    assert_eq!(Control::keys_known(&db.options()).await, Ok(None));
}

fn graph_named(name: &str) -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/graphs/{name}.json"));
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// A database of 0008 knows the checksum of the graph on record, not its document:
/// its tokens are named as running on it; a graph of the same structure serves
/// them and is kept, one of another structure is refused while they live (in one
/// sentence), and once theirs is kept, a version of another structure serves.
async fn tokens_of_a_database_from_before_versions_run_on_the_graph_on_record(db: Db) {
    make_at(&db, 8);
    let orders = graph();
    db.execute(&format!(
        "UPDATE control_plane SET structure = '{}', checksum = 'sha256:old', clock = 'system';
         INSERT INTO tokens (token, state, status, visit, context, entered_at)
         VALUES ('OLD-1', 'draft', 'active', 1, '{{\"title\": \"kept\"}}', 1)",
        orders.structure
    ));
    let other = Control::open(graph_named("sdlc"), db.options()).await;
    let refused = other.err().unwrap();
    assert!(
        refused.contains("which this database does not keep"),
        "{refused}"
    );
    assert!(
        !refused.contains("  "),
        "one sentence, spaced once: {refused}"
    );
    assert_eq!(
        db.rows("SELECT graph FROM tokens")[0][0].as_deref(),
        Some("sha256:old"),
        "the upgrade named the graph on record"
    );
    let control = open(&db).await.unwrap();
    let rows = db.rows("SELECT graph FROM tokens");
    assert_eq!(rows[0][0].as_deref(), Some(orders.checksum.as_str()));
    let kept = db.rows("SELECT checksum FROM graphs");
    assert_eq!(kept, [[Some(orders.checksum.clone())]]);
    control.shutdown().await.unwrap();
    let next = Control::open(common::orders_of_another_structure(), db.options()).await;
    assert!(next.is_ok(), "{:?}", next.err());
}

async fn a_newer_database_is_refused_in_one_sentence(db: Db) {
    make_at(&db, 4);
    db.execute("UPDATE stateous_version SET version_num = '9999'");
    let refused = open(&db).await.err().unwrap();
    assert!(
        refused.ends_with(
            "was made by another version of Stateous (schema 9999); use that version, or \
             start a new database"
        ),
        "{refused}"
    );
}

async fn a_database_missing_one_of_its_tables_is_refused(db: Db) {
    make_at(&db, 4);
    db.execute("DROP TABLE claims");
    let refused = open(&db).await.err().unwrap();
    assert!(
        refused.ends_with("is at schema 0004 but has no claims table; start a new database"),
        "{refused}"
    );
}

async fn a_table_that_an_upgrade_must_make_is_refused(db: Db) {
    make_at(&db, 1);
    db.execute("CREATE TABLE ledger_feed (x TEXT)");
    let refused = open(&db).await.err().unwrap();
    assert!(
        refused.contains("has a table named ledger_feed that Stateous did not make"),
        "{refused}"
    );
    assert_eq!(version(&db), "0001", "nothing changed");
}

both!(
    an_older_database_is_upgraded_in_place_and_keeps_its_data,
    tokens_of_a_database_from_before_versions_run_on_the_graph_on_record,
    a_newer_database_is_refused_in_one_sentence,
    a_database_missing_one_of_its_tables_is_refused,
    a_table_that_an_upgrade_must_make_is_refused,
    a_database_older_than_the_access_keys_is_known_to_have_none,
    an_upgrade_to_0019_counts_the_delivered_notifications_it_finds,
    an_upgrade_to_0021_deletes_the_notifications_of_removed_subscriptions,
);

#[test]
fn both_backends_have_the_same_tables_and_columns_at_each_version() {
    if Db::new(Backend::Postgres).is_none() {
        return;
    }
    for upto in 1..=stateous_daemon::store::schema::VERSIONS.len() {
        let pg = Db::new(Backend::Postgres).unwrap();
        let sqlite = Db::new(Backend::Sqlite).unwrap();
        make_at(&pg, upto);
        make_at(&sqlite, upto);
        let mut ours: Vec<String> = Vec::new();
        for table in sqlite.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        ) {
            let table = table[0].clone().unwrap();
            for column in sqlite.rows(&format!("SELECT name FROM pragma_table_info('{table}')")) {
                ours.push(format!("{table}.{}", column[0].clone().unwrap()));
            }
        }
        let mut theirs: Vec<String> = pg
            .rows(
                "SELECT table_name || '.' || column_name FROM information_schema.columns
                 WHERE table_schema = current_schema()",
            )
            .into_iter()
            .map(|row| row[0].clone().unwrap())
            .collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "at version {upto}");
    }
}

/// The statement of `table` as `sqlite_schema` holds it.
fn table_sql(db: &Db, table: &str) -> String {
    db.rows(&format!(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = '{table}'"
    ))[0][0]
        .clone()
        .unwrap()
}

#[test]
fn sqlite_0007_writes_status_checks_as_comparisons_that_still_refuse_other_statuses() {
    let db = Db::new(Backend::Sqlite).unwrap();
    make_at(&db, 6);
    db.execute(
        "INSERT INTO tokens (token, state, status, visit, context, entered_at)
         VALUES ('OLD-1', 'draft', 'active', 1, '{}', 1);
         INSERT INTO tasks (token, state, visit, status, queued_at)
         VALUES ('OLD-1', 'draft', 1, 'queued', 1);",
    );
    make_at(&db, 7);
    assert_eq!(version(&db), "0007");
    for table in ["tokens", "tasks", "timers"] {
        let sql = table_sql(&db, table);
        assert!(!sql.contains("status IN"), "{sql}");
        assert!(sql.contains("status = 'cancelled'"), "{sql}");
    }
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    for update in [
        "UPDATE tokens SET status = 'bogus'",
        "UPDATE tasks SET status = 'bogus'",
        "INSERT INTO timers (token, state, visit, event, set_at, due_at, status, kind)
         VALUES ('OLD-1', 'draft', 1, 'go', 1, 2, 'bogus', 'timer')",
    ] {
        let error = conn.execute_batch(update).unwrap_err().to_string();
        assert!(
            error.contains("CHECK constraint failed"),
            "{update}: {error}"
        );
    }
    conn.execute_batch("UPDATE tasks SET status = 'claimed', claimed_by = 's'")
        .unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(
        db.rows("SELECT count(*) FROM tokens")[0][0].as_deref(),
        Some("1")
    );
}

#[test]
fn sqlite_0007_refuses_a_tokens_table_whose_check_someone_changed() {
    let db = Db::new(Backend::Sqlite).unwrap();
    make_at(&db, 6);
    let changed = table_sql(&db, "tokens").replace("'failed', ", "");
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let schema_version: i64 = conn
        .query_row("PRAGMA schema_version", [], |row| row.get(0))
        .unwrap();
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    conn.execute(
        "UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'tokens'",
        [&changed],
    )
    .unwrap();
    conn.execute_batch(&format!(
        "PRAGMA schema_version = {}; PRAGMA writable_schema = OFF",
        schema_version + 1
    ))
    .unwrap();
    drop(conn);
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let error = sqlite_schema::migrate_to(&conn, 7).unwrap_err().to_string();
    assert!(
        error.contains("the tokens table of this database does not have the CHECK"),
        "{error}"
    );
    drop(conn);
    assert_eq!(version(&db), "0006", "nothing changed");
    assert!(table_sql(&db, "tasks").contains("status IN"));
}

#[test]
fn sqlite_0008_takes_autoincrement_off_and_ids_go_on_from_the_largest() {
    let db = Db::new(Backend::Sqlite).unwrap();
    make_at(&db, 7);
    db.execute(
        "INSERT INTO ledger (token, seq, at, kind, data) VALUES ('OLD-1', 1, 1, 'started', '{}');
         INSERT INTO ledger (token, seq, at, kind, data) VALUES ('OLD-1', 2, 1, 'entered', '{}');
         INSERT INTO tasks (token, state, visit, status, queued_at)
         VALUES ('OLD-1', 'draft', 1, 'queued', 1);
         INSERT INTO timers (token, state, visit, event, set_at, due_at, status, kind)
         VALUES ('OLD-1', 'draft', 1, 'go', 1, 2, 'pending', 'timer');",
    );
    make_at(&db, 8);
    assert_eq!(version(&db), "0008");
    for table in ["ledger", "tasks", "timers"] {
        let sql = table_sql(&db, table);
        assert!(!sql.contains("AUTOINCREMENT"), "{sql}");
        assert!(sql.contains("id INTEGER PRIMARY KEY,"), "{sql}");
    }
    assert_eq!(
        db.rows("SELECT count(*) FROM sqlite_sequence")[0][0].as_deref(),
        Some("0")
    );
    db.execute(
        "INSERT INTO ledger (token, seq, at, kind, data) VALUES ('OLD-1', 3, 1, 'paused', '{}');
         INSERT INTO tasks (token, state, visit, status, queued_at)
         VALUES ('OLD-1', 'draft', 2, 'queued', 1);",
    );
    assert_eq!(
        db.rows("SELECT id FROM ledger ORDER BY id"),
        vec![
            vec![Some("1".to_string())],
            vec![Some("2".to_string())],
            vec![Some("3".to_string())]
        ]
    );
    assert_eq!(
        db.rows("SELECT max(id) FROM tasks")[0][0].as_deref(),
        Some("2")
    );
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}
