//! The table `schedules` (schema 0015, `docs/inside/data.md`): each schedule's
//! settings and where it stands (its next occurrence and when that is due, its last
//! token, an occurrence waiting for a live token to end). The index
//! `schedules_due` holds the active ones by due moment, so the clock reads the due
//! ones without reading the others. What happened to a schedule is in `journal`.

use super::rows::Stored;
use super::through::passed_through;
use super::{CatchUp, Overlap, ScheduleStatus, StoreResult, TokenStatus};

/// A row of `schedules`. Times are microseconds since 1970.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    /// Its name (the key).
    pub name: String,
    /// A cron expression or `every DURATION`, as given.
    pub spec: String,
    /// The IANA time zone.
    pub zone: String,
    /// The token id template.
    pub token: String,
    /// The context template, as JSON text.
    pub context: String,
    /// The most an occurrence's start moves after its moment.
    pub jitter: i64,
    /// What an occurrence does while a token of an earlier one is live.
    pub overlap: Overlap,
    /// What happens to missed occurrences.
    pub catch_up: CatchUp,
    /// `all`: how far back a missed occurrence still starts.
    pub window: i64,
    /// `all`: the most starts of one catch-up.
    pub cap: i64,
    /// Active or paused.
    pub status: ScheduleStatus,
    /// The moment of the next occurrence not yet handled; `None` when none comes.
    pub next_at: Option<i64>,
    /// When it is due: `next_at` moved by its jitter.
    pub next_due: Option<i64>,
    /// The token of the last occurrence that started one.
    pub last_token: Option<String>,
    /// That occurrence's moment.
    pub last_at: Option<i64>,
    /// The moment of an occurrence waiting for the live token to end.
    pub buffered: Option<i64>,
    /// When it was added.
    pub created_at: i64,
    /// When its settings last changed.
    pub changed_at: i64,
}

/// The columns of `schedules` in the order [`ScheduleRow::read`] takes them.
pub const COLUMNS: &str = "name, spec, zone, token, context, jitter, overlap, catch_up, \
                           catch_up_window, catch_up_cap, status, next_at, next_due, \
                           last_token, last_at, buffered, created_at, changed_at";

/// [`COLUMNS`], each named with the table's alias `alias` (for a join).
pub fn columns_of(alias: &str) -> String {
    COLUMNS
        .split(',')
        .map(|column| format!("{alias}.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statement of `Schedules::put_schedule`, the same on both backends but for
/// its placeholders: `placeholder(n)` writes the nth value, from 1, in the order of
/// [`COLUMNS`].
pub fn put_sql(placeholder: fn(usize) -> String) -> String {
    let columns: Vec<&str> = COLUMNS.split(',').map(str::trim).collect();
    let values: Vec<String> = (1..=columns.len()).map(placeholder).collect();
    let sets: Vec<String> = columns
        .iter()
        .filter(|c| !matches!(**c, "name" | "created_at"))
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    format!(
        "INSERT INTO schedules ({COLUMNS}) VALUES ({}) ON CONFLICT (name) DO UPDATE SET {}",
        values.join(", "),
        sets.join(", ")
    )
}

impl ScheduleRow {
    /// From [`COLUMNS`].
    pub fn read<R: Stored>(row: &R) -> Result<ScheduleRow, R::Error> {
        Ok(ScheduleRow {
            name: row.text(0)?,
            spec: row.text(1)?,
            zone: row.text(2)?,
            token: row.text(3)?,
            context: row.text(4)?,
            jitter: row.int(5)?,
            overlap: row.closed(6)?,
            catch_up: row.closed(7)?,
            window: row.int(8)?,
            cap: row.int(9)?,
            status: row.closed(10)?,
            next_at: row.maybe_int(11)?,
            next_due: row.maybe_int(12)?,
            last_token: row.maybe_text(13)?,
            last_at: row.maybe_int(14)?,
            buffered: row.maybe_int(15)?,
            created_at: row.int(16)?,
            changed_at: row.int(17)?,
        })
    }
}

/// A schedule with its last token's status (`None`: no last token, or it is gone).
pub type WithLast = (ScheduleRow, Option<TokenStatus>);

passed_through! {
    /// The table `schedules`.
    pub trait Schedules {
        /// The schedule, as it is under a lock held until the transaction ends
        /// (Postgres: `FOR UPDATE`; SQLite's one writer holds every row), so that
        /// two transactions never both act on one occurrence.
        fn lock_schedule(&self, name: &str) -> StoreResult<Option<ScheduleRow>>;
        /// Add the schedule, or write every column of the one of its name but
        /// `created_at` ([`put_sql`]).
        fn put_schedule(&self, row: &ScheduleRow) -> StoreResult<()>;
        /// Delete the schedule; false when there was none.
        fn delete_schedule(&self, name: &str) -> StoreResult<bool>;
        /// The schedule with its last token's status, read without a lock.
        fn schedule(&self, name: &str) -> StoreResult<Option<WithLast>>;
        /// At most `limit` schedules by name, after `after` when given, each with
        /// its last token's status.
        fn schedules(&self, after: Option<&str>, limit: i64) -> StoreResult<Vec<WithLast>>;
        /// At most `limit` active schedules whose next occurrence is due at
        /// `Tx::now`, by due moment then name (the index `schedules_due`).
        fn due_schedules(&self, limit: i64) -> StoreResult<Vec<String>>;
        /// The earliest due moment after `after` of an active schedule (the dev
        /// clock steps to it).
        fn next_schedule_due_after(&self, after: i64) -> StoreResult<Option<i64>>;
        /// The active schedules with an occurrence waiting whose last token is no
        /// longer live (ended, or gone), by name.
        fn unblocked_schedules(&self) -> StoreResult<Vec<String>>;
    }
}
