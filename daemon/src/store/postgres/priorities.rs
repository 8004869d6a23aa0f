//! The SQL of `priorities`, as SQLite's (`store/sqlite/priorities.rs`).

use super::{get, PgTx};
use crate::store::priorities::{Candidate, Priorities};
use crate::store::StoreResult;

/// A candidate read as `id, token, state, workflow, context, priority`.
pub(super) fn candidate(row: &postgres::Row) -> StoreResult<Candidate> {
    Ok(Candidate {
        task: get(row, 0)?,
        token: get(row, 1)?,
        state: get(row, 2)?,
        workflow: get(row, 3)?,
        context: get(row, 4)?,
        priority: get(row, 5)?,
    })
}

impl Priorities for PgTx<'_> {
    fn priority(&self, token: &str) -> StoreResult<i64> {
        let row = self.query_opt(
            "SELECT priority FROM priorities WHERE token = $1",
            &[&token],
        )?;
        match row {
            Some(row) => get(&row, 0),
            None => Ok(0),
        }
    }

    fn set_priority(&self, token: &str, priority: i64) -> StoreResult<()> {
        if priority != 0 {
            crate::store::claim_switch::turn_on(
                self,
                crate::store::claim_switch::ClaimFact::Priorities,
            );
        }
        if priority == 0 {
            self.execute("DELETE FROM priorities WHERE token = $1", &[&token])?;
        } else {
            self.execute(
                "INSERT INTO priorities (token, priority) VALUES ($1, $2)
                 ON CONFLICT (token) DO UPDATE SET priority = excluded.priority",
                &[&token, &priority],
            )?;
        }
        Ok(())
    }

    fn any_priority(&self) -> StoreResult<bool> {
        Ok(!self
            .query("SELECT 1 FROM priorities LIMIT 1", &[])?
            .is_empty())
    }

    fn prioritized_queued(&self, limit: i64) -> StoreResult<Vec<(i64, i64)>> {
        let rows = self.query(
            "SELECT t.id, p.priority FROM priorities p JOIN tasks t ON t.token = p.token
             WHERE p.priority > 0 AND t.status = 'queued'
             ORDER BY p.priority DESC, t.id LIMIT $1",
            &[&limit],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn queued_candidates(
        &self,
        states: &[(Option<String>, String)],
        limit: i64,
        prioritized: bool,
    ) -> StoreResult<Vec<Candidate>> {
        let workflows: Vec<String> = states
            .iter()
            .map(|(workflow, _)| workflow.clone().unwrap_or_default())
            .collect();
        let names: Vec<String> = states.iter().map(|(_, state)| state.clone()).collect();
        // Each state's queue in id order (a lateral subquery with its own limit,
        // as `queued_tasks`), then the tasks of prioritized tokens.
        let rows = self.query(
            "SELECT q.id, q.token, q.state, q.workflow, q.context, q.priority
             FROM unnest($1::text[], $2::text[]) AS s(workflow, state)
             CROSS JOIN LATERAL (
               SELECT t.id, t.token, t.state, k.workflow, k.context,
                      coalesce((SELECT p.priority FROM priorities p WHERE p.token = t.token), 0)
                          AS priority
               FROM tasks t
               CROSS JOIN LATERAL (SELECT k.workflow, k.status, k.context FROM tokens k
                                   WHERE k.token = t.token OFFSET 0) k
               WHERE t.status = 'queued' AND t.state = s.state
                 AND k.status = 'active' AND coalesce(k.workflow, '') = s.workflow
               ORDER BY t.id LIMIT $3) q
             UNION ALL
             SELECT * FROM (
               SELECT t.id, t.token, t.state, k.workflow, k.context, p.priority
               FROM priorities p JOIN tasks t ON t.token = p.token
               JOIN tokens k ON k.token = t.token
               WHERE $4 AND p.priority > 0 AND t.status = 'queued' AND k.status = 'active'
               ORDER BY p.priority DESC, t.id LIMIT $3) r",
            &[&workflows, &names, &limit, &prioritized],
        )?;
        let mut found = rows
            .iter()
            .map(candidate)
            .collect::<StoreResult<Vec<Candidate>>>()?;
        found.sort_by_key(|c| c.task);
        found.dedup_by_key(|c| c.task);
        Ok(found)
    }

    fn priorities_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT token, priority FROM priorities WHERE token = ANY($1)",
            &[&tokens],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }
}
