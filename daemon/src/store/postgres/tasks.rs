//! The SQL of `tasks`: the queue, claims and leases.

use super::columns::Columns;
use super::params::Params;
use super::{get, PgTx};
use crate::store::{Head, StoreResult, TaskReads, TaskRow, Tasks};

const SELECT: &str = "SELECT id, token, state, visit, status, attempt, claimed_by, lease_until,
                             queued_at FROM tasks";

/// `(workflow, state)` pairs as two arrays (`''` for the main workflow).
fn pairs(states: &[(Option<String>, String)]) -> (Vec<String>, Vec<String>) {
    let workflows = states
        .iter()
        .map(|(workflow, _)| workflow.clone().unwrap_or_default())
        .collect();
    let names = states.iter().map(|(_, state)| state.clone()).collect();
    (workflows, names)
}

/// How many candidates a claim of the writer's batch finds at once: the batch's
/// next claims take the others without a round trip.
const CLAIMS_AHEAD: i64 = 16;

/// How many queued tasks of each state a claim looks at before it takes the
/// slower way (`queued_tasks`, one candidate at a time): more than the claims
/// that can hold a candidate's token at once on a pool of the default size.
const QUEUE_HEAD: i64 = 64;

/// The flush's part of new tasks (`pending.rs`): id, token, state, visit, status,
/// attempt, claimed_by, lease_until, queued_at, as [`flush_columns`] packs them.
pub(super) const FLUSH_NEW: &str =
    "kn AS (INSERT INTO tasks (id, token, state, visit, status, attempt, claimed_by, lease_until,
                          queued_at)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::bigint[], $9::bigint[]))";

/// The flush's part of changed tasks: the columns of [`FLUSH_NEW`], and the ones
/// that change set.
pub(super) const FLUSH_CHANGED: &str =
    "ku AS (INSERT INTO tasks (id, token, state, visit, status, attempt, claimed_by, lease_until,
                          queued_at)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                            $6::bigint[], $7::text[], $8::bigint[], $9::bigint[])
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, attempt = excluded.attempt,
           claimed_by = excluded.claimed_by, lease_until = excluded.lease_until)";

/// Tasks as the columns of [`FLUSH_NEW`] and [`FLUSH_CHANGED`].
pub(super) fn flush_columns<'r>(rows: impl Iterator<Item = &'r TaskRow>) -> Option<Columns> {
    Columns::of(rows, |cells, row| {
        cells
            .put(row.id)
            .put(row.token.clone())
            .put(row.state.clone())
            .put(row.visit)
            .put(row.status.as_str().to_string())
            .put(row.attempt)
            .put(row.claimed_by.clone())
            .put(row.lease_until)
            .put(row.queued_at);
    })
}

impl Tasks for PgTx<'_> {
    fn queue_task(&self, token: &str, state: &str, visit: i64) -> StoreResult<i64> {
        // Written with the transaction's other writes (`pending.rs`).
        let id = self.next_id(&self.ids.tasks)?;
        let row = TaskRow::queued(id, token, state, visit, self.now.get());
        self.pending.borrow_mut().tasks.add(id, row);
        Ok(id)
    }

    fn task(&self, id: i64) -> StoreResult<Option<TaskRow>> {
        let found = self.query_opt(&format!("{SELECT} WHERE id = $1"), &[&id])?;
        found.as_ref().map(TaskRow::read).transpose()
    }

    fn update_task(&self, row: &TaskRow) -> StoreResult<()> {
        self.pending.borrow_mut().tasks.change(&row.id, row.clone());
        self.slots.borrow_mut().task_changed(row);
        Ok(())
    }

    fn open_tasks(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let rows = self.query(
            &format!(
                "{SELECT} WHERE token = $1 AND status IN ('queued', 'claimed', 'waiting')
                 ORDER BY id"
            ),
            &[&token],
        )?;
        rows.iter().map(TaskRow::read).collect()
    }

    fn lock_queued(&self, states: &[(Option<String>, String)]) -> StoreResult<Head> {
        // One round trip for the common case: the first candidate whose top token
        // no other transaction holds is locked as it is found. The task's row is
        // read again under the lock by the caller (another claim may have taken
        // it just before).
        // Top tokens are of the main workflow: only its states can match. The
        // candidates are the first queued tasks of each state (index `tasks_queue`
        // or `tasks_queued`), at most `QUEUE_HEAD` each, in id order; each one's
        // token is tried as it comes (the lateral lock runs once per candidate
        // looked at), so the statement stops at the first free one. Written so that
        // no plan can start from the tokens: joined plainly, a planner whose
        // statistics still said "few rows" (a database filled since its last
        // ANALYZE) read every top token and sorted their queued tasks on each claim.
        let names: Vec<&str> = states
            .iter()
            .filter(|(workflow, _)| workflow.is_none())
            .map(|(_, state)| state.as_str())
            .collect();
        // Only top tokens' tasks are looked at here, so finding none is never
        // certain: children's tasks may still be queued.
        if names.is_empty() {
            return Ok(Head::Unsure);
        }
        // The writer's batch: a candidate an earlier claim of the batch found,
        // unless the writes that wait change its task or its token.
        let key = names.join("\u{1f}");
        if self.batch.is_some() {
            if let Some(ahead) = self.heads.borrow_mut().get_mut(&key) {
                while let Some((id, token)) = ahead.pop_front() {
                    if self.touches(id, &token) {
                        continue;
                    }
                    self.locked.borrow_mut().insert(token);
                    return Ok(Head::Task(id));
                }
            }
        }
        // Each state a parameter of its own, and the head's length in the text:
        // Postgres then estimates a plan for any values as it does for these, so
        // it keeps one plan (a generic plan) instead of planning each claim anew
        // (an array parameter counts as 10 states; planning was about a third of
        // a claim's time on the server).
        let mut params = Params::new();
        let states_in = names
            .iter()
            .map(|name| params.add_ref(name))
            .collect::<Vec<_>>()
            .join(", ");
        // The writes that wait are not sent first (a round trip of their own): the
        // tasks and tokens they change are left out instead, as rows the server
        // does not know as they are now. A task they queue waits for a later claim.
        let (touched_tasks, touched_tokens) = self.touched();
        let tasks = params.add(touched_tasks);
        let tokens = params.add(touched_tokens);
        let sql = format!(
            "WITH c AS MATERIALIZED (
               SELECT q.id, q.token FROM unnest(ARRAY[{states_in}]::text[]) AS s(state)
               CROSS JOIN LATERAL (SELECT id, token FROM tasks
                                   WHERE status = 'queued' AND state = s.state
                                   ORDER BY id LIMIT {QUEUE_HEAD}) q)
             SELECT c.id, c.token FROM (SELECT id, token FROM c
                                        WHERE id <> ALL({tasks}::bigint[])
                                          AND token <> ALL({tokens}::text[])
                                        ORDER BY id OFFSET 0) c
             CROSS JOIN LATERAL (SELECT 1 FROM tokens k
                                 WHERE k.token = c.token AND k.parent IS NULL
                                   AND k.status = 'active'
                                 FOR UPDATE SKIP LOCKED) k
             LIMIT {found}",
            found = if self.batch.is_some() {
                CLAIMS_AHEAD
            } else {
                1
            }
        );
        let mut found = self.unflushed(&sql, &params.refs())?.into_iter();
        let Some(row) = found.next() else {
            return Ok(Head::Unsure);
        };
        if self.batch.is_some() {
            // Their tokens' rows are locked too, until the batch ends.
            let ahead = found
                .map(|row| Ok((get(&row, 0)?, get(&row, 1)?)))
                .collect::<StoreResult<_>>()?;
            self.heads.borrow_mut().insert(key, ahead);
        }
        self.locked.borrow_mut().insert(get(&row, 1)?);
        Ok(Head::Task(get(&row, 0)?))
    }

    fn renew_leases(&self, supervisor: &str, ids: &[i64], until: i64) -> StoreResult<Vec<i64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.change_rows(
            "UPDATE tasks SET lease_until = $3
             WHERE id = ANY($1) AND claimed_by = $2 AND status = 'claimed'
               AND (lease_until IS NULL OR lease_until >= $4)
             RETURNING id",
            &[&ids, &supervisor, &until, &self.now.get()],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn end_lease(&self, id: i64) -> StoreResult<bool> {
        let changed = self.execute(
            "UPDATE tasks SET lease_until = NULL
             WHERE id = $1 AND status = 'claimed'
               AND lease_until IS NOT NULL AND lease_until < $2",
            &[&id, &self.now.get()],
        )?;
        Ok(changed == 1)
    }

    fn extend_all_leases(&self, until: i64) -> StoreResult<usize> {
        let changed = self.execute(
            "UPDATE tasks SET lease_until = $1
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < $1",
            &[&until],
        )?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }
}

impl TaskReads for PgTx<'_> {
    fn tasks_of(&self, token: &str) -> StoreResult<Vec<TaskRow>> {
        let rows = self.query(&format!("{SELECT} WHERE token = $1 ORDER BY id"), &[&token])?;
        rows.iter().map(TaskRow::read).collect()
    }

    fn queued_tasks(
        &self,
        states: &[(Option<String>, String)],
        limit: i64,
    ) -> StoreResult<Vec<i64>> {
        // One statement over all states (SQLite runs one per state): the pairs go
        // as two arrays. Each pair's queue is walked in id order and each task's
        // token looked up as it comes (a lateral subquery with its own limit), so
        // no plan reads every token (see `lock_queued`).
        let (workflows, names) = pairs(states);
        let rows = self.query(
            "SELECT q.id FROM unnest($1::text[], $2::text[]) AS s(workflow, state)
             CROSS JOIN LATERAL (
               SELECT t.id FROM tasks t
               CROSS JOIN LATERAL (SELECT k.workflow, k.status FROM tokens k
                                   WHERE k.token = t.token OFFSET 0) k
               WHERE t.status = 'queued' AND t.state = s.state
                 AND k.status = 'active' AND coalesce(k.workflow, '') = s.workflow
               ORDER BY t.id LIMIT $3) q
             ORDER BY q.id LIMIT $3",
            &[&workflows, &names, &limit],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn expired_leases(&self) -> StoreResult<Vec<i64>> {
        let rows = self.query(
            "SELECT id FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until < $1
             ORDER BY id",
            &[&self.now.get()],
        )?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    fn next_lease_end_after(&self, after: i64) -> StoreResult<Option<i64>> {
        let row = self.query_one(
            "SELECT min(lease_until) + 1 FROM tasks
             WHERE status = 'claimed' AND lease_until IS NOT NULL AND lease_until >= $1",
            &[&after],
        )?;
        get(&row, 0)
    }
}
