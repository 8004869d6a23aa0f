//! The SQL of `ledger`: append-only; `seq` numbers each token's entries from 1.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension, Row};

use super::{to_text, SqliteTx};
use crate::store::{Ledger, LedgerReads, LedgerRow, NewEntry, StoreResult};

const COLUMNS: &str = "id, token, seq, at, kind, key, data, key_name";

fn read(row: &Row<'_>) -> rusqlite::Result<LedgerRow> {
    LedgerRow::read(row)
}

impl Ledger for SqliteTx<'_> {
    fn last_seq(&self, token: &str) -> StoreResult<i64> {
        Ok(self
            .prepare("SELECT coalesce(max(seq), 0) FROM ledger WHERE token = ?1")?
            .query_row([token], |row| row.get(0))?)
    }

    fn act_for(&self, key: Option<&str>) {
        *self.by.borrow_mut() = key.map(str::to_string);
    }

    fn insert_entry(&self, token: &str, seq: i64, entry: NewEntry<'_>) -> StoreResult<i64> {
        // No RETURNING: SQLite buffers its rows in a temporary table.
        self.prepare(
            "INSERT INTO ledger (token, seq, at, kind, key, data, key_name)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            token,
            seq,
            self.now(),
            entry.kind.as_str(),
            entry.key,
            to_text(entry.data),
            self.by.borrow().as_deref()
        ])?;
        let id = self.conn.last_insert_rowid();
        self.last_id.set(id);
        Ok(id)
    }

    fn counts(&self, token: &str) -> StoreResult<HashMap<String, i64>> {
        // Counted here, not with GROUP BY: SQLite groups through a temporary
        // B-tree, which costs more than the few rows of one token.
        let mut statement = self.prepare(
            "SELECT json_extract(data, '$.event') FROM ledger
             WHERE token = ?1 AND kind = 'event_accepted'",
        )?;
        let rows = statement.query_map([token], |row| row.get::<_, Option<String>>(0))?;
        let mut counts = HashMap::new();
        for event in rows {
            *counts.entry(event?.unwrap_or_default()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    fn visits(&self, token: &str, state: &str) -> StoreResult<i64> {
        let mut statement = self.prepare(
            "SELECT count(*) FROM ledger
             WHERE token = ?1 AND kind = 'entered' AND json_extract(data, '$.state') = ?2",
        )?;
        Ok(statement.query_row(params![token, state], |row| row.get(0))?)
    }

    fn last_accepted(&self, token: &str) -> StoreResult<Option<LedgerRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM ledger WHERE token = ?1 AND kind = 'event_accepted'
             ORDER BY seq DESC LIMIT 1"
        );
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([token], read).optional()?)
    }
}

impl LedgerReads for SqliteTx<'_> {
    fn entries_of(&self, ids: &[i64]) -> StoreResult<Vec<LedgerRow>> {
        // One prepared statement per entry: SQLite's reads are calls in this
        // process, where Postgres takes the list in one statement.
        let mut statement = self.prepare(&format!("SELECT {COLUMNS} FROM ledger WHERE id = ?1"))?;
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(statement.query_row([id], read).optional()?);
        }
        Ok(found)
    }

    fn entries_since(
        &self,
        after: i64,
        upto: i64,
        token: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<LedgerRow>> {
        // Two statements, so that each walks its own index: the primary key for all
        // tokens, `(token, seq)` for one (a token's ids grow with its seq).
        let rows = match token {
            None => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM ledger WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT ?3"
                );
                let mut statement = self.prepare(&sql)?;
                let rows = statement.query_map(params![after, upto, limit], read)?;
                rows.collect::<Result<_, _>>()?
            }
            Some(token) => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM ledger WHERE token = ?4 AND id > ?1 AND id <= ?2
                     ORDER BY seq LIMIT ?3"
                );
                let mut statement = self.prepare(&sql)?;
                let rows = statement.query_map(params![after, upto, limit, token], read)?;
                rows.collect::<Result<_, _>>()?
            }
        };
        Ok(rows)
    }

    fn last_entry_id(&self) -> StoreResult<i64> {
        let mut statement = self.prepare("SELECT coalesce(max(id), 0) FROM ledger")?;
        Ok(statement.query_row([], |row| row.get(0))?)
    }

    fn entries(&self, token: &str) -> StoreResult<Vec<LedgerRow>> {
        let sql = format!("SELECT {COLUMNS} FROM ledger WHERE token = ?1 ORDER BY seq");
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map([token], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn has_key(&self, token: &str, key: &str) -> StoreResult<bool> {
        let mut statement = self.prepare("SELECT 1 FROM ledger WHERE token = ?1 AND key = ?2")?;
        Ok(statement.exists(params![token, key])?)
    }
}
