//! A schedule's settings, checked once at the API's edge (`docs/schedules.md`): the
//! validated input the engine takes to add or change a schedule. Every check here
//! needs nothing but the settings; the context's check against the workflow's
//! model is the engine's, which has the graph.

use std::time::Duration;

use stateous_shared::durations::parse_duration;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::schedules::NewSchedule;
use stateous_shared::wire::Object;

use super::template::check_context;
use super::Compiled;
use crate::store::{CatchUp, Closed, Overlap};

/// The longest spec, zone or template.
pub const MAX_TEXT: usize = 256;
/// The token id template when none is given.
pub const DEFAULT_TOKEN: &str = "{schedule}-{occurrence}";
/// The zone when none is given.
pub const DEFAULT_ZONE: &str = "UTC";
/// The most jitter: an hour.
pub const MOST_JITTER: Duration = Duration::from_secs(3600);
/// The catch-up window when none is given: a day.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(86_400);
/// The catch-up cap when none is given.
pub const DEFAULT_CAP: i64 = 10;
/// The most starts of one catch-up.
pub const MOST_CAP: i64 = 1000;

/// A schedule to add or change, its settings checked.
#[derive(Debug, Clone)]
pub struct ScheduleInput {
    /// Its name.
    pub name: String,
    /// Its spec as given.
    pub spec: String,
    /// Its zone as given.
    pub zone: String,
    /// Its token id template as given.
    pub token: String,
    /// Its context template.
    pub context: Object,
    /// Its jitter, in microseconds.
    pub jitter: i64,
    /// Its overlap policy.
    pub overlap: Overlap,
    /// Its catch-up policy.
    pub catch_up: CatchUp,
    /// Its catch-up window, in microseconds.
    pub window: i64,
    /// Its catch-up cap.
    pub cap: i64,
    /// Change the schedule of this name if there is one.
    pub replace: bool,
    /// The calendar and templates, read.
    pub compiled: Compiled,
}

fn refuse(sentence: impl Into<String>) -> Refusal {
    Refusal::new(Code::InvalidSchedule, sentence)
}

/// Whether `name` is a schedule's or a subscription's name
/// (`stateous_shared::limits::is_name`, the rule of limits' names too).
pub fn name_ok(name: &str) -> bool {
    stateous_shared::limits::is_name(name)
}

/// The refusal of a name that is not a schedule's (`invalid_schedule`).
pub fn bad_name(name: &str) -> Refusal {
    name_refused(name, Code::InvalidSchedule, "schedule")
}

/// The refusal, with `code`, of a name that is not one of a `what` (a schedule,
/// a subscription: their names follow one rule, [`name_ok`]).
pub fn name_refused(name: &str, code: Code, what: &str) -> Refusal {
    Refusal::new(
        code,
        format!(
            "{name:?} is not a {what}'s name: {}",
            stateous_shared::limits::NAME_RULE
        ),
    )
}

impl ScheduleInput {
    /// Check `body`: each problem is `invalid_schedule` with one sentence, but a
    /// token template that makes an id outside the rule, which is
    /// `invalid_token_id`. `now` is the moment the occurrences are counted from.
    pub fn new(body: NewSchedule, now: i64) -> Result<ScheduleInput, Refusal> {
        if !name_ok(&body.name) {
            return Err(bad_name(&body.name));
        }
        let zone = body.zone.unwrap_or_else(|| DEFAULT_ZONE.to_string());
        let token = body.token.unwrap_or_else(|| DEFAULT_TOKEN.to_string());
        for (what, text) in [("spec", &body.spec), ("zone", &zone), ("token", &token)] {
            if text.trim().is_empty() {
                return Err(refuse(format!(
                    "the schedule's '{what}' is empty; give one of at most {MAX_TEXT} bytes"
                )));
            }
            if text.len() > MAX_TEXT {
                return Err(refuse(format!(
                    "the schedule's '{what}' has {} bytes; the most is {MAX_TEXT}",
                    text.len()
                )));
            }
        }
        let jitter = match body.jitter.as_deref() {
            None => Duration::ZERO,
            Some(text) => parse_duration(text).map_err(|why| refuse(format!("'jitter': {why}")))?,
        };
        if jitter > MOST_JITTER {
            return Err(refuse(
                "'jitter' is at most 1h; keep it well below the time between two occurrences",
            ));
        }
        let overlap = closed::<Overlap>(body.overlap.as_deref(), "overlap", Overlap::Skip)?;
        let catch_up = closed::<CatchUp>(body.catch_up.as_deref(), "catch_up", CatchUp::Latest)?;
        let window = match body.window.as_deref() {
            None => DEFAULT_WINDOW,
            Some(text) => parse_duration(text).map_err(|why| refuse(format!("'window': {why}")))?,
        };
        let cap = body.cap.unwrap_or(DEFAULT_CAP);
        if !(1..=MOST_CAP).contains(&cap) {
            return Err(refuse(format!(
                "'cap' is 1 to {MOST_CAP} starts, not {cap}"
            )));
        }
        check_context(body.context.as_ref().unwrap_or(&Object::new())).map_err(refuse)?;
        let jitter = micros(jitter);
        let compiled =
            Compiled::new(&body.name, &body.spec, &zone, &token, jitter).map_err(refuse)?;
        if compiled.calendar.next_after(now).is_none() {
            return Err(refuse(format!(
                "'{}' has no occurrence from now on; check its day and month",
                body.spec
            )));
        }
        if let Some((bad_id, sentence)) = compiled.token_problem(now) {
            let code = if bad_id {
                Code::InvalidTokenId
            } else {
                Code::InvalidSchedule
            };
            return Err(Refusal::new(code, sentence));
        }
        Ok(ScheduleInput {
            name: body.name,
            spec: body.spec,
            zone,
            token,
            context: body.context.unwrap_or_default(),
            jitter,
            overlap,
            catch_up,
            window: micros(window),
            cap,
            replace: body.replace,
            compiled,
        })
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// A member of a closed set by its text, `default` when none is given.
fn closed<T: Closed + std::fmt::Display>(
    text: Option<&str>,
    field: &str,
    default: T,
) -> Result<T, Refusal> {
    let Some(text) = text else {
        return Ok(default);
    };
    T::parse(text).ok_or_else(|| {
        let names: Vec<&str> = T::ALL.iter().map(|m| m.as_str()).collect();
        refuse(format!(
            "'{field}' is one of {}, not {text:?}",
            names.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000_000;

    fn body(spec: &str) -> NewSchedule {
        NewSchedule {
            name: "triage".into(),
            spec: spec.into(),
            ..NewSchedule::default()
        }
    }

    fn refused(body: NewSchedule) -> Refusal {
        ScheduleInput::new(body, NOW).unwrap_err()
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let input = ScheduleInput::new(body("every 15m"), NOW).unwrap();
        assert_eq!(input.zone, "UTC");
        assert_eq!(input.token, DEFAULT_TOKEN);
        assert_eq!(
            (input.overlap, input.catch_up, input.cap),
            (Overlap::Skip, CatchUp::Latest, 10)
        );
    }

    #[test]
    fn each_bad_setting_is_refused_with_its_code_and_one_sentence() {
        let cases: Vec<(NewSchedule, Code, &str)> = vec![
            (
                body("0 25 * * *"),
                Code::InvalidSchedule,
                "not a cron expression",
            ),
            (
                NewSchedule {
                    zone: Some("Mars/Olympus".into()),
                    ..body("0 9 * * *")
                },
                Code::InvalidSchedule,
                "not a time zone",
            ),
            (
                body("every 500ms"),
                Code::InvalidSchedule,
                "at least 'every 1s'",
            ),
            (
                NewSchedule {
                    token: Some("t-{dat}".into()),
                    ..body("0 9 * * *")
                },
                Code::InvalidSchedule,
                "{dat}",
            ),
            (
                NewSchedule {
                    token: Some("t {date}".into()),
                    ..body("0 9 * * *")
                },
                Code::InvalidTokenId,
                "no token id",
            ),
            (
                NewSchedule {
                    overlap: Some("queue".into()),
                    ..body("0 9 * * *")
                },
                Code::InvalidSchedule,
                "skip, buffer_one, allow",
            ),
            (
                NewSchedule {
                    name: "no way".into(),
                    ..body("0 9 * * *")
                },
                Code::InvalidSchedule,
                "not a schedule's name",
            ),
            (body("0 0 30 2 *"), Code::InvalidSchedule, "no occurrence"),
        ];
        for (body, code, words) in cases {
            let refusal = refused(body);
            assert_eq!(refusal.code, code, "{refusal:?}");
            assert!(refusal.error.contains(words), "{refusal:?}");
            assert!(!refusal.error.contains('\n'), "{refusal:?}");
        }
    }
}
