//! `stateous token budget ID NAME=NUMBER...` and `token start --budget`, and the
//! lines of a token's usage and budget that `token show` prints (ours;
//! `docs/concepts/budgets.md`).

use std::io::Write;

use serde_json::Value;
use stateous_client::Client;
use stateous_shared::usage::{amounts, listed, parse_pairs, TokenBudget};
use stateous_shared::wire::Object;

use crate::commands::{line, pretty, CommandError};

/// `--budget NAME=NUMBER...` of `token start` as a JSON object; `None` when not
/// given. A bad pair is one sentence, before anything is sent.
pub(super) fn given(pairs: &[String]) -> Result<Option<Object>, CommandError> {
    if pairs.is_empty() {
        return Ok(None);
    }
    parse_pairs(pairs, false)
        .map(Some)
        .map_err(|problem| CommandError::Usage(format!("--budget: {problem}")))
}

/// Change the token's budget, then print its usage and budget (`--json`: the
/// answer).
pub(super) async fn set(
    client: &Client,
    id: &str,
    pairs: &[String],
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let changes = parse_pairs(pairs, true).map_err(CommandError::Usage)?;
    let view = client.token_budget(id, &changes).await?;
    if json {
        return line(out, &pretty(&view)?);
    }
    let shown = lines(&view);
    if shown.is_empty() {
        return line(out, &format!("{id}: no budget"));
    }
    for text in shown {
        line(out, &format!("{id}: {text}"))?;
    }
    Ok(())
}

/// The lines of a token's usage and budget from its detail (`budget`); none
/// from a control plane without them, or for a token with neither.
pub(super) fn lines_of(detail: &Value) -> Vec<String> {
    detail
        .get("budget")
        .and_then(|budget| serde_json::from_value::<TokenBudget>(budget.clone()).ok())
        .map(|view| lines(&view))
        .unwrap_or_default()
}

/// `usage: cost_usd 5.12, input_tokens 1200` and `budget: cost_usd 5 (its own);
/// over: cost_usd`, each when there is one.
pub(super) fn lines(view: &TokenBudget) -> Vec<String> {
    let mut shown = Vec::new();
    if !view.usage.is_empty() {
        shown.push(format!("usage: {}", listed(&amounts(&view.usage))));
    }
    if let Some(from) = &view.budget_from {
        let whose = if from == "workflow" {
            "the workflow's default"
        } else {
            "its own"
        };
        let budget = if view.budget.is_empty() {
            "none".to_string()
        } else {
            listed(&amounts(&view.budget))
        };
        let over = if view.over.is_empty() {
            String::new()
        } else {
            format!("; over: {}", view.over.join(", "))
        };
        shown.push(format!("budget: {budget} ({whose}){over}"));
    }
    shown
}
