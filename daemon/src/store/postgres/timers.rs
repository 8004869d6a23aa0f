//! The SQL of `timers`: timeouts and routines' timers.

use postgres::Row;
use stateous_shared::wire::Object;

use super::{closed, get, PgTx};
use crate::store::json::{optional_object, to_text};
use crate::store::{StoreResult, TimerKind, TimerRow, TimerStatus, Timers};

const SELECT: &str =
    "SELECT id, token, state, visit, event, payload, set_at, due_at, status, kind FROM timers";

fn read(row: &Row) -> StoreResult<TimerRow> {
    Ok(TimerRow {
        id: get(row, 0)?,
        token: get(row, 1)?,
        state: get(row, 2)?,
        visit: get(row, 3)?,
        event: get(row, 4)?,
        payload: optional_object(get(row, 5)?)?,
        set_at: get(row, 6)?,
        due_at: get(row, 7)?,
        status: closed(row, 8)?,
        kind: closed(row, 9)?,
    })
}

impl Timers for PgTx<'_> {
    fn add_timer(
        &self,
        token: &str,
        state: &str,
        visit: i64,
        event: &str,
        payload: Option<&Object>,
        due_at: i64,
        kind: TimerKind,
    ) -> StoreResult<TimerRow> {
        let text = payload.map(to_text);
        let row = self.query_one(
            "INSERT INTO timers (token, state, visit, event, payload, set_at, due_at, status, kind)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) RETURNING id",
            &[
                &token,
                &state,
                &visit,
                &event,
                &text,
                &self.now,
                &due_at,
                &kind.as_str(),
            ],
        )?;
        Ok(TimerRow {
            id: get(&row, 0)?,
            token: token.to_string(),
            state: state.to_string(),
            visit,
            event: event.to_string(),
            payload: payload.cloned(),
            set_at: self.now,
            due_at,
            status: TimerStatus::Pending,
            kind,
        })
    }

    fn timer(&self, id: i64) -> StoreResult<Option<TimerRow>> {
        let found = self.query_opt(&format!("{SELECT} WHERE id = $1"), &[&id])?;
        found.as_ref().map(read).transpose()
    }

    fn pending_timers(&self, token: &str) -> StoreResult<Vec<TimerRow>> {
        let rows = self.query(
            &format!("{SELECT} WHERE token = $1 AND status = 'pending' ORDER BY id"),
            &[&token],
        )?;
        rows.iter().map(read).collect()
    }

    fn update_timer(&self, row: &TimerRow) -> StoreResult<()> {
        self.execute(
            "UPDATE timers SET status = $2, due_at = $3 WHERE id = $1",
            &[&row.id, &row.status.as_str(), &row.due_at],
        )?;
        Ok(())
    }

    fn due_timers(&self) -> StoreResult<Vec<i64>> {
        let rows = self.query(
            "SELECT m.id FROM timers m JOIN tokens k ON k.token = m.token
             WHERE m.status = 'pending' AND m.due_at <= $1 AND k.status = 'active'
             ORDER BY m.due_at, m.id",
            &[&self.now],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn next_due_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let row = self.query_one(
            "SELECT min(m.due_at) FROM timers m JOIN tokens k ON k.token = m.token
             WHERE m.status = 'pending' AND m.due_at > $1 AND k.status = 'active'",
            &[&after],
        )?;
        get(&row, 0)
    }
}
