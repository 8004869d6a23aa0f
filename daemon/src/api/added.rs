//! The routes this product adds to the reference's API (SPEC section 3.3), never
//! changing an answer the reference's clients get: `GET /watch` (see [`watch`]),
//! `GET /supervisors`, `GET /tokens/{id}/detail`, `GET /states` (tokens by
//! workflow, state and status, for the TUI's graph) and `GET /metrics` (the
//! families of `crate::metrics`).
//!
//! They are answered before the reference's routes, `HEAD` as `GET` without the
//! body; any other method or path falls through to them, where another method on
//! an added path is 405 and the path with a trailing slash a 307 (`Api::routed`).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use stateous_shared::live::{
    HeldEvent, StateCount, StateList, SupervisorList, SupervisorView, TaskView, TimerView,
    TokenDetail,
};
use stateous_shared::refusal::Refusal;
use stateous_shared::time::{from_micros, iso};
use tokio::sync::watch as signal;

use super::server::Stop;
use super::{json, refusal, routes, Api};
use crate::engine::pause::held_events;
use crate::engine::{existing, view};
use crate::store::TokenStatus;

/// The body of every answer of the server: whole JSON, or a stream of events.
pub type Body = BoxBody<Bytes, Infallible>;

/// One supervisor as its claims and heartbeats showed it.
#[derive(Debug, Clone)]
struct Seen {
    states: Vec<String>,
    outbox: Option<u64>,
    /// Microseconds.
    last_seen: i64,
}

/// The supervisors this control plane heard from since it started, by name. Kept
/// in memory: after a restart a supervisor shows again at its next heartbeat.
#[derive(Debug, Clone, Default)]
pub struct SupervisorsSeen {
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    /// Counts the changes a watcher is told of: a new supervisor, new states, a
    /// new outbox depth (not each heartbeat's time).
    changes: Arc<AtomicU64>,
}

impl SupervisorsSeen {
    /// A claim or heartbeat from `name` at `now` (microseconds): the states of a
    /// claim (a heartbeat gives `None` and keeps them), the outbox depth it sent.
    pub fn heard(&self, name: &str, states: Option<&[String]>, outbox: Option<u64>, now: i64) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let mut changed = !seen.contains_key(name);
        let entry = seen.entry(name.to_string()).or_insert_with(|| Seen {
            states: Vec::new(),
            outbox: None,
            last_seen: now,
        });
        if let Some(states) = states {
            changed |= entry.states != states;
            entry.states = states.to_vec();
        }
        if outbox.is_some() {
            changed |= entry.outbox != outbox;
            entry.outbox = outbox;
        }
        entry.last_seen = now;
        if changed {
            self.changes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// How many changes there were so far.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// The supervisors as `GET /supervisors` lists them, read through `control`.
    pub async fn listed(
        &self,
        control: &crate::control::Control,
    ) -> Result<SupervisorList, Refusal> {
        let running: BTreeMap<String, i64> = control
            .read(|tx| Ok(tx.running_by_supervisor()?))
            .await?
            .into_iter()
            .collect();
        Ok(SupervisorList {
            supervisors: self.list(&running),
        })
    }

    fn list(&self, running: &BTreeMap<String, i64>) -> Vec<SupervisorView> {
        let Ok(seen) = self.seen.lock() else {
            return Vec::new();
        };
        seen.iter()
            .map(|(name, s)| SupervisorView {
                name: name.clone(),
                states: s.states.clone(),
                running: running.get(name).copied().unwrap_or(0),
                outbox: s.outbox,
                last_seen: iso(from_micros(s.last_seen)),
            })
            .collect()
    }
}

/// The `outbox` depth a claim or heartbeat body carries, if it is a whole number
/// (read from the body's object as the route parsed it, not parsed again).
pub fn outbox_of(body: &impl super::fields::Fields) -> Option<u64> {
    body.field("outbox")?.as_u64()
}

/// The template of an added route that `path` reaches, for the metrics.
pub fn template(path: &str) -> Option<&'static str> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    Some(match parts.as_slice() {
        ["watch"] => "GET /watch",
        ["supervisors"] => "GET /supervisors",
        ["metrics"] => "GET /metrics",
        ["states"] => "GET /states",
        ["tokens", id, "detail"] if !id.is_empty() => "GET /tokens/:id/detail",
        _ => return None,
    })
}

fn whole(answer: super::Answer) -> Response<Body> {
    answer.map(BodyExt::boxed)
}

/// The answer to `HEAD`: the `GET` answer's status and headers, no body.
fn without_body(answer: Response<Body>) -> Response<Body> {
    let (parts, _) = answer.into_parts();
    Response::from_parts(parts, Full::new(Bytes::new()).boxed())
}

impl Api {
    /// The answer of an added route, or `None` when the request is for another.
    /// `HEAD` is answered as `GET`, without the body (a stream is not started).
    pub async fn added(
        &self,
        request: &Request<hyper::body::Incoming>,
        stop: signal::Receiver<Stop>,
    ) -> Option<Response<Body>> {
        let head = request.method() == hyper::Method::HEAD;
        if (request.method() != hyper::Method::GET && !head) || self.is_lost() {
            return None;
        }
        let path = routes::decode(request.uri().path(), false);
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let answer = match parts.as_slice() {
            ["watch"] => {
                let answer = super::watch::stream(self, request, stop).await;
                return Some(if head { without_body(answer) } else { answer });
            }
            ["supervisors"] => self.supervisors().await,
            ["metrics"] => self.metrics().await,
            ["states"] => self.states().await,
            ["tokens", id, "detail"] if !id.is_empty() => self.detail(id.to_string()).await,
            _ => return None,
        };
        let answer = whole(answer.unwrap_or_else(|refused| refusal(&refused)));
        Some(if head { without_body(answer) } else { answer })
    }

    async fn supervisors(&self) -> Result<super::Answer, Refusal> {
        Ok(json(200, &self.seen.listed(&self.control).await?))
    }

    async fn detail(&self, token: String) -> Result<super::Answer, Refusal> {
        let detail = self
            .control
            .read(move |tx| {
                let row = existing(tx, &token)?;
                let now = tx.now();
                let tasks = tx.open_tasks(&token)?.into_iter().map(|task| TaskView {
                    task: task.id,
                    state: task.state,
                    status: task.status.as_str().to_string(),
                    attempt: task.attempt,
                    holder: task.claimed_by,
                    lease_until: task.lease_until.map(|until| iso(from_micros(until))),
                    lease_left: task
                        .lease_until
                        .map(|until| (until - now).max(0) as f64 / 1e6),
                });
                let timers = tx
                    .pending_timers(&token)?
                    .into_iter()
                    .map(|timer| TimerView {
                        event: timer.event,
                        due_at: iso(from_micros(timer.due_at)),
                    });
                let held = if row.status == TokenStatus::Paused {
                    held_events(&tx.entries(&token)?)
                } else {
                    Vec::new()
                };
                Ok(TokenDetail {
                    token: view(&row),
                    tasks: tasks.collect(),
                    timers: timers.collect(),
                    held: held
                        .into_iter()
                        .map(|h| HeldEvent {
                            event: h.event,
                            payload: h.payload,
                            at: Some(iso(from_micros(h.at))),
                        })
                        .collect(),
                })
            })
            .await?;
        Ok(json(200, &detail))
    }

    async fn states(&self) -> Result<super::Answer, Refusal> {
        let counts = self.control.read(|tx| Ok(tx.token_counts()?)).await?;
        let mut states: Vec<StateCount> = Vec::new();
        for (workflow, state, status, count) in counts {
            let same = states
                .last()
                .is_some_and(|last| last.workflow == workflow && last.state == state);
            if !same {
                states.push(StateCount {
                    workflow,
                    state,
                    tokens: BTreeMap::new(),
                });
            }
            if let Some(last) = states.last_mut() {
                last.tokens.insert(status.as_str().to_string(), count);
            }
        }
        Ok(json(200, &StateList { states }))
    }

    async fn metrics(&self) -> Result<super::Answer, Refusal> {
        let heard = {
            let seen = self.seen.seen.lock().map(|s| s.clone()).unwrap_or_default();
            crate::metrics::Heard {
                outbox: seen
                    .iter()
                    .filter_map(|(name, s)| Some((name.clone(), s.outbox?)))
                    .collect(),
                supervisors: seen.len(),
                commits: self.control.commits(),
            }
        };
        let control = &self.control;
        let main = control.graph().main.name.clone();
        let read = |after: i64| async move {
            let upto = control.mark().safe();
            control
                .read(move |tx| Ok(crate::metrics::read_tables(tx, &main, after, upto)?))
                .await
        };
        let text = control.metrics().render(read, heard).await?;
        let mut answer = Response::new(Full::new(Bytes::from(text)));
        answer.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        );
        Ok(answer)
    }
}
