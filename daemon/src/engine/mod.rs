//! The engine: a functional core. Each internal workflow (`docs/inside/workflows.md`)
//! is one file here, a function of the transaction, its `now` (`Tx::now`) and a
//! validated input, returning the answer or a refusal. No tokio, no hyper, no wall
//! clock: the engine is plain functions over the store and `now`, so that tests drive
//! it without a runtime.
//!
//! How a request ends (`docs/inside/workflows.md`):
//! - `Ok`: its changes commit, and the answer goes back.
//! - `Err(Fail::Recorded)`: its changes commit (the `event_rejected` row that
//!   explains the refusal), then the refusal goes back.
//! - `Err(Fail::Rollback)`: nothing it wrote stays; the refusal goes back.

pub mod bulk;
pub mod cancel;
pub mod claim;
pub mod detail;
pub mod fire;
pub mod heartbeat;
pub mod join;
pub mod lease;
pub mod memory;
pub mod migrate;
pub mod note;
pub mod occurrence;
pub mod pause;
pub mod prune;
pub mod read;
pub mod report;
pub mod retry;
pub mod route;
pub mod schedules;
pub mod scope;
pub mod select;
pub mod serving;
pub mod start;
pub mod timers;
pub mod why;
// Usage and budgets (`docs/concepts/budgets.md`).
pub mod budget;
pub mod claim_limits;
pub mod limits_file;
pub mod priority;
pub mod retry_policy;
pub mod usage;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use stateous_shared::graph::{Graph, StateSpec, Workflow};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::{Object, TokenView};

use crate::store::{EntryKind, StoreError, TokenRow, Tx};

/// Stateous's own events: only the engine fires them, and no workflow may declare
/// one (`docs/inside/workflows.md`, "The engine's own events").
pub const OWN_EVENTS: [&str; 4] = ["__started__", "timeout", "error", "joined"];

/// Why a request stops, and whether what it wrote stays.
#[derive(Debug, Clone, PartialEq)]
pub enum Fail {
    /// Roll back everything the request wrote, then refuse.
    Rollback(Refusal),
    /// Commit what the request wrote (its `event_rejected` row), then refuse.
    Recorded(Refusal),
}

impl Fail {
    /// The refusal to answer.
    pub fn refusal(self) -> Refusal {
        match self {
            Fail::Rollback(refusal) | Fail::Recorded(refusal) => refusal,
        }
    }

    /// Whether the request's changes are kept.
    pub fn keeps(&self) -> bool {
        matches!(self, Fail::Recorded(_))
    }
}

impl From<Refusal> for Fail {
    fn from(refusal: Refusal) -> Fail {
        Fail::Rollback(refusal)
    }
}

/// The answer (503 `not_serving`) to each request after this control plane lost the
/// database, and the log line of that moment.
pub const LOST: &str = "another control plane took this database, or this control plane's \
                        hold on it ended; this control plane does no more work; trying \
                        again does not help: stop this server";

/// The answer (503 `database_busy`) to a write while the database's disk is full,
/// and `/health`'s sentence then.
pub const DISK_FULL: &str = "the disk of the database is full, so nothing can be written; \
                             free space on it: nothing was lost, and writes go on by \
                             themselves once there is room";

/// What a request that failed in the store answers: busy and conflicting
/// transactions may be tried again (503 `database_busy`), a lost database is
/// 503 `not_serving`, a value the database cannot keep is the caller's (422),
/// anything else is logged and answered 500 without the database's words.
impl From<StoreError> for Refusal {
    fn from(error: StoreError) -> Refusal {
        match error {
            StoreError::Busy | StoreError::Conflict => Refusal::new(
                Code::DatabaseBusy,
                "the database cannot take this request now; try again",
            ),
            StoreError::NotAnswering(limit) => Refusal::new(
                Code::DatabaseBusy,
                format!(
                    "the database did not answer within {}; try again (a request sent \
                     again with its idempotency key applies at most once)",
                    stateous_shared::durations::limit_words(limit)
                ),
            ),
            StoreError::DiskFull => Refusal::new(Code::DatabaseBusy, DISK_FULL),
            StoreError::NotServing => Refusal::new(Code::NotServing, LOST),
            StoreError::Unstorable(sentence) => Refusal::new(Code::InvalidPayload, sentence),
            other => {
                tracing::error!("{other}");
                Refusal::new(Code::Unexpected, "the request failed unexpectedly")
            }
        }
    }
}

impl From<StoreError> for Fail {
    fn from(error: StoreError) -> Fail {
        Fail::Rollback(error.into())
    }
}

/// The result of an engine step.
pub type Step<T> = Result<T, Fail>;

/// Roll back and refuse with `code` and a sentence.
pub fn refuse<T>(code: Code, sentence: impl Into<String>) -> Step<T> {
    Err(Fail::Rollback(Refusal::new(code, sentence)))
}

/// What the engine needs besides the transaction: the served graph, the graphs
/// older tokens run on, and the lease.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The served graph: new tokens start on it.
    pub graph: Arc<Graph>,
    /// Every graph kept in `graphs`, by checksum, set once as the control plane
    /// starts (`Rules::keep`). A kept graph of the served one's structure maps to
    /// the served graph: a change of timeouts or retries alone applies to every
    /// token (`docs/guarantees.md`, "Workflow versions").
    structures: Arc<OnceLock<HashMap<String, Arc<Graph>>>>,
    /// How long a claim's lease lasts, in microseconds.
    pub lease: i64,
    /// The lease in words for the lease-expiry reason (`2 minutes`).
    pub lease_words: String,
}

impl Rules {
    /// The rules of `graph` with a lease of `lease`.
    pub fn new(graph: Arc<Graph>, lease: std::time::Duration) -> Rules {
        Rules {
            graph,
            structures: Arc::new(OnceLock::new()),
            lease: crate::time_source::micros(lease),
            lease_words: stateous_shared::durations::span_words(lease.as_secs()),
        }
    }

    /// Keep `graphs` (kept graphs, by checksum) as the graphs older tokens run on;
    /// a graph of the served one's structure is taken as the served one. Only the
    /// first call counts.
    pub fn keep(&self, graphs: impl IntoIterator<Item = Graph>) {
        let map = graphs
            .into_iter()
            .map(|graph| {
                let checksum = graph.checksum.clone();
                let runs = if graph.structure == self.graph.structure {
                    Arc::clone(&self.graph)
                } else {
                    Arc::new(graph)
                };
                (checksum, runs)
            })
            .collect();
        let _ = self.structures.set(map);
    }

    /// The graph kept under `checksum` (the served one's structure gives the
    /// served graph); `None` when none is kept.
    pub fn structure(&self, checksum: &str) -> Option<&Arc<Graph>> {
        if checksum == self.graph.checksum {
            return Some(&self.graph);
        }
        self.structures.get()?.get(checksum)
    }

    /// The graph the token runs on: its own, or the served one when it names none
    /// (or one not kept, which a database upgraded in place cannot have).
    pub fn graph_of(&self, row: &TokenRow) -> &Graph {
        match row.graph.as_deref() {
            Some(checksum) => self.structure(checksum).unwrap_or(&self.graph),
            None => &self.graph,
        }
    }

    /// The served graph, then every other kept graph of another structure: where
    /// a name (a state, a workflow, an event) may belong to a live token.
    pub fn graphs(&self) -> Vec<&Graph> {
        let mut all: Vec<&Graph> = vec![&self.graph];
        if let Some(map) = self.structures.get() {
            for graph in map.values() {
                if !all.iter().any(|seen| seen.checksum == graph.checksum) {
                    all.push(graph);
                }
            }
        }
        all
    }

    /// The workflow a token routes by: its child workflow, or the main one, of
    /// the graph it runs on.
    pub fn workflow(&self, row: &TokenRow) -> Step<&Workflow> {
        let graph = self.graph_of(row);
        match &row.workflow {
            None => Ok(&graph.main),
            Some(name) => graph.children.get(name).ok_or_else(|| {
                Fail::Rollback(Refusal::new(
                    Code::Unexpected,
                    format!("the served graph has no workflow {}", py(name)),
                ))
            }),
        }
    }

    /// A state of the token's workflow.
    pub fn state(&self, row: &TokenRow, state: &str) -> Step<&StateSpec> {
        let workflow = self.workflow(row)?;
        workflow.states.get(state).ok_or_else(|| {
            Fail::Rollback(Refusal::new(
                Code::Unexpected,
                format!(
                    "the workflow {} has no state {}",
                    py(&workflow.name),
                    py(state)
                ),
            ))
        })
    }
}

/// A string as Python's `repr` writes it, as the reference's sentences quote names
/// and reasons stored in the ledger must read the same.
pub fn py(text: &str) -> String {
    stateous_shared::pyrepr::repr_str(text)
}

/// A token as the API answers it.
pub fn view(row: &TokenRow) -> TokenView {
    TokenView {
        token: row.token.clone(),
        state: row.state.clone(),
        status: row.status.as_str().to_string(),
        visit: row.visit,
        context: (*row.context).clone(),
        entered_at: iso(from_micros(row.entered_at)),
        parent: row.parent.clone(),
    }
}

/// The token, or 404 `token_not_found`. An id that no token can have (it breaks
/// the token id pattern, e.g. holds a NUL character) is not looked up at all, so
/// that both backends answer it alike (Postgres text cannot even hold a NUL).
pub fn existing(tx: &dyn Tx, token: &str) -> Step<TokenRow> {
    let found = if crate::validated::token_id_ok(token) {
        tx.token(token)?
    } else {
        None
    };
    match found {
        Some(row) => Ok(row),
        None => refuse(
            Code::TokenNotFound,
            format!("there is no token {}", py(token)),
        ),
    }
}

/// Lock the token's family, waiting up to the lock limit, then read the token:
/// every workflow that changes a token it names starts here, so locks are taken in
/// one order everywhere (the family's lock, then its rows). 404 `token_not_found`.
pub fn lock(tx: &dyn Tx, token: &str) -> Step<TokenRow> {
    if crate::validated::token_id_ok(token) {
        tx.lock_family(token, true)?;
    }
    existing(tx, token)
}

/// [`lock`] for an operator's `verb` (pause, resume, cancel, retry): a child is
/// refused ([`refuse_child`]), and so is a token whose status `allowed` does not
/// take, with the sentence [`not_now`] makes of `only`.
pub fn steered(
    tx: &dyn Tx,
    token: &str,
    verb: &str,
    allowed: impl Fn(crate::store::TokenStatus) -> bool,
    only: &str,
) -> Step<TokenRow> {
    let row = lock(tx, token)?;
    refuse_child(tx, &row, verb)?;
    if !allowed(row.status) {
        return Err(Fail::Rollback(not_now(&row, only)));
    }
    Ok(row)
}

/// 409 `token_not_active` for a token whose status does not allow the request:
/// `token 'T-1' is done; ` and `only` (such as "only a paused token can be resumed").
pub fn not_now(row: &TokenRow, only: &str) -> Refusal {
    let sentence = format!("token {} is {}; {only}", py(&row.token), row.status);
    Refusal::new(Code::TokenNotActive, sentence)
}

/// What an event from outside carries besides its payload, recorded on the entry
/// that accepts or holds it: its idempotency key (the entry's `key`), and the hook
/// it came through (`"hook": {"name", "delivery"}` in the entry's data, ours:
/// `docs/inside/data.md`). Events of the engine's own carry neither.
#[derive(Debug, Clone, Copy, Default)]
pub struct Via<'a> {
    /// The idempotency key.
    pub key: Option<&'a str>,
    /// The hook and the delivery.
    pub hook: Option<&'a Value>,
}

impl Via<'_> {
    /// Neither a key nor a hook.
    pub const NONE: Via<'static> = Via {
        key: None,
        hook: None,
    };

    /// Add the hook, if any, to an entry's `data`.
    pub fn mark(&self, data: &mut Value) {
        if let (Some(hook), Value::Object(map)) = (self.hook, data) {
            map.insert("hook".into(), hook.clone());
        }
    }
}

/// Append one ledger entry; `data` is a JSON object literal.
pub fn append(
    tx: &dyn Tx,
    token: &str,
    kind: EntryKind,
    key: Option<&str>,
    data: Value,
) -> Step<()> {
    let data = match data {
        Value::Object(map) => map,
        _ => Object::new(),
    };
    crate::store::claimable::note_entry(kind, &data);
    tx.append(token, kind, key, &data)?;
    Ok(())
}

/// Record a refused event as `event_rejected`, and refuse after the commit.
pub fn reject(tx: &dyn Tx, row: &TokenRow, event: &str, reason: String, code: Code) -> Fail {
    let data = serde_json::json!({"event": event, "reason": reason});
    match append(tx, &row.token, EntryKind::EventRejected, None, data) {
        Ok(()) => Fail::Recorded(Refusal::new(code, reason)),
        Err(fail) => fail,
    }
}

/// A payload as the ledger writes it: the object, or null.
pub fn payload_value(payload: Option<&Object>) -> Value {
    payload.map_or(Value::Null, |p| Value::Object(p.clone()))
}

/// Refuse a child token: steer its top token (reference `_refuse_child`).
pub fn refuse_child(tx: &dyn Tx, row: &TokenRow, verb: &str) -> Step<()> {
    let Some(parent) = &row.parent else {
        return Ok(());
    };
    let mut top = row.clone();
    while let Some(above) = top.parent.clone() {
        match tx.token(&above)? {
            Some(found) => top = found,
            None => break,
        }
    }
    let done = match verb {
        "pause" => "paused",
        "resume" => "resumed",
        "retry" => "retried",
        "prune" => "pruned",
        _ => "cancelled",
    };
    refuse(
        Code::ChildToken,
        format!(
            "token {} is a child of {}: it is part of its parent's work, and cannot be {done} \
             on its own; {verb} {} instead",
            py(&row.token),
            py(parent),
            py(&top.token)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::py;
    use crate::validated::token_id_ok;

    #[test]
    fn names_are_quoted_as_python_repr_quotes_them() {
        assert_eq!(py("coding"), "'coding'");
        assert_eq!(py("it's"), "\"it's\"");
        assert_eq!(py("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py("tab\there"), "'tab\\there'");
        assert_eq!(py("back\\slash"), "'back\\\\slash'");
    }

    #[test]
    fn token_ids_follow_the_reference_pattern() {
        for good in ["T-1", "a", "9.x_y-z", &"x".repeat(128)] {
            assert!(token_id_ok(good), "{good}");
        }
        for bad in ["", "-a", ".a", "a b", "ä", "a/b", &"x".repeat(129)] {
            assert!(!token_id_ok(bad), "{bad}");
        }
    }
}
