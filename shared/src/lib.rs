//! `stateous-shared`: what every part of Stateous agrees on: the graph file and its
//! checksum, durations and names, the guard language, the compiler, the wire types
//! and refusal codes, the client, and how history lines read.
//!
//! It depends on nothing else of ours, so that every other crate can build on it
//! (`ARCHITECTURE.md`).

pub mod client;
pub mod commands;
pub mod compiler;
pub mod durations;
pub mod graph;
pub mod guards;
pub mod history;
pub mod limits;
pub mod live;
pub mod operate;
pub mod pyrepr;
pub mod refusal;
pub mod testing;
pub mod time;
pub mod wire;
