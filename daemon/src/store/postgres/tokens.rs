//! The SQL of `tokens`, and the family lock: the row of a family's top token, locked
//! `FOR UPDATE`.
//!
//! Every change to a token takes its family's lock first, and a transaction that
//! takes several takes them in one order, so two transactions never wait for each
//! other in a circle. A token's `parent` never changes once it is made, so the walk
//! up to the top reads without locks.

use super::columns::Columns;
use super::params::Params;
use super::{get, PgTx};
use crate::store::json::to_text;
use crate::store::{
    Closed, Cursor, StoreResult, TokenReads, TokenRow, TokenScan, TokenStatus, Tokens,
};

const SELECT: &str =
    "SELECT token, state, status, visit, context, entered_at, parent, workflow, graph, trace
     FROM tokens";

/// The rows of tokens whose folded ids are among `$1` (ids are ASCII): one probe
/// of `tokens_folded` for each, so that no kept plan reads every token (written
/// `lower(token) = ANY($1)`, it was kept as a read of the whole table while that
/// was small, and read it whole at every batch as it grew).
const READ_AHEAD: &str =
    "SELECT k.token, k.state, k.status, k.visit, k.context, k.entered_at, k.parent, k.workflow,
            k.graph, k.trace
     FROM unnest($1::text[]) AS f(folded)
     CROSS JOIN LATERAL (SELECT * FROM tokens WHERE lower(token) = f.folded LIMIT 1) k";

impl PgTx<'_> {
    /// The writer's batch: read the rows of `tokens` (or of tokens whose ids differ
    /// only in case; ids are ASCII) in one statement, for [`Tokens::token`] to answer from while
    /// no writes were sent and no transaction ran beside the batch since it began
    /// (`mark`, `store/family.rs` `SoloTransactions`).
    pub fn read_ahead(&self, tokens: &[String], mark: u64) -> StoreResult<()> {
        let asked: foldhash::HashSet<String> = tokens
            .iter()
            .map(|token| token.to_ascii_lowercase())
            .collect();
        let folded: Vec<&String> = asked.iter().collect();
        let found = self.unflushed(READ_AHEAD, &[&folded])?;
        let mut rows = foldhash::HashMap::default();
        for row in &found {
            let row = TokenRow::read(row)?;
            rows.insert(row.token.to_ascii_lowercase(), row);
        }
        *self.ahead.borrow_mut() = Some(super::ReadAhead { asked, rows, mark });
        Ok(())
    }

    /// What was read ahead of `id`'s folded id, while it still stands: `Some`
    /// with the row found (`None` inside: none).
    fn read_before(&self, id: &str) -> Option<Option<TokenRow>> {
        let ahead = self.ahead.borrow();
        let ahead = ahead.as_ref()?;
        let batch = self.batch?;
        let folded = id.to_ascii_lowercase();
        if !ahead.asked.contains(&folded) || !batch.solo.none_since(ahead.mark) {
            return None;
        }
        Some(ahead.rows.get(&folded).cloned())
    }

    /// Lock `token`'s row if it is a top token: [`Step::Locked`] (also for a token
    /// not made yet), [`Step::Up`] with its parent when it is a child (nothing
    /// locked), [`Step::Held`] when another transaction holds it and `wait` is false.
    fn lock_top(&self, token: &str, wait: bool) -> StoreResult<Step> {
        // One round trip for the common case, a top token: the row is locked only
        // when it has no parent, so a child's row is never locked before its top.
        let sql = if wait {
            "SELECT 1 FROM tokens WHERE token = $1 AND parent IS NULL FOR UPDATE"
        } else {
            "SELECT 1 FROM tokens WHERE token = $1 AND parent IS NULL FOR UPDATE SKIP LOCKED"
        };
        if self.query_opt(sql, &[&token])?.is_some() {
            return Ok(Step::Locked);
        }
        let found = self.query_opt("SELECT parent FROM tokens WHERE token = $1", &[&token])?;
        Ok(match found {
            // Not made yet: nothing to lock (a new token's insert holds its row).
            None => Step::Locked,
            Some(row) => match get::<Option<String>>(&row, 0)? {
                Some(parent) => Step::Up(parent),
                // A top token that another transaction holds (only without `wait`).
                None => Step::Held,
            },
        })
    }
}

/// One step of the walk to a family's top.
enum Step {
    /// The top's row is locked now (or the token does not exist yet).
    Locked,
    /// Another transaction holds the top's row.
    Held,
    /// A child: go on with its parent.
    Up(String),
}

/// The flush's part of new tokens (`pending.rs`): token, state, status, visit,
/// context, entered_at, parent, workflow, graph, trace, as [`flush_columns`] packs
/// them.
pub(super) const FLUSH_NEW: &str =
    "tn AS (INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, workflow,
                           graph, trace)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[]))";

/// The flush's part of changed tokens: the columns of [`FLUSH_NEW`], and the ones
/// that change set.
pub(super) const FLUSH_CHANGED: &str =
    "tu AS (INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, workflow,
                           graph, trace)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[])
       ON CONFLICT (token) DO UPDATE SET state = excluded.state, status = excluded.status,
           visit = excluded.visit, context = excluded.context, entered_at = excluded.entered_at,
           graph = excluded.graph)";

/// Tokens as the columns of [`FLUSH_NEW`] and [`FLUSH_CHANGED`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r TokenRow>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.token.clone())
            .put(row.state.clone())
            .put(row.status.as_str().to_string())
            .put(row.visit)
            .put(to_text(&row.context))
            .put(row.entered_at)
            .put(row.parent.clone())
            .put(row.workflow.clone())
            .put(row.graph.as_deref().map(str::to_string))
            .put(row.trace.as_deref().map(str::to_string));
    })
}

impl Tokens for PgTx<'_> {
    fn lock_family(&self, token: &str, wait: bool) -> StoreResult<bool> {
        let mut current = token.to_string();
        loop {
            if self.locked.borrow().contains(&current) {
                return Ok(true);
            }
            match self.lock_top(&current, wait)? {
                Step::Locked => {
                    self.locked.borrow_mut().insert(current);
                    return Ok(true);
                }
                Step::Held => return Ok(false),
                Step::Up(parent) => current = parent,
            }
        }
    }

    fn lock_top(&self, top: &str, wait: bool) -> StoreResult<Option<Option<TokenRow>>> {
        if self.locked.borrow().contains(top) {
            return Ok(Some(self.token(top)?));
        }
        // One round trip: the row is locked and read at once.
        let sql = if wait {
            const_format(SELECT, " WHERE token = $1 FOR UPDATE")
        } else {
            const_format(SELECT, " WHERE token = $1 FOR UPDATE SKIP LOCKED")
        };
        let found = self.query_opt(&sql, &[&top])?;
        let row = found.as_ref().map(TokenRow::read).transpose()?;
        if row.is_none() && !wait {
            // Not there, or held by another: only a second look tells.
            let there = self.query_opt("SELECT 1 FROM tokens WHERE token = $1", &[&top])?;
            if there.is_some() {
                return Ok(None);
            }
        }
        self.locked.borrow_mut().insert(top.to_string());
        Ok(Some(row))
    }

    fn token(&self, id: &str) -> StoreResult<Option<TokenRow>> {
        // By the folded id (`tokens_folded`, unique): the one row found is the
        // token, or another that differs only in case. The latter is kept for
        // `token_folded`, which a start asks next: one round trip for both.
        // The writes that wait answer for a row they change; otherwise they are
        // not sent first (the server's row is the row), and a new token among
        // them may be the one whose id differs only in case.
        if let Some(row) = self.waiting_token(id) {
            *self.folded.borrow_mut() = Some((id.to_string(), None));
            return Ok(Some(row));
        }
        let found = match self.read_before(id) {
            Some(found) => found,
            None => {
                let sql = const_format(SELECT, " WHERE lower(token) = lower($1)");
                let found = self.unflushed(&sql, &[&id])?;
                found.first().map(TokenRow::read).transpose()?
            }
        };
        let (row, other) = match found {
            Some(row) if row.token == id => (Some(row), None),
            Some(row) => (None, Some(row.token)),
            None => (None, self.waiting_folded(id)),
        };
        *self.folded.borrow_mut() = Some((id.to_string(), other));
        Ok(row)
    }

    fn insert_token(&self, row: &TokenRow) -> StoreResult<()> {
        // A new id: what was read of folded ids may no longer be so.
        *self.folded.borrow_mut() = None;
        // Written with the transaction's other writes (`pending.rs`).
        self.pending
            .borrow_mut()
            .tokens
            .add(row.token.clone(), row.clone());
        Ok(())
    }

    fn update_token(&self, row: &TokenRow) -> StoreResult<()> {
        self.pending
            .borrow_mut()
            .tokens
            .change(&row.token, row.clone());
        Ok(())
    }

    fn delete_token(&self, token: &str) -> StoreResult<()> {
        *self.folded.borrow_mut() = None;
        // One round trip; each table's rows are found by its token index.
        self.execute(
            "WITH ledger_gone AS (DELETE FROM ledger WHERE token = $1),
                  keys_gone AS (DELETE FROM task_keys
                      WHERE task IN (SELECT id FROM tasks WHERE token = $1)),
                  tasks_gone AS (DELETE FROM tasks WHERE token = $1),
                  timers_gone AS (DELETE FROM timers WHERE token = $1),
                  memory_gone AS (DELETE FROM memory WHERE token = $1),
                  priority_gone AS (DELETE FROM priorities WHERE token = $1)
             DELETE FROM tokens WHERE token = $1",
            &[&token],
        )?;
        Ok(())
    }
}

impl TokenReads for PgTx<'_> {
    fn token_folded(&self, id: &str) -> StoreResult<Option<String>> {
        if let Some((asked, other)) = self.folded.borrow().as_ref() {
            if asked == id {
                return Ok(other.clone());
            }
        }
        let found = self.query_opt(
            "SELECT token FROM tokens WHERE lower(token) = lower($1) AND token <> $1 LIMIT 1",
            &[&id],
        )?;
        found.map(|row| get(&row, 0)).transpose()
    }

    fn find_tokens(
        &self,
        status: Option<TokenStatus>,
        parent: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        // `$1::text IS NULL`: Postgres must know a parameter's type where SQLite
        // does not ask.
        let sql = const_format(
            SELECT,
            " WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR parent = $2)
              ORDER BY entered_at DESC, token LIMIT $3",
        );
        let status = status.map(Closed::as_str);
        let rows = self.query(&sql, &[&status, &parent, &limit])?;
        rows.iter().map(TokenRow::read).collect()
    }

    fn count_live(&self) -> StoreResult<i64> {
        let row = self.query_one(
            "SELECT count(*) FROM tokens WHERE status IN ('active', 'paused')",
            &[],
        )?;
        get(&row, 0)
    }

    fn scan_tokens(
        &self,
        scan: &TokenScan,
        after: Option<&Cursor>,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        let mut params = Params::new();
        let clause = scan_clause(scan, after, &mut params);
        let (limit_at, offset_at) = (params.add(limit), params.add(offset));
        let sql = const_format(
            SELECT,
            &format!(
                " WHERE {clause} ORDER BY entered_at DESC, token LIMIT {limit_at} OFFSET {offset_at}"
            ),
        );
        let rows = self.query(&sql, &params.refs())?;
        rows.iter().map(TokenRow::read).collect()
    }

    fn count_tokens(&self, scan: &TokenScan) -> StoreResult<i64> {
        let mut params = Params::new();
        let clause = scan_clause(scan, None, &mut params);
        let sql = format!("SELECT count(*) FROM tokens WHERE {clause}");
        get(&self.query_one(&sql, &params.refs())?, 0)
    }

    fn walk_tokens(
        &self,
        scan: &TokenScan,
        after: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<TokenRow>> {
        let mut params = Params::new();
        let mut clause = scan_clause(scan, None, &mut params);
        if let Some(after) = after {
            clause.push_str(&format!(" AND token > {}", params.add(after.to_string())));
        }
        let limit_at = params.add(limit);
        let sql = const_format(
            SELECT,
            &format!(" WHERE {clause} ORDER BY token LIMIT {limit_at}"),
        );
        let rows = self.query(&sql, &params.refs())?;
        rows.iter().map(TokenRow::read).collect()
    }

    fn holds_newest_id(&self, _token: &str) -> StoreResult<bool> {
        // The sequences never hand out an id twice, whatever is deleted.
        Ok(false)
    }

    fn traces_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, Option<String>)>> {
        // The whole list in one statement, one round trip (SQLite reads a token at
        // a time).
        let rows = self.query(
            "SELECT token, trace FROM tokens WHERE token = ANY($1)",
            &[&tokens],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn tokens_of(&self, tokens: &[String]) -> StoreResult<Vec<TokenRow>> {
        // The whole list in one statement, through the key (SQLite reads a token
        // at a time).
        let rows = self.query(&const_format(SELECT, " WHERE token = ANY($1)"), &[&tokens])?;
        rows.iter().map(TokenRow::read).collect()
    }
}

/// The condition of `scan` and `after` on `tokens`, its values added to `params`.
/// Where SQLite spells out `IN (?, ?, ...)`, Postgres takes one array parameter:
/// `= ANY($n)` (false for an empty array) and `<> ALL($n)` (true for one).
fn scan_clause(scan: &TokenScan, after: Option<&Cursor>, params: &mut Params<'_>) -> String {
    let mut parts = vec!["TRUE".to_string()];
    if let Some(states) = &scan.states {
        parts.push(format!("state = ANY({})", params.add(states.clone())));
    }
    if !scan.not_states.is_empty() {
        parts.push(format!(
            "state <> ALL({})",
            params.add(scan.not_states.clone())
        ));
    }
    if let Some(statuses) = &scan.statuses {
        let names: Vec<String> = statuses.iter().map(|s| s.as_str().to_string()).collect();
        parts.push(format!("status = ANY({})", params.add(names)));
    }
    if let Some(parent) = &scan.parent {
        parts.push(format!("parent = {}", params.add(parent.clone())));
    }
    if let Some(until) = scan.entered_until {
        parts.push(format!("entered_at <= {}", params.add(until)));
    }
    if let Some(after) = scan.entered_after {
        parts.push(format!("entered_at > {}", params.add(after)));
    }
    if let Some((entered_at, token)) = after {
        let (at, id) = (params.add(*entered_at), params.add(token.clone()));
        // Written with `entered_at <= x` on its own: the planner takes that as the
        // index's start, where `(a < x OR (a = x AND t > y))` alone made it scan the
        // index from its first row and filter (each page of a walk cost the pages
        // before it: a scan of 100,000 rows took 0.8 s instead of 0.3 s).
        parts.push(format!(
            "entered_at <= {at} AND (entered_at < {at} OR token > {id})"
        ));
    }
    parts.join(" AND ")
}

/// `SELECT ...` followed by the rest of a statement.
fn const_format(select: &str, rest: &str) -> String {
    format!("{select}{rest}")
}

#[cfg(test)]
mod tests {
    use super::READ_AHEAD;
    use crate::store::postgres::plan_tests::{kept_plan, new_database};
    use crate::testing::PgTestDb;

    #[test]
    fn a_batchs_tokens_are_read_by_their_folded_ids_in_the_plan_postgres_keeps() {
        // Kept as a read of every token while the table was small, the batch's
        // read ahead grew with the table: a quarter of a bench's speed lost in
        // three passes on one database.
        for rows in [0, 200] {
            let Some(db) = PgTestDb::create() else {
                return;
            };
            std::thread::spawn(move || {
                let mut conn = new_database(&db, rows);
                let plan = kept_plan(&mut conn, READ_AHEAD);
                assert!(plan.contains("tokens_folded"), "{rows} rows:\n{plan}");
                assert!(!plan.contains("Seq Scan on tokens"), "{rows} rows:\n{plan}");
            })
            .join()
            .unwrap();
        }
    }
}
