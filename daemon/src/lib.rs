//! `stateous-daemon`: the control plane. It owns the database, the ledger and the
//! clock, and decides every move of every token (`docs/design.md`).
//!
//! It depends only on `stateous-shared`; supervisors reach it over HTTP.

pub mod api;
pub mod archive;
pub mod backup;
pub mod clock;
pub mod control;
pub mod engine;
pub mod input;
pub mod metrics;
pub mod serve;
pub mod store;
pub mod testing;
