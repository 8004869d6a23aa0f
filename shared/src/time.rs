//! Moments as the API writes them: ISO 8601 in UTC with `Z`.
//!
//! Microseconds appear only when they are not zero, as Python's `isoformat` writes
//! them, so answers read the same as the reference's.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};

/// A moment in UTC.
pub type Moment = DateTime<Utc>;

/// `2026-10-07T05:43:39Z`, or `2026-10-16T20:48:44.845389Z` with microseconds.
pub fn iso(moment: Moment) -> String {
    let micros = moment.timestamp_subsec_micros();
    if micros == 0 {
        moment.to_rfc3339_opts(SecondsFormat::Secs, true)
    } else {
        moment.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

/// A moment from its ISO text (with `Z`, an offset, or none for UTC).
pub fn parse_iso(text: &str) -> Option<Moment> {
    if let Ok(moment) = DateTime::parse_from_rfc3339(text) {
        return Some(moment.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()
        .map(|naive| naive.and_utc())
}

/// `2026-12-02 13:48Z`: an ISO text cut to the minute, in UTC, for lines people
/// read; the text unchanged when it is not a moment.
pub fn to_the_minute(text: &str) -> String {
    match parse_iso(text) {
        Some(moment) => moment.format("%Y-%m-%d %H:%MZ").to_string(),
        None => text.to_string(),
    }
}

/// The moment from microseconds since 1970 (how the store keeps time).
pub fn from_micros(micros: i64) -> Moment {
    DateTime::from_timestamp_micros(micros).unwrap_or_default()
}

/// Microseconds since 1970 of a moment.
pub fn to_micros(moment: Moment) -> i64 {
    moment.timestamp_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_drops_zero_microseconds_like_the_reference() {
        let whole = parse_iso("2026-10-07T05:43:39Z").unwrap();
        assert_eq!(iso(whole), "2026-10-07T05:43:39Z");
        let fine = parse_iso("2026-10-16T20:48:44.845389Z").unwrap();
        assert_eq!(iso(fine), "2026-10-16T20:48:44.845389Z");
        assert_eq!(from_micros(to_micros(fine)), fine);
    }

    #[test]
    fn to_the_minute_reads_in_utc_and_keeps_what_is_no_moment() {
        assert_eq!(
            to_the_minute("2026-12-02T13:48:36.763003Z"),
            "2026-12-02 13:48Z"
        );
        assert_eq!(
            to_the_minute("2026-12-02T14:48:59+01:00"),
            "2026-12-02 13:48Z"
        );
        assert_eq!(to_the_minute("soon"), "soon");
    }
}
