//! The SQL of `memory`: the routine's memory per token and state.

use rusqlite::params;
use serde_json::Value;
use stateous_shared::wire::Object;

use super::SqliteTx;
use crate::store::{Memory, StoreError, StoreResult};

impl Memory for SqliteTx<'_> {
    fn memory(&self, token: &str, state: &str) -> StoreResult<Object> {
        let mut statement =
            self.prepare("SELECT key, value FROM memory WHERE token = ?1 AND state = ?2")?;
        let rows = statement.query_map(params![token, state], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut memory = Object::new();
        for row in rows {
            let (key, text) = row?;
            let value: Value =
                serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            memory.insert(key, value);
        }
        Ok(memory)
    }

    fn set_memory(&self, token: &str, state: &str, key: &str, value: &Value) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO memory (token, state, key, value) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (token, state, key) DO UPDATE SET value = excluded.value",
        )?;
        statement.execute(params![token, state, key, value.to_string()])?;
        Ok(())
    }

    fn forget(&self, token: &str, state: &str, key: &str) -> StoreResult<bool> {
        let mut statement =
            self.prepare("DELETE FROM memory WHERE token = ?1 AND state = ?2 AND key = ?3")?;
        Ok(statement.execute(params![token, state, key])? > 0)
    }

    fn delete_memory(&self, token: &str) -> StoreResult<()> {
        let mut statement = self.prepare("DELETE FROM memory WHERE token = ?1")?;
        statement.execute([token])?;
        Ok(())
    }
}
