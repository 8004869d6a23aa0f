//! Each route of the HTTP API as a [`Call`]: its method, path, body and headers.
//!
//! The routes are the reference's (`docs/reference/http.md`). The typed methods of
//! [`Client`](super::Client) and the `--json` output of the `token` commands both
//! start from these, so that each route is written down once.

use serde::Serialize;
use serde_json::Value;

use stateous_shared::wire::{Object, Outcome};

/// One request to the API, not yet sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: &'static str,
    /// The path with its query, segments percent-encoded: `/tokens/T-1/history`.
    pub path: String,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// The `Idempotency-Key` header, if any.
    pub key: Option<String>,
}

/// The filters of `GET /tokens`. All `None`: the 100 most recently moved tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenQuery {
    /// Only tokens with this status (`active`, `paused`, ...).
    pub status: Option<String>,
    /// Only the children of this token.
    pub parent: Option<String>,
    /// The most tokens in the answer: 1 to 1000 (the daemon refuses others).
    pub limit: Option<u32>,
    /// `where`: only the tokens this filter matches (`docs/concepts/guards.md`, filters).
    pub filter: Option<String>,
    /// Only tokens in this state.
    pub state: Option<String>,
    /// Skip this many matching tokens first.
    pub offset: Option<u64>,
}

/// The body of `POST /tasks/claim`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClaimRequest {
    /// The supervisor's name: 1 to 256 characters.
    pub supervisor: String,
    /// The states it serves (a child workflow's state is `<workflow>/<state>`).
    pub states: Vec<String>,
    /// A request id (1 to 64 of letters, digits, `.`, `_`, `-`): a claim that
    /// repeats it gets the same task again while the supervisor holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The depth of the supervisor's outbox, an addition of ours
    /// (`docs/reference/http.md`); left out when `None`, and the reference ignores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<u64>,
}

impl Call {
    fn new(method: &'static str, path: String, body: Option<Value>) -> Call {
        Call {
            method,
            path,
            body,
            key: None,
        }
    }

    /// `GET /health`.
    pub fn health() -> Call {
        Call::new("GET", "/health".into(), None)
    }

    /// `GET /states` (ours): how many tokens each state holds, by status.
    pub fn states() -> Call {
        Call::new("GET", "/states".into(), None)
    }

    /// `POST /clock/advance` (ours, `serve --dev-clock`) with `{"by": by}`, e.g.
    /// `10m`.
    pub fn clock_advance(by: &str) -> Call {
        let body = serde_json::json!({ "by": by });
        Call::new("POST", "/clock/advance".into(), Some(body))
    }

    /// `POST /clock/freeze` or `/clock/thaw` (ours, `serve --dev-clock`):
    /// `freeze` true stops the dev clock, false lets it run again.
    pub fn clock_freeze(freeze: bool) -> Call {
        let path = if freeze {
            "/clock/freeze"
        } else {
            "/clock/thaw"
        };
        Call::new("POST", path.into(), None)
    }

    /// `GET /access` (ours, admin): every access key, never a secret.
    pub fn access_list() -> Call {
        Call::new("GET", "/access".into(), None)
    }

    /// `POST /access` (ours, admin): a new key; the answer holds its secret.
    pub fn access_add(key: &stateous_shared::access::NewKey) -> Call {
        let body = serde_json::to_value(key).unwrap_or(Value::Null);
        Call::new("POST", "/access".into(), Some(body))
    }

    /// `GET /access/callers` (ours, admin): the TCP callers served without a key
    /// lately, while no key was ever made.
    pub fn access_callers() -> Call {
        Call::new("GET", "/access/callers".into(), None)
    }

    /// `GET /access/self` (ours, any caller): the caller's own key.
    pub fn access_self() -> Call {
        Call::new("GET", "/access/self".into(), None)
    }

    /// `DELETE /access/{name}` (ours, admin): revoke a key.
    pub fn access_revoke(name: &str) -> Call {
        Call::new("DELETE", format!("/access/{}", segment(name)), None)
    }

    /// `GET /tokens/{id}/detail` (ours): the token with its tasks, timers, held
    /// events and graph.
    pub fn detail(token: &str) -> Call {
        Call::new("GET", format!("/tokens/{}/detail", segment(token)), None)
    }

    /// `GET /workflow`: the graph file.
    pub fn workflow() -> Call {
        Call::new("GET", "/workflow".into(), None)
    }

    /// `POST /tokens`: start `token` with `context`.
    pub fn start(token: &str, context: &Object) -> Call {
        let body = serde_json::json!({"token": token, "context": context});
        Call::new("POST", "/tokens".into(), Some(body))
    }

    /// `POST /tokens/{id}/events/{event}`, with `{"payload": ...}` when a payload is
    /// given (else `{}`) and the `Idempotency-Key` header when a key is given.
    pub fn fire(token: &str, event: &str, payload: Option<&Object>, key: Option<&str>) -> Call {
        let body = match payload {
            Some(payload) => serde_json::json!({ "payload": payload }),
            None => serde_json::json!({}),
        };
        let path = format!("/tokens/{}/events/{}", segment(token), segment(event));
        Call {
            key: key.map(str::to_string),
            ..Call::new("POST", path, Some(body))
        }
    }

    /// `GET /tokens/{id}`.
    pub fn token(token: &str) -> Call {
        Call::new("GET", format!("/tokens/{}", segment(token)), None)
    }

    /// `GET /tokens?status=&parent=&limit=&where=&state=&offset=`.
    pub fn tokens(query: &TokenQuery) -> Call {
        let mut pairs = Vec::new();
        if let Some(status) = &query.status {
            pairs.push(format!("status={}", segment(status)));
        }
        if let Some(parent) = &query.parent {
            pairs.push(format!("parent={}", segment(parent)));
        }
        if let Some(limit) = query.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(filter) = &query.filter {
            pairs.push(format!("where={}", segment(filter)));
        }
        if let Some(state) = &query.state {
            pairs.push(format!("state={}", segment(state)));
        }
        if let Some(offset) = query.offset.filter(|offset| *offset > 0) {
            pairs.push(format!("offset={offset}"));
        }
        let path = if pairs.is_empty() {
            "/tokens".to_string()
        } else {
            format!("/tokens?{}", pairs.join("&"))
        };
        Call::new("GET", path, None)
    }

    /// `GET /tokens/{id}/history`.
    pub fn history(token: &str) -> Call {
        Call::new("GET", format!("/tokens/{}/history", segment(token)), None)
    }

    /// `POST /tokens/{id}/pause`, `/resume` or `/cancel` (`action`), with no body.
    pub fn steer(token: &str, action: Steer) -> Call {
        let path = format!("/tokens/{}/{}", segment(token), action.as_str());
        Call::new("POST", path, None)
    }

    /// `POST /tokens/bulk` (`docs/reference/http.md`).
    pub fn bulk(request: &stateous_shared::bulk::BulkRequest) -> Call {
        let body = serde_json::to_value(request).unwrap_or_default();
        Call::new("POST", "/tokens/bulk".into(), Some(body))
    }

    /// `POST /tokens/{id}/retry` (`docs/reference/http.md`).
    pub fn retry(token: &str, request: &stateous_shared::bulk::RetryRequest) -> Call {
        let body = serde_json::to_value(request).unwrap_or_default();
        Call::new(
            "POST",
            format!("/tokens/{}/retry", segment(token)),
            Some(body),
        )
    }

    /// `GET /tokens/{id}/why` (`docs/reference/http.md`).
    pub fn why(token: &str) -> Call {
        Call::new("GET", format!("/tokens/{}/why", segment(token)), None)
    }

    /// `POST /tasks/claim`.
    pub fn claim(claim: &ClaimRequest) -> Call {
        let body = serde_json::to_value(claim).unwrap_or_default();
        Call::new("POST", "/tasks/claim".into(), Some(body))
    }

    /// `POST /tasks/heartbeat`; `outbox` (ours, `docs/reference/http.md`) only when given.
    pub fn heartbeat(supervisor: &str, tasks: &[i64], outbox: Option<u64>) -> Call {
        let mut body = serde_json::json!({"supervisor": supervisor, "tasks": tasks});
        if let (Some(depth), Some(object)) = (outbox, body.as_object_mut()) {
            object.insert("outbox".into(), depth.into());
        }
        Call::new("POST", "/tasks/heartbeat".into(), Some(body))
    }

    /// `POST /tasks/{id}/report`.
    pub fn report(task: i64, outcome: &Outcome) -> Call {
        let body = serde_json::to_value(outcome).unwrap_or_default();
        Call::new("POST", format!("/tasks/{task}/report"), Some(body))
    }

    /// `POST /tasks/{id}/note`.
    pub fn note(task: i64, text: &str, attempt: Option<i64>) -> Call {
        let mut body = serde_json::json!({ "text": text });
        if let (Some(attempt), Some(object)) = (attempt, body.as_object_mut()) {
            object.insert("attempt".into(), attempt.into());
        }
        Call::new("POST", format!("/tasks/{task}/note"), Some(body))
    }

    /// `PUT /tasks/{id}/memory`; a `null` value deletes the key.
    pub fn set_memory(task: i64, key: &str, value: &Value, attempt: Option<i64>) -> Call {
        let mut body = serde_json::json!({"key": key, "value": value});
        if let (Some(attempt), Some(object)) = (attempt, body.as_object_mut()) {
            object.insert("attempt".into(), attempt.into());
        }
        Call::new("PUT", format!("/tasks/{task}/memory"), Some(body))
    }
}

/// The three steering routes of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steer {
    /// `POST /tokens/{id}/pause`.
    Pause,
    /// `POST /tokens/{id}/resume`.
    Resume,
    /// `POST /tokens/{id}/cancel`.
    Cancel,
}

impl Steer {
    /// The last segment of the route: `pause`, `resume` or `cancel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Steer::Pause => "pause",
            Steer::Resume => "resume",
            Steer::Cancel => "cancel",
        }
    }
}

/// `name` as one path segment or query value: every byte but the unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded, `/` included, as the reference's client
/// quotes names (so a name with a `/` never reaches another route).
pub fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_percent_encoded_whole() {
        assert_eq!(segment("T-1.a_b~"), "T-1.a_b~");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment("é"), "%C3%A9");
        assert_eq!(Call::history("a/b").path, "/tokens/a%2Fb/history");
    }

    #[test]
    fn calls_carry_the_documented_paths_and_bodies() {
        let query = TokenQuery {
            status: Some("active".into()),
            parent: Some("P 1".into()),
            limit: Some(5),
            ..TokenQuery::default()
        };
        assert_eq!(
            Call::tokens(&query).path,
            "/tokens?status=active&parent=P%201&limit=5"
        );
        assert_eq!(Call::tokens(&TokenQuery::default()).path, "/tokens");
        let filtered = TokenQuery {
            filter: Some("moved > 60 and state == 'a b'".into()),
            state: Some("review".into()),
            offset: Some(40),
            ..TokenQuery::default()
        };
        assert_eq!(
            Call::tokens(&filtered).path,
            "/tokens?where=moved%20%3E%2060%20and%20state%20%3D%3D%20%27a%20b%27\
             &state=review&offset=40"
        );
        let fire = Call::fire("T-1", "done", None, Some("k-1"));
        assert_eq!(fire.body, Some(serde_json::json!({})));
        assert_eq!(fire.key.as_deref(), Some("k-1"));
        let claim = Call::claim(&ClaimRequest {
            supervisor: "box".into(),
            states: vec!["a".into()],
            ..ClaimRequest::default()
        });
        assert_eq!(
            claim.body,
            Some(serde_json::json!({"supervisor": "box", "states": ["a"]}))
        );
        let beat = Call::heartbeat("box", &[1, 2], Some(3));
        assert_eq!(
            beat.body,
            Some(serde_json::json!({"supervisor": "box", "tasks": [1, 2], "outbox": 3}))
        );
        assert_eq!(Call::steer("T", Steer::Cancel).path, "/tokens/T/cancel");
        let advance = Call::clock_advance("10m");
        assert_eq!(
            (advance.method, advance.path.as_str()),
            ("POST", "/clock/advance")
        );
        assert_eq!(advance.body, Some(serde_json::json!({"by": "10m"})));
        assert_eq!(Call::clock_freeze(false).path, "/clock/thaw");
        assert_eq!(Call::states().path, "/states");
        assert_eq!(
            Call::set_memory(4, "k", &Value::Null, Some(2)).method,
            "PUT"
        );
    }
}
