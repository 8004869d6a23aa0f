//! The SQL of `ledger`: append-only; `seq` numbers each token's entries from 1.

use std::collections::HashMap;

use super::columns::Columns;
use super::{get, PgTx};
use crate::store::json::{object, to_text};
use crate::store::{Ledger, LedgerReads, LedgerRow, NewEntry, StoreResult};

const SELECT: &str = "SELECT id, token, seq, at, kind, key, data, key_name FROM ledger";

/// A string field of an entry's data, if it has one.
fn field(data: &str, name: &str) -> StoreResult<Option<String>> {
    Ok(object(data)?
        .get(name)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string))
}

/// The flush's part of new entries (`pending.rs`): id, token, seq, at, kind, key,
/// data, key_name, as [`flush_columns`] packs them.
pub(super) const FLUSH_NEW: &str =
    "l AS (INSERT INTO ledger (id, token, seq, at, kind, key, data, key_name)
      SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
                           $6::text[], $7::text[], $8::text[]))";

/// New entries as the columns of [`FLUSH_NEW`].
pub(super) fn flush_columns(rows: &[LedgerRow]) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.id)
            .put(row.token.clone())
            .put(row.seq)
            .put(row.at)
            .put(row.kind.clone())
            .put(row.key.clone())
            .put(to_text(&row.data))
            .put(row.by.clone());
    })
}

impl Ledger for PgTx<'_> {
    fn last_seq(&self, token: &str) -> StoreResult<i64> {
        let row = self.query_one(
            "SELECT coalesce(max(seq), 0) FROM ledger WHERE token = $1",
            &[&token],
        )?;
        get(&row, 0)
    }

    fn act_for(&self, key: Option<&str>) {
        *self.by.borrow_mut() = key.map(str::to_string);
    }

    fn insert_entry(&self, token: &str, seq: i64, entry: NewEntry<'_>) -> StoreResult<i64> {
        // Registered with the feed's mark before the id is handed out, so that the
        // watch stream never reads past a row that may still commit.
        if self.opened.get().is_none() {
            self.opened.set(Some(self.mark.open()));
        }
        // The seq is safe because the token's family lock is held (a new token's
        // rows conflict on `(token, seq)` instead, and the request runs again).
        // Written with the transaction's other writes (`pending.rs`).
        let id = self.next_id(&self.ids.ledger)?;
        if let Some(opened) = self.opened.get() {
            self.mark.saw(opened, id);
        }
        let by = self.by.borrow().clone();
        let row = entry.row(id, token, seq, self.now.get(), by);
        self.pending.borrow_mut().ledger.push(row);
        Ok(id)
    }

    fn counts(&self, token: &str) -> StoreResult<HashMap<String, i64>> {
        // Read in Rust, not with `->>`: Postgres's JSON operators refuse a whole
        // document that holds `\u0000` anywhere (say, in a payload), which would
        // leave the token unable to move.
        let rows = self.query(
            "SELECT data FROM ledger WHERE token = $1 AND kind = 'event_accepted'",
            &[&token],
        )?;
        let mut counts = HashMap::new();
        for row in &rows {
            let data: String = get(row, 0)?;
            let event = field(&data, "event")?;
            *counts.entry(event.unwrap_or_default()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    fn visits(&self, token: &str, state: &str) -> StoreResult<i64> {
        // In Rust, as `counts` (see there).
        let rows = self.query(
            "SELECT data FROM ledger WHERE token = $1 AND kind = 'entered'",
            &[&token],
        )?;
        let mut visits = 0;
        for row in &rows {
            let data: String = get(row, 0)?;
            if field(&data, "state")?.as_deref() == Some(state) {
                visits += 1;
            }
        }
        Ok(visits)
    }

    fn last_accepted(&self, token: &str) -> StoreResult<Option<LedgerRow>> {
        let found = self.query_opt(
            &format!(
                "{SELECT} WHERE token = $1 AND kind = 'event_accepted' ORDER BY seq DESC LIMIT 1"
            ),
            &[&token],
        )?;
        found.as_ref().map(LedgerRow::read).transpose()
    }
}

impl LedgerReads for PgTx<'_> {
    fn entries_of(&self, ids: &[i64]) -> StoreResult<Vec<LedgerRow>> {
        // The whole list in one statement, one round trip (SQLite reads an entry
        // at a time).
        let ids = ids.to_vec();
        let rows = self.query(&format!("{SELECT} WHERE id = ANY($1)"), &[&ids])?;
        rows.iter().map(LedgerRow::read).collect()
    }

    fn entries_since(
        &self,
        after: i64,
        upto: i64,
        token: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<LedgerRow>> {
        let rows = match token {
            None => self.query(
                &format!("{SELECT} WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3"),
                &[&after, &upto, &limit],
            )?,
            Some(token) => self.query(
                &format!(
                    "{SELECT} WHERE token = $4 AND id > $1 AND id <= $2 ORDER BY seq LIMIT $3"
                ),
                &[&after, &upto, &limit, &token],
            )?,
        };
        rows.iter().map(LedgerRow::read).collect()
    }

    fn last_entry_id(&self) -> StoreResult<i64> {
        let row = self.query_one("SELECT coalesce(max(id), 0) FROM ledger", &[])?;
        get(&row, 0)
    }

    fn entries(&self, token: &str) -> StoreResult<Vec<LedgerRow>> {
        let rows = self.query(
            &format!("{SELECT} WHERE token = $1 ORDER BY seq"),
            &[&token],
        )?;
        rows.iter().map(LedgerRow::read).collect()
    }

    fn has_key(&self, token: &str, key: &str) -> StoreResult<bool> {
        let found = self.query_opt(
            "SELECT 1 FROM ledger WHERE token = $1 AND key = $2",
            &[&token, &key],
        )?;
        Ok(found.is_some())
    }
}
