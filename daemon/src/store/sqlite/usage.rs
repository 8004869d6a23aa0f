//! The SQL of `usage` and `budgets`: a token's sums, and the budgets by subject
//! and name.

use rusqlite::{params, OptionalExtension};
use stateous_shared::usage::Amounts;
use stateous_shared::wire::Object;

use super::{to_text, SqliteTx};
use crate::store::json::object;
use crate::store::usage::{BudgetRow, Budgets, Usage, OF_TOKEN};
use crate::store::StoreResult;

impl Usage for SqliteTx<'_> {
    fn add_usage(&self, token: &str, amounts: &Amounts) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO usage (token, name, total) VALUES (?1, ?2, ?3)
             ON CONFLICT (token, name) DO UPDATE SET total = total + excluded.total",
        )?;
        for (name, amount) in amounts {
            statement.execute(params![token, name, amount])?;
        }
        Ok(())
    }

    fn usage_of(&self, token: &str) -> StoreResult<Amounts> {
        let mut statement = self.prepare("SELECT name, total FROM usage WHERE token = ?1")?;
        let rows = statement.query_map([token], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, f64>(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn forget_usage(&self, token: &str) -> StoreResult<()> {
        self.prepare("DELETE FROM usage WHERE token = ?1")?
            .execute([token])?;
        self.prepare("DELETE FROM budgets WHERE subject = ?1 AND name = ?2")?
            .execute(params![OF_TOKEN, token])?;
        Ok(())
    }
}

impl Budgets for SqliteTx<'_> {
    fn budget(&self, subject: &str, name: &str) -> StoreResult<Option<Object>> {
        let text: Option<String> = self
            .prepare("SELECT budget FROM budgets WHERE subject = ?1 AND name = ?2")?
            .query_row(params![subject, name], |row| row.get(0))
            .optional()?;
        text.map(|text| object(&text)).transpose()
    }

    fn set_budget(&self, subject: &str, name: &str, budget: &Object) -> StoreResult<()> {
        self.prepare(
            "INSERT INTO budgets (subject, name, budget, set_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (subject, name) DO UPDATE
             SET budget = excluded.budget, set_at = excluded.set_at",
        )?
        .execute(params![subject, name, to_text(budget), self.now()])?;
        Ok(())
    }

    fn remove_budget(&self, subject: &str, name: &str) -> StoreResult<bool> {
        let gone = self
            .prepare("DELETE FROM budgets WHERE subject = ?1 AND name = ?2")?
            .execute(params![subject, name])?;
        Ok(gone > 0)
    }

    fn budgets(&self, subject: &str) -> StoreResult<Vec<BudgetRow>> {
        let mut statement = self
            .prepare("SELECT name, budget, set_at FROM budgets WHERE subject = ?1 ORDER BY name")?;
        let rows = statement.query_map([subject], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })?;
        let mut found = Vec::new();
        for row in rows {
            let (name, text, set_at) = row?;
            found.push(BudgetRow {
                subject: subject.to_string(),
                name,
                budget: object(&text)?,
                set_at,
            });
        }
        Ok(found)
    }
}
