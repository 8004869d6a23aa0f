//! The SQLite backend as `Control` sees it (`store::Store::Sqlite`): the hold on the
//! file, the one writer thread, the read connections and the feed's safe point.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::checkpointer::Checkpointer;
use super::hold::{self, FileHold, Taken};
use super::reader::Reader;
use super::schema::{first_to_run, migrate};
use super::writer::Writer;
use super::{open, SqliteTx};
use crate::store::backend::{Inspected, StoreOptions};
use crate::store::feed::FeedMark;
use crate::store::schema::MigrateError;
use crate::store::serving;
use crate::store::{ControlPlane, StoreError, StoreResult, Tx};
use crate::time_source::micros;

/// A SQLite database held by this control plane.
pub struct SqliteStore {
    writer: Writer,
    reader: Reader,
    mark: FeedMark,
    holder: String,
    epoch: i64,
    /// Held until `release` or the end of the process (the operating system ends it
    /// with the process).
    hold: std::sync::Mutex<Option<FileHold>>,
}

impl SqliteStore {
    /// Take the file's lock, make or upgrade the tables, record the hold and start
    /// the writer thread. Each refusal is one sentence.
    pub fn open(path: &Path, options: &StoreOptions) -> Result<SqliteStore, String> {
        let shown = path.display().to_string();
        let file_hold = match hold::take(path)? {
            Taken::Held(held) => held,
            Taken::Busy => return Err(held_by_another(path, options.busy_timeout)),
        };
        let conn = open(path, options.busy_timeout, false)
            .map_err(|e| format!("cannot open the database {shown}: {e}"))?;
        migrate(&conn).map_err(|e| match e {
            MigrateError::Foreign(why) => format!("cannot use the database {shown}: {why}"),
            other => format!("cannot open the database {shown}: {other}"),
        })?;
        let now = options.clock.now();
        let (epoch, last, held) = once(&conn, now, |tx| {
            let epoch = serving::take_hold(tx, &options.holder).map_err(|e| e.to_string())?;
            let last = tx.last_entry_id().map_err(|e| e.to_string())?;
            let held = tx.claim_facts_held().map_err(|e| e.to_string())?;
            Ok((epoch, last, held))
        })?;
        let mark = FeedMark::new(last);
        let checkpoints = Checkpointer::spawn(path, options.busy_timeout)
            .map_err(|e| format!("cannot open the database {shown}: {e}"))?;
        let (writer, _thread) = Writer::spawn_checkpointed(
            conn,
            options.clock.clone(),
            options.busy_timeout,
            mark.clone(),
            options.subscribed.clone(),
            Some(checkpoints),
        )
        .map_err(|e| format!("cannot start the writer thread: {e}"))?;
        writer.fence(epoch);
        writer.claim_switch().load(held);
        Ok(SqliteStore {
            writer,
            reader: Reader::new(path.to_path_buf(), options.busy_timeout),
            mark,
            holder: options.holder.clone(),
            epoch,
            hold: std::sync::Mutex::new(Some(file_hold)),
        })
    }

    /// See `Store::inspect`: one read on a read-only connection, without the
    /// file's lock, once the schema is this build's; a file that does not exist
    /// is [`Inspected::Empty`], and is not made.
    pub fn inspect<R>(
        path: &Path,
        options: &StoreOptions,
        read: impl FnOnce(&dyn Tx) -> StoreResult<R>,
    ) -> Result<Inspected<R>, String> {
        if !path.exists() {
            return Ok(Inspected::Empty);
        }
        let shown = path.display().to_string();
        let conn = open(path, options.busy_timeout, true)
            .map_err(|e| format!("cannot open the database {shown}: {e}"))?;
        let first = first_to_run(&conn).map_err(|e| match e {
            MigrateError::Foreign(why) => format!("cannot use the database {shown}: {why}"),
            other => format!("cannot open the database {shown}: {other}"),
        })?;
        if let Some(inspected) = Inspected::before_reading(first) {
            return Ok(inspected);
        }
        let cannot = |e: StoreError| format!("cannot use the database {shown}: {e}");
        conn.execute_batch("BEGIN").map_err(|e| cannot(e.into()))?;
        let answer = read(&SqliteTx::new(&conn, options.clock.now()));
        let ended = conn.execute_batch("COMMIT");
        let answer = answer.map_err(cannot)?;
        ended.map_err(|e| cannot(e.into()))?;
        Ok(Inspected::Read(answer))
    }

    /// See `Store::write`.
    pub fn write<R, F>(&self, work: F) -> impl std::future::Future<Output = StoreResult<R>> + Send
    where
        R: Send + 'static,
        F: Fn(&dyn Tx) -> (bool, R) + Send + Sync + 'static,
    {
        self.writer.submit(work)
    }

    /// See `Store::read`.
    pub async fn read<R, F>(&self, now: i64, read: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> StoreResult<R> + Send + 'static,
    {
        self.reader.read(now, read).await
    }

    /// The feed's safe point.
    pub fn mark(&self) -> &FeedMark {
        &self.mark
    }

    /// Whether a limit, a priority or a retry pause may be set
    /// (`store/claim_switch.rs`).
    pub fn claim_switch(&self) -> &crate::store::claim_switch::ClaimSwitch {
        self.writer.claim_switch()
    }

    /// How many transactions the writer committed.
    pub fn commits(&self) -> u64 {
        self.writer.commits()
    }

    /// True once a commit found another epoch on record.
    pub fn lost(&self) -> bool {
        self.writer.lost()
    }

    /// See `Store::keep_hold`.
    pub async fn keep_hold(&self, renew_every: Duration) -> StoreResult<bool> {
        let (holder, epoch) = (self.holder.clone(), self.epoch);
        let renew = micros(renew_every);
        let kept = self
            .writer
            .submit(move |tx| {
                let kept = serving::keep_hold(tx, &holder, epoch, renew);
                (kept.is_ok(), kept)
            })
            .await?;
        kept.map_err(|_| StoreError::Busy)
    }

    /// See `Store::release`: clear the record, then let the file lock go.
    pub async fn release(&self) -> StoreResult<()> {
        let holder = self.holder.clone();
        let released = self
            .writer
            .submit(move |tx| {
                let released = serving::release(tx, &holder);
                (released.is_ok(), released)
            })
            .await;
        if let Ok(mut hold) = self.hold.lock() {
            hold.take();
        }
        released?.map_err(|_| StoreError::Busy)
    }
}

/// The sentence when another process holds the file's lock: the record says who.
fn held_by_another(path: &Path, busy_timeout: Duration) -> String {
    let row = open(path, busy_timeout, true).ok().and_then(|conn| {
        let tx = SqliteTx::new(&conn, 0);
        tx.control_plane().ok()
    });
    serving::held_sentence(&row.unwrap_or_default())
}

/// Run one step on the write connection before the writer thread owns it, in its
/// own transaction; its error sentence becomes the error.
fn once<R>(
    conn: &Connection,
    now: i64,
    step: impl FnOnce(&dyn Tx) -> Result<R, String>,
) -> Result<R, String> {
    let failed = |e: rusqlite::Error| format!("cannot use the database: {e}");
    conn.execute_batch("BEGIN IMMEDIATE").map_err(failed)?;
    match step(&SqliteTx::new(conn, now)) {
        Ok(value) => {
            conn.execute_batch("COMMIT").map_err(failed)?;
            Ok(value)
        }
        Err(sentence) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(sentence)
        }
    }
}
