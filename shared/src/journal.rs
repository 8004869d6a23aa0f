//! The journal's wire shapes (`docs/reference/http.md`, `GET /journal`): the ledger
//! of what is not a token. Each change to a runtime setting of the control plane
//! (a limit, a schedule, a subscription) and each thing that happens to one is an
//! entry, with the access key that made it.

use serde::{Deserialize, Serialize};

use crate::wire::Object;

/// One entry of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Global and increasing: a page of entries goes on after the last id read.
    pub id: i64,
    /// When it was written: ISO 8601 in UTC with `Z`.
    pub at: String,
    /// What kind of thing it is about: `limit`, `schedule`, `subscription`, ...
    pub subject: String,
    /// Which one of them, by name.
    pub name: String,
    /// What happened: `set`, `removed`, `paused`, `started`, `skipped`, ...
    pub kind: String,
    /// The name of the access key whose request wrote the entry; left out for one
    /// written without a key (the Unix socket, an open port, the clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The facts of the kind.
    pub data: Object,
}

/// The answer of `GET /journal`: a page of entries, in id order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalPage {
    /// The entries.
    pub entries: Vec<JournalEntry>,
}

/// The most entries one page holds, and how many when the query does not say.
pub const MOST_ENTRIES: i64 = 1000;
/// How many entries a page holds when the query does not say.
pub const DEFAULT_ENTRIES: i64 = 100;
