//! The one place that sets up the log of `serve` and `supervise`: lines on stderr,
//! as text (the default) or as JSON (`--log-format json`: one object per line with
//! `timestamp`, `level`, `target`, `message`, and `token`, `task` and `trace_id`
//! where a line has them; `docs/how-to/export-traces.md`). `STATEOUS_LOG` filters
//! (`info` by default).

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the log is JSON: then the `error:` line is an event too
/// (`cli_errors.rs`).
static JSON: AtomicBool = AtomicBool::new(false);

/// Whether `--log-format json` set the log up.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Send `tracing`'s events to stderr in `format` (`text` or `json`, as the flag's
/// parser allows); with `json`, the supervisor's own lines become such events too.
pub fn to_stderr(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STATEOUS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter);
    if format == "json" {
        let _ = builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init();
        stateous_supervisor::log::use_json();
        JSON.store(true, Ordering::Relaxed);
    } else {
        let _ = builder.try_init();
    }
}
