//! The SQL of `journal`: append-only, read by subject and name.

use rusqlite::params;
use stateous_shared::wire::Object;

use super::{to_text, SqliteTx};
use crate::store::journal::{Journal, JournalRow, COLUMNS};
use crate::store::StoreResult;

impl Journal for SqliteTx<'_> {
    fn journal_append(
        &self,
        subject: &str,
        name: &str,
        kind: &str,
        data: &Object,
    ) -> StoreResult<i64> {
        self.prepare(
            "INSERT INTO journal (at, subject, name, kind, key_name, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            self.now(),
            subject,
            name,
            kind,
            self.by.borrow().as_deref(),
            to_text(data)
        ])?;
        Ok(self.conn.last_insert_rowid())
    }

    fn journal(
        &self,
        subject: &str,
        name: Option<&str>,
        after: i64,
        limit: i64,
    ) -> StoreResult<Vec<JournalRow>> {
        let mut statement = self.prepare(&format!(
            "SELECT {COLUMNS} FROM journal
             WHERE subject = ?1 AND (?2 IS NULL OR name = ?2) AND id > ?3
             ORDER BY id LIMIT ?4"
        ))?;
        let rows = statement.query_map(params![subject, name, after, limit], |row| {
            JournalRow::read(row)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn journal_latest(
        &self,
        subject: &str,
        name: &str,
        kind: &str,
        limit: i64,
    ) -> StoreResult<Vec<JournalRow>> {
        let mut statement = self.prepare(&format!(
            "SELECT {COLUMNS} FROM journal
             WHERE subject = ?1 AND name = ?2 AND kind = ?3
             ORDER BY id DESC LIMIT ?4"
        ))?;
        let rows = statement.query_map(params![subject, name, kind, limit], |row| {
            JournalRow::read(row)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
