//! The SQL of `timers`: timeouts and routines' timers.

use super::columns::Columns;
use super::{get, PgTx};
use crate::store::json::to_text;
use crate::store::{NewTimer, StoreResult, TimerReads, TimerRow, Timers};

const SELECT: &str =
    "SELECT id, token, state, visit, event, payload, set_at, due_at, status, kind FROM timers";

/// A token's pending timers, by id: its timers (index `timers_token`), then the
/// pending ones among them. The subquery (`OFFSET 0` keeps it apart) holds only
/// the token's condition: with `status = 'pending'` beside it, the plan Postgres
/// kept (a generic plan, made while the table was small) read every pending
/// timer by the partial index `timers_due` at each of the token's moves.
const PENDING: &str = "SELECT id, token, state, visit, event, payload, set_at, due_at, status, kind
     FROM (SELECT * FROM timers WHERE token = $1 OFFSET 0) m
     WHERE status = 'pending' ORDER BY id";

/// The flush's part of new timers (`pending.rs`): id, token, state, visit, event,
/// payload, set_at, due_at, status, kind, as [`flush_columns`] packs them.
pub(super) const FLUSH_NEW: &str =
    "mn AS (INSERT INTO timers (id, token, state, visit, event, payload, set_at, due_at, status, kind)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[]))";

/// The flush's part of changed timers: the columns of [`FLUSH_NEW`], and the ones
/// that change set.
pub(super) const FLUSH_CHANGED: &str =
    "mu AS (INSERT INTO timers (id, token, state, visit, event, payload, set_at, due_at, status, kind)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[])
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, due_at = excluded.due_at)";

/// Timers as the columns of [`FLUSH_NEW`] and [`FLUSH_CHANGED`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r TimerRow>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.id)
            .put(row.token.clone())
            .put(row.state.clone())
            .put(row.visit)
            .put(row.event.clone())
            .put(row.payload.as_ref().map(to_text))
            .put(row.set_at)
            .put(row.due_at)
            .put(row.status.as_str().to_string())
            .put(row.kind.as_str().to_string());
    })
}

impl Timers for PgTx<'_> {
    fn set_timer(&self, timer: NewTimer<'_>) -> StoreResult<TimerRow> {
        // Written with the transaction's other writes (`pending.rs`).
        let row = timer.row(self.next_id(&self.ids.timers)?, self.now.get());
        self.pending.borrow_mut().timers.add(row.id, row.clone());
        Ok(row)
    }

    fn pending_timers(&self, token: &str) -> StoreResult<Vec<TimerRow>> {
        let rows = self.query(PENDING, &[&token])?;
        rows.iter().map(TimerRow::read).collect()
    }

    fn update_timer(&self, row: &TimerRow) -> StoreResult<()> {
        self.pending
            .borrow_mut()
            .timers
            .change(&row.id, row.clone());
        Ok(())
    }
}

impl TimerReads for PgTx<'_> {
    fn timer(&self, id: i64) -> StoreResult<Option<TimerRow>> {
        let found = self.query_opt(&format!("{SELECT} WHERE id = $1"), &[&id])?;
        found.as_ref().map(TimerRow::read).transpose()
    }

    fn due_timers(&self) -> StoreResult<Vec<i64>> {
        let rows = self.query(
            "SELECT m.id FROM timers m JOIN tokens k ON k.token = m.token
             WHERE m.status = 'pending' AND m.due_at <= $1 AND k.status = 'active'
             ORDER BY m.due_at, m.id",
            &[&self.now.get()],
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

#[cfg(test)]
mod tests {
    use super::PENDING;
    use crate::store::postgres::plan_tests::{kept_plan, new_database};
    use crate::testing::PgTestDb;

    #[test]
    fn a_tokens_pending_timers_are_read_by_its_token_in_the_plan_postgres_keeps() {
        // With 200 pending timers the old statement was kept as a read of all of
        // them (`timers_due`), filtered by token.
        for rows in [0, 200] {
            let Some(db) = PgTestDb::create() else {
                return;
            };
            std::thread::spawn(move || {
                let mut conn = new_database(&db, rows);
                let plan = kept_plan(&mut conn, PENDING);
                assert!(
                    plan.contains("Index Cond: (token = $1)"),
                    "{rows} rows:\n{plan}"
                );
                assert!(!plan.contains("timers_due"), "{rows} rows:\n{plan}");
                assert!(!plan.contains("Seq Scan"), "{rows} rows:\n{plan}");
            })
            .join()
            .unwrap();
        }
    }
}
