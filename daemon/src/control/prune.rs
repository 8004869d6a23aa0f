//! Pruning ended tokens (`docs/reference/cli.md`, "token prune"; `serve
//! --retain-ended`): the archive first, when one is asked for, then each family as
//! its own short write, a few at a time ([`PRUNE_WINDOW`]), as a bulk run goes
//! (`bulk.rs`), so that other writes wait behind at most one small window.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use stateous_shared::bulk::{Outcome, TokenOutcome};
use stateous_shared::refusal::{Code, Refusal};

use super::bulk::Found;
use super::{keep, Control};
use crate::archive::{self, Kept};
use crate::engine::prune::{family, last_moved, prune, skipped as skipped_now, PruneStep};
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

/// What one pass of retention did: how many tokens it pruned, and the tokens it
/// left, by the reason given for each (a skip's or a refusal's sentence), in the
/// order met.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retained {
    /// Tokens pruned.
    pub pruned: u64,
    /// Tokens left: each reason with the ids it was given for.
    pub left: Vec<(String, Vec<String>)>,
}

impl Retained {
    fn leave(&mut self, token: &str, reason: &str) {
        match self.left.iter_mut().find(|(why, _)| why == reason) {
            Some((_, ids)) => ids.push(token.to_string()),
            None => self
                .left
                .push((reason.to_string(), vec![token.to_string()])),
        }
    }

    /// The tokens left, a clause per reason with its first ids:
    /// `1 left (T-9): kept for now: ...; 2 left (A, B): ...`; empty when none.
    pub fn left_summary(&self) -> String {
        self.left
            .iter()
            .map(|(reason, ids)| {
                let mut named = ids.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
                if ids.len() > 3 {
                    named.push_str(&format!(" and {} more", ids.len() - 3));
                }
                format!("{} left ({named}): {reason}", ids.len())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The families an archive holds: each top token with its tokens as kept.
type Families = Vec<(String, Vec<Kept>)>;

/// The archive of a prune, before any row goes.
struct Archived {
    /// Each family written, by top token: its tokens with their last seqs.
    seqs: HashMap<String, Vec<(String, i64)>>,
    /// The targets the archive's read found to be skipped: left out of it, and
    /// not sent to the write path.
    skipped: HashMap<String, TokenOutcome>,
    /// The file and what it holds, by top token; `None` when nothing was written.
    file: Option<(PathBuf, Families)>,
}

impl Control {
    /// Prune each target (an ended top token, as read), checking again under its
    /// family's lock what `template` says; with `archive`, the families' histories
    /// are written there first. The archive holds only the families pruned: one
    /// the archive's read finds would be skipped is left out (and not tried), and
    /// one skipped or refused after (it changed meanwhile) is taken out after.
    pub(super) async fn prune_found(
        &self,
        targets: Vec<Found>,
        template: PruneStep,
        archive: Option<PathBuf>,
    ) -> Result<Vec<TokenOutcome>, Refusal> {
        let archived = match archive {
            Some(dir) => Some(self.archive(&targets, &template, dir).await?),
            None => None,
        };
        let order: Vec<String> = targets.iter().map(|found| found.id().to_string()).collect();
        let (seqs, skipped, file) = match archived {
            Some(archived) => (
                Some(Arc::new(archived.seqs)),
                archived.skipped,
                archived.file,
            ),
            None => (None, HashMap::new(), None),
        };
        let tried: Vec<Found> = targets
            .into_iter()
            .filter(|found| !skipped.contains_key(found.id()))
            .collect();
        let template = Arc::new(template);
        let window = self.inner.store.bulk_window().min(PRUNE_WINDOW);
        let written = self
            .each_write(tried, window, |rules, found| {
                let token = found.id().to_string();
                let mut step = (*template).clone();
                if let Some(seqs) = &seqs {
                    // A token the archive left out (a child, a live one) is refused
                    // under the lock; an empty list never matches a family.
                    step.archived = Some(seqs.get(&token).cloned().unwrap_or_default());
                }
                move |tx: &dyn Tx| keep(prune(&rules, tx, &token, &step))
            })
            .await?;
        if let Some((path, families)) = file {
            keep_only_pruned(path, families, &written).await;
        }
        let pruned = written
            .iter()
            .filter(|o| o.outcome == Outcome::Applied)
            .count();
        self.inner.metrics.pruned(pruned as u64);
        // Each target's outcome in its place: the archive's skips, then the writes.
        let mut written = written.into_iter();
        Ok(order
            .iter()
            .filter_map(|id| skipped.get(id).cloned().or_else(|| written.next()))
            .collect())
    }

    /// Write the histories of the targets' families into a new file of `dir`, but
    /// for those that would be skipped now (`engine/prune.rs` `skipped`, as
    /// `template` says): each family's tokens with their last seqs, by top token,
    /// and the skipped ones' outcomes.
    async fn archive(
        &self,
        targets: &[Found],
        template: &PruneStep,
        dir: PathBuf,
    ) -> Result<Archived, Refusal> {
        let rows: Vec<TokenRow> = targets
            .iter()
            .filter_map(|found| match found {
                Found::Row(row) => Some(row.clone()),
                Found::Missing(_) => None,
            })
            .collect();
        let rules = Arc::clone(&self.inner.rules);
        let template = template.clone();
        let (at, families, skipped) = self
            .read(move |tx| {
                let (mut families, mut skipped) = (Vec::new(), HashMap::new());
                for row in &rows {
                    // Read again: the walk's copy may be older than the history.
                    let Some(row) = tx.token(&row.token)? else {
                        continue;
                    };
                    let Ok(members) = family(tx, &row) else {
                        continue;
                    };
                    if let Some(outcome) = skipped_now(&rules, tx, &row, &members, &template)? {
                        skipped.insert(row.token.clone(), outcome);
                        continue;
                    }
                    let mut kept: Vec<Kept> = Vec::with_capacity(members.len());
                    for member in members {
                        let entries = tx.entries(&member.token)?;
                        kept.push((member, entries));
                    }
                    families.push((row.token.clone(), kept));
                }
                Ok((tx.now(), families, skipped))
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
            return Ok(Archived {
                seqs,
                skipped,
                file: None,
            });
        }
        let shown = dir.display().to_string();
        let written = tokio::task::spawn_blocking(move || {
            let tokens: Vec<&Kept> = families.iter().flat_map(|(_, kept)| kept).collect();
            archive::write(&dir, at, &tokens).map(|path| (path, families))
        })
        .await;
        match written {
            Ok(Ok((path, families))) => {
                tracing::info!(target: "stateous.prune", "archived to {}", path.display());
                Ok(Archived {
                    seqs,
                    skipped,
                    file: Some((path, families)),
                })
            }
            Ok(Err(error)) => Err(not_archived(&shown, &error.to_string())),
            Err(error) => Err(not_archived(&shown, &error.to_string())),
        }
    }

    /// One pass of retention: every ended top token whose last entry is older
    /// than `pass.after` is pruned (archived first with `pass.archive`), a batch at
    /// a time, with a pause between batches. How many were pruned, and which were
    /// left and why.
    pub async fn retain(&self, pass: &RetainPass) -> Result<Retained, Refusal> {
        let age = crate::time_source::micros(pass.after);
        let mut after: Option<String> = None;
        let mut retained = Retained::default();
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
                for outcome in outcomes {
                    match outcome.outcome {
                        Outcome::Applied => retained.pruned += 1,
                        _ => retained.leave(&outcome.token, &outcome.detail),
                    }
                }
            }
            match next {
                Some(next) => after = Some(next),
                None => return Ok(retained),
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

/// Take out of the archive at `path` the families of `written` that were not
/// pruned (they changed after the archive was written), so that it holds only
/// what went; a failure is logged, and leaves those families in it.
async fn keep_only_pruned(path: PathBuf, families: Families, written: &[TokenOutcome]) {
    let pruned: std::collections::HashSet<&str> = written
        .iter()
        .filter(|o| o.outcome == Outcome::Applied)
        .map(|o| o.token.as_str())
        .collect();
    if families
        .iter()
        .all(|(top, _)| pruned.contains(top.as_str()))
    {
        return;
    }
    let kept: Families = families
        .into_iter()
        .filter(|(top, _)| pruned.contains(top.as_str()))
        .collect();
    let shown = path.display().to_string();
    let replaced = tokio::task::spawn_blocking(move || {
        let tokens: Vec<&Kept> = kept.iter().flat_map(|(_, kept)| kept).collect();
        archive::replace(&path, &tokens)
    })
    .await;
    if let Some(error) = match replaced {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(error) => Some(error.to_string()),
    } {
        tracing::warn!(
            target: "stateous.prune",
            "the archive {shown} still holds tokens that were kept, and a later run archives \
             them again: it could not be written again without them ({error})"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::archive::example;

    fn outcome(token: &str, outcome: Outcome) -> TokenOutcome {
        TokenOutcome {
            token: token.into(),
            outcome,
            state: "done".into(),
            status: "completed".into(),
            detail: String::new(),
            code: None,
        }
    }

    fn tokens_in(path: &std::path::Path) -> Vec<String> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text.lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["token"].to_string()
            })
            .collect()
    }

    #[tokio::test]
    async fn a_family_kept_by_its_prune_is_taken_out_of_the_archive() {
        let dir = tempfile::tempdir().unwrap();
        let families = vec![
            ("A".to_string(), vec![example("A"), example("A.1")]),
            ("B".to_string(), vec![example("B")]),
        ];
        let all: Vec<&Kept> = families.iter().flat_map(|(_, kept)| kept).collect();
        let path = archive::write(dir.path(), 1, &all).unwrap();
        let written = [
            outcome("A", Outcome::Skipped),
            outcome("B", Outcome::Applied),
        ];
        keep_only_pruned(path.clone(), families.clone(), &written).await;
        assert_eq!(tokens_in(&path), [r#""B""#]);
        let written = [
            outcome("A", Outcome::Applied),
            outcome("B", Outcome::Applied),
        ];
        keep_only_pruned(path.clone(), families.clone(), &written).await;
        assert_eq!(
            tokens_in(&path),
            [r#""B""#],
            "nothing to take out: unchanged"
        );
        let written = [
            outcome("A", Outcome::Refused),
            outcome("B", Outcome::Skipped),
        ];
        keep_only_pruned(path.clone(), families, &written).await;
        assert!(!path.exists(), "nothing pruned: no archive");
    }

    #[test]
    fn a_pass_names_the_tokens_it_left_by_reason() {
        let mut retained = Retained::default();
        assert_eq!(retained.left_summary(), "");
        for token in ["A", "B", "C", "D", "E"] {
            retained.leave(token, "its history grew");
        }
        retained.leave("N", "kept for now");
        assert_eq!(
            retained.left_summary(),
            "5 left (A, B, C and 2 more): its history grew; 1 left (N): kept for now"
        );
    }
}
