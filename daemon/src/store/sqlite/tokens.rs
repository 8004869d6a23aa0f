//! The SQL of `tokens`.

use rusqlite::types::Value as Param;
use rusqlite::{params, params_from_iter, OptionalExtension, Params, Row};

use super::{to_text, SqliteTx};
use crate::store::{
    Closed, Cursor, StoreResult, TokenReads, TokenRow, TokenScan, TokenStatus, Tokens,
};

const COLUMNS: &str =
    "token, state, status, visit, context, entered_at, parent, workflow, graph, trace";

fn read(row: &Row<'_>) -> rusqlite::Result<TokenRow> {
    TokenRow::read(row)
}

/// A row's values, in the order of [`COLUMNS`] (`?1` to `?10`).
fn values(row: &TokenRow) -> impl Params + '_ {
    (
        &row.token,
        &row.state,
        row.status.as_str(),
        row.visit,
        to_text(&row.context),
        row.entered_at,
        &row.parent,
        &row.workflow,
        row.graph.as_deref(),
        row.trace.as_deref(),
    )
}

impl Tokens for SqliteTx<'_> {
    fn lock_family(&self, _token: &str, _wait: bool) -> StoreResult<bool> {
        // The one writer thread runs one request at a time: it holds every token.
        Ok(true)
    }

    fn lock_top(&self, top: &str, _wait: bool) -> StoreResult<Option<Option<TokenRow>>> {
        Ok(Some(self.token(top)?))
    }

    fn token(&self, id: &str) -> StoreResult<Option<TokenRow>> {
        let sql = format!("SELECT {COLUMNS} FROM tokens WHERE token = ?1");
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([id], read).optional()?)
    }

    fn insert_token(&self, row: &TokenRow) -> StoreResult<()> {
        let sql = format!(
            "INSERT INTO tokens ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        );
        self.prepare(&sql)?.execute(values(row))?;
        Ok(())
    }

    fn update_token(&self, row: &TokenRow) -> StoreResult<()> {
        // The values of an insert but the last: `parent` and `workflow` (`?7`, `?8`)
        // never change, nor does `trace`, which is left out.
        let mut statement = self.prepare(
            "UPDATE tokens SET state = ?2, status = ?3, visit = ?4, context = ?5, entered_at = ?6,
             graph = ?9 WHERE token = ?1",
        )?;
        statement.execute((
            &row.token,
            &row.state,
            row.status.as_str(),
            row.visit,
            to_text(&row.context),
            row.entered_at,
            &row.parent,
            &row.workflow,
            row.graph.as_deref(),
        ))?;
        Ok(())
    }

    fn delete_token(&self, token: &str) -> StoreResult<()> {
        self.prepare(
            "DELETE FROM task_keys WHERE task IN (SELECT id FROM tasks WHERE token = ?1)",
        )?
        .execute([token])?;
        for table in [
            "ledger",
            "tasks",
            "timers",
            "memory",
            "priorities",
            "tokens",
        ] {
            let sql = format!("DELETE FROM {table} WHERE token = ?1");
            self.prepare(&sql)?.execute([token])?;
        }
        Ok(())
    }
}

impl TokenReads for SqliteTx<'_> {
    fn token_folded(&self, id: &str) -> StoreResult<Option<String>> {
        let mut statement = self.prepare(
            "SELECT token FROM tokens WHERE lower(token) = lower(?1) AND token <> ?1 LIMIT 1",
        )?;
        Ok(statement.query_row([id], |row| row.get(0)).optional()?)
    }

    fn find_tokens(
        &self,
        status: Option<TokenStatus>,
        parent: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tokens
             WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR parent = ?2)
             ORDER BY entered_at DESC, token LIMIT ?3"
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params![status.map(Closed::as_str), parent, limit], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn count_live(&self) -> StoreResult<i64> {
        let mut statement =
            self.prepare("SELECT count(*) FROM tokens WHERE status IN ('active', 'paused')")?;
        Ok(statement.query_row([], |row| row.get(0))?)
    }

    fn scan_tokens(
        &self,
        scan: &TokenScan,
        after: Option<&Cursor>,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        let (clause, mut values) = scan_clause(scan, after);
        let sql = format!(
            "SELECT {COLUMNS} FROM tokens WHERE {clause}
             ORDER BY entered_at DESC, token LIMIT ? OFFSET ?"
        );
        values.push(Param::Integer(limit));
        values.push(Param::Integer(offset));
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params_from_iter(values), read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn count_tokens(&self, scan: &TokenScan) -> StoreResult<i64> {
        let (clause, values) = scan_clause(scan, None);
        let sql = format!("SELECT count(*) FROM tokens WHERE {clause}");
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row(params_from_iter(values), |row| row.get(0))?)
    }

    fn walk_tokens(
        &self,
        scan: &TokenScan,
        after: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        let (mut clause, mut values) = scan_clause(scan, None);
        if let Some(after) = after {
            clause.push_str(" AND token > ?");
            values.push(Param::Text(after.to_string()));
        }
        values.push(Param::Integer(limit));
        let sql = format!("SELECT {COLUMNS} FROM tokens WHERE {clause} ORDER BY token LIMIT ?");
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params_from_iter(values), read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn holds_newest_id(&self, token: &str) -> StoreResult<bool> {
        // Without AUTOINCREMENT a new row takes max(id) + 1: deleting the newest
        // row would hand its id out again.
        let mut statement = self.prepare(
            "SELECT (SELECT token FROM ledger ORDER BY id DESC LIMIT 1) = ?1
                 OR (SELECT token FROM tasks ORDER BY id DESC LIMIT 1) = ?1
                 OR (SELECT token FROM timers ORDER BY id DESC LIMIT 1) = ?1",
        )?;
        let holds: Option<bool> = statement.query_row([token], |row| row.get(0))?;
        Ok(holds.unwrap_or(false))
    }

    fn traces_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, Option<String>)>> {
        // One prepared statement per token: SQLite's reads are calls in this
        // process, where Postgres takes the list in one statement.
        let mut statement = self.prepare("SELECT token, trace FROM tokens WHERE token = ?1")?;
        let mut found = Vec::with_capacity(tokens.len());
        for token in tokens {
            let row = statement
                .query_row([token], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            found.extend(row);
        }
        Ok(found)
    }

    fn tokens_of(&self, tokens: &[String]) -> StoreResult<Vec<TokenRow>> {
        // One prepared statement per token, as `traces_of`.
        let sql = format!("SELECT {COLUMNS} FROM tokens WHERE token = ?1");
        let mut statement = self.prepare(&sql)?;
        let mut found = Vec::with_capacity(tokens.len());
        for token in tokens {
            found.extend(statement.query_row([token], read).optional()?);
        }
        Ok(found)
    }
}

/// The condition of `scan` and `after` on `tokens`, with its parameters in order
/// (`?` placeholders; a list becomes `IN (?, ?, ...)`).
fn scan_clause(scan: &TokenScan, after: Option<&Cursor>) -> (String, Vec<Param>) {
    let mut parts = vec!["1 = 1".to_string()];
    let mut values = Vec::new();
    let mut list = |column: &str, items: Vec<String>, within: bool| {
        if items.is_empty() {
            // `IN ()` is not SQL: no state is in an empty list, every state is outside it.
            parts.push(if within { "1 = 0" } else { "1 = 1" }.to_string());
            return;
        }
        let marks = vec!["?"; items.len()].join(", ");
        let not = if within { "" } else { "NOT " };
        parts.push(format!("{column} {not}IN ({marks})"));
        values.extend(items.into_iter().map(Param::Text));
    };
    if let Some(states) = &scan.states {
        list("state", states.clone(), true);
    }
    list("state", scan.not_states.clone(), false);
    if let Some(statuses) = &scan.statuses {
        let names = statuses.iter().map(|s| s.as_str().to_string()).collect();
        list("status", names, true);
    }
    if let Some(parent) = &scan.parent {
        parts.push("parent = ?".to_string());
        values.push(Param::Text(parent.clone()));
    }
    if let Some(until) = scan.entered_until {
        parts.push("entered_at <= ?".to_string());
        values.push(Param::Integer(until));
    }
    if let Some(after) = scan.entered_after {
        parts.push("entered_at > ?".to_string());
        values.push(Param::Integer(after));
    }
    if let Some((entered_at, token)) = after {
        // `entered_at <= x` first, so that the index is searched from the cursor on
        // rather than scanned from its start (as the Postgres module explains).
        parts.push("entered_at <= ? AND (entered_at < ? OR token > ?)".to_string());
        values.push(Param::Integer(*entered_at));
        values.push(Param::Integer(*entered_at));
        values.push(Param::Text(token.clone()));
    }
    (parts.join(" AND "), values)
}
