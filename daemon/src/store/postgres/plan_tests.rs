//! For tests: the plan Postgres keeps for a prepared statement after a few runs
//! (a generic plan, made with the statistics of that moment), on a database as a
//! new control plane finds it: migrated and empty, or a few hundred rows later,
//! before any `ANALYZE`. A plan made then is kept while the tables grow, so a
//! statement that must read rows by an index must do so in these plans.

use super::conn::{config, PgConn};
use super::schema::migrate;
use super::PgOptions;
use crate::testing::PgTestDb;

/// The tables whose plans matter: they grow with every token.
const GROWING: [&str; 5] = ["tokens", "tasks", "timers", "ledger", "memory"];

/// A connection to `db`, migrated, with `rows` rows in each growing table and
/// no statistics (autovacuum is off for them, so none come while the test runs),
/// whose statements are planned as Postgres plans them for good
/// (`plan_cache_mode = force_generic_plan`).
pub fn new_database(db: &PgTestDb, rows: i64) -> PgConn {
    let config = config(db.url(), &PgOptions::default()).unwrap();
    let mut conn = PgConn::connect(&config).unwrap();
    migrate(&mut conn).unwrap();
    for table in GROWING {
        conn.batch(&format!(
            "ALTER TABLE {table} SET (autovacuum_enabled = false)"
        ))
        .unwrap();
    }
    conn.batch(&format!(
        "INSERT INTO tokens (token, state, status, visit, context, entered_at)
           SELECT 'ORDER-' || i, 'review', 'active', 1, '{{\"title\": \"an order\"}}', i
           FROM generate_series(1, {rows}) i;
         INSERT INTO tasks (id, token, state, visit, status, queued_at)
           SELECT i, 'ORDER-' || i, 'review', 1, 'done', i FROM generate_series(1, {rows}) i;
         INSERT INTO timers (id, token, state, visit, event, set_at, due_at, status, kind)
           SELECT i, 'ORDER-' || i, 'review', 1, 'late', i, i + 60, 'pending', 'timeout'
           FROM generate_series(1, {rows}) i;
         INSERT INTO ledger (id, token, seq, at, kind, data)
           SELECT i, 'ORDER-' || i, 1, i, 'entered', '{{\"state\": \"review\"}}'
           FROM generate_series(1, {rows}) i;
         INSERT INTO memory (token, state, key, value)
           SELECT 'ORDER-' || i, 'review', 'seen', 'true' FROM generate_series(1, {rows}) i;
         SET plan_cache_mode = force_generic_plan"
    ))
    .unwrap();
    conn
}

/// The plan Postgres keeps for `sql` on `conn`, as text (`EXPLAIN EXECUTE` with
/// every parameter NULL: a generic plan does not look at them).
pub fn kept_plan(conn: &mut PgConn, sql: &str) -> String {
    let count = parameters(sql);
    let nulls = vec!["NULL"; count].join(", ");
    let execute = if count == 0 {
        "EXECUTE kept".to_string()
    } else {
        format!("EXECUTE kept({nulls})")
    };
    conn.batch(&format!("DEALLOCATE ALL; PREPARE kept AS {sql}"))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    conn.texts(&format!("EXPLAIN {execute}"))
        .unwrap()
        .join("\n")
}

/// The highest `$n` of `sql`.
fn parameters(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            rest[..digits].parse().ok()
        })
        .max()
        .unwrap_or(0)
}
