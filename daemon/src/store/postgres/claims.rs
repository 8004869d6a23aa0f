//! The SQL of `claims`: each supervisor's last claim with a request id; and what
//! this control plane committed of those rows.

use std::sync::Mutex;

use foldhash::HashMap as FastMap;

use super::columns::Columns;
use super::{get, PgTx};
use crate::store::guard::locked;
use crate::store::{ClaimRow, Claims, StoreResult};

/// How many supervisors' rows [`KnownClaims`] keeps before it starts afresh.
const MOST_KNOWN: usize = 10_000;

/// The rows of `claims` this control plane committed, by supervisor. Every claim
/// with a request id reads its supervisor's row first (a round trip of its own);
/// this control plane is the one writer of the table, so what it committed is what
/// the table holds. Read only while no transaction of its own runs beside the
/// writer's batch (one may have committed a row it has not published yet).
#[derive(Debug, Default)]
pub struct KnownClaims {
    committed: Mutex<FastMap<String, ClaimRow>>,
}

impl KnownClaims {
    fn with<R>(&self, work: impl FnOnce(&mut FastMap<String, ClaimRow>) -> R) -> R {
        work(&mut locked(&self.committed, FastMap::clear))
    }

    /// A transaction committed these rows.
    pub fn publish(&self, rows: FastMap<String, ClaimRow>) {
        if rows.is_empty() {
            return;
        }
        self.with(|committed| {
            if committed.len() + rows.len() > MOST_KNOWN {
                committed.clear();
            }
            committed.extend(rows);
        });
    }

    /// Forget every row (a commit whose outcome is unknown).
    pub fn clear(&self) {
        self.with(FastMap::clear);
    }

    fn get(&self, supervisor: &str) -> Option<ClaimRow> {
        self.with(|committed| committed.get(supervisor).cloned())
    }
}

/// The flush's part of each supervisor's last claim (`pending.rs`): supervisor,
/// request, task_id, attempt, as [`flush_columns`] packs them.
pub(super) const FLUSH: &str = "cl AS (INSERT INTO claims (supervisor, request, task_id, attempt)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
       ON CONFLICT (supervisor) DO UPDATE SET request = excluded.request,
           task_id = excluded.task_id, attempt = excluded.attempt)";

/// Claims as the columns of [`FLUSH`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r ClaimRow>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.supervisor.clone())
            .put(row.request.clone())
            .put(row.task_id)
            .put(row.attempt);
    })
}

impl Claims for PgTx<'_> {
    fn last_claim(&self, supervisor: &str) -> StoreResult<Option<ClaimRow>> {
        let written = self
            .claims
            .borrow()
            .get(supervisor)
            .cloned()
            .or_else(|| self.kept_claims.borrow().get(supervisor).cloned());
        if written.is_some() {
            return Ok(written);
        }
        let known = self
            .batch
            .filter(|batch| batch.solo.running() == 0)
            .and_then(|batch| batch.claims.get(supervisor));
        if known.is_some() {
            return Ok(known);
        }
        // Locked before any token's lock (a claim reads it first), so that two
        // claims of one supervisor take turns and never wait in a circle. A
        // supervisor's first claim finds no row to lock: an empty one is made first
        // (a claim of no request, `request` empty and no task), in a statement of
        // its own, so that a second claim waits for the first's commit and then
        // reads what it wrote, in the same round trip.
        let rows = self.after_change(
            (
                "INSERT INTO claims (supervisor, request) VALUES ($1, '')
                 ON CONFLICT (supervisor) DO NOTHING",
                &[&supervisor],
            ),
            "SELECT supervisor, request, task_id, attempt FROM claims WHERE supervisor = $1
             FOR UPDATE",
            &[&supervisor],
        )?;
        rows.into_iter()
            .next()
            .map(|row| {
                Ok(ClaimRow {
                    supervisor: get(&row, 0)?,
                    request: get(&row, 1)?,
                    task_id: get(&row, 2)?,
                    attempt: get(&row, 3)?,
                })
            })
            .transpose()
    }

    fn remember_claim(&self, row: &ClaimRow) -> StoreResult<()> {
        self.claims
            .borrow_mut()
            .insert(row.supervisor.clone(), row.clone());
        // Written with the transaction's other writes (`pending.rs`).
        self.pending
            .borrow_mut()
            .claims
            .insert(row.supervisor.clone(), row.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::store::feed::FeedMark;
    use crate::store::postgres::plan_tests::new_database;
    use crate::store::postgres::{PgTx, Sequences};
    use crate::store::{ClaimRow, Claims};
    use crate::testing::PgTestDb;

    /// Two claims of one supervisor's first request, side by side (each in a
    /// transaction of its own): the second waits for the first and reads its
    /// grant, where it once found no row to lock and granted a second task.
    #[test]
    fn a_supervisors_first_claims_side_by_side_take_turns() {
        let Some(db) = PgTestDb::create() else {
            return;
        };
        std::thread::spawn(move || {
            let mut first = new_database(&db, 0);
            let mut second = new_database(&db, 0);
            let (read, was_read) = mpsc::channel::<()>();
            let holder = std::thread::spawn(move || {
                let (mark, ids) = (FeedMark::new(0), Sequences::default());
                first.batch("BEGIN").unwrap();
                let tx = PgTx::new(&mut first, 1, &mark, &ids);
                assert!(tx
                    .last_claim("box-1")
                    .unwrap()
                    .is_none_or(|row| row.task_id.is_none()));
                read.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                tx.remember_claim(&ClaimRow {
                    supervisor: "box-1".into(),
                    request: "r1".into(),
                    task_id: Some(7),
                    attempt: Some(1),
                })
                .unwrap();
                tx.flush().unwrap();
                drop(tx);
                first.batch("COMMIT").unwrap();
            });
            was_read.recv().unwrap();
            let (mark, ids) = (FeedMark::new(0), Sequences::default());
            second.batch("BEGIN").unwrap();
            let tx = PgTx::new(&mut second, 1, &mark, &ids);
            let last = tx
                .last_claim("box-1")
                .unwrap()
                .expect("the first claim's row");
            assert_eq!((last.request.as_str(), last.task_id), ("r1", Some(7)));
            drop(tx);
            second.batch("ROLLBACK").unwrap();
            holder.join().unwrap();
        })
        .join()
        .unwrap();
    }
}
