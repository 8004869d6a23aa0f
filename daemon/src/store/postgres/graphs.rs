//! The SQL of `graphs`: every graph served, and which tokens run on each.

use super::{closed, get, PgTx};
use crate::store::{GraphCount, GraphRow, Graphs, StoreResult};

impl Graphs for PgTx<'_> {
    fn graph_served(&self, row: &GraphRow) -> StoreResult<()> {
        self.execute(
            "INSERT INTO graphs (checksum, workflow, structure, document, first_served,
                                 last_served)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (checksum) DO UPDATE SET last_served = $6",
            &[
                &row.checksum,
                &row.workflow,
                &row.structure,
                &row.document,
                &row.first_served,
                &row.last_served,
            ],
        )?;
        Ok(())
    }

    fn graphs(&self) -> StoreResult<Vec<GraphRow>> {
        let rows = self.query(
            "SELECT checksum, workflow, structure, document, first_served, last_served
             FROM graphs ORDER BY first_served, checksum",
            &[],
        )?;
        rows.iter().map(GraphRow::read).collect()
    }

    fn graph_counts(&self) -> StoreResult<Vec<GraphCount>> {
        // NULLS FIRST: SQLite's order, where NULL sorts before any text.
        let rows = self.query(
            "SELECT graph, status, count(*) FROM tokens GROUP BY graph, status
             ORDER BY graph NULLS FIRST, status",
            &[],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, closed(row, 1)?, get(row, 2)?)))
            .collect()
    }

    fn live_of_other_workflows(&self, workflow: &str) -> StoreResult<Vec<(String, i64)>> {
        let rows = self.query(
            "SELECT g.workflow, count(*) FROM tokens t JOIN graphs g ON g.checksum = t.graph
             WHERE t.parent IS NULL AND t.status IN ('active', 'paused') AND g.workflow <> $1
             GROUP BY g.workflow ORDER BY g.workflow",
            &[&workflow],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
            .collect()
    }

    fn adopt_graph(&self, from: &str, to: &str) -> StoreResult<u64> {
        self.execute(
            "UPDATE tokens SET graph = $2 WHERE graph = $1",
            &[&from, &to],
        )
    }
}
