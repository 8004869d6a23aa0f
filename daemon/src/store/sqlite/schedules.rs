//! The SQL of `schedules`: each schedule's settings and where it stands; the clock
//! reads the due ones through the index `schedules_due`.

use rusqlite::{params, OptionalExtension, Row};

use super::{closed, SqliteTx};
use crate::store::schedules::{columns_of, put_sql, ScheduleRow, Schedules, WithLast, COLUMNS};
use crate::store::StoreResult;

fn read(row: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    ScheduleRow::read(row)
}

/// A schedule and its last token's status, read by [`with_last`].
static WITH_LAST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {}, k.status FROM schedules s LEFT JOIN tokens k ON k.token = s.last_token",
        columns_of("s")
    )
});

fn with_last(row: &Row<'_>) -> rusqlite::Result<WithLast> {
    let status: Option<String> = row.get(18)?;
    Ok((read(row)?, status.map(closed).transpose()?))
}

impl Schedules for SqliteTx<'_> {
    fn lock_schedule(&self, name: &str) -> StoreResult<Option<ScheduleRow>> {
        // The one writer holds every row: a plain read is under the lock.
        let sql = format!("SELECT {COLUMNS} FROM schedules WHERE name = ?1");
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([name], read).optional()?)
    }

    fn put_schedule(&self, row: &ScheduleRow) -> StoreResult<()> {
        static PUT: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| put_sql(|n| format!("?{n}")));
        self.prepare(&PUT)?.execute(params![
            row.name,
            row.spec,
            row.zone,
            row.token,
            row.context,
            row.jitter,
            row.overlap.as_str(),
            row.catch_up.as_str(),
            row.window,
            row.cap,
            row.status.as_str(),
            row.next_at,
            row.next_due,
            row.last_token,
            row.last_at,
            row.buffered,
            row.created_at,
            row.changed_at
        ])?;
        Ok(())
    }

    fn delete_schedule(&self, name: &str) -> StoreResult<bool> {
        let mut statement = self.prepare("DELETE FROM schedules WHERE name = ?1")?;
        Ok(statement.execute([name])? > 0)
    }

    fn schedule(&self, name: &str) -> StoreResult<Option<WithLast>> {
        let sql = format!("{} WHERE s.name = ?1", *WITH_LAST);
        let mut statement = self.prepare(&sql)?;
        Ok(statement.query_row([name], with_last).optional()?)
    }

    fn schedules(&self, after: Option<&str>, limit: i64) -> StoreResult<Vec<WithLast>> {
        let sql = format!(
            "{} WHERE (?1 IS NULL OR s.name > ?1) ORDER BY s.name LIMIT ?2",
            *WITH_LAST
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params![after, limit], with_last)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn due_schedules(&self, limit: i64) -> StoreResult<Vec<String>> {
        let mut statement = self.prepare(
            "SELECT name FROM schedules
             WHERE status = 'active' AND next_due <= ?1
             ORDER BY next_due, name LIMIT ?2",
        )?;
        let rows = statement.query_map(params![self.now(), limit], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn next_schedule_due_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let mut statement = self.prepare(
            "SELECT min(next_due) FROM schedules WHERE status = 'active' AND next_due > ?1",
        )?;
        Ok(statement.query_row([after], |row| row.get(0))?)
    }

    fn unblocked_schedules(&self) -> StoreResult<Vec<String>> {
        let mut statement = self.prepare(
            "SELECT s.name FROM schedules s LEFT JOIN tokens k ON k.token = s.last_token
             WHERE s.buffered IS NOT NULL AND s.status = 'active'
               AND (k.status IS NULL OR k.status NOT IN ('active', 'paused'))
             ORDER BY s.name",
        )?;
        let rows = statement.query_map([], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
