//! `stateous-supervisor`: claims the tasks of the states it serves, runs their
//! routines, and reports outcomes through a durable outbox (`docs/design.md`,
//! "The supervisor").
//!
//! It depends only on `stateous-shared`; it meets the daemon only over HTTP.

pub mod api;
mod beating;
pub mod beside;
pub mod command;
pub mod config;
pub mod contract;
pub mod ctx;
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
