//! The calls of limits on claims (ours; `docs/reference/http.md`, "Limits";
//! `docs/limits.md`): list, set and remove; tokens' priorities; retry policies.

use stateous_shared::claim_limits::LimitRequest;
use stateous_shared::retry_policies::RetryPolicyRequest;
use stateous_shared::wire::Object;

use super::Call;
use crate::routes;

impl Call {
    /// `GET /limits` (ours): every limit with the slots it holds now.
    pub fn limits() -> Call {
        Call::get(routes::LIMITS)
    }

    /// `PUT /limits/{name}` (ours): a limit, whole.
    pub fn set_limit(name: &str, limit: &LimitRequest) -> Call {
        Call::put(routes::limit(name), limit)
    }

    /// `DELETE /limits/{name}` (ours): remove a limit.
    pub fn remove_limit(name: &str) -> Call {
        Call::new("DELETE", routes::limit(name), None)
    }

    /// `POST /tokens` with ours, the token's own budget and its priority, each
    /// when given.
    pub fn start_with(
        token: &str,
        context: &Object,
        budget: Option<&Object>,
        priority: Option<i64>,
    ) -> Call {
        let mut body = serde_json::json!({"token": token, "context": context});
        if let Some(budget) = budget {
            body["budget"] = serde_json::json!(budget);
        }
        if let Some(priority) = priority {
            body["priority"] = serde_json::json!(priority);
        }
        Call::new("POST", routes::TOKENS.into(), Some(body))
    }

    /// `PUT /tokens/{id}/priority` (ours): change a token's priority.
    pub fn token_priority(token: &str, priority: i64) -> Call {
        let body = serde_json::json!({ "priority": priority });
        Call::put(routes::of_token(token, "priority"), &body)
    }

    /// `GET /retry-policies` (ours).
    pub fn retry_policies() -> Call {
        Call::get(routes::RETRY_POLICIES)
    }

    /// `PUT /retry-policies/{state}` (ours): a state's retry policy, whole.
    pub fn set_retry_policy(state: &str, policy: &RetryPolicyRequest) -> Call {
        Call::put(routes::retry_policy(state), policy)
    }

    /// `DELETE /retry-policies/{state}` (ours).
    pub fn remove_retry_policy(state: &str) -> Call {
        Call::new("DELETE", routes::retry_policy(state), None)
    }
}
