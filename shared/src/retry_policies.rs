//! Retry policies (`docs/limits.md`, "Retry policies"): a state's pause between a
//! failed attempt and the next, kept by the control plane; the shapes of `PUT
//! /retry-policies/{state}` and of its answers. The graph file's `retries` (how
//! many) stays the reference's; a policy only says when.

use serde::{Deserialize, Serialize};

/// The body of `PUT /retry-policies/{state}`: the policy, whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RetryPolicyRequest {
    /// The pause after the first failed attempt (`2s`, `1m`).
    pub delay: String,
    /// `fixed` (the default) or `doubling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
    /// With `doubling`: the longest pause (default: no cap but 1 day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<String>,
    /// The most a pause is lengthened by (drawn per task and attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
}

/// A retry policy as the API shows it; durations in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicyView {
    /// The state (`state` or `<workflow>/<state>`).
    pub state: String,
    /// The first pause.
    pub delay_seconds: f64,
    /// `fixed` or `doubling`.
    pub backoff: String,
    /// The longest pause.
    pub cap_seconds: f64,
    /// The most jitter added.
    pub jitter_seconds: f64,
    /// When it was last set (ISO 8601, UTC).
    pub set_at: String,
}

impl RetryPolicyView {
    /// `coding: 2s doubling to 1m, jitter 1s`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{}: {} {}",
            self.state,
            crate::durations::span(self.delay_seconds),
            self.backoff
        );
        if self.backoff == "doubling" {
            line.push_str(&format!(" to {}", crate::durations::span(self.cap_seconds)));
        }
        if self.jitter_seconds > 0.0 {
            line.push_str(&format!(
                ", jitter {}",
                crate::durations::span(self.jitter_seconds)
            ));
        }
        line
    }
}

/// `GET /retry-policies`: every policy, by state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RetryPolicyList {
    /// The policies.
    pub policies: Vec<RetryPolicyView>,
}
