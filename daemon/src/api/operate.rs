//! The routes of operating many tokens (issue 11), additions of ours that the
//! reference's clients never call: `POST /tokens/bulk`, `POST /tokens/{id}/retry`
//! and `GET /tokens/{id}/why`. They are matched before the reference's route table;
//! any other method or path falls through to it (and so to its 404 or 405), so a
//! token named `bulk` is still read with `GET /tokens/bulk`.

use stateous_shared::operate::why::{explain, WhySupervisor};
use stateous_shared::refusal::Refusal;
use stateous_shared::time::{parse_iso, to_micros};

use super::{body, inputs, json, Answer, Api};

/// A request for one of these routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperateRoute {
    /// `POST /tokens/bulk`.
    Bulk,
    /// `POST /tokens/{id}/retry`.
    Retry(String),
    /// `GET /tokens/{id}/why` (and `HEAD`).
    Why(String),
}

impl OperateRoute {
    /// The route's template, as the metrics name it.
    pub fn template(&self) -> &'static str {
        match self {
            OperateRoute::Bulk => "POST /tokens/bulk",
            OperateRoute::Retry(_) => "POST /tokens/:id/retry",
            OperateRoute::Why(_) => "GET /tokens/:id/why",
        }
    }
}

/// The route of `method` and the decoded `path`, if it is one of these.
pub fn route(method: &str, path: &str) -> Option<OperateRoute> {
    let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    match (method, parts.as_slice()) {
        ("POST", ["tokens", "bulk"]) => Some(OperateRoute::Bulk),
        ("POST", ["tokens", id, "retry"]) if !id.is_empty() => {
            Some(OperateRoute::Retry(id.to_string()))
        }
        ("GET" | "HEAD", ["tokens", id, "why"]) if !id.is_empty() => {
            Some(OperateRoute::Why(id.to_string()))
        }
        _ => None,
    }
}

impl Api {
    /// The answer to one of these routes.
    pub(super) async fn operate(&self, route: OperateRoute, raw: &[u8]) -> Result<Answer, Refusal> {
        match route {
            OperateRoute::Bulk => {
                let input = inputs::operate::bulk(&body::json_object(raw)?)?;
                Ok(json(200, &self.control.bulk(input).await?))
            }
            OperateRoute::Retry(token) => {
                let input = inputs::operate::retry(token, &body::json_object(raw)?)?;
                Ok(json(200, &self.control.retry(input).await?))
            }
            OperateRoute::Why(token) => self.why(token).await,
        }
    }

    /// The database's facts, the supervisors heard from that serve the task's
    /// state (recent: within one lease), and the sentences.
    async fn why(&self, token: String) -> Result<Answer, Refusal> {
        let mut why = self.control.why(token).await?;
        let listed = self.seen.listed(&self.control).await?;
        let now = self.control.options().clock.now();
        let lease = self.control.options().lease.as_secs_f64();
        let heard = |last_seen: &str| {
            parse_iso(last_seen).map(|at| ((now - to_micros(at)).max(0)) as f64 / 1e6)
        };
        if let Some(task) = &mut why.task {
            why.supervisors = listed
                .supervisors
                .iter()
                .filter(|s| s.states.contains(&task.state))
                .filter_map(|s| {
                    heard(&s.last_seen).map(|ago| WhySupervisor {
                        name: s.name.clone(),
                        heard: ago,
                        recent: ago <= lease,
                    })
                })
                .collect();
            task.holder_heard = task.holder.as_ref().and_then(|holder| {
                let found = listed.supervisors.iter().find(|s| &s.name == holder)?;
                heard(&found.last_seen)
            });
        }
        why.reasons = explain(&why);
        Ok(json(200, &why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_these_methods_and_paths_are_taken() {
        assert_eq!(route("POST", "/tokens/bulk"), Some(OperateRoute::Bulk));
        assert_eq!(
            route("POST", "/tokens/T-1/retry"),
            Some(OperateRoute::Retry("T-1".into()))
        );
        assert_eq!(
            route("HEAD", "/tokens/T-1/why"),
            Some(OperateRoute::Why("T-1".into()))
        );
        for (method, path) in [
            ("GET", "/tokens/bulk"),
            ("GET", "/tokens/T-1/retry"),
            ("POST", "/tokens/T-1/why"),
            ("POST", "/tokens//retry"),
            ("POST", "/tokens/bulk/"),
        ] {
            assert_eq!(route(method, path), None, "{method} {path}");
        }
    }
}
