//! The table `journal` (`docs/inside/data.md`): the ledger of what is not a token.
//! Each change to a control plane's runtime settings (a limit, a schedule, a
//! subscription, ...) and each thing that happens to one of them (a schedule's
//! occurrence started or skipped) is one row, with the access key that made it.
//! Rows are only ever appended. What a subject, a name and a kind mean belongs to
//! the feature that writes them; the store keeps them as text.

use stateous_shared::wire::Object;

use super::json::object;
use super::rows::Stored;
use super::through::passed_through;
use super::StoreResult;

/// A row of `journal`.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    /// Global and increasing.
    pub id: i64,
    /// When, in microseconds since 1970.
    pub at: i64,
    /// What kind of thing the row is about (`limit`, `schedule`, `subscription`).
    pub subject: String,
    /// Which one of them, by its name.
    pub name: String,
    /// What happened (`set`, `removed`, `paused`, `started`, `skipped`, ...).
    pub kind: String,
    /// The access key whose request wrote the row; `None` without one (the Unix
    /// socket, an open port, the clock).
    pub by: Option<String>,
    /// The facts of the kind, as a JSON object.
    pub data: Object,
}

impl JournalRow {
    /// From id, at, subject, name, kind, key_name, data.
    pub fn read<R: Stored>(row: &R) -> Result<JournalRow, R::Error> {
        Ok(JournalRow {
            id: row.int(0)?,
            at: row.int(1)?,
            subject: row.text(2)?,
            name: row.text(3)?,
            kind: row.text(4)?,
            by: row.maybe_text(5)?,
            data: object(&row.text(6)?).map_err(R::corrupt)?,
        })
    }
}

/// The columns of `journal` in the order [`JournalRow::read`] takes them.
pub const COLUMNS: &str = "id, at, subject, name, kind, key_name, data";

passed_through! {
    /// The table `journal`.
    pub trait Journal {
        /// Append one row at `Tx::now`, written by the access key the request acts
        /// for (`Ledger::act_for`); returns its id.
        fn journal_append(
            &self,
            subject: &str,
            name: &str,
            kind: &str,
            data: &Object,
        ) -> StoreResult<i64>;
        /// At most `limit` rows of `subject` (and of `name`, when given) with an id
        /// above `after`, in id order.
        fn journal(
            &self,
            subject: &str,
            name: Option<&str>,
            after: i64,
            limit: i64,
        ) -> StoreResult<Vec<JournalRow>>;
        /// At most `limit` rows of `subject`, `name` and `kind`, newest first (a
        /// schedule's latest skipped occurrences).
        fn journal_latest(
            &self,
            subject: &str,
            name: &str,
            kind: &str,
            limit: i64,
        ) -> StoreResult<Vec<JournalRow>>;
    }
}
