//! The control plane's bulk actions: `Control::bulk`, a preview or one run of a
//! walk over the tokens a selection matches.
//!
//! A real bulk run reads its page of matches once, then sends each token as its
//! own write request, a window at a time (`Store::bulk_window`: a window shares one
//! batch of the writer). Any other request waits behind at most one window, so 10,000
//! tokens never hold the write path for long; the caller walks on with the answer's
//! `next`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use stateous_shared::bulk::{tally, BulkAction, BulkAnswer, Outcome, TokenOutcome, SAMPLE};
use stateous_shared::refusal::{Code, Refusal};

use super::{keep, Control};
use crate::engine::bulk::{apply, preview, refuse_whole, refused, BulkStep};
use crate::engine::prune::PruneStep;
use crate::engine::Rules;
use crate::engine::{self, select};
use crate::store::{StoreError, TokenRow, Tx};

/// A validated `POST /tokens/bulk`.
#[derive(Debug, Clone)]
pub struct BulkInput {
    /// The action, and what each token must still match.
    pub step: BulkStep,
    /// The tokens listed, if any (then the walk is these, in this order).
    pub tokens: Option<Vec<String>>,
    /// Only preview.
    pub dry_run: bool,
    /// A preview: put what it would do to every match in the answer's
    /// `outcomes`, not only the sample.
    pub every: bool,
    /// Where the walk goes on: the last token id an earlier run went through.
    pub after: Option<String>,
    /// How many tokens this run goes through.
    pub limit: i64,
    /// `prune`: the folder (on this machine) where the histories go first.
    pub archive: Option<std::path::PathBuf>,
}

/// The point of a walk from the answer's `next` (the last token id it went
/// through), or `None` when it is not one.
pub fn cursor_of(text: &str) -> Option<String> {
    crate::validated::token_id_ok(text).then(|| text.to_string())
}

impl Control {
    /// `POST /tokens/bulk`: a preview, or one run of the walk.
    pub async fn bulk(&self, input: BulkInput) -> Result<BulkAnswer, Refusal> {
        let rules = Arc::clone(&self.inner.rules);
        let action = input.step.action;
        if let Some(refusal) = refuse_whole(&rules, &input.step) {
            return Err(refusal);
        }
        let selection = &input.step.selection;
        if let Some(refusal) = select::unknown_name(&rules, selection) {
            return Err(refusal);
        }
        if let Some(dir) = &input.archive {
            crate::archive::check_folder(dir)
                .map_err(|sentence| Refusal::new(Code::InvalidArgument, sentence))?;
        }
        if input.dry_run {
            return self.read(move |tx| dry_run(&rules, tx, &input)).await;
        }
        let walk = input.clone();
        let (targets, next) = self
            .read(move |tx| match &walk.tokens {
                Some(ids) => Ok((listed(tx, ids)?, None)),
                None => {
                    let (rows, next) = select::page(
                        &rules,
                        tx,
                        &walk.step.selection,
                        walk.after.as_deref(),
                        walk.limit,
                    )?;
                    Ok((rows.into_iter().map(Found::Row).collect(), next))
                }
            })
            .await?;
        let outcomes = if action == BulkAction::Prune {
            let step = PruneStep {
                selection: Some(input.step.selection.clone()),
                ..PruneStep::default()
            };
            let outcomes = self
                .prune_found(targets, step, input.archive.clone())
                .await?;
            let pruned = outcomes
                .iter()
                .filter(|o| o.outcome == Outcome::Applied)
                .count();
            tracing::info!(
                target: "stateous.prune",
                "{} pruned {pruned} of {} tokens ({})",
                input.step.by,
                outcomes.len(),
                input.step.reason.as_deref().unwrap_or("no reason given")
            );
            outcomes
        } else {
            self.each_token(&input.step, targets).await?
        };
        let tally =
            |wanted: Outcome| outcomes.iter().filter(|o| o.outcome == wanted).count() as i64;
        Ok(BulkAnswer {
            action,
            dry_run: false,
            count: outcomes.len() as i64,
            applied: tally(Outcome::Applied),
            refused: tally(Outcome::Refused),
            duplicate: tally(Outcome::Duplicate),
            skipped: tally(Outcome::Skipped),
            sample: Vec::new(),
            next,
            outcomes,
            refusals: Vec::new(),
            left_out: 0,
        })
    }

    /// Apply `step` to each target as its own write request, a window at a time.
    async fn each_token(
        &self,
        step: &BulkStep,
        targets: Vec<Found>,
    ) -> Result<Vec<TokenOutcome>, Refusal> {
        let step = Arc::new(step.clone());
        let window = self.inner.store.bulk_window();
        self.each_write(targets, window, |rules, found| {
            let (step, token) = (Arc::clone(&step), found.id().to_string());
            move |tx: &dyn Tx| keep(apply(&rules, tx, &step, &token))
        })
        .await
    }

    /// Run the write that `work` makes of each target as its own request, `size`
    /// at a time (at most `Store::bulk_window`), and gather the outcomes in order: a
    /// refusal is the target's refused outcome; a lost database stops the run.
    pub(super) async fn each_write<W>(
        &self,
        targets: Vec<Found>,
        size: usize,
        work: impl Fn(Arc<Rules>, &Found) -> W,
    ) -> Result<Vec<TokenOutcome>, Refusal>
    where
        W: Fn(&dyn Tx) -> (bool, engine::Step<TokenOutcome>) + Send + Sync + 'static,
    {
        self.serving()?;
        let mut outcomes = Vec::with_capacity(targets.len());
        for window in targets.chunks(size.max(1)) {
            let answers: Vec<_> = window
                .iter()
                .map(|found| {
                    let write = work(Arc::clone(&self.inner.rules), found);
                    let made = super::claim_wait::Made::new();
                    let making = Arc::clone(&made);
                    let write = move |tx: &dyn Tx| making.run(|| write(tx));
                    // A task of its own, so that each write starts now: a Postgres
                    // write starts only once its future is polled.
                    (made, tokio::spawn(self.inner.store.write(write)))
                })
                .collect();
            for (found, (made, answer)) in window.iter().zip(answers) {
                let answer = answer.await.unwrap_or_else(|_| {
                    Err(StoreError::Database(
                        "a bulk write stopped unexpectedly".into(),
                    ))
                });
                self.after_commit(&made.taken(), answer.is_ok());
                if matches!(answer, Err(StoreError::NotServing)) {
                    self.inner.lost.store(true, Ordering::SeqCst);
                }
                let result = answer
                    .map_err(Refusal::from)
                    .and_then(|r| r.map_err(engine::Fail::refusal));
                match result {
                    Ok(done) => outcomes.push(done),
                    // A control plane that lost its database stops the whole run.
                    Err(refusal) if refusal.code == Code::NotServing => return Err(refusal),
                    Err(refusal) => outcomes.push(match found {
                        Found::Row(row) => refused(row, &refusal),
                        Found::Missing(id) => missing(id),
                    }),
                }
            }
        }
        Ok(outcomes)
    }
}

/// How many matches a preview previews a page at a time, to count them all.
const PREVIEW_PAGE: i64 = 1000;

/// A preview: how many tokens match, what the action would do to the first 20
/// (the most recently moved), and to every match, counted by outcome and by the
/// reason of each refusal; with ended tokens left out, how many. One read.
fn dry_run(rules: &Rules, tx: &dyn Tx, input: &BulkInput) -> engine::Step<BulkAnswer> {
    let step = &input.step;
    let mut answer = BulkAnswer::new(step.action, true);
    let one = |found: &Found| match found {
        Found::Row(row) => preview(rules, tx, step, row),
        Found::Missing(id) => Ok(missing(id)),
    };
    if let Some(ids) = &input.tokens {
        let now = tx.now();
        let mut outcomes = Vec::new();
        for found in listed(tx, ids)? {
            let matches = match &found {
                Found::Row(row) => step.selection.matches(rules, row, now),
                Found::Missing(_) => true,
            };
            if matches {
                outcomes.push(one(&found)?);
            }
        }
        answer.count = outcomes.len() as i64;
        answer.sample = outcomes.iter().take(SAMPLE).cloned().collect();
        tally(&mut answer, &outcomes);
        if input.every {
            answer.outcomes = outcomes;
        }
        return Ok(answer);
    }
    for row in select::first(rules, tx, &step.selection, SAMPLE as i64)? {
        answer.sample.push(preview(rules, tx, step, &row)?);
    }
    let mut after: Option<String> = None;
    loop {
        let (rows, next) =
            select::page(rules, tx, &step.selection, after.as_deref(), PREVIEW_PAGE)?;
        let mut outcomes = Vec::with_capacity(rows.len());
        for row in &rows {
            outcomes.push(preview(rules, tx, step, row)?);
        }
        answer.count += outcomes.len() as i64;
        tally(&mut answer, &outcomes);
        if input.every {
            answer.outcomes.extend(outcomes);
        }
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    if step.selection.live_only {
        let every = select::Selection {
            live_only: false,
            ..step.selection.clone()
        };
        answer.left_out = select::count(rules, tx, &every)? - answer.count;
    }
    Ok(answer)
}

/// A token of a walk: its row as the walk read it, or an id listed that names no
/// token.
#[derive(Debug, Clone)]
pub(super) enum Found {
    Row(TokenRow),
    Missing(String),
}

impl Found {
    pub(super) fn id(&self) -> &str {
        match self {
            Found::Row(row) => &row.token,
            Found::Missing(id) => id,
        }
    }
}

/// The listed tokens, in the order listed.
fn listed(tx: &dyn crate::store::Tx, ids: &[String]) -> engine::Step<Vec<Found>> {
    ids.iter()
        .map(|id| {
            // An id that breaks the pattern names no token, and is not looked up.
            let row = if crate::validated::token_id_ok(id) {
                tx.token(id)?
            } else {
                None
            };
            Ok(match row {
                Some(row) => Found::Row(row),
                None => Found::Missing(id.clone()),
            })
        })
        .collect()
}

/// The outcome of a listed id that names no token: no state, no status.
fn missing(id: &str) -> TokenOutcome {
    TokenOutcome {
        token: id.to_string(),
        outcome: Outcome::Refused,
        state: String::new(),
        status: String::new(),
        detail: format!("there is no token {}", engine::py(id)),
        code: Some(Code::TokenNotFound.as_str().to_string()),
    }
}
