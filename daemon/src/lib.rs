//! `stateous-daemon`: the control plane. It owns the database, the ledger and the
//! clock, and decides every move of every token (`docs/design.md`).
//!
//! It depends only on `stateous-shared`; supervisors reach it over HTTP.

pub mod api;
pub mod archive;
pub mod backup;
pub mod control;
pub mod engine;
pub mod metrics;
pub mod notify;
pub mod schedule;
pub mod serve;
pub mod store;
pub mod testing;
pub mod time_source;
pub mod traces;
pub mod validated;
