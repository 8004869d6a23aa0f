//! What the API's additions read through `Control`, each a question answered on
//! one read snapshot: the tasks each supervisor holds, the tokens by state, the
//! tables' figures of `GET /metrics`, and the watch stream's entries as the wire
//! carries them. The API never holds a transaction of its own.

use std::collections::BTreeMap;

use stateous_shared::journal::{JournalEntry, JournalPage};
use stateous_shared::refusal::Refusal;
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::{StateCount, StateList, WatchEntry};

use super::Control;
use crate::metrics::Heard;
use crate::store::LedgerRow;

impl Control {
    /// `GET /journal`: at most `limit` entries of `subject` (and of `name`, when
    /// given) with an id above `after`, in id order.
    pub async fn journal(
        &self,
        subject: String,
        name: Option<String>,
        after: i64,
        limit: i64,
    ) -> Result<JournalPage, Refusal> {
        let rows = self
            .read(move |tx| Ok(tx.journal(&subject, name.as_deref(), after, limit)?))
            .await?;
        let entries = rows
            .into_iter()
            .map(|row| JournalEntry {
                id: row.id,
                at: iso(from_micros(row.at)),
                subject: row.subject,
                name: row.name,
                kind: row.kind,
                by: row.by,
                data: row.data,
            })
            .collect();
        Ok(JournalPage { entries })
    }

    /// How many tasks each supervisor holds now, by name (for `GET /supervisors`).
    pub async fn running_by_supervisor(&self) -> Result<BTreeMap<String, i64>, Refusal> {
        let running = self.read(|tx| Ok(tx.running_by_supervisor()?)).await?;
        Ok(running.into_iter().collect())
    }

    /// `GET /states`: every state that holds a token, with its tokens by status;
    /// the store gives the counts ordered by workflow (main first) and state.
    pub async fn states(&self) -> Result<StateList, Refusal> {
        let counts = self.read(|tx| Ok(tx.token_counts()?)).await?;
        let mut states: Vec<StateCount> = Vec::new();
        for (workflow, state, status, count) in counts {
            let same = states
                .last()
                .is_some_and(|last| last.workflow == workflow && last.state == state);
            if !same {
                states.push(StateCount {
                    workflow,
                    state,
                    tokens: BTreeMap::new(),
                });
            }
            if let Some(last) = states.last_mut() {
                last.tokens.insert(status.as_str().to_string(), count);
            }
        }
        Ok(StateList { states })
    }

    /// `GET /metrics`: the families in Prometheus's text format, with the tables'
    /// figures read now and the ledger's entries counted up to the feed's safe
    /// point; `heard` is what the API knows of the supervisors.
    pub async fn scrape(&self, heard: Heard) -> Result<String, Refusal> {
        let main = self.graph().main.name.clone();
        let read = move |after: i64| async move {
            let upto = self.mark().safe();
            self.read(move |tx| Ok(crate::metrics::read_tables(tx, &main, after, upto)?))
                .await
        };
        self.metrics().render(read, heard).await
    }
}

/// A committed ledger row as `GET /watch` sends it.
pub(crate) fn watch_entry(row: &LedgerRow) -> WatchEntry {
    WatchEntry {
        id: row.id,
        token: row.token.clone(),
        seq: row.seq,
        at: iso(from_micros(row.at)),
        kind: row.kind.clone(),
        data: row.data.clone(),
        by: row.by.clone(),
    }
}
