//! What the trace exporter (`traces/mod.rs`) reads through `Control`: a page of
//! the committed ledger, and the traces and older rows of the tokens the page
//! brings that it does not know yet, in one read (one snapshot).

use std::collections::{HashMap, HashSet};

use stateous_shared::refusal::Refusal;

use super::Control;
use crate::store::{LedgerRow, StoreResult, Tx};

/// What the exporter needs of a token it did not know.
#[derive(Debug, Clone)]
pub struct Known {
    /// The token.
    pub token: String,
    /// Its `tokens.trace` (`None`: made before version 0014, or pruned).
    pub trace: Option<String>,
    /// Its rows before the first one of the page, in seq order.
    pub before: Vec<LedgerRow>,
}

/// One read of the exporter.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The ledger rows, oldest first.
    pub rows: Vec<LedgerRow>,
    /// The tokens of `rows` the exporter did not know, in the order of their first
    /// row in the page.
    pub unknown: Vec<Known>,
}

impl Control {
    /// Committed ledger rows with an id above `after` and at most `upto` (the
    /// feed's safe point: [`Control::mark`]), oldest first, at most `limit`: the
    /// rows `GET /watch` streams, as the store keeps them. For each token of the
    /// page that `known` says the exporter does not know, in the same read: its
    /// trace (one read of `tokens` for all), and, when its first row in the page is
    /// not its first (a token open when this control plane started, or forgotten),
    /// its rows before.
    pub async fn trace_page<K>(
        &self,
        after: i64,
        upto: i64,
        limit: i64,
        known: K,
    ) -> Result<Page, Refusal>
    where
        K: Fn(&str) -> bool + Send + 'static,
    {
        self.read(move |tx| {
            let rows = tx.entries_since(after, upto, None, limit)?;
            let unknown = unknown_of(tx, &rows, known)?;
            Ok(Page { rows, unknown })
        })
        .await
    }
}

/// The tokens of `rows` that `known` does not know, with their trace and older rows.
fn unknown_of(
    tx: &dyn Tx,
    rows: &[LedgerRow],
    known: impl Fn(&str) -> bool,
) -> StoreResult<Vec<Known>> {
    // Each unknown token's first row in the page: the seq from which its rows are
    // here. `met` holds every token looked at, so that `known` is asked once each.
    let mut met: HashSet<&str> = HashSet::new();
    let mut first: Vec<(&str, i64)> = Vec::new();
    for row in rows {
        let token = row.token.as_str();
        if met.insert(token) && !known(token) {
            first.push((token, row.seq));
        }
    }
    if first.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = first.iter().map(|(token, _)| token.to_string()).collect();
    let mut traces: HashMap<String, Option<String>> = tx.traces_of(&ids)?.into_iter().collect();
    let mut unknown = Vec::with_capacity(first.len());
    for (token, seq) in first {
        let trace = traces.remove(token).flatten();
        let before = if seq > 1 {
            let mut rows = tx.entries(token)?;
            rows.retain(|row| row.seq < seq);
            rows
        } else {
            Vec::new()
        };
        unknown.push(Known {
            token: token.to_string(),
            trace,
            before,
        });
    }
    Ok(unknown)
}
