//! `stateous-shared`: what every part of Stateous agrees on: the graph file and its
//! checksum, durations and names, the guard language, the compiler, the wire types
//! and refusal codes, where the daemon's socket is, and how history lines read.
//!
//! It depends on nothing else of ours. The client of the API is the crate
//! `stateous-client`; the commands of the binary live in the binary.

pub mod access;
pub mod bulk;
pub mod claim_limits;
pub mod compiler;
pub mod durations;
pub mod graph;
pub mod guards;
pub mod history;
pub mod hooks;
pub mod journal;
pub mod json_arg;
pub mod limits;
pub mod notify;
pub mod pem;
pub mod pyrepr;
pub mod refusal;
pub mod retry_policies;
pub mod schedules;
pub mod socket;
pub mod testing;
pub mod time;
pub mod trace_context;
pub mod watch;
pub mod why;
pub mod wire;
// Usage and budgets (`docs/concepts/budgets.md`).
pub mod usage;
