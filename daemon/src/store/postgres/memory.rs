//! The SQL of `memory`: the routine's memory per token and state.

use serde_json::Value;
use stateous_shared::wire::Object;

use super::{get, PgTx};
use crate::store::json::value;
use crate::store::{Memory, StoreResult};

/// The flush's part of the tokens whose memory goes (`pending.rs`): once for each
/// (`{n}` its place in turn), each a `DELETE` of one token's rows: by the key's
/// index in any plan, where `token = ANY($1)` was planned as for 10 tokens, and read
/// the whole table (`pending.rs` `PARTS` says why).
pub(super) const FLUSH_FORGET: &str = "md{n} AS (DELETE FROM memory WHERE token = $1)";

impl Memory for PgTx<'_> {
    fn memory(&self, token: &str, state: &str) -> StoreResult<Object> {
        let rows = self.query(
            "SELECT key, value FROM memory WHERE token = $1 AND state = $2",
            &[&token, &state],
        )?;
        let mut memory = Object::new();
        for row in &rows {
            let text: String = get(row, 1)?;
            memory.insert(get(row, 0)?, value(&text)?);
        }
        Ok(memory)
    }

    fn set_memory(&self, token: &str, state: &str, key: &str, value: &Value) -> StoreResult<()> {
        self.execute(
            "INSERT INTO memory (token, state, key, value) VALUES ($1, $2, $3, $4)
             ON CONFLICT (token, state, key) DO UPDATE SET value = excluded.value",
            &[&token, &state, &key, &value.to_string()],
        )?;
        Ok(())
    }

    fn forget(&self, token: &str, state: &str, key: &str) -> StoreResult<bool> {
        let changed = self.execute(
            "DELETE FROM memory WHERE token = $1 AND state = $2 AND key = $3",
            &[&token, &state, &key],
        )?;
        Ok(changed > 0)
    }

    fn delete_memory(&self, token: &str) -> StoreResult<()> {
        // Written with the transaction's other writes (`pending.rs`).
        self.pending
            .borrow_mut()
            .forget_memory
            .push(token.to_string());
        Ok(())
    }
}
