//! `serve --limits FILE` (`docs/limits.md`, "The limits file"): the limits and
//! retry policies a file names, checked against the served graph before anything
//! is served, then set in one transaction as the control plane starts (a standby:
//! as it takes over). Each one the file names is set whole, as `stateous limit set`
//! and `limit retry` set it, unless the database holds it already with the same
//! settings; what the file does not name is left as it is. Each change goes on the
//! journal with the caller's name (`file:PATH`).

use stateous_shared::claim_limits::LimitsFile;
use stateous_shared::graph::Graph;
use stateous_shared::wire::Object;

use super::{claim_limits, retry_policy, Rules, Step};
use crate::store::Tx;
use crate::validated::claim_limits::LimitInput;

/// A limits file, every field checked against the served graph.
#[derive(Debug, Clone, Default)]
pub struct FileSettings {
    /// The limits, in the file's order.
    pub limits: Vec<LimitInput>,
    /// The retry policies' bodies by state, in the file's order.
    pub policies: Vec<(String, Object)>,
}

/// Check every limit and retry policy of `file` as `PUT /limits/{name}` and
/// `PUT /retry-policies/{state}` would, against `graph`; every problem, each led
/// by `source` and the setting's name.
pub fn check(graph: &Graph, file: &LimitsFile, source: &str) -> Result<FileSettings, Vec<String>> {
    let mut problems = Vec::new();
    let mut settings = FileSettings::default();
    for (name, body) in &file.limits {
        let checked = LimitInput::parse(name, body)
            .map_err(|refusal| refusal.error)
            .and_then(|input| {
                claim_limits::known_states(graph, &input)
                    .map(|()| input)
                    .map_err(|fail| fail.refusal().error)
            });
        match checked {
            Ok(input) => settings.limits.push(input),
            Err(sentence) => problems.push(format!("{source}: limit {name:?}: {sentence}")),
        }
    }
    for (state, body) in &file.retry_policies {
        match retry_policy::policy_row(graph, state, body, 0) {
            Ok(_) => settings.policies.push((state.clone(), body.clone())),
            Err(fail) => problems.push(format!(
                "{source}: retry policy {state:?}: {}",
                fail.refusal().error
            )),
        }
    }
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(problems)
    }
}

/// Set what `settings` names and the database does not hold already, in this
/// transaction; the changes made, as `limit NAME` and `retry policy STATE`.
pub fn apply(rules: &Rules, tx: &dyn Tx, settings: &FileSettings) -> Step<Vec<String>> {
    let mut changed = Vec::new();
    let limits = tx.limits()?;
    for input in &settings.limits {
        let same = limits.iter().any(|row| {
            row.name == input.name
                && row.states == input.states
                && row.max == input.max
                && row.per.as_deref() == input.per.as_ref().map(|guard| guard.text.as_str())
                && row.rate_count == input.rate.map(|rate| rate.count)
                && row.rate_period == input.rate.map(|rate| rate.period)
        });
        if !same {
            claim_limits::set_limit(rules, tx, input)?;
            changed.push(format!("limit {}", input.name));
        }
    }
    let policies = tx.retry_policies()?;
    for (state, body) in &settings.policies {
        let row = retry_policy::policy_row(&rules.graph, state, body, tx.now())?;
        let same = policies.iter().any(|held| {
            held.state == row.state
                && held.delay == row.delay
                && held.doubling == row.doubling
                && held.cap == row.cap
                && held.jitter == row.jitter
        });
        if !same {
            retry_policy::put_policy(tx, &row)?;
            changed.push(format!("retry policy {state}"));
        }
    }
    Ok(changed)
}
