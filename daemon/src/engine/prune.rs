//! Prune (`docs/inside/workflows.md`, "Prune"): delete an ended token with
//! everything it wrote, its children with it, so that retention
//! (`serve --retain-ended`) and `stateous token prune` keep the tables to the tokens
//! that matter. The one workflow that deletes rows; it writes no ledger entry (there
//! is no token left to write it on).
//!
//! A prune takes the family's lock first, as every workflow does, and checks again
//! under it what the caller read before: the token still ended (and matched, or
//! ended long enough ago), and, when an archive was written, still at the history
//! the archive holds, so that nothing is deleted that the archive lacks.

use stateous_shared::bulk::{Outcome, TokenOutcome};
use stateous_shared::refusal::Code;

use super::bulk::outcome;
use super::select::Selection;
use super::{lock, py, refuse, refuse_child, Rules, Step};
use crate::store::{LedgerRow, TokenRow, Tx};

/// The most children one family may have and still be pruned (a parallel state's
/// branches; far above any graph's).
const MOST_CHILDREN: i64 = 10_000;

/// What a prune checks again under the family's lock.
#[derive(Debug, Clone, Default)]
pub struct PruneStep {
    /// A bulk prune: what the token must still match.
    pub selection: Option<Selection>,
    /// Retention: the moment (microseconds) at or before which the token's last
    /// entry must be.
    pub ended_by: Option<i64>,
    /// Each of the family's tokens with its last seq, as the archive wrote them;
    /// `None` when nothing was archived.
    pub archived: Option<Vec<(String, i64)>>,
}

/// The token `top` and every token below it (children, their children, ...), the
/// top first. Refuses a child, and a family with a live token.
pub fn family(tx: &dyn Tx, top: &TokenRow) -> Step<Vec<TokenRow>> {
    refuse_child(tx, top, "prune")?;
    let mut rows = vec![top.clone()];
    let mut next = 0;
    while next < rows.len() {
        let parent = rows[next].token.clone();
        rows.extend(tx.find_tokens(None, Some(&parent), MOST_CHILDREN)?);
        next += 1;
    }
    if let Some(live) = rows.iter().find(|row| row.status.live()) {
        let whose = if live.token == top.token {
            String::new()
        } else {
            format!(" (its child {})", py(&live.token))
        };
        return refuse(
            Code::TokenNotActive,
            format!(
                "token {}{whose} is {}; only an ended token can be pruned",
                py(&live.token),
                live.status
            ),
        );
    }
    Ok(rows)
}

/// When the token last changed: the moment of its last ledger entry (its end, or a
/// refused event after it), else when it entered its state.
pub fn last_moved(row: &TokenRow, entries: &[LedgerRow]) -> i64 {
    entries.last().map_or(row.entered_at, |entry| entry.at)
}

/// Why the token cannot be pruned now whatever the caller read, as a refusal
/// sentence would say it: `None` when it may be.
pub fn why_not(tx: &dyn Tx, row: &TokenRow) -> Step<Option<stateous_shared::refusal::Refusal>> {
    match family(tx, row) {
        Ok(_) => Ok(None),
        Err(fail) => Ok(Some(fail.refusal())),
    }
}

/// Why `top`, with its family `rows`, is skipped now, as its outcome: it no
/// longer matches, it grew younger, it changed since its archive, or it holds an
/// id the next row would take again; `None` when it may be pruned. A prune checks
/// it under the family's lock; an archive's read checks it first too, so that the
/// archive holds only what is about to be pruned.
pub fn skipped(
    rules: &Rules,
    tx: &dyn Tx,
    top: &TokenRow,
    rows: &[TokenRow],
    step: &PruneStep,
) -> Step<Option<TokenOutcome>> {
    let skip = |detail: &str| Ok(Some(outcome(top, Outcome::Skipped, detail.to_string())));
    if let Some(selection) = &step.selection {
        if !selection.matches(rules, top, tx.now()) {
            return skip(NO_LONGER_MATCHES);
        }
    }
    if let Some(until) = step.ended_by {
        if last_moved(top, &tx.entries(&top.token)?) > until {
            return skip(NOT_OLD_ENOUGH);
        }
    }
    if let Some(archived) = &step.archived {
        let mut now_at = Vec::with_capacity(rows.len());
        for row in rows {
            now_at.push((row.token.clone(), tx.last_seq(&row.token)?));
        }
        if &now_at != archived {
            return skip(CHANGED_SINCE_ARCHIVED);
        }
    }
    for row in rows {
        if tx.holds_newest_id(&row.token)? {
            return skip(HOLDS_NEWEST_ID);
        }
    }
    Ok(None)
}

/// A skipped prune's detail: the token no longer matched the filter.
pub const NO_LONGER_MATCHES: &str = "it no longer matched the filter when its turn came";

/// A skipped prune's detail: the token's history grew (retention).
pub const NOT_OLD_ENOUGH: &str = "its history grew since it was chosen; it is not old enough";

/// A skipped prune's detail: the token changed between its archive and its prune.
pub const CHANGED_SINCE_ARCHIVED: &str =
    "it changed after its archive was written, so it is kept (and taken out of that \
     archive); the next run archives it again";

/// A skipped prune's detail: SQLite would give its newest row's id again.
pub const HOLDS_NEWEST_ID: &str = "kept for now: it holds the newest row of the ledger, tasks \
                                   or timers, whose id the next row would take again; a later \
                                   run prunes it";

/// Delete `token` and its children, in its own transaction, if it is still as
/// `step` expects: applied, skipped ([`skipped`]), or refused (a child, a live
/// token).
pub fn prune(rules: &Rules, tx: &dyn Tx, token: &str, step: &PruneStep) -> Step<TokenOutcome> {
    let top = lock(tx, token)?;
    let rows = family(tx, &top)?;
    if let Some(skipped) = skipped(rules, tx, &top, &rows, step)? {
        return Ok(skipped);
    }
    // The children first, so that no row is left naming a parent that is gone.
    for row in rows.iter().rev() {
        tx.forget_usage(&row.token)?;
        tx.delete_token(&row.token)?;
    }
    let detail = match rows.len() - 1 {
        0 => "pruned it".to_string(),
        1 => "pruned it with its child".to_string(),
        n => format!("pruned it with its {n} children"),
    };
    Ok(TokenOutcome {
        token: top.token.clone(),
        outcome: Outcome::Applied,
        state: top.state.clone(),
        status: top.status.as_str().to_string(),
        detail,
        code: None,
    })
}
