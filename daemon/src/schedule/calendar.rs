//! When a schedule's occurrences are (`docs/schedules.md`): a cron expression read in
//! an IANA time zone, or an interval, as instants in microseconds since 1970.
//!
//! Cron expressions are parsed and matched by `croner`, on the wall clock of the
//! zone; the zone's offsets come from `chrono-tz` (the IANA database). What this
//! file adds is the rule of daylight saving, one rule for every expression:
//! - a wall clock time that does not exist (the hour skipped in spring) fires at
//!   the first instant after the gap, once however many such times the gap swallows;
//! - a wall clock time that happens twice (the hour repeated in autumn) fires once,
//!   at the first of the two.
//!
//! Intervals (`every 15m`) are counted from 1970-01-01T00:00:00Z, so `every 10m`
//! fires at :00, :10, :20 of every hour in UTC, whatever the zone (which then only
//! writes the templates' local fields). Every occurrence is a whole second.

use std::str::FromStr;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// Microseconds in a second.
const SECOND: i64 = 1_000_000;

/// The text of an interval spec starts with this.
pub const EVERY: &str = "every ";

/// A schedule's calendar: its spec and zone, able to say the next occurrence.
#[derive(Debug, Clone)]
pub struct Calendar {
    spec: Spec,
    zone: Tz,
}

#[derive(Debug, Clone)]
enum Spec {
    /// A cron expression, matched on the zone's wall clock.
    Cron(Box<Cron>),
    /// Every so many seconds, from 1970.
    Every(i64),
}

/// Why a spec or a zone is refused: one sentence.
pub type Refused = String;

impl Calendar {
    /// The calendar of `spec` (a cron expression of 5 or 6 fields, or `every
    /// DURATION` of at least 1 s) in `zone` (an IANA name such as
    /// `Europe/Berlin`, or `UTC`).
    pub fn parse(spec: &str, zone: &str) -> Result<Calendar, Refused> {
        let zone = Tz::from_str(zone).map_err(|_| {
            format!(
                "'{zone}' is not a time zone of the IANA database; write e.g. \
                 'Europe/Berlin', 'America/New_York' or 'UTC'"
            )
        })?;
        let spec = match spec.strip_prefix(EVERY) {
            Some(every) => Spec::Every(interval(every.trim())?),
            None => Spec::Cron(Box::new(cron(spec)?)),
        };
        Ok(Calendar { spec, zone })
    }

    /// The zone.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The first occurrence strictly after `after` (microseconds), if any ever
    /// comes (a cron expression such as `0 0 30 2 *` never does).
    pub fn next_after(&self, after: i64) -> Option<i64> {
        match &self.spec {
            Spec::Every(seconds) => {
                let step = seconds * SECOND;
                Some((after.div_euclid(step) + 1) * step)
            }
            Spec::Cron(cron) => self.next_cron(cron, after),
        }
    }

    /// The last occurrence strictly before `before`, looking back at most
    /// `within` microseconds. Found by looking back ever further and walking
    /// forward from there, since only a forward walk applies the rule of
    /// daylight saving.
    pub fn last_before(&self, before: i64, within: i64) -> Option<i64> {
        let mut back = SECOND;
        loop {
            let from = before.saturating_sub(back);
            let mut found = None;
            let mut at = self.next_after(from - 1)?;
            // A look back of `back` holds few occurrences of a calendar whose
            // last one it found only now; the walk is short.
            while at < before {
                found = Some(at);
                at = self.next_after(at)?;
            }
            if found.is_some() {
                return found;
            }
            if back >= within {
                return None;
            }
            back = back.saturating_mul(2).min(within);
        }
    }

    /// The wall clock time of `at` in the zone.
    pub fn local(&self, at: i64) -> NaiveDateTime {
        utc(at).with_timezone(&self.zone).naive_local()
    }

    fn next_cron(&self, cron: &Cron, after: i64) -> Option<i64> {
        // Whole seconds: the occurrence after `after` is after its second.
        let after = after.div_euclid(SECOND) * SECOND;
        let mut wall = self.local(after);
        // Each turn moves the wall clock on, so a zone's folds end the loop; the
        // bound is only a guard.
        for _ in 0..1000 {
            let matched = cron
                .find_next_occurrence(&wall.and_utc(), false)
                .ok()?
                .naive_utc();
            let at = self.instant(matched)?;
            if at > after {
                return Some(at);
            }
            wall = matched;
        }
        None
    }

    /// The instant at which the wall clock time `wall` fires: itself; the first
    /// of two; or, inside a gap, the first instant after the gap.
    fn instant(&self, wall: NaiveDateTime) -> Option<i64> {
        match self.zone.from_local_datetime(&wall) {
            LocalResult::Single(at) => Some(at.timestamp_micros()),
            LocalResult::Ambiguous(first, _) => Some(first.timestamp_micros()),
            LocalResult::None => Some(self.after_gap(wall)),
        }
    }

    /// The first instant whose wall clock time is past `wall`, a time the zone
    /// skips: found by halving, between instants whose wall clocks are surely
    /// before it (offsets are at most 14 hours ahead of UTC) and surely after it
    /// (at most 12 hours behind).
    fn after_gap(&self, wall: NaiveDateTime) -> i64 {
        let as_utc = wall.and_utc().timestamp();
        let (mut before, mut after) = (as_utc - 15 * 3600, as_utc + 13 * 3600);
        while after - before > 1 {
            let middle = before + (after - before) / 2;
            if self.local(middle * SECOND) > wall {
                after = middle;
            } else {
                before = middle;
            }
        }
        after * SECOND
    }
}

/// A moment in UTC from microseconds.
pub fn utc(at: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(at).unwrap_or_default()
}

/// The seconds of an interval: a duration of at least 1 s, in whole seconds.
fn interval(text: &str) -> Result<i64, Refused> {
    let duration = stateous_shared::durations::parse_timing(
        text,
        stateous_shared::durations::TimingOf::Flag("every"),
    )
    .map_err(|_| {
        format!(
            "'every {text}' is not an interval; write e.g. 'every 30s', 'every 15m', 'every 1d'"
        )
    })?;
    if duration.as_secs() < 1 || duration.subsec_nanos() != 0 {
        return Err(format!(
            "'every {text}' is not a whole number of seconds of at least 1s; an interval is \
             at least 'every 1s'"
        ));
    }
    i64::try_from(duration.as_secs()).map_err(|_| format!("'every {text}' is too long"))
}

/// A cron expression of 5 fields (minute hour day-of-month month day-of-week) or
/// 6 (seconds first), as croner reads it.
fn cron(text: &str) -> Result<Cron, Refused> {
    let fields = text.split_whitespace().count();
    let cron = if let Some(fault) = super::cron_fields::fault(text) {
        Err(fault)
    } else if (5..=6).contains(&fields) || text.trim_start().starts_with('@') {
        // What the field check does not know of: croner's own words name no field.
        Cron::from_str(text).map_err(|_| "cron cannot read it".to_string())
    } else {
        Err(match fields {
            1 => "it has 1 field".to_string(),
            n => format!("it has {n} fields"),
        })
    };
    cron.map_err(|why| {
        format!(
            "'{text}' is not a cron expression ({why}); write five fields, minute hour \
             day-of-month month day-of-week, e.g. '0 9 * * 1-5', or an interval such as \
             'every 15m'"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        stateous_shared::time::parse_iso(text)
            .unwrap()
            .timestamp_micros()
    }

    fn iso(micros: i64) -> String {
        stateous_shared::time::iso(utc(micros))
    }

    /// The next `n` occurrences after `from`, in UTC.
    fn next(calendar: &Calendar, from: &str, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut cursor = at(from);
        for _ in 0..n {
            cursor = calendar.next_after(cursor).unwrap();
            out.push(iso(cursor));
        }
        out
    }

    #[test]
    fn a_time_skipped_in_spring_fires_at_the_first_instant_after_the_gap() {
        // Europe/Berlin, 2027-03-28: 02:00 CET becomes 03:00 CEST (01:00Z).
        let daily = Calendar::parse("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            next(&daily, "2027-03-26T12:00:00Z", 4),
            [
                "2027-03-27T01:30:00Z",
                "2027-03-28T01:00:00Z",
                "2027-03-29T00:30:00Z",
                "2027-03-30T00:30:00Z",
            ]
        );
        // Every 15 minutes: the four times of the skipped hour fire once, at 03:00.
        let quarter = Calendar::parse("*/15 * * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            next(&quarter, "2027-03-28T00:40:00Z", 4),
            [
                "2027-03-28T00:45:00Z",
                "2027-03-28T01:00:00Z",
                "2027-03-28T01:15:00Z",
                "2027-03-28T01:30:00Z",
            ]
        );
    }

    #[test]
    fn a_time_repeated_in_autumn_fires_once_at_the_first() {
        // Europe/Berlin, 2027-10-31: 03:00 CEST becomes 02:00 CET (01:00Z).
        let daily = Calendar::parse("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            next(&daily, "2027-10-30T12:00:00Z", 2),
            ["2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"]
        );
        // Every 30 minutes: 02:00 and 02:30 fire in their first pass only.
        let half = Calendar::parse("*/30 * * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            next(&half, "2027-10-30T23:45:00Z", 5),
            [
                "2027-10-31T00:00:00Z",
                "2027-10-31T00:30:00Z",
                "2027-10-31T02:00:00Z",
                "2027-10-31T02:30:00Z",
                "2027-10-31T03:00:00Z",
            ]
        );
    }

    #[test]
    fn a_us_zone_follows_its_own_dates() {
        // America/New_York: 2027-03-14 02:00 EST -> 03:00 EDT (07:00Z);
        // 2027-11-07 02:00 EDT -> 01:00 EST (06:00Z).
        let daily = Calendar::parse("30 2 * * *", "America/New_York").unwrap();
        assert_eq!(
            next(&daily, "2027-03-13T12:00:00Z", 2),
            ["2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"]
        );
        let early = Calendar::parse("30 1 * * *", "America/New_York").unwrap();
        assert_eq!(
            next(&early, "2027-11-06T12:00:00Z", 2),
            ["2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"]
        );
    }

    #[test]
    fn intervals_count_from_1970_and_the_last_one_is_found_looking_back() {
        let every = Calendar::parse("every 10m", "UTC").unwrap();
        assert_eq!(
            next(&every, "2027-01-01T00:05:00Z", 2),
            ["2027-01-01T00:10:00Z", "2027-01-01T00:20:00Z"]
        );
        let day = 86_400 * SECOND;
        assert_eq!(
            every.last_before(at("2027-01-01T00:10:00Z"), day).map(iso),
            Some("2027-01-01T00:00:00Z".into())
        );
        let weekly = Calendar::parse("0 9 * * 1", "Europe/Berlin").unwrap();
        assert_eq!(
            weekly
                .last_before(at("2027-03-31T00:00:00Z"), 30 * day)
                .map(iso),
            Some("2027-03-29T07:00:00Z".into())
        );
        assert_eq!(weekly.last_before(at("2027-03-31T00:00:00Z"), day), None);
    }

    #[test]
    fn bad_specs_and_zones_are_refused_in_one_sentence() {
        let refused = |spec: &str, zone: &str| Calendar::parse(spec, zone).unwrap_err();
        assert!(refused("* * *", "UTC").contains("not a cron expression (it has 3 fields)"));
        assert!(refused("hello", "UTC").contains("not a cron expression (it has 1 field)"));
        assert!(refused("61 * * * *", "UTC")
            .contains("not a cron expression (its minute field '61' has 61, outside 0-59)"));
        assert!(refused("@weekly2", "UTC").contains("not a cron expression (cron cannot read it)"));
        assert!(refused("0 9 * * *", "Europe/Berln").contains("not a time zone"));
        assert!(refused("every 500ms", "UTC").contains("at least 'every 1s'"));
        assert!(refused("every 0s", "UTC").contains("not an interval"));
        assert!(refused("every soon", "UTC").contains("not an interval"));
        let never = Calendar::parse("0 0 30 2 *", "UTC").unwrap();
        assert_eq!(never.next_after(at("2027-01-01T00:00:00Z")), None);
    }
}
