//! The SQL of `ledger_feed` (migration 0002): the ledger in the order it was
//! committed, across tokens, for `GET /watch`; and the counts of `GET /metrics`
//! and `GET /supervisors`. Reads only.

use std::collections::BTreeMap;

use rusqlite::params;

use super::{corrupt, object, SqliteTx};
use crate::store::StoreResult;
use stateous_shared::wire::Object;

/// One ledger entry with its global number.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedRow {
    /// Its number in `ledger_feed`: increasing in commit order.
    pub id: i64,
    /// The token.
    pub token: String,
    /// Its seq in the token's ledger.
    pub seq: i64,
    /// When it was written, in microseconds.
    pub at: i64,
    /// The ledger kind.
    pub kind: String,
    /// The kind's facts.
    pub data: Object,
}

impl SqliteTx<'_> {
    /// At most `limit` entries numbered above `after`, in order; only `token`'s
    /// when given.
    pub fn feed_after(
        &self,
        after: i64,
        token: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<FeedRow>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT f.id, f.token, f.seq, l.at, l.kind, l.data
             FROM ledger_feed f JOIN ledger l ON l.token = f.token AND l.seq = f.seq
             WHERE f.id > ?1 AND (?2 IS NULL OR f.token = ?2)
             ORDER BY f.id LIMIT ?3",
        )?;
        let rows = statement.query_map(params![after, token, limit], |row| {
            let data: String = row.get(5)?;
            Ok(FeedRow {
                id: row.get(0)?,
                token: row.get(1)?,
                seq: row.get(2)?,
                at: row.get(3)?,
                kind: row.get(4)?,
                data: object(&data).map_err(corrupt)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The number of the newest entry; 0 for an empty ledger.
    pub fn feed_last(&self) -> StoreResult<i64> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT coalesce(max(id), 0) FROM ledger_feed")?;
        Ok(statement.query_row([], |row| row.get(0))?)
    }

    /// How many rows of `table` have each status: `tokens`, `tasks` or `timers`.
    pub fn status_counts(&self, table: &str) -> StoreResult<BTreeMap<String, i64>> {
        let sql = match table {
            "tokens" => "SELECT status, count(*) FROM tokens GROUP BY status",
            "tasks" => "SELECT status, count(*) FROM tasks GROUP BY status",
            _ => "SELECT status, count(*) FROM timers GROUP BY status",
        };
        let mut statement = self.conn.prepare_cached(sql)?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many tasks each supervisor holds now (claimed, lease not over).
    pub fn running_by_supervisor(&self) -> StoreResult<BTreeMap<String, i64>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT claimed_by, count(*) FROM tasks WHERE status = 'claimed'
             GROUP BY claimed_by",
        )?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
