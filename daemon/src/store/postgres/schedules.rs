//! The SQL of `schedules`, as SQLite's (`store/sqlite/schedules.rs`), but that a
//! schedule is read `FOR UPDATE` under its lock: here transactions of this process
//! run side by side (a request that runs alone beside the writer's batch).

use super::{closed, get, PgTx};
use crate::store::schedules::{columns_of, put_sql, ScheduleRow, Schedules, WithLast, COLUMNS};
use crate::store::StoreResult;

impl Schedules for PgTx<'_> {
    fn lock_schedule(&self, name: &str) -> StoreResult<Option<ScheduleRow>> {
        let rows = self.query(
            &format!("SELECT {COLUMNS} FROM schedules WHERE name = $1 FOR UPDATE"),
            &[&name],
        )?;
        rows.first().map(ScheduleRow::read).transpose()
    }

    fn put_schedule(&self, row: &ScheduleRow) -> StoreResult<()> {
        static PUT: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| put_sql(|n| format!("${n}")));
        self.execute(
            &PUT,
            &[
                &row.name,
                &row.spec,
                &row.zone,
                &row.token,
                &row.context,
                &row.jitter,
                &row.overlap.as_str(),
                &row.catch_up.as_str(),
                &row.window,
                &row.cap,
                &row.status.as_str(),
                &row.next_at,
                &row.next_due,
                &row.last_token,
                &row.last_at,
                &row.buffered,
                &row.created_at,
                &row.changed_at,
            ],
        )?;
        Ok(())
    }

    fn delete_schedule(&self, name: &str) -> StoreResult<bool> {
        Ok(self.execute("DELETE FROM schedules WHERE name = $1", &[&name])? > 0)
    }

    fn schedule(&self, name: &str) -> StoreResult<Option<WithLast>> {
        let rows = self.query(&format!("{} WHERE s.name = $1", with_last()), &[&name])?;
        rows.first().map(read_with_last).transpose()
    }

    fn schedules(&self, after: Option<&str>, limit: i64) -> StoreResult<Vec<WithLast>> {
        let rows = self.query(
            &format!(
                "{} WHERE ($1::text IS NULL OR s.name > $1) ORDER BY s.name LIMIT $2",
                with_last()
            ),
            &[&after, &limit],
        )?;
        rows.iter().map(read_with_last).collect()
    }

    fn due_schedules(&self, limit: i64) -> StoreResult<Vec<String>> {
        let rows = self.query(
            "SELECT name FROM schedules
             WHERE status = 'active' AND next_due <= $1
             ORDER BY next_due, name LIMIT $2",
            &[&self.now.get(), &limit],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn next_schedule_due_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let rows = self.query(
            "SELECT min(next_due) FROM schedules WHERE status = 'active' AND next_due > $1",
            &[&after],
        )?;
        match rows.first() {
            Some(row) => get(row, 0),
            None => Ok(None),
        }
    }

    fn unblocked_schedules(&self) -> StoreResult<Vec<String>> {
        let rows = self.query(
            "SELECT s.name FROM schedules s LEFT JOIN tokens k ON k.token = s.last_token
             WHERE s.buffered IS NOT NULL AND s.status = 'active'
               AND (k.status IS NULL OR k.status NOT IN ('active', 'paused'))
             ORDER BY s.name",
            &[],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }
}

/// A schedule and its last token's status: the query, then [`read_with_last`].
fn with_last() -> String {
    format!(
        "SELECT {}, k.status FROM schedules s LEFT JOIN tokens k ON k.token = s.last_token",
        columns_of("s")
    )
}

fn read_with_last(row: &postgres::Row) -> StoreResult<WithLast> {
    let status: Option<String> = get(row, 18)?;
    let status = match status {
        Some(_) => Some(closed(row, 18)?),
        None => None,
    };
    Ok((ScheduleRow::read(row)?, status))
}
