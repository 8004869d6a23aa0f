//! The SQL of `journal`, as SQLite's (`store/sqlite/journal.rs`); the id comes
//! from the table's identity column and is read back with `RETURNING`.

use stateous_shared::wire::Object;

use super::{get, PgTx};
use crate::store::journal::{Journal, JournalRow, COLUMNS};
use crate::store::json::to_text;
use crate::store::StoreResult;

impl Journal for PgTx<'_> {
    fn journal_append(
        &self,
        subject: &str,
        name: &str,
        kind: &str,
        data: &Object,
    ) -> StoreResult<i64> {
        let by = self.by.borrow().clone();
        let row = self.query_one(
            "INSERT INTO journal (at, subject, name, kind, key_name, data)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[&self.now.get(), &subject, &name, &kind, &by, &to_text(data)],
        )?;
        get(&row, 0)
    }

    fn journal(
        &self,
        subject: &str,
        name: Option<&str>,
        after: i64,
        limit: i64,
    ) -> StoreResult<Vec<JournalRow>> {
        let rows = self.query(
            &format!(
                "SELECT {COLUMNS} FROM journal
                 WHERE subject = $1 AND ($2::text IS NULL OR name = $2) AND id > $3
                 ORDER BY id LIMIT $4"
            ),
            &[&subject, &name, &after, &limit],
        )?;
        rows.iter().map(JournalRow::read).collect()
    }

    fn journal_latest(
        &self,
        subject: &str,
        name: &str,
        kind: &str,
        limit: i64,
    ) -> StoreResult<Vec<JournalRow>> {
        let rows = self.query(
            &format!(
                "SELECT {COLUMNS} FROM journal
                 WHERE subject = $1 AND name = $2 AND kind = $3
                 ORDER BY id DESC LIMIT $4"
            ),
            &[&subject, &name, &kind, &limit],
        )?;
        rows.iter().map(JournalRow::read).collect()
    }
}
