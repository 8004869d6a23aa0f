//! For tests only: whether the tests have a Postgres server, and how a test that
//! cannot run says so. A skipped test still passes, so it says so twice: a line on
//! stderr, and its name in the file that `STATEOUS_TEST_SKIP_LOG` names, so that a
//! run which meant to test Postgres (CI) can fail when any of its tests skipped.
//!
//! (Shipped in the library, as the daemon's test helpers are, so that the test
//! binaries of every crate share it.)

use std::io::Write;
use std::path::Path;

/// The environment variable that names the Postgres server of the tests:
/// `postgresql://USER@HOST:PORT/DATABASE`. Unset: the Postgres tests skip.
pub const POSTGRES_ENV: &str = "STATEOUS_TEST_POSTGRES";

/// The environment variable that names a file to which each skipped test appends
/// its name, one a line.
pub const SKIP_LOG_ENV: &str = "STATEOUS_TEST_SKIP_LOG";

/// The Postgres server of the tests, or `None` after the test on this thread said
/// that it skipped because `STATEOUS_TEST_POSTGRES` is unset. A test that gets a
/// server must fail, never skip, when it cannot reach it.
pub fn postgres_server() -> Option<String> {
    match std::env::var(POSTGRES_ENV) {
        Ok(url) => Some(url),
        Err(_) => {
            skip(&format!("{POSTGRES_ENV} unset"));
            None
        }
    }
}

/// Say that the test on this thread did not run, and `why`:
/// `skipped (WHY): TEST` on stderr, and the test's name appended to the file that
/// `STATEOUS_TEST_SKIP_LOG` names, when it names one.
pub fn skip(why: &str) {
    let log = std::env::var_os(SKIP_LOG_ENV);
    let line = record_skip(log.as_deref().map(Path::new), &current_test(), why);
    // Straight to the process's stderr: the test harness keeps what `eprintln!`
    // prints from a passing test to itself, and a skip must show.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Append `test` to `log` (when there is one) and give the line that says it
/// skipped. A log that cannot be written fails the test: a skip that the run
/// cannot see is what the log is there to prevent.
fn record_skip(log: Option<&Path>, test: &str, why: &str) -> String {
    if let Some(log) = log {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut file| file.write_all(format!("{test}\n").as_bytes()))
            .unwrap_or_else(|e| panic!("cannot add to {SKIP_LOG_ENV}={}: {e}", log.display()));
    }
    format!("skipped ({why}): {test}")
}

/// The name of the test running on this thread: the test harness runs each test on
/// a thread named after it (`watch::resume::postgres`).
fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test on an unnamed thread")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_names_the_test_and_appends_it_to_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped");
        assert_eq!(
            record_skip(Some(&log), "watch::resume::postgres", "why not"),
            "skipped (why not): watch::resume::postgres"
        );
        record_skip(Some(&log), "standby::takeover", "why not");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "watch::resume::postgres\nstandby::takeover\n"
        );
        assert_eq!(record_skip(None, "a::b", "unset"), "skipped (unset): a::b");
    }

    #[test]
    fn the_test_is_named_after_its_thread() {
        assert_eq!(
            current_test(),
            "testing::tests::the_test_is_named_after_its_thread"
        );
    }
}
