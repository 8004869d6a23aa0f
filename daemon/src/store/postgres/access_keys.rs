//! The SQL of `access_keys`, as SQLite's (`store/sqlite/access_keys.rs`).

use super::PgTx;
use crate::store::{AccessKeyRow, AccessKeys, StoreResult, Tx};

impl AccessKeys for PgTx<'_> {
    fn access_keys(&self) -> StoreResult<Vec<AccessKeyRow>> {
        let rows = self.query(
            "SELECT name, role, supervisor, hash, created_at, last_used_at, revoked_at, scope
             FROM access_keys ORDER BY name",
            &[],
        )?;
        rows.iter().map(AccessKeyRow::read).collect()
    }

    fn insert_access_key(&self, row: &AccessKeyRow) -> StoreResult<bool> {
        let added = self.execute(
            "INSERT INTO access_keys (name, role, supervisor, hash, created_at, scope)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
            &[
                &row.name,
                &row.role.as_str(),
                &row.supervisor,
                &row.hash,
                &row.created_at,
                &row.scope,
            ],
        )?;
        Ok(added == 1)
    }

    fn revoke_access_key(&self, name: &str) -> StoreResult<bool> {
        let revoked = self.execute(
            "UPDATE access_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
            &[&name, &self.now()],
        )?;
        Ok(revoked == 1)
    }

    fn touch_access_keys(&self, used: &[(String, i64)]) -> StoreResult<()> {
        for (name, at) in used {
            self.execute(
                "UPDATE access_keys SET last_used_at = $2
                 WHERE name = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
                &[name, at],
            )?;
        }
        Ok(())
    }
}
