//! The writes of a Postgres transaction, held until they must reach the server: before
//! any statement that reads, and at the commit. Each row's last state is kept (a task
//! claimed, then done, is one write), and all of them go in one statement
//! ([`Pending::flush`]), so a request costs a few round trips instead of one per row.
//! Ids of new ledger rows, tasks and timers are taken from their sequences in blocks
//! ([`Ids`]), so a new row's id is known when it is written here.
//!
//! This module holds what the tables share: the set of writes, the ids, and the
//! order of the parts of the flush ([`PARTS`]). Each table's part (its SQL and the
//! packing of its rows into columns) sits with the table's other SQL
//! (`ledger.rs`, `tokens.rs`, `tasks.rs`, `timers.rs`, `memory.rs`, `claims.rs`,
//! `claim_limits.rs`).

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use postgres::types::ToSql;

use super::columns::Columns;
use super::conn::PgConn;
use super::params::placeholder;
use super::{
    claim_limits, claims, ledger, memory, notifications, task_keys, tasks, timers, tokens,
};
use crate::store::guard::{as_it_is, locked};
use crate::store::notifications::WaitingNotification;
use crate::store::{
    ClaimRow, LedgerRow, SlotRow, StoreResult, TaskKey, TaskRow, TimerRow, TokenRow,
};

/// How many ids one `nextval` takes from a sequence: the step of the sequences
/// of `ledger`, `tasks` and `timers` (schema 0020, `schema.rs` `id_blocks`).
pub const ID_BLOCK: i64 = 128;

/// Ids taken from a table's sequence ahead of time, handed out in increasing order.
#[derive(Debug)]
pub struct Ids {
    /// `ledger`, `tasks` or `timers`.
    table: &'static str,
    taken: Mutex<Block>,
}

/// A block of ids: the value `nextval` gave (its first id), and the ids of it
/// not handed out yet.
#[derive(Debug)]
struct Block {
    start: i64,
    left: Range<i64>,
}

impl Ids {
    /// Ids of `table`'s identity column.
    pub const fn new(table: &'static str) -> Ids {
        Ids {
            table,
            taken: Mutex::new(Block {
                start: 0,
                left: 0..0,
            }),
        }
    }

    /// The next id; a block is taken on `conn` when none is left: one `nextval`
    /// of a sequence that steps by [`ID_BLOCK`] gives its first id. The lock is
    /// held while the block is taken, so ids are handed out in increasing order
    /// (the feed's mark counts on it for ledger ids).
    pub fn next(&self, conn: &mut PgConn) -> StoreResult<i64> {
        let mut taken = locked(&self.taken, as_it_is);
        if taken.left.is_empty() {
            let sql = format!(
                "SELECT nextval(pg_get_serial_sequence('{}', 'id'))",
                self.table
            );
            let start: i64 = match conn.query(&sql, &[])?.first() {
                Some(row) => super::get(row, 0)?,
                None => return Err(crate::store::StoreError::Database("no id was taken".into())),
            };
            taken.start = start;
            taken.left = start..start.saturating_add(ID_BLOCK);
        }
        taken
            .left
            .next()
            .ok_or_else(|| crate::store::StoreError::Database("no id was taken".into()))
    }

    /// Give the ids taken but not handed out back to the sequence (a graceful
    /// stop), so the next control plane goes on from the first of them, as the
    /// reference's ids do after a restart. Only while the sequence's last value is
    /// still the end of this process's block (nobody took any since); an id taken
    /// after this comes from a new block. A crash still loses the rest of a block,
    /// as Postgres itself loses sequence values it logged ahead.
    pub fn give_back(&self, conn: &mut PgConn) -> StoreResult<()> {
        let mut taken = locked(&self.taken, as_it_is);
        if taken.left.is_empty() {
            return Ok(());
        }
        let first = taken.left.start;
        // The sequence's last value is the block's first id while nobody took
        // another block since.
        conn.query(
            "SELECT setval(pg_get_serial_sequence($1, 'id'), $2, false)
             WHERE pg_sequence_last_value(pg_get_serial_sequence($1, 'id')::regclass) = $3",
            &[&self.table, &first, &taken.start],
        )?;
        taken.left = first..first;
        Ok(())
    }
}

/// The rows of one table that wait, by key, each at its last state: those new to
/// the table (inserted by the flush) apart from those changed (updated).
#[derive(Debug)]
pub struct Rows<K, R> {
    /// New rows.
    pub new: BTreeMap<K, R>,
    /// Rows that exist, changed.
    pub changed: BTreeMap<K, R>,
}

impl<K, R> Default for Rows<K, R> {
    fn default() -> Rows<K, R> {
        Rows {
            new: BTreeMap::new(),
            changed: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone, R> Rows<K, R> {
    /// A new row.
    pub fn add(&mut self, key: K, row: R) {
        self.new.insert(key, row);
    }

    /// A row's new state: a row new here stays new, at this state.
    pub fn change(&mut self, key: &K, row: R) {
        match self.new.get_mut(key) {
            Some(new) => *new = row,
            None => {
                self.changed.insert(key.clone(), row);
            }
        }
    }

    /// The row of `key` as these writes leave it, if they touch it.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&R>
    where
        K: Borrow<Q>,
    {
        self.new.get(key).or_else(|| self.changed.get(key))
    }

    /// The keys of every row here.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.new.keys().chain(self.changed.keys())
    }

    fn is_empty(&self) -> bool {
        self.new.is_empty() && self.changed.is_empty()
    }

    /// Take `later`'s rows in, as if each change had been made here after these.
    fn absorb(&mut self, later: Rows<K, R>) {
        self.new.extend(later.new);
        for (key, row) in later.changed {
            self.change(&key, row);
        }
    }
}

/// Writes not sent yet, each row at its last state.
#[derive(Debug, Default)]
pub struct Pending {
    /// Ledger rows (their ids already taken), in the order they were appended.
    pub ledger: Vec<LedgerRow>,
    /// Tokens, by id.
    pub tokens: Rows<String, TokenRow>,
    /// Tasks (new ones' ids already taken).
    pub tasks: Rows<i64, TaskRow>,
    /// Timers (new ones' ids already taken).
    pub timers: Rows<i64, TimerRow>,
    /// The tokens all of whose memory goes.
    pub forget_memory: Vec<String>,
    /// Each supervisor's last claim.
    pub claims: BTreeMap<String, ClaimRow>,
    /// New notifications (`docs/notifications.md`), in the order written.
    pub notifications: Vec<WaitingNotification>,
    /// Slots taken (`docs/limits.md`), by task and pool.
    pub slots: BTreeMap<(i64, String), SlotRow>,
    /// Rows of `task_keys` written (`store/task_keys.rs`), by pool and task.
    pub task_keys: BTreeMap<(String, i64), TaskKey>,
}

impl Pending {
    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.ledger.is_empty()
            && self.tokens.is_empty()
            && self.tasks.is_empty()
            && self.timers.is_empty()
            && self.forget_memory.is_empty()
            && self.claims.is_empty()
            && self.notifications.is_empty()
            && self.slots.is_empty()
            && self.task_keys.is_empty()
    }

    /// A new token whose id differs from `token`'s only in case (ids are ASCII).
    pub fn folded_new(&self, token: &str) -> Option<String> {
        self.tokens
            .new
            .keys()
            .find(|id| id.as_str() != token && id.eq_ignore_ascii_case(token))
            .cloned()
    }

    /// Whether these writes change the task `id` or the token `token`.
    pub fn touches(&self, id: i64, token: &str) -> bool {
        self.tasks.get(&id).is_some() || self.tokens.get(token).is_some()
    }

    /// Add the ids of the tasks and the tokens these writes change.
    pub fn touched(&self, tasks: &mut Vec<i64>, tokens: &mut Vec<String>) {
        tasks.extend(self.tasks.keys());
        tokens.extend(self.tokens.keys().cloned());
    }

    /// Take `later`'s writes in, as if each had been made here after this one's:
    /// a row that is new here stays new, at `later`'s state.
    pub fn absorb(&mut self, later: Pending) {
        if self.is_empty() {
            *self = later;
            return;
        }
        self.ledger.extend(later.ledger);
        self.tokens.absorb(later.tokens);
        self.tasks.absorb(later.tasks);
        self.timers.absorb(later.timers);
        self.forget_memory.extend(later.forget_memory);
        self.claims.extend(later.claims);
        self.notifications.extend(later.notifications);
        self.slots.extend(later.slots);
        self.task_keys.extend(later.task_keys);
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
        mut self,
        send: impl FnOnce(&str, &[&(dyn ToSql + Sync)]) -> StoreResult<T>,
    ) -> StoreResult<T> {
        // Those of ledger entries go into batches as they are; the others
        // (`no_move`, `test`) as rows.
        let (of_entries, others): (Vec<WaitingNotification>, Vec<WaitingNotification>) =
            std::mem::take(&mut self.notifications)
                .into_iter()
                .partition(|row| row.entry.is_some());
        // Each part's columns, in the order of `PARTS`; `None`: no rows.
        let all: [Option<Columns>; 13] = [
            ledger::flush_columns(&self.ledger),
            tokens::flush_columns(self.tokens.new.values()),
            tokens::flush_columns(self.tokens.changed.values()),
            tasks::flush_columns(self.tasks.new.values()),
            tasks::flush_columns(self.tasks.changed.values()),
            timers::flush_columns(self.timers.new.values()),
            timers::flush_columns(self.timers.changed.values()),
            None,
            claims::flush_columns(self.claims.values()),
            notifications::batch_columns(of_entries),
            claim_limits::flush_columns(self.slots.values()),
            notifications::row_columns(&others),
            task_keys::flush_columns(self.task_keys.values()),
        ];
        let mut parts = 0;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        for (index, columns) in all.iter().enumerate() {
            if index == FORGET && !self.forget_memory.is_empty() {
                // One parameter for each token whose memory goes.
                parts |= 1 << index;
                params.extend(
                    self.forget_memory
                        .iter()
                        .map(|token| token as &(dyn ToSql + Sync)),
                );
            } else if let Some(columns) = columns {
                parts |= 1 << index;
                columns.params(&mut params);
            }
        }
        send(&flush_text(parts, self.forget_memory.len()), &params)
    }
}

/// The parts of the flush, in the order of [`Pending::send`]'s bits: each a
/// data-modifying `WITH` item over arrays of rows, its parameters numbered from
/// `$1`. The parts touch different rows (each row is in one part, at its last
/// state), as one statement must. Each table's parts sit with its SQL.
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
const PARTS: [&str; 13] = [
    ledger::FLUSH_NEW,
    tokens::FLUSH_NEW,
    tokens::FLUSH_CHANGED,
    tasks::FLUSH_NEW,
    tasks::FLUSH_CHANGED,
    timers::FLUSH_NEW,
    timers::FLUSH_CHANGED,
    memory::FLUSH_FORGET,
    claims::FLUSH,
    notifications::FLUSH_NEW,
    claim_limits::FLUSH_SLOTS,
    notifications::FLUSH_ROWS,
    task_keys::FLUSH_TASK_KEYS,
];

/// The place in [`PARTS`] of the memory's part, written once for each token whose
/// memory goes (`{n}` in its text is its place in turn).
const FORGET: usize = 7;

/// The flush's statements made so far, by their parts and number of forgets.
type Texts = HashMap<(u16, usize), Arc<str>>;

/// The flush's statement for a set of [`PARTS`] (bit `i` for part `i`) and the number
/// of tokens whose memory goes, made once and kept. A statement of only the parts with
/// rows costs Postgres less to plan and to start than all nine, most of them empty.
fn flush_text(parts: u16, forget: usize) -> Arc<str> {
    static TEXTS: OnceLock<Mutex<Texts>> = OnceLock::new();
    let texts = TEXTS.get_or_init(Mutex::default);
    let mut texts = locked(texts, as_it_is);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::postgres::plan_tests::{kept_plan, new_database};
    use crate::testing::PgTestDb;

    /// One `nextval` takes a block of [`ID_BLOCK`] ids; the ids are handed out in
    /// order, the next block follows, and a graceful stop gives the rest back.
    #[test]
    fn a_block_of_ids_is_one_nextval_and_the_rest_goes_back() {
        let Some(db) = PgTestDb::create() else {
            return;
        };
        std::thread::spawn(move || {
            let mut conn = new_database(&db, 0);
            let ids = Ids::new("tasks");
            let first: Vec<i64> = (0..ID_BLOCK + 2)
                .map(|_| ids.next(&mut conn).unwrap())
                .collect();
            assert_eq!(first, (1..=ID_BLOCK + 2).collect::<Vec<i64>>());
            let last = |conn: &mut PgConn| {
                conn.texts("SELECT pg_sequence_last_value(pg_get_serial_sequence('tasks', 'id')::regclass)")
                    .unwrap()
            };
            assert_eq!(last(&mut conn), [(ID_BLOCK + 1).to_string()], "two nextvals");
            ids.give_back(&mut conn).unwrap();
            let again = Ids::new("tasks");
            assert_eq!(again.next(&mut conn).unwrap(), ID_BLOCK + 3);
        })
        .join()
        .unwrap();
    }

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
            trace: None,
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
        earlier.tokens.add("N-1".into(), token("N-1", "a"));
        earlier.tasks.add(1, task(1, "N-1", Queued));
        earlier.tokens.change(&"O-1".into(), token("O-1", "a"));
        let mut later = Pending::default();
        // A row new in the earlier request stays new, at the later state.
        later.tokens.change(&"N-1".into(), token("N-1", "b"));
        later.tasks.change(&1, task(1, "N-1", Claimed));
        later.tokens.change(&"O-1".into(), token("O-1", "c"));
        later.tasks.change(&7, task(7, "O-1", Done));
        earlier.absorb(later);
        assert_eq!(earlier.tokens.new["N-1"].state, "b");
        assert!(!earlier.tokens.changed.contains_key("N-1"));
        assert_eq!(earlier.tokens.changed["O-1"].state, "c");
        assert_eq!(earlier.tasks.new[&1].status, Claimed);
        assert!(!earlier.tasks.changed.contains_key(&1));
        assert_eq!(earlier.tasks.changed[&7].status, Done);
        assert_eq!(
            earlier.tokens.get("N-1").map(|row| row.state.as_str()),
            Some("b")
        );
        assert!(earlier.tokens.get("X").is_none());
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
        pending.tokens.add("Order-1".into(), token("Order-1", "a"));
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
        // The ledger's 8 parameters, a new token's 10, a claim's 4.
        let text = flush_text(0b1_0000_0011, 0);
        assert!(text.starts_with("WITH l AS (INSERT INTO ledger"), "{text}");
        assert!(text.contains("$8::text[]))"), "{text}");
        assert!(text.contains("$9::text[], $10::text[]"), "{text}");
        assert!(text.contains("$17::text[], $18::text[]))"), "{text}");
        assert!(!text.contains("tu AS"), "{text}");
        assert!(
            text.contains("$19::text[], $20::text[], $21::bigint[], $22::bigint[]"),
            "{text}"
        );
        assert!(text.ends_with("\nSELECT 1"), "{text}");
    }
}
