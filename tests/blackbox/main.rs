//! The black-box tests of the `stateous` binary, as one test binary: each module is
//! a former test file of its own, and the harness is a module they all share. One
//! binary links the workspace once, where a binary per file linked it once each.
//!
//! Run one module's tests with `cargo test --test blackbox watch::`.

// The harness first: `both!`, which runs a test on each backend, is defined there
// and used by the modules below it.
#[macro_use]
mod harness;
mod reference;
mod supervising;

mod access;
mod api_refusals;
mod api_routes;
mod approvals;
mod backup;
mod bad_input;
mod bench_routines;
mod budgets;
mod bulk_preview;
mod claim_wait;
mod compile;
mod demo;
mod dev_clock;
mod doc_pages;
mod failover;
mod hardening_control;
mod hardening_supervisor;
mod hooks;
mod interop_reference;
mod interop_supervisor;
mod interop_windows;
mod json_args;
mod limits;
mod limits_keys;
mod manual;
mod metrics;
mod names_cli;
mod notifications;
mod notifications_cli;
mod notify_queue;
mod operate_many;
mod operate_mistakes;
mod parallel;
mod parallel_interop;
mod postgres;
mod postgres_restart;
mod postgres_silent;
mod postgres_tls;
mod power_loss;
mod reliability;
mod retention;
mod schedules;
mod serve;
mod soak;
mod stall;
mod standby;
mod standby_clients;
mod standby_e2e;
mod standby_watch;
mod supervise;
mod supervise_examples;
mod supervisor_guarantees;
mod supervisor_stops;
mod systemd;
mod tidy;
mod tls;
mod token_commands;
mod token_interop;
mod token_why;
mod traces;
mod tui_tmux;
mod values;
mod versions;
mod versions_migrate;
mod watch;
