//! What the in-process tests share: a fresh database of either backend, its rows as
//! text, and `both!`, which runs a test once on SQLite and once on Postgres (when
//! `STATEOUS_TEST_POSTGRES` names a server; otherwise the Postgres run says it was
//! skipped and passes).

// Each test file uses a different part.
#![allow(dead_code)]

use std::path::PathBuf;

use stateous_daemon::control::Options;
use stateous_daemon::store::backend::Database;
use stateous_daemon::testing::PgTestDb;

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh database for one test.
pub struct Db {
    pub backend: Backend,
    /// The SQLite file's folder (also a scratch folder on Postgres).
    pub dir: tempfile::TempDir,
    pg: Option<PgTestDb>,
}

impl Db {
    /// A new database of `backend`; `None` for Postgres when no server is named
    /// (the test then says that it skipped).
    pub fn new(backend: Backend) -> Option<Db> {
        let dir = tempfile::tempdir().unwrap();
        let pg = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => {
                stateous_shared::testing::postgres_server()?;
                // A server is named: one that cannot make a database fails the test.
                Some(PgTestDb::create().expect("a Postgres server"))
            }
        };
        Some(Db { backend, dir, pg })
    }

    /// The SQLite file.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("stateous.db")
    }

    /// The database as `--db` names it.
    pub fn database(&self) -> Database {
        match &self.pg {
            Some(pg) => Database::Postgres(pg.url().to_string()),
            None => Database::Sqlite(self.path()),
        }
    }

    /// The Postgres database's URL (`None` on SQLite).
    pub fn url(&self) -> Option<String> {
        self.pg.as_ref().map(|pg| pg.url().to_string())
    }

    /// The reference's defaults on this database (a small Postgres pool: tests run
    /// side by side on one server).
    pub fn options(&self) -> Options {
        let mut options = Options::on(self.database());
        options.postgres.pool = 4;
        options
    }

    /// Every row of `sql` as text; NULL as `None`.
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        match &self.pg {
            Some(pg) => pg.rows(sql),
            None => {
                let conn = rusqlite::Connection::open(self.path()).unwrap();
                let mut statement = conn.prepare(sql).unwrap();
                let columns = statement.column_count();
                let rows = statement
                    .query_map([], |row| {
                        Ok((0..columns)
                            .map(|i| match row.get_ref(i).unwrap() {
                                rusqlite::types::ValueRef::Null => None,
                                rusqlite::types::ValueRef::Integer(n) => Some(n.to_string()),
                                rusqlite::types::ValueRef::Real(x) => Some(x.to_string()),
                                rusqlite::types::ValueRef::Text(t)
                                | rusqlite::types::ValueRef::Blob(t) => {
                                    Some(String::from_utf8_lossy(t).into_owned())
                                }
                            })
                            .collect())
                    })
                    .unwrap();
                rows.map(Result::unwrap).collect()
            }
        }
    }

    /// Bring the database to the schema version `VERSIONS[upto - 1]`, as an older
    /// Stateous left it.
    pub fn make_at(&self, upto: usize) {
        match self.database() {
            Database::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                stateous_daemon::store::sqlite::schema::migrate_to(&conn, upto).unwrap();
            }
            Database::Postgres(url) => {
                std::thread::spawn(move || {
                    use stateous_daemon::store::postgres::{connector, PgConn, PgOptions};
                    let connector = connector(&url, &PgOptions::default()).unwrap();
                    let mut conn = PgConn::connect(&connector).unwrap();
                    stateous_daemon::store::postgres::schema::migrate_to(&mut conn, upto).unwrap();
                })
                .join()
                .unwrap();
            }
        }
    }

    /// Run statements from outside the control plane.
    pub fn execute(&self, sql: &str) {
        match &self.pg {
            Some(pg) => pg.execute(sql),
            None => {
                let conn = rusqlite::Connection::open(self.path()).unwrap();
                conn.execute_batch(sql).unwrap();
            }
        }
    }
}

/// The test graph `orders` (`tests/graphs/orders.json`) of another structure: the
/// same workflow, whose context's schema is described otherwise.
pub fn orders_of_another_structure() -> std::sync::Arc<stateous_shared::graph::Graph> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/orders.json");
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    document["schemas"]["Item"]["description"] = "An order, of the next version.".into();
    let graph = stateous_shared::graph::Graph::load(&document.to_string()).unwrap();
    std::sync::Arc::new(graph)
}

/// `both!(name, ...)`: for each `async fn name(db: Db)`, the tests `name::sqlite`
/// and `name::postgres`.
macro_rules! both {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let db = super::common::Db::new(super::common::Backend::Sqlite).unwrap();
                    super::$name(db).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(db) = super::common::Db::new(super::common::Backend::Postgres) {
                        super::$name(db).await;
                    }
                }
            }
        )+
    };
}
