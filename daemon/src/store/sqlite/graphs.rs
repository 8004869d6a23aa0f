//! The SQL of `graphs`: every graph served, and which tokens run on each.

use rusqlite::params;

use super::{closed, SqliteTx};
use crate::store::{GraphCount, GraphRow, Graphs, StoreResult};

impl Graphs for SqliteTx<'_> {
    fn graph_served(&self, row: &GraphRow) -> StoreResult<()> {
        let mut statement = self.prepare(
            "INSERT INTO graphs (checksum, workflow, structure, document, first_served,
                                 last_served)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (checksum) DO UPDATE SET last_served = ?6",
        )?;
        statement.execute(params![
            row.checksum,
            row.workflow,
            row.structure,
            row.document,
            row.first_served,
            row.last_served
        ])?;
        Ok(())
    }

    fn graphs(&self) -> StoreResult<Vec<GraphRow>> {
        let mut statement = self.prepare(
            "SELECT checksum, workflow, structure, document, first_served, last_served
             FROM graphs ORDER BY first_served, checksum",
        )?;
        let rows = statement.query_map([], |row| GraphRow::read(row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn graph_counts(&self) -> StoreResult<Vec<GraphCount>> {
        let mut statement = self.prepare(
            "SELECT graph, status, count(*) FROM tokens GROUP BY graph, status
             ORDER BY graph, status",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((row.get(0)?, closed(row.get(1)?)?, row.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn live_of_other_workflows(&self, workflow: &str) -> StoreResult<Vec<(String, i64)>> {
        let mut statement = self.prepare(
            "SELECT g.workflow, count(*) FROM tokens t JOIN graphs g ON g.checksum = t.graph
             WHERE t.parent IS NULL AND t.status IN ('active', 'paused') AND g.workflow <> ?1
             GROUP BY g.workflow ORDER BY g.workflow",
        )?;
        let rows = statement.query_map(params![workflow], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn adopt_graph(&self, from: &str, to: &str) -> StoreResult<u64> {
        let mut statement = self.prepare("UPDATE tokens SET graph = ?2 WHERE graph = ?1")?;
        Ok(statement.execute(params![from, to])? as u64)
    }
}
