//! What the trace exporter (`traces/mod.rs`) reads through `Control`: pages of the
//! committed ledger, and the traces and older rows of the tokens a page brings
//! that it does not know yet. Reads only, each on one snapshot.

use stateous_shared::refusal::Refusal;

use super::Control;
use crate::store::LedgerRow;

/// A token the exporter meets for the first time in a page.
#[derive(Debug, Clone)]
pub struct Unknown {
    /// The token.
    pub token: String,
    /// Its first row in the page: its rows before (by id) are wanted too, unless it
    /// is the token's first row (seq 1).
    pub first: LedgerRow,
}

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

impl Control {
    /// Committed ledger rows with an id above `after` and at most `upto` (the
    /// feed's safe point: [`Control::mark`]), oldest first, at most `limit`: the
    /// rows `GET /watch` streams, as the store keeps them.
    pub async fn trace_page(
        &self,
        after: i64,
        upto: i64,
        limit: i64,
    ) -> Result<Vec<LedgerRow>, Refusal> {
        self.read(move |tx| Ok(tx.entries_since(after, upto, None, limit)?))
            .await
    }

    /// The trace of each token in `unknown`, and its rows before its first one in
    /// the page: one read of `tokens`, and one history for each token met after its
    /// start (a token that was open when this control plane started).
    pub async fn trace_books(&self, unknown: Vec<Unknown>) -> Result<Vec<Known>, Refusal> {
        self.read(move |tx| {
            let ids: Vec<String> = unknown.iter().map(|u| u.token.clone()).collect();
            let traces = tx.traces_of(&ids)?;
            let mut known = Vec::with_capacity(unknown.len());
            for Unknown { token, first } in unknown {
                let trace = traces
                    .iter()
                    .find(|(id, _)| *id == token)
                    .and_then(|(_, trace)| trace.clone());
                let before = if first.seq > 1 {
                    let mut rows = tx.entries(&token)?;
                    rows.retain(|row| row.seq < first.seq);
                    rows
                } else {
                    Vec::new()
                };
                known.push(Known {
                    token,
                    trace,
                    before,
                });
            }
            Ok(known)
        })
        .await
    }
}
