//! Schedules (`docs/schedules.md`): what a schedule is once its settings are checked,
//! and the pure rules of its time: when occurrences come ([`calendar`]), what each
//! writes ([`template`]), which start after an outage ([`plan`]) and how far each
//! moves by its jitter ([`Compiled::due`]). No I/O and no clock: the engine's
//! `engine/occurrence.rs` applies them inside a transaction, at its `now`.

pub mod calendar;
pub mod cron_fields;
pub mod input;
pub mod plan;
pub mod template;

use sha2::{Digest, Sha256};
use stateous_shared::wire::Object;

use calendar::Calendar;
pub use input::ScheduleInput;
use template::{Occurrence, Template};

/// How many of the next occurrences a token template must tell apart at add time.
const TOLD_APART: usize = 24;

/// The fields that write a different text on each day: a token template of a
/// schedule with more than one occurrence needs one of them, or the ids of one day
/// come again on another.
const DATED: [&str; 6] = ["date", "utc_date", "occurrence", "unix", "at", "local"];

/// The fields that write the time of day to the minute.
const TIMED: [&str; 2] = ["time", "utc_time"];

/// A schedule's calendar and templates, read once: what an occurrence needs.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The schedule's name.
    pub name: String,
    /// When its occurrences come.
    pub calendar: Calendar,
    /// The token id of an occurrence.
    pub token: Template,
    /// The most an occurrence's start moves after its instant, in microseconds.
    pub jitter: i64,
}

impl Compiled {
    /// Read a schedule's spec, zone and token template (`jitter` in
    /// microseconds). A spec, zone or template that cannot be read is one
    /// sentence; the ids the template makes are checked by
    /// [`Compiled::token_problem`].
    pub fn new(
        name: &str,
        spec: &str,
        zone: &str,
        token: &str,
        jitter: i64,
    ) -> Result<Compiled, String> {
        let calendar = Calendar::parse(spec, zone)?;
        let token = Template::parse(token, "the token template")?;
        Ok(Compiled {
            name: name.to_string(),
            calendar,
            token,
            jitter,
        })
    }

    /// The occurrence at `at`, as the templates see it.
    pub fn occurrence(&self, at: i64) -> Occurrence<'_> {
        Occurrence {
            schedule: &self.name,
            at,
            zone: self.calendar.zone(),
        }
    }

    /// The token id of the occurrence at `at`.
    pub fn token_id(&self, at: i64) -> String {
        self.token.write(&self.occurrence(at))
    }

    /// The context of the occurrence at `at`, from the context template.
    pub fn context(&self, context: &Object, at: i64) -> Object {
        template::write_context(context, &self.occurrence(at))
    }

    /// When the occurrence at `at` starts: its instant, moved by its jitter. The
    /// jitter of an occurrence is fixed (a hash of the schedule's name and the
    /// instant), so that a restart does not move it.
    pub fn due(&self, at: i64) -> i64 {
        if self.jitter <= 0 {
            return at;
        }
        let hash = Sha256::new()
            .chain_update(self.name.as_bytes())
            .chain_update(at.to_be_bytes())
            .finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash[..8]);
        let millis = (self.jitter / 1000).max(1) as u64;
        at + (u64::from_be_bytes(first) % millis) as i64 * 1000
    }

    /// The token template's problem with the occurrences after `now`, if any: an
    /// id outside the rule (`(true, sentence)`), two of the next ones with one id,
    /// or ids without a date where more than one occurrence comes
    /// (`(false, sentence)`). `None` when the ids tell the occurrences apart.
    pub fn token_problem(&self, now: i64) -> Option<(bool, String)> {
        let mut at = self.calendar.next_after(now)?;
        let mut seen: Vec<(String, i64)> = Vec::with_capacity(TOLD_APART);
        for _ in 0..TOLD_APART {
            let id = self.token_id(at);
            if !stateous_shared::limits::is_token_id(&id) {
                return Some((
                    true,
                    format!(
                        "the token template makes {id:?} for the occurrence at {}, which is no \
                         token id: {}",
                        iso(at),
                        stateous_shared::limits::TOKEN_ID_RULE
                    ),
                ));
            }
            if let Some((_, earlier)) = seen.iter().find(|(seen, _)| *seen == id) {
                // Within one minute, {time} would not tell them apart either.
                let add = if self.token.names_any(&TIMED) || at - *earlier < 60_000_000 {
                    "{second} or {occurrence}"
                } else {
                    "{time} or {occurrence}"
                };
                return Some((
                    false,
                    format!(
                        "the token template makes the same id {id:?} for the occurrences at {} \
                         and {}, so the second would start nothing; add {add} to it",
                        iso(*earlier),
                        iso(at)
                    ),
                ));
            }
            seen.push((id, at));
            match self.calendar.next_after(at) {
                Some(next) => at = next,
                None => break,
            }
        }
        if seen.len() > 1 && !self.token.names_any(&DATED) {
            let (first, _) = &seen[0];
            return Some((
                false,
                format!(
                    "the token template makes ids without a date ({first:?} for the occurrence \
                     at {}), so the ids of one day come again on the next and those \
                     occurrences would start nothing; add {{date}} or {{occurrence}} to it",
                    iso(seen[0].1)
                ),
            ));
        }
        None
    }
}

/// An instant as the API writes it.
pub fn iso(at: i64) -> String {
    stateous_shared::time::iso(calendar::utc(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_fixed_per_occurrence_and_within_its_bound() {
        let hour = 3_600_000_000;
        let jittered =
            Compiled::new("sweep", "every 1h", "UTC", "x-{occurrence}", 60_000_000).unwrap();
        let dues: Vec<i64> = (1..50).map(|n| jittered.due(n * hour) - n * hour).collect();
        assert!(dues.iter().all(|d| (0..60_000_000).contains(d)), "{dues:?}");
        assert!(
            dues.iter().any(|d| *d != dues[0]),
            "the jitter varies: {dues:?}"
        );
        let again =
            Compiled::new("sweep", "every 1h", "UTC", "x-{occurrence}", 60_000_000).unwrap();
        assert_eq!(again.due(7 * hour), jittered.due(7 * hour));
    }

    #[test]
    fn a_token_template_must_make_ids_that_tell_occurrences_apart() {
        let now = 1_800_000_000_000_000;
        let daily = Compiled::new("n", "0 9 * * *", "UTC", "nightly-{date}", 0).unwrap();
        assert_eq!(daily.token_problem(now), None);
        let hourly = Compiled::new("n", "0 * * * *", "UTC", "nightly-{date}", 0).unwrap();
        let (bad_id, sentence) = hourly.token_problem(now).unwrap();
        assert!(!bad_id && sentence.contains("the same id"), "{sentence}");
        let hours = Compiled::new("n", "every 1h", "UTC", "rep-{time}", 0).unwrap();
        let (bad_id, sentence) = hours.token_problem(now).unwrap();
        assert!(
            !bad_id && sentence.contains("without a date") && sentence.contains("{date}"),
            "{sentence}"
        );
        let seconds = Compiled::new("n", "every 10s", "UTC", "s-{date}-{time}", 0).unwrap();
        let (_, sentence) = seconds.token_problem(now).unwrap();
        assert!(
            sentence.contains("add {second} or {occurrence}"),
            "{sentence}"
        );
        let hourly_date = Compiled::new("n", "0 * * * *", "UTC", "h-{date}", 0).unwrap();
        let (_, sentence) = hourly_date.token_problem(now).unwrap();
        assert!(
            sentence.contains("add {time} or {occurrence}"),
            "{sentence}"
        );
        let colons = Compiled::new("n", "0 * * * *", "UTC", "at-{at}", 0).unwrap();
        let (bad_id, sentence) = colons.token_problem(now).unwrap();
        assert!(
            bad_id && sentence.contains("which is no token id"),
            "{sentence}"
        );
    }
}
