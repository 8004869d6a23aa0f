//! The database a daemon under test serves: a SQLite file in its folder, or a fresh
//! Postgres database (when `STATEOUS_TEST_POSTGRES` names a server) dropped when the
//! last daemon using it is gone. `both!(test, ...)` runs each test once per backend.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use stateous_daemon::testing::PgTestDb;

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

thread_local! {
    /// The backend that daemons started on this thread serve (a test is one thread).
    static BACKEND: Cell<Backend> = const { Cell::new(Backend::Sqlite) };
}

/// The backend of the test running on this thread.
pub fn backend() -> Backend {
    BACKEND.with(Cell::get)
}

/// Held shared by each test on Postgres, and alone by the one that restarts the
/// server: the tests of this binary run side by side, and a restart would end the
/// sessions of the others.
static SERVER: RwLock<()> = RwLock::new(());

/// Run `test` with daemons on `backend`; on Postgres without a server named, say
/// it was skipped (a server named but out of reach fails the test).
pub fn on(backend: Backend, test: fn()) {
    let _server = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => {
            if stateous_shared::testing::postgres_server().is_none() {
                return;
            }
            Some(SERVER.read().unwrap_or_else(PoisonError::into_inner))
        }
    };
    run_on(backend, test);
}

/// Run `test` on Postgres while no other test uses the server, so that it may
/// restart it; without a server named, say it was skipped.
pub fn alone_on_postgres(test: fn()) {
    if stateous_shared::testing::postgres_server().is_none() {
        return;
    }
    let _server = SERVER.write().unwrap_or_else(PoisonError::into_inner);
    run_on(Backend::Postgres, test);
}

fn run_on(backend: Backend, test: fn()) {
    BACKEND.with(|b| b.set(backend));
    test();
    BACKEND.with(|b| b.set(Backend::Sqlite));
}

/// `both!(name, ...)`: for each `fn name()`, the tests `name::sqlite` and
/// `name::postgres`.
macro_rules! both {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[test]
                fn sqlite() {
                    super::harness::on(super::harness::Backend::Sqlite, super::$name);
                }

                #[test]
                fn postgres() {
                    super::harness::on(super::harness::Backend::Postgres, super::$name);
                }
            }
        )+
    };
}

/// One daemon's database; clones share it (a restart serves the same one).
#[derive(Debug, Clone)]
pub struct TestDatabase {
    /// The SQLite file (on Postgres: where it would be; nothing is there).
    pub path: PathBuf,
    pg: Option<Arc<PgTestDb>>,
}

impl TestDatabase {
    /// A new database for a daemon in `dir`, on this thread's backend; `path` is
    /// the SQLite file to use.
    pub fn new(path: PathBuf) -> TestDatabase {
        let pg = match backend() {
            Backend::Sqlite => None,
            Backend::Postgres => Some(Arc::new(
                PgTestDb::create().expect("a Postgres test database"),
            )),
        };
        TestDatabase { path, pg }
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        if self.pg.is_some() {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }

    /// The URL for `serve --db`.
    pub fn url(&self) -> String {
        match &self.pg {
            Some(pg) => pg.url().to_string(),
            None => format!("sqlite:///{}", self.path.display()),
        }
    }

    /// Every row of `sql` as text; NULL as `None`.
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        match &self.pg {
            Some(pg) => pg.rows(sql),
            None => sqlite_rows(&self.path, sql),
        }
    }

    /// Run statements from outside the daemon (waiting up to 10 s for a lock).
    pub fn execute(&self, sql: &str) {
        match &self.pg {
            Some(pg) => pg.execute(sql),
            None => {
                let conn = rusqlite::Connection::open(&self.path).expect("the database");
                conn.busy_timeout(std::time::Duration::from_secs(10))
                    .expect("a busy timeout");
                conn.execute_batch(sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
    }
}

fn sqlite_rows(path: &Path, sql: &str) -> Vec<Vec<Option<String>>> {
    use rusqlite::types::ValueRef;
    let conn = rusqlite::Connection::open(path).expect("the database");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("a busy timeout");
    let mut statement = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let columns = statement.column_count();
    let rows = statement
        .query_map([], |row| {
            Ok((0..columns)
                .map(|i| match row.get_ref(i).expect("a column") {
                    ValueRef::Null => None,
                    ValueRef::Integer(n) => Some(n.to_string()),
                    ValueRef::Real(x) => Some(x.to_string()),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                })
                .collect())
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.map(|row| row.expect("a row")).collect()
}

/// Run an async test body on a runtime of its own (tests that `both!` runs are
/// plain functions).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}
