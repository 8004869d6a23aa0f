//! For tests only: a fresh Postgres database per test, made on the server that
//! `STATEOUS_TEST_POSTGRES` names and dropped when the test ends, and plain reads of
//! a database's rows as text, so that tests can compare tables on both backends.
//! (Shipped in the library so that the black-box tests of the binary use it too.)

use std::sync::atomic::{AtomicU32, Ordering};

use postgres::{Client, NoTls, SimpleQueryMessage};

/// The environment variable that names the Postgres server of the tests:
/// `postgresql://USER@HOST:PORT/DATABASE`. Unset: the Postgres tests are skipped.
pub const POSTGRES_ENV: &str = "STATEOUS_TEST_POSTGRES";

static MADE: AtomicU32 = AtomicU32::new(0);

/// Run `work` on a thread of its own: the blocking Postgres client starts a runtime
/// of its own, which cannot run on a thread that drives async tests.
fn apart<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| match scope.spawn(work).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// A database made for one test; dropping it drops the database.
#[derive(Debug)]
pub struct PgTestDb {
    admin: String,
    name: String,
    url: String,
}

impl PgTestDb {
    /// A new empty database, or `None` when `STATEOUS_TEST_POSTGRES` is not set.
    /// Panics (it is for tests) when the server cannot make one.
    pub fn create() -> Option<PgTestDb> {
        let admin = std::env::var(POSTGRES_ENV).ok()?;
        let name = format!(
            "stateous_t_{}_{}_{:08x}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::SeqCst),
            rand::random::<u32>()
        );
        apart(|| {
            let mut client = Client::connect(&admin, NoTls)
                .unwrap_or_else(|e| panic!("cannot reach {POSTGRES_ENV}={admin}: {e}"));
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap_or_else(|e| panic!("cannot make the test database {name}: {e}"));
        });
        let url = match admin.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => format!("{admin}/{name}"),
        };
        Some(PgTestDb { admin, name, url })
    }

    /// The URL of the test's database, for `serve --db`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every row of `sql` as text (`None` for NULL), in the order the query gives.
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        apart(|| self.rows_here(sql))
    }

    fn rows_here(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        let mut client = Client::connect(&self.url, NoTls)
            .unwrap_or_else(|e| panic!("cannot reach {}: {e}", self.url));
        let messages = client
            .simple_query(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        messages
            .into_iter()
            .filter_map(|message| match message {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }

    /// Run statements (for tests that change the database from outside).
    pub fn execute(&self, sql: &str) {
        apart(|| {
            let mut client = Client::connect(&self.url, NoTls)
                .unwrap_or_else(|e| panic!("cannot reach {}: {e}", self.url));
            client
                .batch_execute(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        });
    }
}

impl Drop for PgTestDb {
    fn drop(&mut self) {
        // FORCE ends the sessions a killed daemon may have left behind.
        apart(|| {
            if let Ok(mut client) = Client::connect(&self.admin, NoTls) {
                let _ = client.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ));
            }
        });
    }
}
