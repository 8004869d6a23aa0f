//! Choosing tokens by the filter language: the listing of `GET /tokens?where=...` with
//! its total count, and the pages of matches that a bulk action walks through. A read;
//! it changes nothing.
//!
//! What the database can check by itself (state, status, moved, parent) goes into
//! SQL ([`TokenScan`]); the rest of the filter is evaluated on each row the SQL
//! gives, in the listing's order (the most recently moved first). When the filter
//! is wholly in SQL, a count reads no row at all.

use std::collections::BTreeSet;

use stateous_shared::graph::{Workflow, END, START};
use stateous_shared::guards::filter::{moved_seconds, Filter, TokenFacts};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::TokenView;

use super::{py, view, Rules, Step};
use crate::store::{Closed, Cursor, TokenRow, TokenScan, TokenStatus, Tx};

/// How many rows one SQL page of a scan reads while the filter is evaluated row by
/// row: large enough that a scan of 100,000 tokens is 100 statements, small enough
/// that a page costs little memory.
const SCAN_PAGE: i64 = 1000;

/// Which tokens: a filter, and the listing's own `status`, `state` and `parent`.
/// Every part given must hold.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The filter (`where`).
    pub filter: Option<Filter>,
    /// Only this status.
    pub status: Option<TokenStatus>,
    /// Only this state.
    pub state: Option<String>,
    /// Only the children of this token.
    pub parent: Option<String>,
    /// Only active and paused tokens: a bulk action that no ended token can take
    /// leaves them out unless asked (`docs/reference/http.md`, `POST /tokens/bulk`).
    pub live_only: bool,
}

/// A page of a listing, and how many tokens match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The tokens of the page, the most recently moved first.
    pub tokens: Vec<TokenView>,
    /// How many tokens match the selection.
    pub total: i64,
}

impl Selection {
    /// The SQL part of the selection at `now`, and whether it is the whole of it.
    fn scan(&self, now: i64) -> (TokenScan, bool) {
        let (mut scan, exact) = self.scan_all(now);
        if self.live_only {
            let statuses = scan.statuses.take().unwrap_or(TokenStatus::ALL.to_vec());
            scan.statuses = Some(statuses.into_iter().filter(|s| s.live()).collect());
        }
        (scan, exact)
    }

    /// [`Selection::scan`] before `live_only`.
    fn scan_all(&self, now: i64) -> (TokenScan, bool) {
        let mut scan = TokenScan {
            states: self.state.clone().map(|state| vec![state]),
            statuses: self.status.map(|status| vec![status]),
            parent: self.parent.clone(),
            ..TokenScan::default()
        };
        // No token's parent breaks the id pattern, and no state name holds a NUL
        // (which Postgres text cannot hold either): such a name matches nothing
        // and is never sent to the database, as `read::tokens` does.
        if scan
            .parent
            .as_ref()
            .is_some_and(|p| !crate::validated::token_id_ok(p))
        {
            scan.parent = None;
            scan.states = Some(Vec::new());
        }
        let Some(filter) = &self.filter else {
            sane(&mut scan);
            return (scan, true);
        };
        let pushed = filter.pushdown();
        if let Some(states) = pushed.states {
            scan.states = Some(match scan.states.take() {
                None => states,
                Some(before) => before.into_iter().filter(|s| states.contains(s)).collect(),
            });
        }
        scan.not_states = pushed.not_states;
        let named = |names: &[String]| -> Vec<TokenStatus> {
            TokenStatus::ALL
                .iter()
                .copied()
                .filter(|status| names.iter().any(|name| name == status.as_str()))
                .collect()
        };
        let mut statuses = scan.statuses.take().unwrap_or(TokenStatus::ALL.to_vec());
        if let Some(allowed) = &pushed.statuses {
            let allowed = named(allowed);
            statuses.retain(|status| allowed.contains(status));
        }
        let excluded = named(&pushed.not_statuses);
        statuses.retain(|status| !excluded.contains(status));
        if statuses.len() < TokenStatus::ALL.len() {
            scan.statuses = Some(statuses);
        }
        // moved >= n  <=>  now - entered_at >= n s  <=>  entered_at <= now - n s.
        let ago = |seconds: i64| now.saturating_sub(seconds.saturating_mul(1_000_000));
        scan.entered_until = pushed.moved_at_least.map(ago);
        scan.entered_after = pushed.moved_below.map(ago);
        sane(&mut scan);
        (scan, pushed.exact)
    }

    /// Whether `row` matches the whole selection at `now`.
    pub fn matches(&self, rules: &Rules, row: &TokenRow, now: i64) -> bool {
        let scan_ok = self.status.is_none_or(|s| s == row.status)
            && (!self.live_only || row.status.live())
            && self.state.as_ref().is_none_or(|s| *s == row.state)
            && self
                .parent
                .as_ref()
                .is_none_or(|p| row.parent.as_ref() == Some(p));
        scan_ok
            && self
                .filter
                .as_ref()
                .is_none_or(|f| f.matches(&facts(rules, row, now)))
    }
}

/// Why the selection cannot mean what it says: it names a state or a workflow
/// that the served graph does not have ([`unknown_state`], then
/// [`unknown_workflow`]); `None` when every name is the graph's. Checked before a
/// listing or a bulk action reads any token.
pub fn unknown_name(rules: &Rules, selection: &Selection) -> Option<Refusal> {
    unknown_state(rules, selection).or_else(|| unknown_workflow(rules, selection))
}

/// Why the selection cannot mean what it says: it names a state (`--state`, or
/// `state == 'x'`, `!=`, `in`, `not in` in the filter) that no workflow of the
/// graphs tokens run on has, most likely a typo, which would match nothing (or, with
/// `!=`, everything) without a word. 422 `invalid_argument` with the name and the
/// graph's states; `None` when every name is a state, START or END.
fn unknown_state(rules: &Rules, selection: &Selection) -> Option<Refusal> {
    let states: BTreeSet<&str> = workflows(rules)
        .flat_map(|workflow| workflow.states.keys())
        .map(String::as_str)
        .filter(|state| *state != START && *state != END)
        .collect();
    let named = selection.state.as_deref().into_iter().chain(
        selection
            .filter
            .iter()
            .flat_map(|filter| filter.states_named()),
    );
    let unknown = named
        .into_iter()
        .find(|name| *name != START && *name != END && !states.contains(name))?;
    let head = format!(
        "no workflow of the served graph has a state {}",
        py(unknown)
    );
    Some(not_among(head, "its states", states))
}

/// Every workflow of the graphs tokens run on: each graph's main one and its
/// child workflows.
pub(crate) fn workflows(rules: &Rules) -> impl Iterator<Item = &Workflow> {
    rules
        .graphs()
        .into_iter()
        .flat_map(|graph| std::iter::once(&graph.main).chain(graph.children.values()))
}

/// 422 `invalid_argument`: `head`, then the names it could have been, as
/// ` (its states: a, b)`.
fn not_among(head: String, listed: &str, known: BTreeSet<&str>) -> Refusal {
    let known: Vec<&str> = known.into_iter().collect();
    let sentence = format!("{head} ({listed}: {})", known.join(", "));
    Refusal::new(Code::InvalidArgument, sentence)
}

/// Why the filter cannot mean what it says: it compares `workflow` with a name
/// that is neither the graph's main workflow nor one of its child workflows (a
/// typo, or the workflow of another graph), which would match nothing (or, with
/// `!=`, everything) without a word, as [`unknown_state`] says for states. 422
/// `invalid_argument` with the name and the graph's workflows; `None` when every
/// name is a workflow of the graph.
fn unknown_workflow(rules: &Rules, selection: &Selection) -> Option<Refusal> {
    let workflows: BTreeSet<&str> = workflows(rules)
        .map(|workflow| workflow.name.as_str())
        .collect();
    let unknown = selection
        .filter
        .iter()
        .flat_map(|filter| filter.workflows_named())
        .find(|name| !workflows.contains(name))?;
    let head = format!("the served graph has no workflow {}", py(unknown));
    Some(not_among(head, "its workflows", workflows))
}

/// Leave out of `scan` the state names that hold a NUL: no state has one, so
/// they select nothing and exclude nothing.
fn sane(scan: &mut TokenScan) {
    let nameable = |name: &String| !name.contains('\0');
    if let Some(states) = &mut scan.states {
        states.retain(nameable);
    }
    scan.not_states.retain(nameable);
}

/// What the filter language reads of a row.
pub fn facts<'a>(rules: &'a Rules, row: &'a TokenRow, now: i64) -> TokenFacts<'a> {
    TokenFacts {
        token: &row.token,
        state: &row.state,
        status: row.status.as_str(),
        visit: row.visit,
        workflow: row
            .workflow
            .as_deref()
            .unwrap_or(&rules.graph_of(row).main.name),
        parent: row.parent.as_deref(),
        moved: moved_seconds(row.entered_at, now),
        graph: row.graph.as_deref().unwrap_or(""),
        context: &row.context,
    }
}

/// `limit` tokens of the selection from the `offset`th on, and the total.
pub fn list(
    rules: &Rules,
    tx: &dyn Tx,
    selection: &Selection,
    limit: i64,
    offset: i64,
) -> Step<Listing> {
    let now = tx.now();
    let (scan, exact) = selection.scan(now);
    if exact {
        let rows = tx.scan_tokens(&scan, None, offset, limit)?;
        return Ok(Listing {
            tokens: rows.iter().map(view).collect(),
            total: tx.count_tokens(&scan)?,
        });
    }
    let mut tokens = Vec::new();
    let mut total = 0;
    let mut after: Option<Cursor> = None;
    loop {
        let rows = tx.scan_tokens(&scan, after.as_ref(), 0, SCAN_PAGE)?;
        for row in &rows {
            if selection.matches(rules, row, now) {
                if total >= offset && total - offset < limit {
                    tokens.push(view(row));
                }
                total += 1;
            }
        }
        match rows.last() {
            Some(last) if rows.len() as i64 == SCAN_PAGE => {
                after = Some((last.entered_at, last.token.clone()));
            }
            _ => return Ok(Listing { tokens, total }),
        }
    }
}

/// How many tokens match the selection.
pub fn count(rules: &Rules, tx: &dyn Tx, selection: &Selection) -> Step<i64> {
    let (scan, exact) = selection.scan(tx.now());
    if exact {
        return Ok(tx.count_tokens(&scan)?);
    }
    Ok(list(rules, tx, selection, 1, 0)?.total)
}

/// Up to `limit` matching rows, the most recently moved first: a bulk preview's
/// sample, in the listing's order.
pub fn first(rules: &Rules, tx: &dyn Tx, selection: &Selection, limit: i64) -> Step<Vec<TokenRow>> {
    let now = tx.now();
    let (scan, _) = selection.scan(now);
    let mut found = Vec::new();
    let mut after: Option<Cursor> = None;
    loop {
        let rows = tx.scan_tokens(&scan, after.as_ref(), 0, SCAN_PAGE)?;
        let full = rows.len() as i64 == SCAN_PAGE;
        for row in rows {
            after = Some((row.entered_at, row.token.clone()));
            if selection.matches(rules, &row, now) {
                found.push(row);
                if found.len() as i64 == limit {
                    return Ok(found);
                }
            }
        }
        if !full {
            return Ok(found);
        }
    }
}

/// Up to `limit` matching rows after the token id `after`, by id, and where the
/// next page starts (`None` when no row is left): a bulk action's walk. By id,
/// not in the listing's order: a token that moved while the walk ran went behind
/// a walk by the moment it moved, and was never met (an operator tryout paused
/// 3,986 of 4,000 matching tokens with a supervisor working them). A token is met
/// once, whatever it does meanwhile.
pub fn page(
    rules: &Rules,
    tx: &dyn Tx,
    selection: &Selection,
    after: Option<&str>,
    limit: i64,
) -> Step<(Vec<TokenRow>, Option<String>)> {
    let now = tx.now();
    let (scan, _) = selection.scan(now);
    let mut found = Vec::new();
    let mut after = after.map(str::to_string);
    loop {
        let rows = tx.walk_tokens(&scan, after.as_deref(), SCAN_PAGE)?;
        let full = rows.len() as i64 == SCAN_PAGE;
        for row in rows {
            after = Some(row.token.clone());
            if selection.matches(rules, &row, now) {
                found.push(row);
                if found.len() as i64 == limit {
                    return Ok((found, after));
                }
            }
        }
        if !full {
            return Ok((found, None));
        }
    }
}
