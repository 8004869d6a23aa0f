//! The SQL of `priorities` (`store/priorities.rs`).

use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::priorities::{Candidate, Priorities};
use crate::store::StoreResult;

/// A candidate read as `id, token, state, workflow, context, priority`.
pub(super) fn candidate(row: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
    Ok(Candidate {
        task: row.get(0)?,
        token: row.get(1)?,
        state: row.get(2)?,
        workflow: row.get(3)?,
        context: row.get(4)?,
        priority: row.get(5)?,
    })
}

impl Priorities for SqliteTx<'_> {
    fn priority(&self, token: &str) -> StoreResult<i64> {
        let found: Option<i64> = self
            .prepare("SELECT priority FROM priorities WHERE token = ?1")?
            .query_row([token], |row| row.get(0))
            .optional()?;
        Ok(found.unwrap_or(0))
    }

    fn set_priority(&self, token: &str, priority: i64) -> StoreResult<()> {
        if priority != 0 {
            crate::store::claim_switch::turn_on(
                self,
                crate::store::claim_switch::ClaimFact::Priorities,
            );
        }
        if priority == 0 {
            self.prepare("DELETE FROM priorities WHERE token = ?1")?
                .execute([token])?;
        } else {
            self.prepare(
                "INSERT INTO priorities (token, priority) VALUES (?1, ?2)
                 ON CONFLICT (token) DO UPDATE SET priority = excluded.priority",
            )?
            .execute(params![token, priority])?;
        }
        Ok(())
    }

    fn any_priority(&self) -> StoreResult<bool> {
        let found: Option<i64> = self
            .prepare("SELECT 1 FROM priorities LIMIT 1")?
            .query_row([], |row| row.get(0))
            .optional()?;
        Ok(found.is_some())
    }

    fn prioritized_queued(&self, limit: i64) -> StoreResult<Vec<(i64, i64)>> {
        let mut statement = self.prepare(
            "SELECT t.id, p.priority FROM priorities p JOIN tasks t ON t.token = p.token
             WHERE p.priority > 0 AND t.status = 'queued'
             ORDER BY p.priority DESC, t.id LIMIT ?1",
        )?;
        let rows = statement.query_map([limit], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn queued_candidates(
        &self,
        states: &[(Option<String>, String)],
        limit: i64,
        prioritized: bool,
    ) -> StoreResult<Vec<Candidate>> {
        let read = candidate;
        const SELECT: &str = "SELECT t.id, t.token, t.state, k.workflow, k.context,
                coalesce(p.priority, 0)
             FROM tasks t JOIN tokens k ON k.token = t.token
             LEFT JOIN priorities p ON p.token = t.token";
        let mut found = Vec::new();
        let mut statement = self.prepare(&format!(
            "{SELECT} WHERE t.status = 'queued' AND t.state = ?1
               AND coalesce(k.workflow, '') = ?2 AND k.status = 'active'
             ORDER BY t.id LIMIT {}",
            limit.max(0)
        ))?;
        for (workflow, state) in states {
            let workflow = workflow.as_deref().unwrap_or("");
            for row in statement.query_map(params![state, workflow], read)? {
                found.push(row?);
            }
        }
        if prioritized {
            let mut statement = self.prepare(&format!(
                "{SELECT} WHERE p.priority > 0 AND t.status = 'queued' AND k.status = 'active'
                 ORDER BY p.priority DESC, t.id LIMIT {}",
                limit.max(0)
            ))?;
            for row in statement.query_map([], read)? {
                found.push(row?);
            }
        }
        found.sort_by_key(|c| c.task);
        found.dedup_by_key(|c| c.task);
        Ok(found)
    }

    fn priorities_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, i64)>> {
        let mut statement = self.prepare("SELECT priority FROM priorities WHERE token = ?1")?;
        let mut found = Vec::new();
        for token in tokens {
            let priority: Option<i64> =
                statement.query_row([token], |row| row.get(0)).optional()?;
            if let Some(priority) = priority {
                found.push((token.clone(), priority));
            }
        }
        Ok(found)
    }
}
