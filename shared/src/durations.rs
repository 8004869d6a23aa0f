//! Durations as workflows and schedules write them: `30s`, `10m`, `6h`, `1d`; the
//! timings of the programs' flags and settings, which also take milliseconds; and
//! every way a duration is written back: in words for history sentences
//! ([`span_words`]), for an operator ([`span`]: `1m 40s`), packed for the TUI's
//! columns ([`span_packed`]: `1m40s`), as the dev clock's offset ([`signed_span`])
//! and as a time limit ([`limit_words`]). Each form is one that tests or the
//! reference's output expect, so they differ on purpose and live side by side here.
//!
//! One rule for every duration, the reference's: a whole number of 1
//! or more and a unit `s`, `m`, `h` or `d`, at most 3650 days in all.

use std::time::Duration;

/// The longest duration taken, in days.
pub const MAX_DURATION_DAYS: u64 = 3650;

/// The duration `text` names, or the sentence that says why it is not one, e.g.
/// `'90x' is not a duration; write e.g. '30s', '10m', '2h', '1d'`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if names_zero(text) {
        return Err(format!("'{text}' is zero; a duration must be more than 0"));
    }
    let not_one = || format!("'{text}' is not a duration; write e.g. '30s', '10m', '2h', '1d'");
    let Some(unit) = text.chars().last() else {
        return Err(not_one());
    };
    let digits = &text[..text.len() - unit.len_utf8()];
    let unit_seconds: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => return Err(not_one()),
    };
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_one());
    }
    let too_long = || format!("'{text}' is too long; a duration is at most {MAX_DURATION_DAYS}d");
    let number: u64 = digits.parse().map_err(|_| too_long())?;
    let seconds = number.checked_mul(unit_seconds).ok_or_else(too_long)?;
    if seconds > MAX_DURATION_DAYS * 86400 {
        return Err(too_long());
    }
    Ok(Duration::from_secs(seconds))
}

/// True when `text` is zero written as a duration or a timing: `0s`, `00m`,
/// `0ms`, `0` or `0.0`. Such a text is refused as too short, not as unreadable.
pub fn names_zero(text: &str) -> bool {
    let number = text
        .strip_suffix("ms")
        .or_else(|| text.strip_suffix(['s', 'm', 'h', 'd']))
        .unwrap_or(text);
    number.contains('0')
        && number.bytes().all(|b| b == b'0' || b == b'.')
        && number.bytes().filter(|b| *b == b'.').count() <= 1
}

/// Where a timing of a program (not of a workflow) is written: it decides which
/// forms are taken, and how a refusal reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingOf<'a> {
    /// A command-line flag such as `--lease`: a duration or whole milliseconds up
    /// to a day; a negative value reads as not more than 0; a refusal names the flag.
    Flag(&'a str),
    /// A setting of `stateous.yaml` or the environment: also a plain number of
    /// seconds (`1.5`); a refusal speaks of the value alone, and its caller puts
    /// the setting's name before it.
    Setting,
}

/// The most milliseconds a flag takes: a day.
const MAX_FLAG_MILLIS: u64 = 86_400_000;

/// A timing: a duration as workflows write it (`30s`, `2m`, `1h`, `1d`) or, so
/// that tests can run in moments, whole milliseconds (`500ms`); a setting also
/// takes a plain number of seconds. Zero is refused as not more than 0.
pub fn parse_timing(text: &str, of: TimingOf) -> Result<Duration, String> {
    let negative = matches!(of, TimingOf::Flag(_)) && text.starts_with('-');
    if negative || names_zero(text) {
        return Err(match of {
            TimingOf::Flag(flag) => {
                format!("{flag} must be more than 0, not '{text}'; write e.g. 500ms, 30s, 2m or 1h")
            }
            TimingOf::Setting => format!("'{text}' is zero; a timing must be more than 0"),
        });
    }
    if let Some(millis) = text.strip_suffix("ms") {
        let whole = match of {
            TimingOf::Flag(_) => (!millis.is_empty() && millis.bytes().all(|b| b.is_ascii_digit()))
                .then(|| millis.parse::<u64>().ok())
                .flatten()
                .filter(|ms| *ms <= MAX_FLAG_MILLIS),
            TimingOf::Setting => millis.parse::<u64>().ok(),
        };
        return whole
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| match of {
                TimingOf::Flag(flag) => {
                    format!("{flag} '{text}' is not a duration; write e.g. 500ms, 30s, 2m or 1h")
                }
                TimingOf::Setting => {
                    format!("'{text}' is not a duration; write e.g. '500ms', '30s', '2m'")
                }
            });
    }
    if of == TimingOf::Setting {
        if let Some(span) = text.parse::<f64>().ok().and_then(seconds_timing) {
            return Ok(span);
        }
    }
    parse_duration(text).map_err(|problem| match of {
        TimingOf::Flag(flag) => format!("{flag}: {problem}"),
        TimingOf::Setting => problem,
    })
}

/// A plain number of seconds as a setting's timing: more than 0 and less than a
/// billion.
pub fn seconds_timing(seconds: f64) -> Option<Duration> {
    (seconds > 0.0 && seconds < 1e9).then(|| Duration::from_secs_f64(seconds))
}

/// A span of whole seconds in words, as history sentences use it: `2 minutes`,
/// `1 minute`, `90 seconds`, `1 second`.
pub fn span_words(seconds: u64) -> String {
    if seconds.is_multiple_of(60) {
        let minutes = seconds / 60;
        let s = if minutes == 1 { "" } else { "s" };
        format!("{minutes} minute{s}")
    } else {
        let s = if seconds == 1 { "" } else { "s" };
        format!("{seconds} second{s}")
    }
}

/// A span of seconds as an operator reads it: `45s`, `12m`, `1m 40s`, `3h 5m`,
/// `2d 4h` (rounded down to whole seconds).
pub fn span(seconds: f64) -> String {
    #[allow(clippy::cast_possible_truncation)] // rounded down, clamped below
    let whole = seconds.max(0.0).floor().min(1e15) as u64;
    let (days, hours, minutes, secs) = (
        whole / 86_400,
        whole % 86_400 / 3600,
        whole % 3600 / 60,
        whole % 60,
    );
    let pair = |a: u64, a_unit: &str, b: u64, b_unit: &str| {
        if b == 0 {
            format!("{a}{a_unit}")
        } else {
            format!("{a}{a_unit} {b}{b_unit}")
        }
    };
    if days > 0 {
        pair(days, "d", hours, "h")
    } else if hours > 0 {
        pair(hours, "h", minutes, "m")
    } else if minutes > 0 {
        pair(minutes, "m", secs, "s")
    } else {
        format!("{secs}s")
    }
}

/// A span of seconds packed for the TUI's narrow columns: `42s`, `3m05s`,
/// `2h10m`, `4d3h` (two units, the second with two digits).
pub fn span_packed(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// Whole seconds as `+1d2h`, `+10m`, `+1h0m5s` without the zero units, or `-30s`.
pub fn signed_span(seconds: f64) -> String {
    let total = seconds.round();
    let sign = if total < 0.0 { '-' } else { '+' };
    // Saturating: a clock cannot be more than i64 seconds off.
    let mut left = total.abs() as i64;
    if left == 0 {
        return "+0s".to_string();
    }
    let mut text = String::from(sign);
    for (unit, size) in [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)] {
        if left >= size {
            text.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    text
}

/// `2s`, `1500ms`: a time limit as a sentence says it (as the flags spell it).
pub fn limit_words(limit: Duration) -> String {
    let millis = limit.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_each_unit_parse() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("6h").unwrap(), Duration::from_secs(21600));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86400));
        assert_eq!(
            parse_duration("3650d").unwrap(),
            Duration::from_secs(3650 * 86400)
        );
    }

    #[test]
    fn bad_durations_are_refused_with_a_sentence() {
        for bad in ["", "s", "01m", "1.5h", "10", "10 m", "-1s", "1w", "١s"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("is not a duration"), "{bad}: {err}");
        }
        for zero in ["0s", "00m", "0d"] {
            let err = parse_duration(zero).unwrap_err();
            assert!(err.contains("must be more than 0"), "{zero}: {err}");
        }
        assert!(parse_duration("3651d").unwrap_err().contains("too long"));
        assert!(parse_duration("99999999999999999999999s")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn zero_is_known_in_each_way_it_is_written() {
        for zero in ["0", "0s", "00m", "0ms", "0.0", "0.", "0h"] {
            assert!(names_zero(zero), "{zero}");
        }
        for other in ["", "s", "ms", ".", "10s", "0.5", "01m", "0x", "0..0", "-0s"] {
            assert!(!names_zero(other), "{other}");
        }
    }

    #[test]
    fn timing_flags_take_durations_and_milliseconds() {
        let flag = |text| parse_timing(text, TimingOf::Flag("--lease"));
        assert_eq!(
            parse_timing("500ms", TimingOf::Flag("--tick")).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(flag("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(flag("86400000ms").unwrap(), Duration::from_secs(86400));
        for bad in [
            "0ms",
            "ms",
            "1.5s",
            "0s",
            "soon",
            "-1ms",
            "+5ms",
            "86400001ms",
            "1.5",
        ] {
            assert!(flag(bad).unwrap_err().contains("--lease"), "{bad}");
        }
        for zero in ["0s", "0ms", "0m", "-1s"] {
            assert_eq!(
                flag(zero).unwrap_err(),
                format!(
                    "--lease must be more than 0, not '{zero}'; write e.g. 500ms, 30s, 2m or 1h"
                )
            );
        }
        assert_eq!(
            flag("5x").unwrap_err(),
            "--lease: '5x' is not a duration; write e.g. '30s', '10m', '2h', '1d'"
        );
        assert_eq!(
            flag("5xms").unwrap_err(),
            "--lease '5xms' is not a duration; write e.g. 500ms, 30s, 2m or 1h"
        );
    }

    #[test]
    fn timing_settings_also_take_plain_seconds() {
        let setting = |text| parse_timing(text, TimingOf::Setting);
        assert_eq!(setting("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(setting("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(setting("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(setting("90000000ms").unwrap(), Duration::from_secs(90000));
        for zero in ["0s", "0ms", "0"] {
            assert_eq!(
                setting(zero).unwrap_err(),
                format!("'{zero}' is zero; a timing must be more than 0")
            );
        }
        assert_eq!(
            setting("xms").unwrap_err(),
            "'xms' is not a duration; write e.g. '500ms', '30s', '2m'"
        );
        for bad in ["soon", "-1s", "-1", "1e10"] {
            assert!(
                setting(bad).unwrap_err().contains("is not a duration"),
                "{bad}"
            );
        }
        assert_eq!(seconds_timing(0.5), Some(Duration::from_millis(500)));
        assert_eq!(seconds_timing(0.0), None);
        assert_eq!(seconds_timing(1e9), None);
    }

    #[test]
    fn each_form_writes_a_duration_as_its_readers_expect() {
        for (seconds, words) in [
            (120, "2 minutes"),
            (60, "1 minute"),
            (1, "1 second"),
            (90, "90 seconds"),
        ] {
            assert_eq!(span_words(seconds), words);
        }
        for (seconds, packed) in [
            (-3, "0s"),
            (42, "42s"),
            (185, "3m05s"),
            (7800, "2h10m"),
            (97_200, "1d3h"),
        ] {
            assert_eq!(span_packed(seconds), packed);
        }
        for (seconds, spoken) in [
            (0.4, "0s"),
            (45.9, "45s"),
            (720.0, "12m"),
            (100.0, "1m 40s"),
            (3.0 * 3600.0 + 300.0, "3h 5m"),
            (2.0 * 86400.0 + 4.0 * 3600.0 + 59.0, "2d 4h"),
            (-5.0, "0s"),
        ] {
            assert_eq!(span(seconds), spoken);
        }
        for (seconds, signed) in [
            (600.2, "+10m"),
            (3605.0, "+1h5s"),
            (-30.0, "-30s"),
            (0.3, "+0s"),
        ] {
            assert_eq!(signed_span(seconds), signed);
        }
        assert_eq!(limit_words(Duration::from_secs(2)), "2s");
        assert_eq!(limit_words(Duration::from_millis(1500)), "1500ms");
    }
}
