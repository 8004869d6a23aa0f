//! Durations as workflows and schedules write them: `30s`, `10m`, `6h`, `1d`.
//!
//! One rule for every duration (reference `model/durations`): a whole number of 1
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
    fn spans_read_as_words() {
        assert_eq!(span_words(120), "2 minutes");
        assert_eq!(span_words(60), "1 minute");
        assert_eq!(span_words(1), "1 second");
        assert_eq!(span_words(90), "90 seconds");
    }
}
