//! Times and ages as the screen shows them, from the model's `now` and zone (UTC
//! while `z` says so, else the zone of the model: the machine's own by default).

use chrono::{DateTime, FixedOffset, Local, Offset, Utc};
use stateous_shared::durations::span_packed;
use stateous_shared::history::{entry_line_in, what};
use stateous_shared::wire::HistoryEntry;

use crate::model::Model;

/// The offset times are shown in at the moment `at`: UTC, the model's fixed zone,
/// or the machine's local zone then (which a change to summer time moves).
fn offset(model: &Model, at: DateTime<Utc>) -> FixedOffset {
    if model.utc {
        return Utc.fix();
    }
    match model.zone {
        Some(zone) => zone,
        None => at.with_timezone(&Local).offset().fix(),
    }
}

/// An ISO 8601 time in the model's zone; `None` when it is not a time.
fn shown(model: &Model, at: &str) -> Option<DateTime<FixedOffset>> {
    let moment = DateTime::parse_from_rfc3339(at).ok()?.with_timezone(&Utc);
    Some(moment.with_timezone(&offset(model, moment)))
}

/// An ISO 8601 time as `HH:MM:SS` in the model's zone, with its date before it
/// (`2026-11-29 23:10:00`) when that is not today there; `?` when it is not a
/// time.
pub fn clock(model: &Model, at: &str) -> String {
    let Some(moment) = shown(model, at) else {
        return "?".to_string();
    };
    let today = model
        .now
        .with_timezone(&offset(model, model.now))
        .date_naive();
    if moment.date_naive() == today {
        moment.format("%H:%M:%S").to_string()
    } else {
        moment.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

/// One history line, `HH:MM:SS  #SEQ  WHAT` (the date first when it is not
/// today), in the model's zone, and `  (by key NAME)` for an entry a request
/// with an access key wrote.
pub fn history_line(model: &Model, entry: &HistoryEntry) -> String {
    let Some(moment) = shown(model, &entry.at) else {
        // A time in another form (a reference daemon's, without its offset) is
        // read as the shared history lines read it.
        return entry_line_in(entry, &offset(model, model.now));
    };
    let line = format!(
        "{}  #{}  {}",
        clock(model, &entry.at),
        entry.seq,
        what(&entry.kind, &entry.data, moment.offset())
    );
    match &entry.by {
        Some(by) => format!("{line}  (by key {by})"),
        None => line,
    }
}

/// Seconds from `now` to the ISO 8601 time `at` (negative when it is past).
pub fn seconds_until(now: DateTime<Utc>, at: &str) -> Option<i64> {
    let moment = DateTime::parse_from_rfc3339(at).ok()?;
    Some((moment.with_timezone(&Utc) - now).num_seconds())
}

/// How long ago the ISO 8601 time `at` was: `42s`; `?` when it is not a time.
pub fn age(model: &Model, at: &str) -> String {
    seconds_until(model.now, at).map_or_else(|| "?".to_string(), |s| span_packed(-s))
}
