//! The routes of limits on claims, priorities and retry policies, additions of
//! ours (routed by [`super::routes::TABLE`]; `docs/limits.md`).

use stateous_shared::refusal::{Code, Refusal};

use super::routes::Route;
use super::{body, json, Answer, Api};
use crate::validated::claim_limits::LimitInput;

impl Api {
    /// Answer one route of limits, priorities and retry policies.
    pub(super) async fn limits(&self, route: Route, raw: &[u8]) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Limits => Ok(json(200, &control.limits().await?)),
            Route::RetryPolicies => Ok(json(200, &control.retry_policies().await?)),
            Route::RetryPolicySet(state) => {
                let body = body::json_object(raw)?;
                Ok(json(200, &control.set_retry_policy(state, body).await?))
            }
            Route::RetryPolicyRemove(state) => {
                control.remove_retry_policy(state).await?;
                Ok(json(200, &serde_json::json!({ "removed": true })))
            }
            Route::TokenPriority(token) => {
                let body = body::json_object(raw)?;
                if let Some(key) = body.keys().find(|k| *k != "priority") {
                    return Err(Refusal::new(
                        Code::InvalidBody,
                        format!("a token's priority takes no field '{key}'; its field is priority"),
                    ));
                }
                let value = body.get("priority").cloned().unwrap_or_default();
                let priority =
                    crate::engine::priority::priority_of(&value).map_err(|f| f.refusal())?;
                Ok(json(
                    200,
                    &control.set_token_priority(token, priority).await?,
                ))
            }
            Route::LimitSet(name) => {
                let input = LimitInput::parse(&name, &body::json_object(raw)?)?;
                Ok(json(200, &control.set_limit(input).await?))
            }
            Route::LimitRemove(name) => {
                let name = super::named(name, "limit", Code::LimitNotFound)?;
                control.remove_limit(name).await?;
                Ok(json(200, &serde_json::json!({ "removed": true })))
            }
            _ => Err(Refusal::new(
                Code::Unexpected,
                "the request reached no handler",
            )),
        }
    }
}
