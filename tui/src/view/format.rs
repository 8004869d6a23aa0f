//! Times and ages as the screen shows them, from the model's `now` and zone.

use chrono::{DateTime, Local, Utc};
use stateous_shared::history::entry_line_in;
use stateous_shared::wire::HistoryEntry;

use crate::model::Model;

/// An ISO 8601 time as `HH:MM:SS` in the model's zone; `?` when it is not a time.
pub fn clock(model: &Model, at: &str) -> String {
    let Ok(moment) = DateTime::parse_from_rfc3339(at) else {
        return "?".to_string();
    };
    match model.zone {
        Some(zone) => moment.with_timezone(&zone).format("%H:%M:%S").to_string(),
        None => moment.with_timezone(&Local).format("%H:%M:%S").to_string(),
    }
}

/// One history line, `HH:MM:SS  #SEQ  WHAT`, in the model's zone.
pub fn history_line(model: &Model, entry: &HistoryEntry) -> String {
    match model.zone {
        Some(zone) => entry_line_in(entry, &zone),
        None => entry_line_in(entry, &Local),
    }
}

/// Seconds from `now` to the ISO 8601 time `at` (negative when it is past).
pub fn seconds_until(now: DateTime<Utc>, at: &str) -> Option<i64> {
    let moment = DateTime::parse_from_rfc3339(at).ok()?;
    Some((moment.with_timezone(&Utc) - now).num_seconds())
}

/// A span of seconds, short: `42s`, `3m05s`, `2h10m`, `4d3h`.
pub fn span(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// How long ago the ISO 8601 time `at` was: `42s`; `?` when it is not a time.
pub fn age(model: &Model, at: &str) -> String {
    seconds_until(model.now, at).map_or_else(|| "?".to_string(), |s| span(-s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_short() {
        assert_eq!(span(-3), "0s");
        assert_eq!(span(42), "42s");
        assert_eq!(span(185), "3m05s");
        assert_eq!(span(7800), "2h10m");
        assert_eq!(span(97_200), "1d3h");
    }
}
