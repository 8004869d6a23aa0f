//! Pruning ended tokens (`docs/reference/cli.md`, "token prune"; `serve
//! --retain-ended`): the archive first, when one is asked for, then each family as
//! its own short write, a few at a time ([`PRUNE_WINDOW`]), as a bulk run goes
//! (`operate.rs`), so that other writes wait behind at most one small window.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use stateous_shared::operate::{Outcome, TokenOutcome};
use stateous_shared::refusal::{Code, Refusal};

use super::operate::Found;
use super::{keep, Control};
use crate::archive::{self, Kept};
use crate::engine::prune::{family, last_moved, prune, PruneStep};
use crate::store::{TokenRow, TokenScan, TokenStatus, Tx};

/// How many prunes are on the write path at once: a prune deletes every row of a
/// family, more than a bulk action's write, so fewer share a group commit (with a
/// bulk run's 64, other writes waited up to 0.9 s behind a window of 3,000 prunes
/// on a loaded machine).
const PRUNE_WINDOW: usize = 8;

/// One pass of retention: what to prune and how gently.
#[derive(Debug, Clone, PartialEq)]
pub struct RetainPass {
    /// Prune the tokens whose last entry is older than this.
    pub after: Duration,
    /// Where to archive each token's history first, if anywhere.
    pub archive: Option<PathBuf>,
    /// How many tokens one batch reads (and prunes at most).
    pub batch: i64,
    /// The pause between two batches, so that a pass over many tokens leaves the
    /// write path to others.
    pub pause: Duration,
}

impl Control {
    /// Prune each target (an ended top token, as read), checking again under its
    /// family's lock what `template` says; with `archive`, the families' histories
    /// are written there first, and a token that changed after is skipped.
    pub(super) async fn prune_found(
        &self,
        targets: Vec<Found>,
        template: PruneStep,
        archive: Option<PathBuf>,
    ) -> Result<Vec<TokenOutcome>, Refusal> {
        let archived = match archive {
            Some(dir) => Some(self.archive(&targets, dir).await?),
            None => None,
        };
        let template = Arc::new(template);
        let window = self.inner.store.bulk_window().min(PRUNE_WINDOW);
        let outcomes = self
            .each_write(targets, window, |rules, found| {
                let token = found.id().to_string();
                let mut step = (*template).clone();
                if let Some(archived) = &archived {
                    // A token the archive left out (a child, a live one) is refused
                    // under the lock; an empty list never matches a family.
                    step.archived = Some(archived.get(&token).cloned().unwrap_or_default());
                }
                move |tx: &dyn Tx| keep(prune(&rules, tx, &token, &step))
            })
            .await?;
        let pruned = outcomes
            .iter()
            .filter(|o| o.outcome == Outcome::Applied)
            .count();
        self.inner.metrics.pruned(pruned as u64);
        Ok(outcomes)
    }

    /// Write the histories of the targets' families into a new file of `dir`; each
    /// family's tokens with their last seqs, by top token.
    async fn archive(
        &self,
        targets: &[Found],
        dir: PathBuf,
    ) -> Result<std::collections::HashMap<String, Vec<(String, i64)>>, Refusal> {
        let rows: Vec<TokenRow> = targets
            .iter()
            .filter_map(|found| match found {
                Found::Row(row) => Some(row.clone()),
                Found::Missing(_) => None,
            })
            .collect();
        let (at, families) = self
            .read(move |tx| {
                let mut families = Vec::new();
                for row in &rows {
                    // Read again: the walk's copy may be older than the history.
                    let Some(row) = tx.token(&row.token)? else {
                        continue;
                    };
                    let Ok(members) = family(tx, &row) else {
                        continue;
                    };
                    let mut kept: Vec<Kept> = Vec::with_capacity(members.len());
                    for member in members {
                        let entries = tx.entries(&member.token)?;
                        kept.push((member, entries));
                    }
                    families.push((row.token.clone(), kept));
                }
                Ok((tx.now(), families))
            })
            .await?;
        let seqs = families
            .iter()
            .map(|(top, kept)| {
                let seqs = kept
                    .iter()
                    .map(|(row, entries)| (row.token.clone(), entries.last().map_or(0, |e| e.seq)))
                    .collect();
                (top.clone(), seqs)
            })
            .collect();
        if families.is_empty() {
            return Ok(seqs);
        }
        let tokens: Vec<Kept> = families.into_iter().flat_map(|(_, kept)| kept).collect();
        let shown = dir.display().to_string();
        let written = tokio::task::spawn_blocking(move || archive::write(&dir, at, &tokens)).await;
        match written {
            Ok(Ok(path)) => {
                tracing::info!(target: "stateous.prune", "archived to {}", path.display());
                Ok(seqs)
            }
            Ok(Err(error)) => Err(not_archived(&shown, &error.to_string())),
            Err(error) => Err(not_archived(&shown, &error.to_string())),
        }
    }

    /// One pass of retention: every ended top token whose last entry is older
    /// than `pass.after` is pruned (archived first with `pass.archive`), a batch at
    /// a time, with a pause between batches. How many were pruned.
    pub async fn retain(&self, pass: &RetainPass) -> Result<u64, Refusal> {
        let age = crate::clock::micros(pass.after);
        let mut after: Option<String> = None;
        let mut pruned = 0;
        loop {
            let (batch, from) = (pass.batch, after.clone());
            let (cutoff, targets, next) = self
                .read(move |tx| {
                    let cutoff = tx.now().saturating_sub(age);
                    let scan = TokenScan {
                        statuses: Some(vec![
                            TokenStatus::Completed,
                            TokenStatus::Failed,
                            TokenStatus::Cancelled,
                        ]),
                        // A token's end is at or after its entry into its state.
                        entered_until: Some(cutoff),
                        ..TokenScan::default()
                    };
                    let rows = tx.walk_tokens(&scan, from.as_deref(), batch)?;
                    let next = (rows.len() as i64 == batch)
                        .then(|| rows.last().map(|row| row.token.clone()))
                        .flatten();
                    let mut targets = Vec::new();
                    for row in rows {
                        // A child goes with its top token.
                        if row.parent.is_none()
                            && last_moved(&row, &tx.entries(&row.token)?) <= cutoff
                        {
                            targets.push(Found::Row(row));
                        }
                    }
                    Ok((cutoff, targets, next))
                })
                .await?;
            if !targets.is_empty() {
                let step = PruneStep {
                    ended_by: Some(cutoff),
                    ..PruneStep::default()
                };
                let outcomes = self
                    .prune_found(targets, step, pass.archive.clone())
                    .await?;
                pruned += outcomes
                    .iter()
                    .filter(|o| o.outcome == Outcome::Applied)
                    .count() as u64;
            }
            match next {
                Some(next) => after = Some(next),
                None => return Ok(pruned),
            }
            tokio::time::sleep(pass.pause).await;
        }
    }
}

/// The refusal of a prune whose archive could not be written: nothing was deleted.
fn not_archived(dir: &str, error: &str) -> Refusal {
    Refusal::new(
        Code::Unexpected,
        format!("the archive could not be written in {dir} ({error}); nothing was pruned"),
    )
}
