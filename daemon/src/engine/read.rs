//! The reads of the API: one token, a listing, a history. They run on a read
//! connection and change nothing.

use stateous_shared::refusal::Code;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::{HistoryEntry, TokenView};

use super::{existing, refuse, view, Step};
use crate::store::{TokenStatus, Tx};

/// The most tokens one listing returns.
pub const MOST_TOKENS: i64 = 1000;

/// `GET /tokens/{id}`.
pub fn token(tx: &dyn Tx, token: &str) -> Step<TokenView> {
    existing(tx, token).map(|row| view(&row))
}

/// `GET /tokens`: the most recently moved first.
pub fn tokens(
    tx: &dyn Tx,
    status: Option<TokenStatus>,
    parent: Option<&str>,
    limit: i64,
) -> Step<Vec<TokenView>> {
    if !(1..=MOST_TOKENS).contains(&limit) {
        let sentence = format!("a listing returns 1 to {MOST_TOKENS} tokens, not {limit}");
        return refuse(Code::InvalidArgument, sentence);
    }
    // No token has a parent whose id breaks the pattern: nothing to look up.
    if parent.is_some_and(|p| !crate::validated::token_id_ok(p)) {
        return Ok(Vec::new());
    }
    let rows = tx.find_tokens(status, parent, limit)?;
    Ok(rows.iter().map(view).collect())
}

/// `GET /tokens/{id}/history`.
pub fn history(tx: &dyn Tx, token: &str) -> Step<Vec<HistoryEntry>> {
    existing(tx, token)?;
    let entries = tx.entries(token)?;
    Ok(entries
        .into_iter()
        .map(|e| HistoryEntry {
            seq: e.seq,
            at: iso(from_micros(e.at)),
            kind: e.kind,
            data: e.data,
            by: e.by,
        })
        .collect())
}
