//! The hold on a Postgres database (issue "Postgres", item 5; reference
//! `docs/how-to/use-postgres.md`, "Run one control plane for each database").
//!
//! A control plane holds a session advisory lock on a connection of its own for as
//! long as it serves; the lock ends with that connection, so after a SIGKILL a new
//! control plane starts at once. The pool's connections are other sessions, so the
//! lock alone cannot stop them: each write transaction runs `stateous_fence(epoch)`
//! just before its commit (`schema.rs`). The fence fails when nobody holds the
//! serving lock (this control plane's lock connection ended) or when the recorded
//! epoch moved on (another control plane took the database): the transaction then
//! rolls back and the request answers 503 `not_serving`. A new holder moves the
//! epoch under an exclusive lock that each fence holds shared until its commit ends,
//! so no commit of the old holder lands after the new holder's first.

use std::sync::Mutex;

use postgres::Config;

use super::conn::PgConn;
use super::schema::SERVING_LOCK;
use crate::store::{StoreError, StoreResult};

/// The lock connection of a control plane that holds the database.
pub struct ServingLock {
    conn: Mutex<PgConn>,
}

/// What trying the lock found.
pub enum Tried {
    /// This control plane holds the database now.
    Held(ServingLock),
    /// Another session holds the lock; the connection is handed back to read who.
    Busy(PgConn),
}

impl ServingLock {
    /// Connect and try the lock without waiting. An error: Postgres cannot be
    /// reached (after at most the connect timeout).
    pub fn take(config: &Config) -> Result<Tried, postgres::Error> {
        let mut conn = PgConn::connect(config)?;
        let held: bool = conn
            .client()
            .query_one(&format!("SELECT pg_try_advisory_lock({SERVING_LOCK})"), &[])?
            .get(0);
        if !held {
            return Ok(Tried::Busy(conn));
        }
        Ok(Tried::Held(ServingLock {
            conn: Mutex::new(conn),
        }))
    }

    /// Run `work` on the lock's connection (the migration and the first epoch run
    /// there, before the pool exists).
    pub fn with<R>(&self, work: impl FnOnce(&mut PgConn) -> R) -> R {
        let mut conn = match self.conn.lock() {
            Ok(conn) => conn,
            Err(poisoned) => poisoned.into_inner(),
        };
        work(&mut conn)
    }

    /// Whether the lock's session is still alive (and so still holds the lock).
    pub fn alive(&self) -> StoreResult<()> {
        self.with(|conn| {
            if conn.is_closed() {
                return Err(StoreError::NotServing);
            }
            conn.batch("SELECT 1").map_err(|_| StoreError::NotServing)
        })
    }

    /// Let the lock go (a graceful stop): another control plane may start at once.
    pub fn unlock(&self) {
        self.with(|conn| {
            let _ = conn.batch(&format!("SELECT pg_advisory_unlock({SERVING_LOCK})"));
        });
    }
}
