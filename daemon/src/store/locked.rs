//! Rows read under their family's lock. A workflow that finds a task or a timer
//! by its id learns its token only from the row, so it reads the row, takes the
//! family's lock, and must then know the row as it is under the lock. Where
//! transactions run side by side (Postgres) the row may have moved between the
//! two, and is read again; where one writer runs one request at a time (SQLite)
//! nothing moved, and the first read stands. Each backend's `Tx` says which
//! (`again`); the engine only asks for the row under the lock.

use std::collections::BTreeSet;

use super::{StoreResult, TaskRow, TimerRow, Tx};

/// What [`Tasks::lock_queued`](super::Tasks::lock_queued) found at the head of
/// the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// This task, its family now held by the transaction. Another transaction
    /// may have claimed it just before: read it again before taking it.
    Task(i64),
    /// No queued task of these states whose token is active: the search covered
    /// every token.
    Empty,
    /// No task the search could take at once: a child token's task (its lock is
    /// its top token's) or one whose family another transaction holds may still
    /// be queued, to be looked at one candidate at a time.
    Unsure,
}

/// See [`Tx::lock_task`]; `again`: read the task once more after the lock.
pub(super) fn task<T: Tx + ?Sized>(
    tx: &T,
    id: i64,
    wait: bool,
    again: bool,
) -> StoreResult<Option<TaskRow>> {
    under_lock(tx, wait, again, || tx.task(id), |task| &task.token)
}

/// See [`Tx::lock_timer`]; `again`: read the timer once more after the lock.
pub(super) fn timer<T: Tx + ?Sized>(tx: &T, id: i64, again: bool) -> StoreResult<Option<TimerRow>> {
    under_lock(tx, false, again, || tx.timer(id), |timer| &timer.token)
}

/// A row that `read` finds, its token's family locked (`wait`: up to the lock's
/// limit; else `None` when another transaction holds it), and read once more
/// under the lock when `again`.
fn under_lock<T: Tx + ?Sized, R>(
    tx: &T,
    wait: bool,
    again: bool,
    read: impl Fn() -> StoreResult<Option<R>>,
    token: fn(&R) -> &str,
) -> StoreResult<Option<R>> {
    let Some(row) = read()? else {
        return Ok(None);
    };
    if !tx.lock_family(token(&row), wait)? {
        return Ok(None);
    }
    if !again {
        return Ok(Some(row));
    }
    read()
}

/// See [`Tx::lock_tasks`]; `again`: lock the families, then read the tasks once
/// more. The families are locked in the order of their top tokens' ids, the same
/// in every transaction, so two never wait for each other in a circle.
pub(super) fn tasks<T: Tx + ?Sized>(tx: &T, ids: &[i64], again: bool) -> StoreResult<Vec<TaskRow>> {
    let mut rows = Vec::with_capacity(ids.len());
    for &id in ids {
        rows.extend(tx.task(id)?);
    }
    if !again || rows.is_empty() {
        return Ok(rows);
    }
    let mut tops = BTreeSet::new();
    for task in &rows {
        tops.insert(top_of(tx, &task.token)?);
    }
    for top in &tops {
        tx.lock_family(top, true)?;
    }
    rows.clear();
    for &id in ids {
        rows.extend(tx.task(id)?);
    }
    Ok(rows)
}

/// The top token of `token`'s family. A token's parent never changes once it is
/// made, so the walk reads without locks.
fn top_of<T: Tx + ?Sized>(tx: &T, token: &str) -> StoreResult<String> {
    let mut current = token.to_string();
    while let Some(parent) = tx.token(&current)?.and_then(|row| row.parent) {
        current = parent;
    }
    Ok(current)
}
