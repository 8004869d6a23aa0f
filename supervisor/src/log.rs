//! The supervisor's log lines on stderr, in the reference's form:
//! `2026-10-06 23:43:39,848 stateous.supervisor: task 2: testing of TICKET-1, attempt 1`.
//!
//! The lines are the interface operators and tests read, so they are written
//! here directly rather than through a tracing formatter whose layout could drift.

use std::io::Write;

/// The logger's name in each line.
const NAME: &str = "stateous.supervisor";

/// Write one line to stderr: local time with milliseconds, the logger's name, the text.
pub fn line(text: &str) {
    let now = chrono::Local::now();
    let stamp = now.format("%Y-%m-%d %H:%M:%S,%3f");
    let mut err = std::io::stderr().lock();
    // A closed stderr must not stop the supervisor: its work does not depend on it.
    let _ = writeln!(err, "{stamp} {NAME}: {text}");
}

/// `format!` then [`line`].
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {
        $crate::log::line(&format!($($arg)*))
    };
}

/// Seconds as Python's `%g` writes them in "trying again in 1s": `1`, `0.5`, `30`.
pub fn seconds(span: std::time::Duration) -> String {
    let value = span.as_secs_f64();
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn waits_read_like_the_reference() {
        assert_eq!(seconds(Duration::from_secs(1)), "1");
        assert_eq!(seconds(Duration::from_secs(30)), "30");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25");
    }
}
