//! `stateous-supervisor`: claims the tasks of the states it serves, runs their
//! routines, and reports outcomes through a durable outbox (`docs/design.md`,
//! "The supervisor").
//!
//! It depends on `stateous-shared` and on `stateous-client`, whose calls it
//! makes (this crate keeps only its own retry policy: the outbox and the
//! backoff); it never depends on the daemon, and meets it only over HTTP.

pub mod api;
mod beating;
pub mod command;
pub mod companion;
pub mod config;
pub mod contract;
pub mod ctx;
mod ctx_dir;
pub mod ctx_socket;
pub mod examples;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod init;
pub mod inprocess;
pub mod log;
pub mod outbox;
pub mod output;
pub mod routines;
pub mod runner;
mod sending;
pub mod spawner;
pub mod stop;
pub mod supervisor;
pub mod traces;
