//! The writes of a Postgres transaction, held until they must reach the server: before
//! any statement that reads, and at the commit. Each row's last state is kept (a task
//! claimed, then done, is one write), and all of them go in one statement
//! ([`Pending::flush`]), so a request costs a few round trips instead of one per row.
//! Ids of new ledger rows, tasks and timers are taken from their sequences in blocks
//! ([`Ids`]), so a new row's id is known when it is written here.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use postgres::types::ToSql;

use super::conn::PgConn;
use super::params::placeholder;
use crate::store::json::to_text;
use crate::store::{ClaimRow, LedgerRow, StoreResult, TaskRow, TimerRow, TokenRow};

/// How many ids one round trip takes from a sequence.
const BLOCK: i64 = 128;

/// Ids taken from a table's sequence ahead of time, handed out in increasing order.
#[derive(Debug)]
pub struct Ids {
    /// `ledger`, `tasks` or `timers`.
    table: &'static str,
    taken: Mutex<VecDeque<i64>>,
}

impl Ids {
    /// Ids of `table`'s identity column.
    pub const fn new(table: &'static str) -> Ids {
        Ids {
            table,
            taken: Mutex::new(VecDeque::new()),
        }
    }

    /// The next id; a block is taken on `conn` when none is left. The lock is held
    /// while the block is taken, so ids are handed out in increasing order (the
    /// feed's mark counts on it for ledger ids).
    pub fn next(&self, conn: &mut PgConn) -> StoreResult<i64> {
        let mut taken = match self.taken.lock() {
            Ok(taken) => taken,
            Err(poisoned) => poisoned.into_inner(),
        };
        if taken.is_empty() {
            let sql = format!(
                "SELECT nextval(pg_get_serial_sequence('{}', 'id')) FROM generate_series(1, {BLOCK})",
                self.table
            );
            for row in conn.query(&sql, &[])? {
                taken.push_back(super::get(&row, 0)?);
            }
        }
        taken
            .pop_front()
            .ok_or_else(|| crate::store::StoreError::Database("no id was taken".into()))
    }

    /// Give the ids taken but not handed out back to the sequence (a graceful
    /// stop), so the next control plane goes on from the first of them, as the
    /// reference's ids do after a restart. Only while the sequence's last value is
    /// still the end of this process's block (nobody took any since); an id taken
    /// after this comes from a new block. A crash still loses the rest of a block,
    /// as Postgres itself loses sequence values it logged ahead.
    pub fn give_back(&self, conn: &mut PgConn) -> StoreResult<()> {
        let mut taken = match self.taken.lock() {
            Ok(taken) => taken,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (Some(&first), Some(&last)) = (taken.front(), taken.back()) else {
            return Ok(());
        };
        let whole = usize::try_from(last - first + 1).is_ok_and(|n| n == taken.len());
        if whole {
            conn.query(
                "SELECT setval(pg_get_serial_sequence($1, 'id'), $2, false)
                 WHERE pg_sequence_last_value(pg_get_serial_sequence($1, 'id')::regclass) = $3",
                &[&self.table, &first, &last],
            )?;
        }
        taken.clear();
        Ok(())
    }
}

/// Writes not sent yet, each row at its last state.
#[derive(Debug, Default)]
pub struct Pending {
    ledger: Vec<LedgerRow>,
    new_tokens: BTreeMap<String, TokenRow>,
    tokens: BTreeMap<String, TokenRow>,
    new_tasks: BTreeMap<i64, TaskRow>,
    tasks: BTreeMap<i64, TaskRow>,
    new_timers: BTreeMap<i64, TimerRow>,
    timers: BTreeMap<i64, TimerRow>,
    forget_memory: Vec<String>,
    claims: BTreeMap<String, ClaimRow>,
}

impl Pending {
    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.ledger.is_empty()
            && self.new_tokens.is_empty()
            && self.tokens.is_empty()
            && self.new_tasks.is_empty()
            && self.tasks.is_empty()
            && self.new_timers.is_empty()
            && self.timers.is_empty()
            && self.forget_memory.is_empty()
            && self.claims.is_empty()
    }

    /// A ledger row (its id already taken).
    pub fn entry(&mut self, row: LedgerRow) {
        self.ledger.push(row);
    }

    /// A new token.
    pub fn new_token(&mut self, row: &TokenRow) {
        self.new_tokens.insert(row.token.clone(), row.clone());
    }

    /// A token's new state.
    pub fn token(&mut self, row: &TokenRow) {
        match self.new_tokens.get_mut(&row.token) {
            Some(new) => *new = row.clone(),
            None => {
                self.tokens.insert(row.token.clone(), row.clone());
            }
        }
    }

    /// A new task (its id already taken).
    pub fn new_task(&mut self, row: TaskRow) {
        self.new_tasks.insert(row.id, row);
    }

    /// A task's new state.
    pub fn task(&mut self, row: &TaskRow) {
        match self.new_tasks.get_mut(&row.id) {
            Some(new) => *new = row.clone(),
            None => {
                self.tasks.insert(row.id, row.clone());
            }
        }
    }

    /// A new timer (its id already taken).
    pub fn new_timer(&mut self, row: TimerRow) {
        self.new_timers.insert(row.id, row);
    }

    /// A timer's new state.
    pub fn timer(&mut self, row: &TimerRow) {
        match self.new_timers.get_mut(&row.id) {
            Some(new) => *new = row.clone(),
            None => {
                self.timers.insert(row.id, row.clone());
            }
        }
    }

    /// All of a token's memory goes.
    pub fn forget_memory(&mut self, token: &str) {
        self.forget_memory.push(token.to_string());
    }

    /// A supervisor's last claim.
    pub fn claim(&mut self, row: &ClaimRow) {
        self.claims.insert(row.supervisor.clone(), row.clone());
    }

    /// The row of `token` as these writes leave it, if they change it.
    pub fn token_row(&self, token: &str) -> Option<&TokenRow> {
        self.new_tokens
            .get(token)
            .or_else(|| self.tokens.get(token))
    }

    /// A new token whose id differs from `token`'s only in case (ids are ASCII).
    pub fn folded_new(&self, token: &str) -> Option<String> {
        self.new_tokens
            .keys()
            .find(|id| id.as_str() != token && id.eq_ignore_ascii_case(token))
            .cloned()
    }

    /// Whether these writes change the task `id` or the token `token`.
    pub fn touches(&self, id: i64, token: &str) -> bool {
        self.new_tasks.contains_key(&id)
            || self.tasks.contains_key(&id)
            || self.new_tokens.contains_key(token)
            || self.tokens.contains_key(token)
    }

    /// Add the ids of the tasks and the tokens these writes change.
    pub fn touched(&self, tasks: &mut Vec<i64>, tokens: &mut Vec<String>) {
        tasks.extend(self.new_tasks.keys().chain(self.tasks.keys()));
        tokens.extend(self.new_tokens.keys().chain(self.tokens.keys()).cloned());
    }

    /// Take `later`'s writes in, as if each had been made here after this one's:
    /// a row that is new here stays new, at `later`'s state.
    pub fn absorb(&mut self, later: Pending) {
        if self.is_empty() {
            *self = later;
            return;
        }
        self.ledger.extend(later.ledger);
        self.new_tokens.extend(later.new_tokens);
        for row in later.tokens.into_values() {
            match self.new_tokens.get_mut(&row.token) {
                Some(new) => *new = row,
                None => {
                    self.tokens.insert(row.token.clone(), row);
                }
            }
        }
        self.new_tasks.extend(later.new_tasks);
        for row in later.tasks.into_values() {
            match self.new_tasks.get_mut(&row.id) {
                Some(new) => *new = row,
                None => {
                    self.tasks.insert(row.id, row);
                }
            }
        }
        self.new_timers.extend(later.new_timers);
        for row in later.timers.into_values() {
            match self.new_timers.get_mut(&row.id) {
                Some(new) => *new = row,
                None => {
                    self.timers.insert(row.id, row);
                }
            }
        }
        self.forget_memory.extend(later.forget_memory);
        self.claims.extend(later.claims);
    }

    /// Send everything in one statement, and forget it. The statement holds only
    /// the parts that have rows ([`flush_text`]).
    pub fn flush(&mut self, conn: &mut PgConn) -> StoreResult<()> {
        if self.is_empty() {
            return Ok(());
        }
        std::mem::take(self).send(|sql, params| conn.execute(sql, params).map(drop))
    }

    /// Hand the one statement of everything that waits, and its parameters, to
    /// `send` (which may send it with the statement after it, in one round trip).
    pub fn send<T>(
        self,
        send: impl FnOnce(&str, &[&(dyn ToSql + Sync)]) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let pending = self;
        let ledger = Columns::ledger(&pending.ledger);
        let new_tokens = Columns::tokens(pending.new_tokens.values());
        let tokens = Columns::tokens(pending.tokens.values());
        let new_tasks = Columns::tasks(pending.new_tasks.values());
        let tasks = Columns::tasks(pending.tasks.values());
        let new_timers = Columns::timers(pending.new_timers.values());
        let timers = Columns::timers(pending.timers.values());
        let claims = Columns::claims(pending.claims.values());
        // One parameter for each token whose memory goes (`FORGET`).
        let forget: Vec<&(dyn ToSql + Sync)> = pending
            .forget_memory
            .iter()
            .map(|token| token as &(dyn ToSql + Sync))
            .collect();
        // Each part: whether it has rows, and its parameters.
        let all: [(bool, &[&(dyn ToSql + Sync)]); 9] = [
            (!pending.ledger.is_empty(), &ledger.ledger_params()),
            (!pending.new_tokens.is_empty(), &new_tokens.token_params()),
            (!pending.tokens.is_empty(), &tokens.token_params()),
            (!pending.new_tasks.is_empty(), &new_tasks.task_params()),
            (!pending.tasks.is_empty(), &tasks.task_params()),
            (!pending.new_timers.is_empty(), &new_timers.timer_params()),
            (!pending.timers.is_empty(), &timers.timer_params()),
            (!forget.is_empty(), &forget),
            (!pending.claims.is_empty(), &claims.claim_params()),
        ];
        let mut parts = 0;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        for (index, (present, values)) in all.into_iter().enumerate() {
            if present {
                parts |= 1 << index;
                params.extend_from_slice(values);
            }
        }
        send(&flush_text(parts, forget.len()), &params)
    }
}

/// The parts of the flush, in the order of [`Pending::flush`]'s bits: each a
/// data-modifying `WITH` item over arrays of rows, its parameters numbered from
/// `$1`. The parts touch different rows (each row is in one part, at its last
/// state), as one statement must.
///
/// An update is an `INSERT ... ON CONFLICT DO UPDATE` of rows that exist (the
/// transaction read each one before it changed it, and no row of these tables is
/// ever deleted), so it only ever updates, and each row is found by a probe of
/// the key's index whatever the plan. It sends every column of the row, as a new
/// row's part does, so that the proposed row meets the table's `NOT NULL` and
/// `CHECK` constraints, and sets only the columns that change.
///
/// Why no join: Postgres plans a prepared statement for good after a few runs (a
/// generic plan), with the statistics of that moment. An `UPDATE ... FROM
/// unnest(...)` is a join, and planned while a table held a few rows it joined by
/// reading the whole table, which it then did at every write while the table
/// grew, until the next `ANALYZE` (seen with `auto_explain` under `stateous
/// bench` on a new database). Naming the keys with `= ANY(keys)` too did not
/// prevent it: Postgres counts an array parameter as 10 keys, and 10 probes of an
/// index cost more than reading a table of a few pages.
const PARTS: [&str; 9] = [
    "l AS (INSERT INTO ledger (id, token, seq, at, kind, key, data, key_name)
      SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
                           $6::text[], $7::text[], $8::text[]))",
    "tn AS (INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, workflow,
                           graph)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::text[], $9::text[]))",
    "tu AS (INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, workflow,
                           graph)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::text[], $9::text[])
       ON CONFLICT (token) DO UPDATE SET state = excluded.state, status = excluded.status,
           visit = excluded.visit, context = excluded.context, entered_at = excluded.entered_at,
           graph = excluded.graph)",
    "kn AS (INSERT INTO tasks (id, token, state, visit, status, attempt, claimed_by, lease_until,
                          queued_at)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::bigint[], $9::bigint[]))",
    "ku AS (INSERT INTO tasks (id, token, state, visit, status, attempt, claimed_by, lease_until,
                          queued_at)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::bigint[], $9::bigint[])
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, attempt = excluded.attempt,
           claimed_by = excluded.claimed_by, lease_until = excluded.lease_until)",
    "mn AS (INSERT INTO timers (id, token, state, visit, event, payload, set_at, due_at, status, kind)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[]))",
    "mu AS (INSERT INTO timers (id, token, state, visit, event, payload, set_at, due_at, status, kind)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[])
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, due_at = excluded.due_at)",
    // Once for each token whose memory goes (`{n}` its place in turn), each a
    // `DELETE` of one token's rows: by the key's index in any plan, where
    // `token = ANY($1)` was planned, as above, as for 10 tokens, and read the whole
    // table.
    "md{n} AS (DELETE FROM memory WHERE token = $1)",
    "cl AS (INSERT INTO claims (supervisor, request, task_id, attempt)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
       ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
           task_id = excluded.task_id, attempt = excluded.attempt)",
];

/// The flush's statements made so far, by their parts and number of forgets.
type Texts = HashMap<(u16, usize), Arc<str>>;

/// The flush's statement for a set of [`PARTS`] (bit `i` for part `i`) and the number
/// of tokens whose memory goes, made once and kept. A statement of only the parts with
/// rows costs Postgres less to plan and to start than all nine, most of them empty.
fn flush_text(parts: u16, forget: usize) -> Arc<str> {
    static TEXTS: OnceLock<Mutex<Texts>> = OnceLock::new();
    let texts = TEXTS.get_or_init(Mutex::default);
    let mut texts = match texts.lock() {
        Ok(texts) => texts,
        Err(poisoned) => poisoned.into_inner(),
    };
    texts
        .entry((parts, forget))
        .or_insert_with(|| made_text(parts, forget).into())
        .clone()
}

/// The text of [`flush_text`]: `WITH`, the parts, `SELECT 1`.
fn made_text(parts: u16, forget: usize) -> String {
    let mut text = String::from("WITH ");
    let mut taken = 0;
    for (index, part) in PARTS.iter().enumerate() {
        if parts & (1 << index) == 0 {
            continue;
        }
        // Each part once, the memory's once for each token.
        let items: Vec<String> = if part.contains("{n}") {
            (0..forget)
                .map(|n| part.replace("{n}", &n.to_string()))
                .collect()
        } else {
            vec![part.to_string()]
        };
        for item in items {
            if taken > 0 {
                text.push_str(",\n");
            }
            taken += renumbered(&item, taken, &mut text);
        }
    }
    text.push_str("\nSELECT 1");
    text
}

/// Append `part` to `text` with each parameter `$n` as `$(n + by)`; the highest
/// `n` of the part (how many parameters it has).
fn renumbered(part: &str, by: usize, text: &mut String) -> usize {
    let mut most = 0;
    let mut rest = part;
    while let Some(at) = rest.find('$') {
        text.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n = rest[..digits].parse().unwrap_or(0);
        most = most.max(n);
        text.push_str(&placeholder(n + by));
        rest = &rest[digits..];
    }
    text.push_str(rest);
    most
}

/// Rows of one kind as arrays of columns, each array in the order of the rows.
#[derive(Debug, Default)]
struct Columns {
    int: [Vec<i64>; 4],
    text: [Vec<String>; 5],
    maybe: [Vec<Option<String>>; 3],
    maybe_int: [Vec<Option<i64>>; 2],
}

impl Columns {
    /// id, token, seq, at, kind, key, data, key_name.
    fn ledger(rows: &[LedgerRow]) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            c.int[0].push(row.id);
            c.text[0].push(row.token.clone());
            c.int[1].push(row.seq);
            c.int[2].push(row.at);
            c.text[1].push(row.kind.clone());
            c.maybe[0].push(row.key.clone());
            c.text[2].push(to_text(&row.data));
            c.maybe[1].push(row.by.clone());
        }
        c
    }

    /// The ledger part's parameters, in the order of [`Columns::ledger`].
    fn ledger_params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.int[0],
            &self.text[0],
            &self.int[1],
            &self.int[2],
            &self.text[1],
            &self.maybe[0],
            &self.text[2],
            &self.maybe[1],
        ]
    }

    /// token, state, status, visit, context, entered_at, parent, workflow, graph.
    fn tokens<'r>(rows: impl Iterator<Item = &'r TokenRow>) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            c.text[0].push(row.token.clone());
            c.text[1].push(row.state.clone());
            c.text[2].push(row.status.as_str().to_string());
            c.int[0].push(row.visit);
            c.text[3].push(to_text(&row.context));
            c.int[1].push(row.entered_at);
            c.maybe[0].push(row.parent.clone());
            c.maybe[1].push(row.workflow.clone());
            c.maybe[2].push(row.graph.as_deref().map(str::to_string));
        }
        c
    }

    /// A tokens part's parameters (new rows or changed ones), in the order of
    /// [`Columns::tokens`].
    fn token_params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.text[0],
            &self.text[1],
            &self.text[2],
            &self.int[0],
            &self.text[3],
            &self.int[1],
            &self.maybe[0],
            &self.maybe[1],
            &self.maybe[2],
        ]
    }

    /// id, token, state, visit, status, attempt, claimed_by, lease_until, queued_at.
    fn tasks<'r>(rows: impl Iterator<Item = &'r TaskRow>) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            c.int[0].push(row.id);
            c.text[0].push(row.token.clone());
            c.text[1].push(row.state.clone());
            c.int[1].push(row.visit);
            c.text[2].push(row.status.as_str().to_string());
            c.int[2].push(row.attempt);
            c.maybe[0].push(row.claimed_by.clone());
            c.maybe_int[0].push(row.lease_until);
            c.int[3].push(row.queued_at);
        }
        c
    }

    /// A tasks part's parameters, in the order of [`Columns::tasks`].
    fn task_params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.int[0],
            &self.text[0],
            &self.text[1],
            &self.int[1],
            &self.text[2],
            &self.int[2],
            &self.maybe[0],
            &self.maybe_int[0],
            &self.int[3],
        ]
    }

    /// id, token, state, visit, event, payload, set_at, due_at, status, kind.
    fn timers<'r>(rows: impl Iterator<Item = &'r TimerRow>) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            c.int[0].push(row.id);
            c.text[0].push(row.token.clone());
            c.text[1].push(row.state.clone());
            c.int[1].push(row.visit);
            c.text[2].push(row.event.clone());
            c.maybe[0].push(row.payload.as_ref().map(to_text));
            c.int[2].push(row.set_at);
            c.int[3].push(row.due_at);
            c.text[3].push(row.status.as_str().to_string());
            c.text[4].push(row.kind.as_str().to_string());
        }
        c
    }

    /// A timers part's parameters, in the order of [`Columns::timers`].
    fn timer_params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.int[0],
            &self.text[0],
            &self.text[1],
            &self.int[1],
            &self.text[2],
            &self.maybe[0],
            &self.int[2],
            &self.int[3],
            &self.text[3],
            &self.text[4],
        ]
    }

    /// supervisor, request, task_id, attempt.
    fn claims<'r>(rows: impl Iterator<Item = &'r ClaimRow>) -> Columns {
        let mut c = Columns::default();
        for row in rows {
            c.text[0].push(row.supervisor.clone());
            c.text[1].push(row.request.clone());
            c.maybe_int[0].push(row.task_id);
            c.maybe_int[1].push(row.attempt);
        }
        c
    }

    /// The claims part's parameters, in the order of [`Columns::claims`].
    fn claim_params(&self) -> [&(dyn ToSql + Sync); 4] {
        [
            &self.text[0],
            &self.text[1],
            &self.maybe_int[0],
            &self.maybe_int[1],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::postgres::plan_tests::{kept_plan, new_database};
    use crate::testing::PgTestDb;

    #[test]
    fn a_flush_reads_only_the_rows_it_changes_in_the_plan_postgres_keeps() {
        // On an empty database and on one of 200 rows a table (where the old
        // `UPDATE ... FROM unnest(...) WHERE t.token = ANY($1) AND ...` was kept
        // as a read of all of `tokens`, and `token = ANY($1)` of all of `memory`).
        for rows in [0, 200] {
            let Some(db) = PgTestDb::create() else {
                return;
            };
            std::thread::spawn(move || {
                let mut conn = new_database(&db, rows);
                let every = (1u16 << PARTS.len()) - 1;
                let shapes = (0..PARTS.len()).map(|index| (1u16 << index, 1));
                for (parts, forget) in shapes.chain([(1 << 7, 3), (every, 2)]) {
                    let plan = kept_plan(&mut conn, &flush_text(parts, forget));
                    assert!(
                        !plan.contains("Seq Scan"),
                        "{rows} rows, parts {parts:#b}:\n{plan}"
                    );
                }
            })
            .join()
            .unwrap();
        }
    }

    fn token(id: &str, state: &str) -> TokenRow {
        TokenRow {
            token: id.into(),
            state: state.into(),
            status: crate::store::TokenStatus::Active,
            visit: 1,
            context: Default::default(),
            entered_at: 0,
            parent: None,
            workflow: None,
            graph: None,
        }
    }

    fn task(id: i64, token: &str, status: crate::store::TaskStatus) -> TaskRow {
        TaskRow {
            id,
            token: token.into(),
            state: "s".into(),
            visit: 1,
            status,
            attempt: 0,
            claimed_by: None,
            lease_until: None,
            queued_at: 0,
        }
    }

    #[test]
    fn a_later_requests_writes_are_taken_in_at_each_rows_last_state() {
        use crate::store::TaskStatus::{Claimed, Done, Queued};
        let mut earlier = Pending::default();
        earlier.new_token(&token("N-1", "a"));
        earlier.new_task(task(1, "N-1", Queued));
        earlier.token(&token("O-1", "a"));
        let mut later = Pending::default();
        // A row new in the earlier request stays new, at the later state.
        later.token(&token("N-1", "b"));
        later.task(&task(1, "N-1", Claimed));
        later.token(&token("O-1", "c"));
        later.task(&task(7, "O-1", Done));
        earlier.absorb(later);
        assert_eq!(earlier.new_tokens["N-1"].state, "b");
        assert!(!earlier.tokens.contains_key("N-1"));
        assert_eq!(earlier.tokens["O-1"].state, "c");
        assert_eq!(earlier.new_tasks[&1].status, Claimed);
        assert!(!earlier.tasks.contains_key(&1));
        assert_eq!(earlier.tasks[&7].status, Done);
        assert_eq!(
            earlier.token_row("N-1").map(|row| row.state.as_str()),
            Some("b")
        );
        assert!(earlier.token_row("X").is_none());
        let (mut tasks, mut tokens) = (Vec::new(), Vec::new());
        earlier.touched(&mut tasks, &mut tokens);
        tasks.sort_unstable();
        tokens.sort();
        assert_eq!(tasks, vec![1, 7]);
        assert_eq!(tokens, vec!["N-1".to_string(), "O-1".to_string()]);
    }

    #[test]
    fn a_new_token_whose_id_differs_only_in_case_is_found() {
        let mut pending = Pending::default();
        pending.new_token(&token("Order-1", "a"));
        assert_eq!(pending.folded_new("ORDER-1").as_deref(), Some("Order-1"));
        assert_eq!(pending.folded_new("Order-1"), None);
        assert_eq!(pending.folded_new("Order-2"), None);
    }

    #[test]
    fn the_memory_of_each_token_is_its_own_delete() {
        let text = flush_text(1 << 7, 2);
        assert_eq!(
            &*text,
            "WITH md0 AS (DELETE FROM memory WHERE token = $1),\n\
             md1 AS (DELETE FROM memory WHERE token = $2)\nSELECT 1"
        );
    }

    #[test]
    fn a_flush_numbers_the_parameters_of_its_parts_in_turn() {
        // The ledger's 8 parameters, a new token's 9, a claim's 4.
        let text = flush_text(0b1_0000_0011, 0);
        assert!(text.starts_with("WITH l AS (INSERT INTO ledger"), "{text}");
        assert!(text.contains("$8::text[]))"), "{text}");
        assert!(text.contains("$9::text[], $10::text[]"), "{text}");
        assert!(text.contains("$16::text[], $17::text[]))"), "{text}");
        assert!(!text.contains("tu AS"), "{text}");
        assert!(
            text.contains("$18::text[], $19::text[], $20::bigint[], $21::bigint[]"),
            "{text}"
        );
        assert!(text.ends_with("\nSELECT 1"), "{text}");
    }
}
