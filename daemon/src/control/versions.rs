//! Workflow versions through `Control` (`docs/guarantees.md`, "Workflow
//! versions"): the graphs kept in `graphs` loaded as a control plane starts, so
//! that each token runs on its own; `GET /graphs` and `GET /graphs/{checksum}`.

use std::collections::BTreeMap;

use serde_json::Value;
use stateous_shared::graph::Graph;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::{short_checksum, GraphList, GraphView};

use super::Control;
use crate::engine::py;

impl Control {
    /// Load every kept graph, so that older tokens run on theirs, and log how many
    /// live tokens each graph has. A kept document that no longer loads (a newer
    /// build's checks) is logged; its tokens then run on the served graph.
    pub(super) async fn keep_graphs(&self) -> Result<(), Refusal> {
        let (rows, counts) = self
            .read_now(|tx| Ok((tx.graphs()?, tx.graph_counts()?)))
            .await?;
        let mut graphs = Vec::with_capacity(rows.len());
        for row in &rows {
            match Graph::load(&row.document) {
                Ok(graph) if graph.checksum == row.checksum => graphs.push(graph),
                Ok(_) | Err(_) => tracing::error!(
                    "the kept graph {} does not load as it was kept; its tokens run on the \
                     served graph",
                    short_checksum(&row.checksum)
                ),
            }
        }
        let rules = &self.inner.rules;
        rules.keep(graphs);
        let live_on = |checksum: &str| -> i64 {
            counts
                .iter()
                .filter(|(graph, status, _)| graph.as_deref() == Some(checksum) && status.live())
                .map(|(_, _, count)| count)
                .sum()
        };
        // Said only when tokens live on a graph other than the served one: a start
        // with one graph has nothing to say, and its first line stays its own.
        let older = rows
            .iter()
            .any(|row| row.checksum != rules.graph.checksum && live_on(&row.checksum) > 0);
        for row in rows.iter().filter(|_| older) {
            let live = live_on(&row.checksum);
            let served = row.checksum == rules.graph.checksum;
            if live > 0 || served {
                let which = if served { " (served)" } else { "" };
                tracing::info!(
                    "graph {} of {}{which}: {live} live token(s)",
                    short_checksum(&row.checksum),
                    py(&row.workflow)
                );
            }
        }
        Ok(())
    }

    /// `GET /graphs`: every kept graph, the first served first, with its tokens
    /// by status.
    pub async fn graphs(&self) -> Result<GraphList, Refusal> {
        let (rows, counts) = self
            .read(|tx| Ok((tx.graphs()?, tx.graph_counts()?)))
            .await?;
        let rules = &self.inner.rules;
        let graphs = rows
            .into_iter()
            .map(|row| {
                let tokens: BTreeMap<String, i64> = counts
                    .iter()
                    .filter(|(graph, _, _)| graph.as_deref() == Some(row.checksum.as_str()))
                    .map(|(_, status, count)| (status.as_str().to_string(), *count))
                    .collect();
                let served = rules
                    .structure(&row.checksum)
                    .is_some_and(|graph| graph.checksum == rules.graph.checksum);
                GraphView {
                    checksum: row.checksum,
                    workflow: row.workflow,
                    served,
                    first_served: iso(from_micros(row.first_served)),
                    last_served: iso(from_micros(row.last_served)),
                    tokens,
                }
            })
            .collect();
        Ok(GraphList { graphs })
    }

    /// `GET /graphs/{checksum}`: the kept graph's document. A prefix of the
    /// checksum names the graph when only one kept checksum starts with it; 404
    /// `not_found` when none does, 422 `invalid_argument` when several do.
    pub async fn graph_document(&self, checksum: String) -> Result<Value, Refusal> {
        let rows = self.read(|tx| Ok(tx.graphs()?)).await?;
        let found: Vec<_> = rows
            .into_iter()
            .filter(|row| row.checksum.starts_with(&checksum))
            .collect();
        match found.as_slice() {
            [row] => serde_json::from_str(&row.document)
                .map_err(|_| Refusal::new(Code::Unexpected, "the kept document is not JSON")),
            [] => Err(Refusal::new(
                Code::NotFound,
                format!("this database keeps no graph {}", py(&checksum)),
            )),
            _ => Err(Refusal::new(
                Code::InvalidArgument,
                format!(
                    "{} kept graphs start with {}; give more of the checksum",
                    found.len(),
                    py(&checksum)
                ),
            )),
        }
    }
}
