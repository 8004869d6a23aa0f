//! The writes of a Postgres transaction, held until they must reach the server
//! (issue "Speed"): before any statement that reads, and at the commit. Each row's
//! last state is kept (a task claimed, then done, is one write), and all of them go
//! in one statement ([`FLUSH`]), so a request costs a few round trips instead of one
//! per row. Ids of new ledger rows, tasks and timers are taken from their sequences
//! in blocks ([`Ids`]), so a new row's id is known when it is written here.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use super::conn::PgConn;
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

    /// Send everything in one statement, and forget it.
    pub fn flush(&mut self, conn: &mut PgConn) -> StoreResult<()> {
        if self.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(self);
        let ledger = Columns::ledger(&pending.ledger);
        let new_tokens = Columns::tokens(pending.new_tokens.values());
        let tokens = Columns::tokens(pending.tokens.values());
        let new_tasks = Columns::tasks(pending.new_tasks.values());
        let tasks = Columns::tasks(pending.tasks.values());
        let new_timers = Columns::timers(pending.new_timers.values());
        let timers = Columns::timers(pending.timers.values());
        let claims = Columns::claims(pending.claims.values());
        conn.execute(
            FLUSH,
            &[
                &ledger.int[0],
                &ledger.text[0],
                &ledger.int[1],
                &ledger.int[2],
                &ledger.text[1],
                &ledger.maybe[0],
                &ledger.text[2],
                &new_tokens.text[0],
                &new_tokens.text[1],
                &new_tokens.text[2],
                &new_tokens.int[0],
                &new_tokens.text[3],
                &new_tokens.int[1],
                &new_tokens.maybe[0],
                &new_tokens.maybe[1],
                &tokens.text[0],
                &tokens.text[1],
                &tokens.text[2],
                &tokens.int[0],
                &tokens.text[3],
                &tokens.int[1],
                &new_tasks.int[0],
                &new_tasks.text[0],
                &new_tasks.text[1],
                &new_tasks.int[1],
                &new_tasks.text[2],
                &new_tasks.int[2],
                &new_tasks.maybe[0],
                &new_tasks.maybe_int[0],
                &new_tasks.int[3],
                &tasks.int[0],
                &tasks.text[2],
                &tasks.int[2],
                &tasks.maybe[0],
                &tasks.maybe_int[0],
                &new_timers.int[0],
                &new_timers.text[0],
                &new_timers.text[1],
                &new_timers.int[1],
                &new_timers.text[2],
                &new_timers.maybe[0],
                &new_timers.int[2],
                &new_timers.int[3],
                &new_timers.text[3],
                &new_timers.text[4],
                &timers.int[0],
                &timers.text[3],
                &timers.int[3],
                &pending.forget_memory,
                &claims.text[0],
                &claims.text[1],
                &claims.maybe_int[0],
                &claims.maybe_int[1],
            ],
        )?;
        Ok(())
    }
}

/// Every write of a transaction in one statement: each part is a data-modifying
/// `WITH` over arrays of rows (empty arrays write nothing). The parts touch
/// different rows (each row is in one part, at its last state), as one statement
/// must.
const FLUSH: &str = "
WITH
l AS (INSERT INTO ledger (id, token, seq, at, kind, key, data)
      SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
                           $6::text[], $7::text[])),
tn AS (INSERT INTO tokens (token, state, status, visit, context, entered_at, parent, workflow)
       SELECT * FROM unnest($8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[],
                            $13::bigint[], $14::text[], $15::text[])),
tu AS (UPDATE tokens t SET state = u.state, status = u.status, visit = u.visit,
              context = u.context, entered_at = u.entered_at
       FROM unnest($16::text[], $17::text[], $18::text[], $19::bigint[], $20::text[],
                   $21::bigint[]) AS u(token, state, status, visit, context, entered_at)
       WHERE t.token = u.token),
kn AS (INSERT INTO tasks (id, token, state, visit, status, attempt, claimed_by, lease_until,
                          queued_at)
       SELECT * FROM unnest($22::bigint[], $23::text[], $24::text[], $25::bigint[], $26::text[],
                            $27::bigint[], $28::text[], $29::bigint[], $30::bigint[])),
ku AS (UPDATE tasks t SET status = u.status, attempt = u.attempt, claimed_by = u.claimed_by,
              lease_until = u.lease_until
       FROM unnest($31::bigint[], $32::text[], $33::bigint[], $34::text[], $35::bigint[])
            AS u(id, status, attempt, claimed_by, lease_until)
       WHERE t.id = u.id),
mn AS (INSERT INTO timers (id, token, state, visit, event, payload, set_at, due_at, status, kind)
       SELECT * FROM unnest($36::bigint[], $37::text[], $38::text[], $39::bigint[], $40::text[],
                            $41::text[], $42::bigint[], $43::bigint[], $44::text[], $45::text[])),
mu AS (UPDATE timers t SET status = u.status, due_at = u.due_at
       FROM unnest($46::bigint[], $47::text[], $48::bigint[]) AS u(id, status, due_at)
       WHERE t.id = u.id),
md AS (DELETE FROM memory WHERE token = ANY($49::text[])),
cl AS (INSERT INTO claims (supervisor, request, task_id, attempt)
       SELECT * FROM unnest($50::text[], $51::text[], $52::bigint[], $53::bigint[])
       ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
           task_id = excluded.task_id, attempt = excluded.attempt)
SELECT 1";

/// Rows of one kind as arrays of columns, each array in the order of the rows.
#[derive(Debug, Default)]
struct Columns {
    int: [Vec<i64>; 4],
    text: [Vec<String>; 5],
    maybe: [Vec<Option<String>>; 2],
    maybe_int: [Vec<Option<i64>>; 2],
}

impl Columns {
    /// id, token, seq, at, kind, key, data.
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
        }
        c
    }

    /// token, state, status, visit, context, entered_at, parent, workflow.
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
        }
        c
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
}
