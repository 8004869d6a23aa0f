//! The SQL of `access_keys`.

use rusqlite::params;

use super::SqliteTx;
use crate::store::{AccessKeyRow, AccessKeys, StoreResult};

impl AccessKeys for SqliteTx<'_> {
    fn access_keys(&self) -> StoreResult<Vec<AccessKeyRow>> {
        let mut statement = self.prepare(
            "SELECT name, role, supervisor, hash, created_at, last_used_at, revoked_at, scope
             FROM access_keys ORDER BY name",
        )?;
        let rows = statement.query_map([], |row| AccessKeyRow::read(row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn insert_access_key(&self, row: &AccessKeyRow) -> StoreResult<bool> {
        let mut statement = self.prepare(
            "INSERT INTO access_keys (name, role, supervisor, hash, created_at, scope)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (name) DO NOTHING",
        )?;
        let added = statement.execute(params![
            row.name,
            row.role.as_str(),
            row.supervisor,
            row.hash,
            row.created_at,
            row.scope
        ])?;
        Ok(added == 1)
    }

    fn revoke_access_key(&self, name: &str) -> StoreResult<bool> {
        let mut statement = self.prepare(
            "UPDATE access_keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
        )?;
        Ok(statement.execute(params![name, self.now()])? == 1)
    }

    fn touch_access_keys(&self, used: &[(String, i64)]) -> StoreResult<()> {
        let mut statement = self.prepare(
            "UPDATE access_keys SET last_used_at = ?2
             WHERE name = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
        )?;
        for (name, at) in used {
            statement.execute(params![name, at])?;
        }
        Ok(())
    }
}
