//! The hold on a Postgres database (`docs/how-to/use-postgres.md`, "What differs from
//! SQLite").
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
//!
//! A standby (`serve --standby`) asks for the same lock every [`Standby::every`] on a
//! connection of its own, and holds it from the first yes: [`ServingLock::wait`] ends
//! where [`ServingLock::take`] does, and everything after (the migration, the epoch,
//! the pool) is the same code for both. It asks rather than waits in
//! `pg_advisory_lock`, so that a stop is seen at once, a lost connection is found and
//! made again, and no statement limit applies.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::conn::{Connector, PgConn, Unconnected};
use super::schema::SERVING_LOCK;
use crate::store::backend::Standby;
use crate::store::guard::{as_it_is, locked};
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
    /// reached, or does not answer (after at most the connect timeout, or the
    /// statement deadline for the lock's question).
    pub fn take(connector: &Connector) -> Result<Tried, Unconnected> {
        let mut conn = PgConn::connect(connector)?;
        let held = try_lock(&mut conn).map_err(|error| match error {
            StoreError::NotAnswering(limit) => Unconnected::Silent(limit),
            other => Unconnected::Other(other.to_string()),
        })?;
        if !held {
            return Ok(Tried::Busy(conn));
        }
        Ok(Tried::Held(ServingLock {
            conn: Mutex::new(conn),
        }))
    }

    /// Wait until this control plane holds the lock, asking every `standby.every`
    /// on a connection of its own; a connection that fails is made again (each try
    /// within the connect timeout). `None`: `standby.stop` was set first.
    pub fn wait(connector: &Connector, standby: &Standby) -> Option<ServingLock> {
        let mut conn: Option<PgConn> = None;
        let mut unreachable = false;
        loop {
            if standby.stop.load(Ordering::SeqCst) {
                return None;
            }
            let asked = match conn.as_mut() {
                Some(open) => try_lock(open).map_err(|e| e.to_string()),
                None => PgConn::connect(connector)
                    .map_err(|e| e.to_string())
                    .and_then(|mut open| {
                        let held = try_lock(&mut open).map_err(|e| e.to_string());
                        conn = Some(open);
                        held
                    }),
            };
            match asked {
                Ok(true) => {
                    return conn.map(|conn| ServingLock {
                        conn: Mutex::new(conn),
                    })
                }
                Ok(false) => {
                    if unreachable {
                        tracing::info!(target: "stateous.serve", "standby: reached the database again; waiting for its serving lock");
                        unreachable = false;
                    }
                }
                Err(error) => {
                    // A connection that did not answer is made again too.
                    conn = None;
                    if !unreachable {
                        tracing::warn!(target: "stateous.serve", "standby: lost the connection to the database ({error}); connecting again");
                        unreachable = true;
                    }
                }
            }
            std::thread::sleep(standby.every);
        }
    }

    /// Run `work` on the lock's connection (the migration and the first epoch run
    /// there, before the pool exists).
    pub fn with<R>(&self, work: impl FnOnce(&mut PgConn) -> R) -> R {
        work(&mut locked(&self.conn, as_it_is))
    }

    /// Whether the lock's session is still alive (and so still holds the lock):
    /// `NotServing` when it ended; `NotAnswering` when the server did not answer in
    /// time, which says nothing about the session (the connection stays, and its
    /// late answer is dropped).
    pub fn alive(&self) -> StoreResult<()> {
        self.with(|conn| {
            if conn.is_closed() {
                return Err(StoreError::NotServing);
            }
            conn.ping("SELECT 1").map_err(|error| match error {
                StoreError::NotAnswering(limit) => StoreError::NotAnswering(limit),
                _ => StoreError::NotServing,
            })
        })
    }

    /// Let the lock go (a graceful stop): another control plane may start at once.
    pub fn unlock(&self) {
        self.with(|conn| {
            let _ = conn.ping(&format!("SELECT pg_advisory_unlock({SERVING_LOCK})"));
        });
    }
}

/// Ask for the serving lock once, without waiting; true: this session holds it.
fn try_lock(conn: &mut PgConn) -> StoreResult<bool> {
    conn.ask_bool(&format!("SELECT pg_try_advisory_lock({SERVING_LOCK})"), &[])
}
