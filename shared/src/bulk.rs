//! The wire shapes of bulk actions, an addition of ours to the API
//! (`docs/reference/http.md`) that no reference client asks for: `POST /tokens/bulk`
//! (with its preview) and `POST /tokens/{id}/retry`, a bulk retry's step on one
//! token, with the lines that count and show what an action did or would do.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::wire::Object;

/// The most tokens a preview samples.
pub const SAMPLE: usize = 20;

/// The most tokens one real run of `POST /tokens/bulk` goes through; the answer's
/// `next` continues the walk.
pub const MOST_PER_RUN: i64 = 1000;

/// The tokens one real run goes through when the body names no `limit`.
pub const DEFAULT_PER_RUN: i64 = 500;

/// The longest operator reason, in characters (as long as a note).
pub const MAX_REASON: usize = 500;

/// What a bulk action does to each token it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BulkAction {
    /// Pause an active token (`POST /tokens/{id}/pause`).
    Pause,
    /// Resume a paused token.
    Resume,
    /// Cancel a live token.
    Cancel,
    /// Fire an event, with an idempotency key derived per token ([`bulk_key`]).
    Fire,
    /// Retry a failed token (`POST /tokens/{id}/retry`).
    Retry,
    /// Move a live token, with its children, to the served graph (or back, with
    /// `undo`).
    Migrate,
    /// Delete an ended token with its history, tasks, timers, memory and keys, its
    /// children with it (`stateous token prune`).
    Prune,
    /// Set a live token's priority (`PUT /tokens/{id}/priority`, `docs/limits.md`).
    Priority,
}

impl BulkAction {
    /// Every action.
    pub const ALL: [BulkAction; 8] = [
        BulkAction::Pause,
        BulkAction::Resume,
        BulkAction::Cancel,
        BulkAction::Fire,
        BulkAction::Retry,
        BulkAction::Migrate,
        BulkAction::Prune,
        BulkAction::Priority,
    ];

    /// The action as the body names it: `pause`, `resume`, `cancel`, `fire`, `retry`,
    /// `migrate`, `prune`, `priority`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkAction::Pause => "pause",
            BulkAction::Resume => "resume",
            BulkAction::Cancel => "cancel",
            BulkAction::Fire => "fire",
            BulkAction::Retry => "retry",
            BulkAction::Migrate => "migrate",
            BulkAction::Prune => "prune",
            BulkAction::Priority => "priority",
        }
    }

    /// The action of a name, or `None`.
    pub fn parse(text: &str) -> Option<BulkAction> {
        BulkAction::ALL.into_iter().find(|a| a.as_str() == text)
    }

    /// The past tense, for summaries: `paused`, `resumed`, `cancelled`, `fired`,
    /// `retried`, `pruned`.
    pub fn done(self) -> &'static str {
        match self {
            BulkAction::Pause => "paused",
            BulkAction::Resume => "resumed",
            BulkAction::Cancel => "cancelled",
            BulkAction::Fire => "fired",
            BulkAction::Retry => "retried",
            BulkAction::Migrate => "migrated",
            BulkAction::Prune => "pruned",
            BulkAction::Priority => "reprioritized",
        }
    }
}

/// The body of `POST /tokens/bulk`. The tokens are those `where` matches, or the
/// `tokens` listed, or the listed tokens that `where` matches when both are given;
/// a body with neither is refused (write `where: "true"` to mean every token).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkRequest {
    /// What to do.
    pub action: Option<BulkAction>,
    /// The filter (the filter language of `GET /tokens?where=`).
    #[serde(rename = "where", default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Token ids, at most 1000 (the TUI's marked rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Vec<String>>,
    /// `fire`: the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// `fire`: its payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Object>,
    /// `fire`: the key each token's own key is derived from ([`bulk_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `retry`: the state to enter; none is the state where each token failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `priority`: the priority each token takes, -1,000,000 to 1,000,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// `migrate`: `OLD: NEW`, the state a token in OLD takes in the served graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<std::collections::BTreeMap<String, String>>,
    /// `migrate`: move each token back to the graph its last migration moved it
    /// from, instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undo: bool,
    /// Why: written into each token's history. Required for a real run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who asks (the CLI sends the user's name); `operator` when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Only say what would happen: the count and a sample.
    #[serde(default)]
    pub dry_run: bool,
    /// A real run: go on after this point of the walk (the last answer's `next`,
    /// the last token id it went through: a walk goes by token id, so it meets
    /// each token once, also one that moves while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// A real run: go through at most this many tokens (1 to 1000, default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// `pause`, `resume`, `cancel`, `fire`, `migrate` and `priority` over `where`: take in the
    /// ended tokens too, which the filter leaves out by default (each would be
    /// refused). `retry` and `prune` act on ended tokens and always take them in;
    /// listed `tokens` are taken as listed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_ended: bool,
    /// A preview: also give what the action would do to every match, in
    /// `outcomes` (the CLI's `--dry-run` prints them all), not only the sample.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every: bool,
    /// `prune`: an absolute path of a folder on the control plane's machine where
    /// each token's history is written (gzipped JSON lines, synced) before its
    /// rows are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
}

/// What happened (or, in a preview, would happen) to one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The action applied.
    Applied,
    /// The control plane refused it for this token: `code` and `error` say why.
    Refused,
    /// A fire whose derived key this token already took: nothing changed.
    Duplicate,
    /// The token no longer matched the filter when its turn came: nothing changed.
    Skipped,
}

impl Outcome {
    /// `applied`, `refused`, `duplicate`, `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Refused => "refused",
            Outcome::Duplicate => "duplicate",
            Outcome::Skipped => "skipped",
        }
    }
}

/// One token of a bulk action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenOutcome {
    /// The token.
    pub token: String,
    /// What happened, or would.
    pub outcome: Outcome,
    /// Its state: after the action, or now in a preview.
    pub state: String,
    /// Its status, the same way.
    pub status: String,
    /// What the action does or did to it, in words (`moves it from 'review' to
    /// 'done'`), or why it was refused.
    pub detail: String,
    /// The refusal's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// How many tokens of a preview would be refused for one reason: the refusal's
/// code and the status of the tokens it refuses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusalCount {
    /// The refusal's code (`token_not_active`, ...).
    pub code: String,
    /// The status of these tokens (`completed`, ...); empty for an id listed that
    /// names no token.
    pub status: String,
    /// How many.
    pub count: i64,
    /// The sentence of the first of them.
    pub example: String,
}

/// The answer of `POST /tokens/bulk`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkAnswer {
    /// The action.
    pub action: BulkAction,
    /// True for a preview, which changed nothing.
    pub dry_run: bool,
    /// A preview: how many tokens match in all. A real run: how many it went
    /// through (`outcomes`).
    pub count: i64,
    /// A preview: up to 20 of the matches, the most recently moved first, with
    /// what the action would do to each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<TokenOutcome>,
    /// A real run: each token it went through, in order; a preview asked for
    /// `every`: what it would do to each match, in the order of a run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<TokenOutcome>,
    /// How many applied (a preview: how many of all the matches would).
    #[serde(default)]
    pub applied: i64,
    /// How many were refused (a preview: would be).
    #[serde(default)]
    pub refused: i64,
    /// How many were duplicates (a preview: would be).
    #[serde(default)]
    pub duplicate: i64,
    /// A real run: how many no longer matched.
    #[serde(default)]
    pub skipped: i64,
    /// A preview: the refusals of all the matches by reason, the most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<RefusalCount>,
    /// A preview: how many ended tokens the filter also matches but left out
    /// (`include_ended` takes them in). A run's answer has none; the CLI's
    /// `--json` of a whole run carries its preview's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: i64,
    /// A real run: where the walk goes on (send it as `after`); none once every
    /// match was met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl BulkAnswer {
    /// An answer of `action` with nothing in it yet.
    pub fn new(action: BulkAction, dry_run: bool) -> BulkAnswer {
        BulkAnswer {
            action,
            dry_run,
            count: 0,
            sample: Vec::new(),
            outcomes: Vec::new(),
            applied: 0,
            refused: 0,
            duplicate: 0,
            skipped: 0,
            next: None,
            refusals: Vec::new(),
            left_out: 0,
        }
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Tally `outcomes` into `answer`'s counts, and their refusals by reason (code and
/// status, the most first, then by code and status), as a preview reports them.
pub fn tally(answer: &mut BulkAnswer, outcomes: &[TokenOutcome]) {
    for outcome in outcomes {
        match outcome.outcome {
            Outcome::Applied => answer.applied += 1,
            Outcome::Duplicate => answer.duplicate += 1,
            Outcome::Skipped => answer.skipped += 1,
            Outcome::Refused => {
                answer.refused += 1;
                let code = outcome.code.clone().unwrap_or_default();
                let found = answer
                    .refusals
                    .iter_mut()
                    .find(|r| r.code == code && r.status == outcome.status);
                match found {
                    Some(reason) => reason.count += 1,
                    None => answer.refusals.push(RefusalCount {
                        code,
                        status: outcome.status.clone(),
                        count: 1,
                        example: outcome.detail.clone(),
                    }),
                }
            }
        }
    }
    answer
        .refusals
        .sort_by(|a, b| (b.count, &a.code, &a.status).cmp(&(a.count, &b.code, &b.status)));
}

/// What a preview counts, in one line: `cancel would apply to 100 tokens and
/// refuse 15: 15 token_not_active (completed)`, with the ended tokens the filter
/// left out and `include`, how to take them in (`include them with
/// --include-ended`).
pub fn would_line(preview: &BulkAnswer, include: &str) -> String {
    let action = preview.action.as_str();
    let mut line = format!(
        "{action} would apply to {} {}",
        preview.applied,
        if preview.applied == 1 {
            "token"
        } else {
            "tokens"
        }
    );
    if preview.duplicate > 0 {
        line.push_str(&format!(" ({} already done)", preview.duplicate));
    }
    if preview.refused > 0 {
        let reasons: Vec<String> = preview
            .refusals
            .iter()
            .map(|r| match r.status.as_str() {
                "" => format!("{} {}", r.count, r.code),
                status => format!("{} {} ({status})", r.count, r.code),
            })
            .collect();
        line.push_str(&format!(
            " and refuse {}: {}",
            preview.refused,
            reasons.join(", ")
        ));
    }
    line.push_str(&left_out_words(preview.left_out, include));
    line
}

/// `; 15 ended tokens left out (include them with --include-ended)`, the end of a
/// line that counts what a bulk action did or would do, with `include` how to take
/// the ended tokens in; empty when none was left out.
pub fn left_out_words(left_out: i64, include: &str) -> String {
    match left_out {
        ..=0 => String::new(),
        1 => format!("; 1 ended token left out ({include})"),
        n => format!("; {n} ended tokens left out ({include})"),
    }
}

/// The body of `POST /tokens/{id}/retry`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RetryRequest {
    /// The state to enter; none is the state where the token failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who retries it; `operator` when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// The idempotency key that a bulk fire gives `token`: `bulk-` and 40 hex digits
/// of the SHA-256 of the key given (or none), the event, the payload and the token.
/// A second run of the same bulk fire derives the same keys, so each token takes
/// the event once; another `key` fires it again. The filter is not part of it: a
/// token met through another filter is still the same token.
pub fn bulk_key(given: Option<&str>, event: &str, payload: Option<&Object>, token: &str) -> String {
    let material = serde_json::json!([given, event, payload, token]);
    let digest = Sha256::digest(material.to_string().as_bytes());
    format!("bulk-{}", &hex::encode(digest)[..40])
}

/// Who asks, as the CLI and the TUI name the operator: `$USER` (or `$LOGNAME`),
/// else `operator`.
pub fn operator_name() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "operator".to_string())
}

/// `TOKEN: STATE, STATUS -> WHAT`, for previews and for tokens not applied.
pub fn outcome_line(outcome: &TokenOutcome) -> String {
    let place = if outcome.status.is_empty() {
        String::new()
    } else {
        format!(
            ": {}, {}",
            crate::history::named(&outcome.state),
            outcome.status
        )
    };
    let what = match (outcome.outcome, &outcome.code) {
        (Outcome::Refused, Some(code)) => format!("refused ({code}): {}", outcome.detail),
        (Outcome::Applied, _) => outcome.detail.clone(),
        (other, _) => format!("{}: {}", other.as_str(), outcome.detail),
    };
    format!("{}{place} -> {what}", outcome.token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_key_is_the_same_for_the_same_fire_and_differs_per_token() {
        let payload: Object = serde_json::from_str(r#"{"approved": true}"#).unwrap();
        let one = bulk_key(None, "reviewed", Some(&payload), "T-1");
        assert_eq!(one, bulk_key(None, "reviewed", Some(&payload), "T-1"));
        assert_eq!(one.len(), 45);
        assert!(one.starts_with("bulk-"));
        assert_ne!(one, bulk_key(None, "reviewed", Some(&payload), "T-2"));
        assert_ne!(one, bulk_key(Some("k"), "reviewed", Some(&payload), "T-1"));
        assert_ne!(one, bulk_key(None, "reviewed", None, "T-1"));
    }

    #[test]
    fn actions_read_and_write_their_names() {
        for action in BulkAction::ALL {
            assert_eq!(BulkAction::parse(action.as_str()), Some(action));
            let json = serde_json::to_value(action).unwrap();
            assert_eq!(json, action.as_str());
        }
        assert_eq!(BulkAction::parse("delete"), None);
    }
}
