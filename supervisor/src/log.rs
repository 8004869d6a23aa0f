//! The supervisor's log lines on stderr, in the reference's form:
//! `2026-10-06 23:43:39,848 stateous.supervisor: task 2: testing of TICKET-1, attempt 1`.
//!
//! The lines are the interface operators and tests read, so they are written
//! here directly rather than through a tracing formatter whose layout could drift.
//!
//! With `supervise --log-format json` ([`use_json`]) each line is instead a
//! `tracing` event, which the binary's JSON layer writes as one object per line,
//! with `task`, `token` and `trace_id` fields for a line about a task: every such
//! line begins `task N`, and the task's token and trace are those [`task_began`]
//! was told of (or `of TOKEN:` in the line).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

/// The logger's name in each line.
const NAME: &str = "stateous.supervisor";

/// Whether lines are `tracing` events for the JSON layer.
static JSON: AtomicBool = AtomicBool::new(false);

/// A running task's token and trace id.
type Named = (String, Option<String>);

/// The token and trace id of each task running, for the JSON lines.
static TASKS: LazyLock<Mutex<HashMap<i64, Named>>> = LazyLock::new(Default::default);

/// From now on, write each line as a `tracing` event (the binary has set up its
/// JSON layer).
pub fn use_json() {
    JSON.store(true, Ordering::SeqCst);
}

/// A task began to run for `token`, in the trace of `traceparent`: its lines carry
/// both until [`task_ended`].
pub fn task_began(task: i64, token: &str, traceparent: Option<&str>) {
    if !JSON.load(Ordering::Relaxed) {
        return;
    }
    let trace = traceparent
        .and_then(|header| stateous_shared::trace_context::TraceParent::parse(header).ok())
        .map(|header| header.trace.hex());
    if let Ok(mut tasks) = TASKS.lock() {
        tasks.insert(task, (token.to_string(), trace));
    }
}

/// The task's lines no longer need its token and trace.
pub fn task_ended(task: i64) {
    if !JSON.load(Ordering::Relaxed) {
        return;
    }
    if let Ok(mut tasks) = TASKS.lock() {
        tasks.remove(&task);
    }
}

/// The task a line is about, and the token it names: `task N of TOKEN: ...`,
/// `task N: ...` or `task N | ...`.
fn about(text: &str) -> Option<(i64, Option<&str>)> {
    let rest = text.strip_prefix("task ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let task = rest[..digits].parse().ok()?;
    let token = rest[digits..]
        .strip_prefix(" of ")
        .and_then(|tail| tail.split_once(": "))
        .map(|(token, _)| token);
    Some((task, token))
}

/// A line as a `tracing` event, with its task, token and trace id when it is about
/// a task.
fn event(text: &str) {
    let Some((task, named)) = about(text) else {
        tracing::info!(target: NAME, "{text}");
        return;
    };
    let known = TASKS
        .lock()
        .ok()
        .and_then(|tasks| tasks.get(&task).cloned());
    let (token, trace) = match known {
        Some((token, trace)) => (Some(token), trace),
        None => (named.map(str::to_string), None),
    };
    tracing::info!(
        target: NAME,
        task,
        token = token.as_deref(),
        trace_id = trace.as_deref(),
        "{text}"
    );
}

/// Write one line to stderr: local time with milliseconds, the logger's name, the text.
pub fn line(text: &str) {
    if JSON.load(Ordering::Relaxed) {
        event(text);
        return;
    }
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
    fn a_line_about_a_task_names_it() {
        assert_eq!(
            about("task 12 of T-1: reported done"),
            Some((12, Some("T-1")))
        );
        assert_eq!(about("task 3 | hello"), Some((3, None)));
        assert_eq!(about("connected to the control plane"), None);
    }

    #[test]
    fn waits_read_like_the_reference() {
        assert_eq!(seconds(Duration::from_secs(1)), "1");
        assert_eq!(seconds(Duration::from_secs(30)), "30");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25");
    }
}
