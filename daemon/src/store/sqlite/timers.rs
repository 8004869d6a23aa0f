//! The SQL of `timers`: timeouts and routines' timers.

use rusqlite::{params, OptionalExtension, Row};

use super::{to_text, SqliteTx};
use crate::store::{NewTimer, StoreResult, TimerReads, TimerRow, Timers};

const COLUMNS: &str = "id, token, state, visit, event, payload, set_at, due_at, status, kind";

fn read(row: &Row<'_>) -> rusqlite::Result<TimerRow> {
    TimerRow::read(row)
}

impl Timers for SqliteTx<'_> {
    fn set_timer(&self, timer: NewTimer<'_>) -> StoreResult<TimerRow> {
        // No RETURNING: SQLite buffers its rows in a temporary table.
        let mut statement = self.prepare(
            "INSERT INTO timers (token, state, visit, event, payload, set_at, due_at, status, kind)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8)",
        )?;
        statement.execute(params![
            timer.token,
            timer.state,
            timer.visit,
            timer.event,
            timer.payload.map(to_text),
            self.now(),
            timer.due_at,
            timer.kind.as_str()
        ])?;
        Ok(timer.row(self.conn.last_insert_rowid(), self.now()))
    }

    fn pending_timers(&self, token: &str) -> StoreResult<Vec<TimerRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM timers WHERE token = ?1 AND status = 'pending' ORDER BY id"
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map([token], read)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn update_timer(&self, row: &TimerRow) -> StoreResult<()> {
        let mut statement =
            self.prepare("UPDATE timers SET status = ?2, due_at = ?3 WHERE id = ?1")?;
        statement.execute(params![row.id, row.status.as_str(), row.due_at])?;
        Ok(())
    }
}

impl TimerReads for SqliteTx<'_> {
    fn timer(&self, id: i64) -> StoreResult<Option<TimerRow>> {
        let sql = format!("SELECT {COLUMNS} FROM timers WHERE id = ?1");
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([id], read).optional()?)
    }

    fn due_timers(&self) -> StoreResult<Vec<i64>> {
        let mut statement = self.prepare(
            "SELECT m.id FROM timers m JOIN tokens k ON k.token = m.token
             WHERE m.status = 'pending' AND m.due_at <= ?1 AND k.status = 'active'
             ORDER BY m.due_at, m.id",
        )?;
        let rows = statement.query_map([self.now()], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn next_due_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let mut statement = self.prepare(
            "SELECT min(m.due_at) FROM timers m JOIN tokens k ON k.token = m.token
             WHERE m.status = 'pending' AND m.due_at > ?1 AND k.status = 'active'",
        )?;
        Ok(statement.query_row([after], |row| row.get(0))?)
    }
}
