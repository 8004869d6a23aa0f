//! SQLite reads use their own connections (a small pool), never the writer's, so a long
//! read never holds up the write path. Each read is one snapshot (a deferred
//! transaction); WAL lets it run beside the writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use super::{open, SqliteTx};
use crate::store::{StoreError, StoreResult, Tx};

/// How many idle read connections are kept.
const POOL: usize = 4;

/// A cheap, cloneable pool of read connections.
#[derive(Clone)]
pub struct Reader {
    path: Arc<PathBuf>,
    busy_timeout: Duration,
    idle: Arc<Mutex<Vec<Connection>>>,
}

impl Reader {
    /// A pool on the database file.
    pub fn new(path: PathBuf, busy_timeout: Duration) -> Reader {
        Reader {
            path: Arc::new(path),
            busy_timeout,
            idle: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Run `read` in one snapshot at `now`, on a blocking thread.
    pub async fn read<R, F>(&self, now: i64, read: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> StoreResult<R> + Send + 'static,
    {
        let pool = self.clone();
        tokio::task::spawn_blocking(move || pool.read_now(now, read))
            .await
            .map_err(|_| StoreError::Database("a read failed unexpectedly".into()))?
    }

    fn read_now<R>(
        &self,
        now: i64,
        read: impl FnOnce(&dyn Tx) -> StoreResult<R>,
    ) -> StoreResult<R> {
        let conn = match self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            Some(conn) => conn,
            None => open(&self.path, self.busy_timeout, true)?,
        };
        conn.execute_batch("BEGIN")?;
        let result = read(&SqliteTx::new(&conn, now));
        let ended = conn.execute_batch("COMMIT");
        if ended.is_ok() {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < POOL {
                    idle.push(conn);
                }
            }
        }
        let value = result?;
        ended?;
        Ok(value)
    }
}
