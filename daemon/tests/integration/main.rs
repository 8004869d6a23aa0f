//! The daemon's in-process tests, as one test binary: each module is a former test
//! file of its own, and `common` is the module they share. One binary links the
//! workspace once, where a binary per file linked it once each.
//!
//! Run one module's tests with `cargo test -p stateous-daemon --test integration control::`.

// `common` first: `both!`, which runs a test on each backend, is defined there and
// used by the modules below it.
#[macro_use]
mod common;

mod api_server;
mod budgets;
mod control;
mod dev_clock;
mod heartbeat_attempts;
mod limits;
mod notify_retention;
mod operate;
mod prune;
mod reference_scenarios;
mod restart_ids;
mod retry_why;
mod schema;
mod stall;
mod tick_order;
