//! Each route of the HTTP API as a [`Call`]: its method, path, body and headers.
//!
//! The routes are the reference's (`docs/reference/http.md`). The typed methods of
//! [`Client`](super::Client) and the `--json` output of the `token` commands both
//! start from these, so that each route is written down once; the paths come
//! from [`routes`](super::routes).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::routes::{self, segment};
use stateous_shared::wire::{Grant, Object};

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
    /// How much longer than the client's timeout the answer may take: the
    /// `wait` of a claim that waits for a task (`docs/reference/http.md`).
    pub waits: Option<Duration>,
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
    /// How long a claim with no free task waits for one, an addition of ours (0
    /// to 60 s, `docs/reference/http.md`); left out when `None` (an answer at
    /// once). Sent in seconds.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "seconds_of")]
    pub wait: Option<Duration>,
}

/// A wait as a number of seconds (fractions kept to the millisecond).
fn seconds_of<S: serde::Serializer>(wait: &Option<Duration>, to: S) -> Result<S::Ok, S::Error> {
    match wait {
        Some(wait) => to.serialize_f64((wait.as_millis() as f64) / 1000.0),
        None => to.serialize_none(),
    }
}

impl Call {
    /// Why the call cannot be sent as given, if it cannot: a name in its path is
    /// empty (`/schedules/`, `/tokens//why`), which would name another route.
    pub fn problem(&self) -> Option<String> {
        let path = self.path.split('?').next().unwrap_or_default();
        let empty = path.len() > 1 && path[1..].split('/').any(str::is_empty);
        empty.then(|| "the name given is empty: a name has 1 character or more".to_string())
    }

    fn new(method: &'static str, path: String, body: Option<Value>) -> Call {
        Call {
            method,
            path,
            body,
            key: None,
            waits: None,
        }
    }

    fn get(path: impl Into<String>) -> Call {
        Call::new("GET", path.into(), None)
    }

    /// `value` as a body: every body here is a map or a struct of plain fields,
    /// which serde_json always writes.
    fn post<B: Serialize + ?Sized>(path: impl Into<String>, body: &B) -> Call {
        let body = serde_json::to_value(body).unwrap_or_default();
        Call::new("POST", path.into(), Some(body))
    }

    /// `value` as the body of a `PUT`, as [`Call::post`] writes it.
    fn put<B: Serialize + ?Sized>(path: impl Into<String>, body: &B) -> Call {
        Call {
            method: "PUT",
            ..Call::post(path, body)
        }
    }

    /// This call with the `Idempotency-Key` header `key`.
    pub fn with_key(self, key: Option<&str>) -> Call {
        Call {
            key: key.map(str::to_string),
            ..self
        }
    }

    /// `GET /health`.
    pub fn health() -> Call {
        Call::get(routes::HEALTH)
    }

    /// `GET /states` (ours): how many tokens each state holds, by status.
    pub fn states() -> Call {
        Call::get(routes::STATES)
    }

    /// `GET /graphs` (ours): the structures the database keeps.
    pub fn graphs() -> Call {
        Call::get(routes::GRAPHS)
    }

    /// `GET /journal` (ours): a page of the journal of `subject` (and of the one
    /// named `name`), after the entry with id `after`.
    pub fn journal(subject: &str, name: Option<&str>, after: i64) -> Call {
        Call::get(routes::journal(subject, name, after))
    }

    /// `POST /schedules` (ours): add a schedule, or change one with `replace`.
    pub fn schedule_add(schedule: &stateous_shared::schedules::NewSchedule) -> Call {
        Call::post(routes::SCHEDULES, schedule)
    }

    /// `GET /schedules` (ours): every schedule.
    pub fn schedules() -> Call {
        Call::get(routes::SCHEDULES)
    }

    /// `GET /schedules/{name}` (ours).
    pub fn schedule(name: &str) -> Call {
        Call::get(routes::schedule(name, None))
    }

    /// `POST /schedules/{name}/{what}` (ours): `pause`, `resume` or `trigger`.
    pub fn schedule_steer(name: &str, what: &str) -> Call {
        Call::new("POST", routes::schedule(name, Some(what)), None)
    }

    /// `DELETE /schedules/{name}` (ours).
    pub fn schedule_remove(name: &str) -> Call {
        Call::new("DELETE", routes::schedule(name, None), None)
    }

    /// `POST /notify` (ours): add a subscription.
    pub fn subscription_add(body: &stateous_shared::notify::NewSubscription) -> Call {
        Call::post(routes::NOTIFY, body)
    }

    /// `GET /notify` (ours): every subscription.
    pub fn subscriptions() -> Call {
        Call::get(routes::NOTIFY)
    }

    /// `GET /notify/{name}` (ours).
    pub fn subscription(name: &str) -> Call {
        Call::get(routes::subscription(name, None))
    }

    /// `POST /notify/{name}/{what}` (ours): `pause`, `resume`, `rotate` or `test`.
    pub fn subscription_steer(name: &str, what: &str) -> Call {
        Call::new("POST", routes::subscription(name, Some(what)), None)
    }

    /// `POST /notify/{name}/redeliver` (ours): its dead notifications (or `id`).
    pub fn subscription_redeliver(name: &str, id: Option<i64>) -> Call {
        let body = match id {
            Some(id) => serde_json::json!({ "id": id }),
            None => serde_json::json!({}),
        };
        Call::post(routes::subscription(name, Some("redeliver")), &body)
    }

    /// `DELETE /notify/{name}` (ours).
    pub fn subscription_remove(name: &str) -> Call {
        Call::new("DELETE", routes::subscription(name, None), None)
    }

    /// `GET /notifications/failed` (ours): the dead notifications.
    pub fn notifications_failed() -> Call {
        Call::get(routes::NOTIFICATIONS_FAILED)
    }

    /// `GET /supervisors` (ours): each supervisor seen.
    pub fn supervisors() -> Call {
        Call::get(routes::SUPERVISORS)
    }

    /// `POST /supervisors/{name}/stop` (ours): the supervisor stopped.
    pub fn supervisor_stopped(name: &str) -> Call {
        Call::new("POST", routes::supervisor_stopped(name), None)
    }

    /// `POST /clock/advance` (ours, `serve --dev-clock`) with `{"by": by}`, e.g.
    /// `10m`.
    pub fn clock_advance(by: &str) -> Call {
        let body = serde_json::json!({ "by": by });
        Call::new("POST", routes::CLOCK_ADVANCE.into(), Some(body))
    }

    /// `POST /clock/freeze` or `/clock/thaw` (ours, `serve --dev-clock`):
    /// `freeze` true stops the dev clock, false lets it run again.
    pub fn clock_freeze(freeze: bool) -> Call {
        let path = if freeze {
            routes::CLOCK_FREEZE
        } else {
            routes::CLOCK_THAW
        };
        Call::new("POST", path.into(), None)
    }

    /// `GET /access` (ours, admin): every access key, never a secret.
    pub fn access_list() -> Call {
        Call::get(routes::ACCESS)
    }

    /// `POST /access` (ours, admin): a new key; the answer holds its secret.
    pub fn access_add(key: &stateous_shared::access::NewKey) -> Call {
        let body = serde_json::to_value(key).unwrap_or(Value::Null);
        Call::new("POST", routes::ACCESS.into(), Some(body))
    }

    /// `GET /access/callers` (ours, admin): the TCP callers served without a key
    /// lately, while no key was ever made.
    pub fn access_callers() -> Call {
        Call::new("GET", routes::ACCESS_CALLERS.into(), None)
    }

    /// `GET /access/self` (ours, any caller): the caller's own key.
    pub fn access_self() -> Call {
        Call::new("GET", routes::ACCESS_SELF.into(), None)
    }

    /// `DELETE /access/{name}` (ours, admin): revoke a key.
    pub fn access_revoke(name: &str) -> Call {
        Call::new("DELETE", routes::access_key(name), None)
    }

    /// `GET /tokens/{id}/detail` (ours): the token with its tasks, timers, held
    /// events and graph.
    pub fn detail(token: &str) -> Call {
        Call::get(routes::of_token(token, "detail"))
    }

    /// `GET /workflow`: the graph file.
    pub fn workflow() -> Call {
        Call::get(routes::WORKFLOW)
    }

    /// `POST /tokens`: start `token` with `context`.
    pub fn start(token: &str, context: &Object) -> Call {
        Call::start_with(token, context, None, None)
    }

    /// `POST /tokens/{id}/events/{event}`, with `{"payload": ...}` when a payload is
    /// given (else `{}`) and the `Idempotency-Key` header when a key is given.
    pub fn fire(token: &str, event: &str, payload: Option<&Object>, key: Option<&str>) -> Call {
        let body = match payload {
            Some(payload) => serde_json::json!({ "payload": payload }),
            None => serde_json::json!({}),
        };
        Call::new("POST", routes::event(token, event), Some(body)).with_key(key)
    }

    /// `GET /tokens/{id}`.
    pub fn token(token: &str) -> Call {
        Call::get(routes::token(token))
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
        Call::get(routes::tokens(&pairs))
    }

    /// `GET /tokens/{id}/history`.
    pub fn history(token: &str) -> Call {
        Call::get(routes::of_token(token, "history"))
    }

    /// `POST /tokens/{id}/pause`, `/resume` or `/cancel` (`action`), with no body.
    pub fn steer(token: &str, action: Steer) -> Call {
        Call::new("POST", routes::of_token(token, action.as_str()), None)
    }

    /// `POST /tokens/bulk` (`docs/reference/http.md`).
    pub fn bulk(request: &stateous_shared::bulk::BulkRequest) -> Call {
        Call::post(routes::BULK, request)
    }

    /// `POST /tokens/{id}/retry` (`docs/reference/http.md`).
    pub fn retry(token: &str, request: &stateous_shared::bulk::RetryRequest) -> Call {
        Call::post(routes::of_token(token, "retry"), request)
    }

    /// `GET /tokens/{id}/why` (`docs/reference/http.md`).
    pub fn why(token: &str) -> Call {
        Call::get(routes::of_token(token, "why"))
    }

    /// `POST /tasks/claim`; with `wait`, the answer may take that much longer.
    pub fn claim(claim: &ClaimRequest) -> Call {
        Call {
            waits: claim.wait,
            ..Call::post(routes::CLAIM, claim)
        }
    }

    /// `POST /tasks/heartbeat`.
    pub fn heartbeat(beat: &HeartbeatRequest) -> Call {
        Call::post(routes::HEARTBEAT, beat)
    }

    /// `POST /tasks/{id}/report` with the outcome `body`: an `Outcome`, or the
    /// JSON of one as a supervisor's outbox keeps it.
    pub fn report<B: Serialize + ?Sized>(task: i64, body: &B) -> Call {
        Call::post(routes::of_task(task, "report"), body)
    }

    /// `POST /tasks/{id}/note`; `attempt` (ours) only when given.
    pub fn note(task: i64, text: &str, attempt: Option<i64>) -> Call {
        let body = NoteRequest { text, attempt };
        Call::post(routes::of_task(task, "note"), &body)
    }

    /// `PUT /tasks/{id}/memory`; a `null` value deletes the key; `attempt` (ours)
    /// only when given.
    pub fn set_memory(task: i64, key: &str, value: &Value, attempt: Option<i64>) -> Call {
        let body = MemoryRequest {
            key,
            value,
            attempt,
        };
        Call::put(routes::of_task(task, "memory"), &body)
    }
}

/// Add one page of a bulk run (`POST /tokens/bulk` sent again with the answer's
/// `next`) to the `total` of the pages before: its tallies and its outcomes.
pub fn add_bulk_page(
    total: &mut stateous_shared::bulk::BulkAnswer,
    page: stateous_shared::bulk::BulkAnswer,
) {
    total.count += page.count;
    total.applied += page.applied;
    total.refused += page.refused;
    total.duplicate += page.duplicate;
    total.skipped += page.skipped;
    total.outcomes.extend(page.outcomes);
}

/// The body of `POST /tasks/{id}/note`.
#[derive(Debug, Serialize)]
struct NoteRequest<'a> {
    /// One line of progress: 1 to 500 characters.
    text: &'a str,
    /// The attempt the note belongs to (ours): refused once that attempt is over.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<i64>,
}

/// The body of `PUT /tasks/{id}/memory`.
#[derive(Debug, Serialize)]
struct MemoryRequest<'a> {
    /// The key of the routine's memory.
    key: &'a str,
    /// Its new value; `null` deletes it.
    value: &'a Value,
    /// The attempt the write belongs to (ours): refused once that attempt is over.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<i64>,
}

/// The body of `POST /tasks/heartbeat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HeartbeatRequest {
    /// The supervisor's name.
    pub supervisor: String,
    /// The tasks whose leases to renew.
    pub tasks: Vec<i64>,
    /// Each task's attempt that this supervisor runs, by task id (ours: a task
    /// whose attempt is over is answered lost even when another process of the
    /// same name holds its next attempt; the reference ignores the field). Left
    /// out when empty.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attempts: BTreeMap<i64, i64>,
    /// The depth of the supervisor's outbox (ours); left out when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<u64>,
}

impl HeartbeatRequest {
    /// The heartbeat of `supervisor` for the tasks of `attempts` (task id to the
    /// attempt it runs), each named with its attempt.
    pub fn of_attempts(
        supervisor: &str,
        attempts: &BTreeMap<i64, i64>,
        outbox: Option<u64>,
    ) -> HeartbeatRequest {
        HeartbeatRequest {
            supervisor: supervisor.to_string(),
            tasks: attempts.keys().copied().collect(),
            attempts: attempts.clone(),
            outbox,
        }
    }
}

/// A claimed task, and the lease the control plane granted with it when it says
/// (ours adds `lease_seconds` to the grant; the reference's does not).
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The grant, as the routine gets it.
    pub grant: Grant,
    /// How long the lease lasts from the claim.
    pub lease: Option<Duration>,
}

impl Claimed {
    /// The claim answer `body` (of a status other than 204): the grant and its
    /// lease. Errors: the serde sentence when the body is not a grant.
    pub fn from_answer(body: &[u8]) -> Result<Claimed, serde_json::Error> {
        let value: Value = serde_json::from_slice(body)?;
        let lease = value
            .get("lease_seconds")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
            .map(Duration::from_secs_f64);
        let grant = serde_json::from_value(value)?;
        Ok(Claimed { grant, lease })
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

// Usage and budgets (`docs/concepts/budgets.md`).
mod budgets;
// Limits on claims (`docs/limits.md`).
mod claim_limits;

#[cfg(test)]
mod tests;
