//! The SQL of `limits` and `slots`, as SQLite's (`store/sqlite/claim_limits.rs`),
//! but that claims which count and take slots hold a transaction-scoped advisory
//! lock first: here transactions of this process run side by side (a request that
//! runs alone beside the writer's batch), and a standby that takes over meets the
//! same lock. A transaction takes the lock once and keeps it to its end; under it,
//! it reads the limits and the slots held once and keeps them up to date with its
//! own writes (`slot_book.rs`), and its slots wait with its other writes for the
//! flush ([`FLUSH_SLOTS`]): a claim of the writer's batch after the first makes no
//! round trip of its own for its limits (`docs/limits.md`, "Speed").

use postgres::types::ToSql;
use postgres::Row;

use super::columns::Columns;
use super::slot_book::READ_AGAIN_EVERY;
use super::{get, PgTx};
use crate::store::claim_limits::{
    running_slots, states_of, states_text, written_as_row, ClaimedTask, HeldSlot, LimitRow, Limits,
    Running, SlotRow, RUNNING,
};
use crate::store::StoreResult;

/// The advisory lock of the slots.
pub const SLOTS_LOCK: &str = "hashtextextended('@stateous/slots', 0)";

/// The flush's part of the slots taken (`pending.rs`): task, pool, attempt, key,
/// as [`flush_columns`] packs them. A slot of an earlier attempt of the task in the
/// pool is replaced.
pub(super) const FLUSH_SLOTS: &str = "sl AS (INSERT INTO slots (task, pool, attempt, key)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[])
       ON CONFLICT (task, pool) DO UPDATE SET attempt = excluded.attempt,
           key = excluded.key)";

/// Slots as the columns of [`FLUSH_SLOTS`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r SlotRow>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.task)
            .put(row.pool.clone())
            .put(row.attempt)
            .put(row.key.clone());
    })
}

/// Delete the rows of every pool whose attempt is no longer claimed (they count
/// for nothing): run with each read of the live slots, under the slots' lock.
const SWEEP_ALL: &str = "DELETE FROM slots WHERE NOT EXISTS (
         SELECT 1 FROM tasks t WHERE t.id = slots.task
             AND t.status = 'claimed' AND t.attempt = slots.attempt)";

/// The live rows of every pool: rows whose task is claimed with their attempt
/// (a pool without `per` counts the attempts of [`RUNNING`] instead; a row of it
/// left from when it had `per` counts for nothing).
const LIVE_SLOTS: &str = "SELECT s.task, s.attempt, s.pool, s.key
     FROM slots s JOIN tasks t ON t.id = s.task
     WHERE t.status = 'claimed' AND t.attempt = s.attempt";

/// A row of [`RUNNING`].
fn running_row(row: &Row) -> StoreResult<Running> {
    Ok(Running {
        task: get(row, 0)?,
        attempt: get(row, 1)?,
        state: get(row, 2)?,
        workflow: get(row, 3)?,
        holder: get::<Option<String>>(row, 4)?.unwrap_or_default(),
    })
}

/// The slots held now of every pool of `limits`: the live `rows` of the pools
/// with `per`, and the attempts of `running` that the others cover.
fn slots_held(limits: &[LimitRow], rows: Vec<SlotRow>, running: &[Running]) -> Vec<SlotRow> {
    let keyed = |pool: &str| {
        limits
            .iter()
            .any(|limit| limit.name == pool && limit.per.is_some())
    };
    let mut held: Vec<SlotRow> = rows.into_iter().filter(|row| keyed(&row.pool)).collect();
    for limit in limits {
        let slots = running_slots(limit, running).unwrap_or_default();
        held.extend(slots.into_iter().map(|held| held.slot));
    }
    held
}

/// Tasks with their tokens' workflow and context, as [`task_now`] reads them.
pub(super) const TASKS_NOW: &str = "SELECT t.id, t.attempt, t.state, k.workflow, k.context
     FROM tasks t JOIN tokens k ON k.token = t.token";

/// A row of [`TASKS_NOW`].
pub(super) fn task_now(row: &Row) -> StoreResult<ClaimedTask> {
    Ok(ClaimedTask {
        task: get(row, 0)?,
        attempt: get(row, 1)?,
        state: get(row, 2)?,
        workflow: get(row, 3)?,
        context: get(row, 4)?,
    })
}

const COLUMNS: &str = "name, states, max, per, rate_count, rate_period, bucket, bucket_at, set_at";

fn read(row: &Row) -> StoreResult<LimitRow> {
    let states: String = get(row, 1)?;
    Ok(LimitRow {
        name: get(row, 0)?,
        states: states_of(&states)?,
        max: get(row, 2)?,
        per: get(row, 3)?,
        rate_count: get(row, 4)?,
        rate_period: get(row, 5)?,
        bucket: get(row, 6)?,
        bucket_at: get(row, 7)?,
        set_at: get(row, 8)?,
    })
}

fn limits_sql() -> String {
    format!("SELECT {COLUMNS} FROM limits ORDER BY name")
}

impl PgTx<'_> {
    /// Take the slots' lock and read the limits and the live slots, what of it
    /// this transaction does not know yet, in one round trip (the reads after
    /// the lock: their snapshots are taken once it is held). The rows of ended
    /// attempts are swept away on the way (after the writes that wait, which go
    /// first: a row a claim of this transaction wrote is live).
    fn know_slots(&self) -> StoreResult<()> {
        let lock = format!("SELECT pg_advisory_xact_lock({SLOTS_LOCK})");
        let (locked, limits, slots, seeded) = {
            let book = self.slots.borrow();
            (
                book.locked,
                book.limits.is_some(),
                book.knows_slots(),
                book.seeded,
            )
        };
        if limits && slots {
            let Some(mark) = seeded else {
                return Ok(());
            };
            // An earlier batch's book (`slot_book.rs`): trusted under the lock
            // when no transaction of its own began or ran since that batch began.
            if self.now.get() % READ_AGAIN_EVERY != 0 {
                // Held once the batch's `BEGIN` ran, which asked for it.
                if !locked || !self.conn.borrow().begin_sent() {
                    self.query(&lock, &[])?;
                    self.slots.borrow_mut().locked = true;
                }
                if self.batch.is_some_and(|batch| batch.solo.none_since(mark)) {
                    self.slots.borrow_mut().seeded = None;
                    return Ok(());
                }
            }
            self.slots.borrow_mut().forget();
        }
        let locked = self.slots.borrow().locked;
        let limits_sql = limits_sql();
        let mut statements: Vec<(&str, &[&(dyn ToSql + Sync)])> = Vec::new();
        if !locked {
            statements.push((&lock, &[]));
        }
        statements.push((SWEEP_ALL, &[]));
        statements.push((&limits_sql, &[]));
        statements.push((LIVE_SLOTS, &[]));
        statements.push((RUNNING, &[]));
        let mut answers = self.queries(&statements)?;
        let running = answers.pop().unwrap_or_default();
        let live = answers.pop().unwrap_or_default();
        let rows = answers.pop().unwrap_or_default();
        let limits = rows.iter().map(read).collect::<StoreResult<Vec<_>>>()?;
        let live = live
            .iter()
            .map(|row| {
                Ok(SlotRow {
                    task: get(row, 0)?,
                    attempt: get(row, 1)?,
                    pool: get(row, 2)?,
                    key: get(row, 3)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let running = running
            .iter()
            .map(running_row)
            .collect::<StoreResult<Vec<_>>>()?;
        let held = slots_held(&limits, live, &running);
        let mut book = self.slots.borrow_mut();
        book.locked = true;
        book.limits = Some(limits);
        book.read(held);
        Ok(())
    }
}

impl Limits for PgTx<'_> {
    fn limits(&self) -> StoreResult<Vec<LimitRow>> {
        // Read under the slots' lock on the write path, and kept to the
        // transaction's end (no other transaction changes a limit until then): a
        // claim that runs alone judges by the limits as they are under the lock,
        // never by a `max` lowered since it read it. Reads read them each time.
        if self.batch.is_some() || self.turned.is_some() || self.slots.borrow().locked {
            self.know_slots()?;
        }
        if let Some(known) = &self.slots.borrow().limits {
            return Ok(known.clone());
        }
        let rows = self.query(&limits_sql(), &[])?;
        rows.iter().map(read).collect()
    }

    fn put_limit(&self, row: &LimitRow) -> StoreResult<()> {
        use crate::store::claim_switch::{turn_on, ClaimFact};
        turn_on(self, ClaimFact::Limits);
        if row.per.is_some() {
            turn_on(self, ClaimFact::Keys);
        }
        // Under the slots' lock: a transaction that keeps the limits it read
        // holds it to its end.
        self.lock_slots()?;
        self.slots.borrow_mut().forget();
        self.execute(
            &format!(
                "INSERT INTO limits ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (name) DO UPDATE SET states = excluded.states,
                     max = excluded.max, per = excluded.per,
                     rate_count = excluded.rate_count, rate_period = excluded.rate_period,
                     bucket = excluded.bucket, bucket_at = excluded.bucket_at,
                     set_at = excluded.set_at"
            ),
            &[
                &row.name,
                &states_text(&row.states),
                &row.max,
                &row.per,
                &row.rate_count,
                &row.rate_period,
                &row.bucket,
                &row.bucket_at,
                &row.set_at,
            ],
        )?;
        Ok(())
    }

    fn remove_limit(&self, name: &str) -> StoreResult<bool> {
        self.lock_slots()?;
        self.slots.borrow_mut().forget();
        self.execute("DELETE FROM slots WHERE pool = $1", &[&name])?;
        self.execute("DELETE FROM key_turns WHERE pool = $1", &[&name])?;
        self.execute("DELETE FROM task_keys WHERE pool = $1", &[&name])?;
        Ok(self.execute("DELETE FROM limits WHERE name = $1", &[&name])? > 0)
    }

    fn lock_slots(&self) -> StoreResult<()> {
        // Held until the transaction ends: taken once (a batch's `BEGIN` that
        // asks for it runs before any statement of the batch).
        if self.slots.borrow().locked {
            return Ok(());
        }
        self.query(&format!("SELECT pg_advisory_xact_lock({SLOTS_LOCK})"), &[])?;
        self.slots.borrow_mut().locked = true;
        Ok(())
    }

    fn set_bucket(&self, name: &str, bucket: f64, at: i64) -> StoreResult<()> {
        self.execute(
            "UPDATE limits SET bucket = $2, bucket_at = $3 WHERE name = $1",
            &[&name, &bucket, &at],
        )?;
        // Sent at once: a request dropped after it rolls the transaction back,
        // with what is kept here.
        let mut book = self.slots.borrow_mut();
        for row in book.limits.iter_mut().flatten() {
            if row.name == name {
                row.bucket = bucket;
                row.bucket_at = at;
            }
        }
        Ok(())
    }

    fn held_slots(&self, limit: &LimitRow) -> StoreResult<Vec<HeldSlot>> {
        if limit.per.is_none() {
            let rows = self.query(RUNNING, &[])?;
            let running = rows
                .iter()
                .map(running_row)
                .collect::<StoreResult<Vec<_>>>()?;
            return Ok(running_slots(limit, &running).unwrap_or_default());
        }
        let rows = self.query(
            "SELECT s.task, s.attempt, s.pool, s.key, t.claimed_by
             FROM slots s JOIN tasks t ON t.id = s.task
             WHERE s.pool = $1 AND t.status = 'claimed' AND t.attempt = s.attempt
             ORDER BY s.task",
            &[&limit.name],
        )?;
        rows.iter()
            .map(|row| {
                Ok(HeldSlot {
                    slot: SlotRow {
                        task: get(row, 0)?,
                        attempt: get(row, 1)?,
                        pool: get(row, 2)?,
                        key: get(row, 3)?,
                    },
                    holder: get::<Option<String>>(row, 4)?.unwrap_or_default(),
                })
            })
            .collect()
    }

    fn slot_counts(&self, limit: &LimitRow) -> StoreResult<Vec<(String, i64)>> {
        // Counted under the lock, from what this transaction read once and wrote
        // since (`slot_book.rs`).
        self.know_slots()?;
        Ok(self.slots.borrow().counts(&limit.name).unwrap_or_default())
    }

    fn take_slot(&self, slot: &SlotRow) -> StoreResult<()> {
        // With the other writes, in the flush (`pending.rs`); counted in the
        // book either way.
        if written_as_row(slot) {
            self.pending
                .borrow_mut()
                .slots
                .insert((slot.task, slot.pool.clone()), slot.clone());
        }
        self.slots.borrow_mut().took(slot);
        Ok(())
    }

    fn sweep_slots(&self, pool: &str) -> StoreResult<u64> {
        // Swept with each read of the live slots ([`PgTx::know_slots`]).
        if self.slots.borrow().knows_slots() {
            return Ok(0);
        }
        self.execute(
            "DELETE FROM slots WHERE pool = $1 AND NOT EXISTS (
                 SELECT 1 FROM tasks t WHERE t.id = slots.task
                     AND t.status = 'claimed' AND t.attempt = slots.attempt)",
            &[&pool],
        )
    }

    fn key_turns(&self, pool: &str) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT key, last_at FROM key_turns WHERE pool = $1",
            &[&pool],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn take_turn(&self, pool: &str, key: &str, at: i64) -> StoreResult<()> {
        self.execute(
            "INSERT INTO key_turns (pool, key, last_at) VALUES ($1, $2, $3)
             ON CONFLICT (pool, key) DO UPDATE SET last_at = excluded.last_at",
            &[&pool, &key, &at],
        )?;
        Ok(())
    }

    fn claimed_now(&self) -> StoreResult<Vec<ClaimedTask>> {
        let rows = self.query(
            &format!("{TASKS_NOW} WHERE t.status = 'claimed' ORDER BY t.id"),
            &[],
        )?;
        rows.iter().map(task_now).collect()
    }

    fn clear_slots(&self, pool: &str) -> StoreResult<()> {
        self.slots.borrow_mut().forget();
        self.execute("DELETE FROM slots WHERE pool = $1", &[&pool])?;
        Ok(())
    }
}
