//! The SQL of `usage` and `budgets`, as SQLite's (`store/sqlite/usage.rs`). Each
//! statement reads its rows by the table's primary key, so any plan Postgres keeps
//! reads by an index.

use stateous_shared::usage::Amounts;
use stateous_shared::wire::Object;

use super::{get, PgTx};
use crate::store::json::{object, to_text};
use crate::store::usage::{BudgetRow, Budgets, Usage, OF_TOKEN};
use crate::store::StoreResult;

impl Usage for PgTx<'_> {
    fn add_usage(&self, token: &str, amounts: &Amounts) -> StoreResult<()> {
        for (name, amount) in amounts {
            self.execute(
                "INSERT INTO usage (token, name, total) VALUES ($1, $2, $3)
                 ON CONFLICT (token, name) DO UPDATE SET total = usage.total + excluded.total",
                &[&token, name, amount],
            )?;
        }
        Ok(())
    }

    fn usage_of(&self, token: &str) -> StoreResult<Amounts> {
        let rows = self.query("SELECT name, total FROM usage WHERE token = $1", &[&token])?;
        rows.iter()
            .map(|row| Ok((get::<String>(row, 0)?, get::<f64>(row, 1)?)))
            .collect()
    }

    fn forget_usage(&self, token: &str) -> StoreResult<()> {
        self.execute(
            "WITH usage_gone AS (DELETE FROM usage WHERE token = $1)
             DELETE FROM budgets WHERE subject = $2 AND name = $1",
            &[&token, &OF_TOKEN],
        )?;
        Ok(())
    }
}

impl Budgets for PgTx<'_> {
    fn budget(&self, subject: &str, name: &str) -> StoreResult<Option<Object>> {
        let row = self.query_opt(
            "SELECT budget FROM budgets WHERE subject = $1 AND name = $2",
            &[&subject, &name],
        )?;
        match row {
            None => Ok(None),
            Some(row) => Ok(Some(object(&get::<String>(&row, 0)?)?)),
        }
    }

    fn set_budget(&self, subject: &str, name: &str, budget: &Object) -> StoreResult<()> {
        self.execute(
            "INSERT INTO budgets (subject, name, budget, set_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (subject, name) DO UPDATE
             SET budget = excluded.budget, set_at = excluded.set_at",
            &[&subject, &name, &to_text(budget), &self.now.get()],
        )?;
        Ok(())
    }

    fn remove_budget(&self, subject: &str, name: &str) -> StoreResult<bool> {
        let gone = self.execute(
            "DELETE FROM budgets WHERE subject = $1 AND name = $2",
            &[&subject, &name],
        )?;
        Ok(gone > 0)
    }

    fn budgets(&self, subject: &str) -> StoreResult<Vec<BudgetRow>> {
        let rows = self.query(
            "SELECT name, budget, set_at FROM budgets WHERE subject = $1 ORDER BY name",
            &[&subject],
        )?;
        rows.iter()
            .map(|row| {
                Ok(BudgetRow {
                    subject: subject.to_string(),
                    name: get(row, 0)?,
                    budget: object(&get::<String>(row, 1)?)?,
                    set_at: get(row, 2)?,
                })
            })
            .collect()
    }
}
