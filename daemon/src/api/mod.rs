//! The control plane's HTTP API (`docs/reference/http.md`): each request becomes a
//! validated input, one call of [`Control`], and a JSON answer or a refusal.
//!
//! The layers, outermost first, in the reference's order: a control plane that
//! lost its database answers every request 503 `not_serving`; a body over 1 MiB is
//! 413 `bad_request`; then the route (404, 405 with the path's methods in `Allow`,
//! or a 307 for a trailing slash); then the body and query become inputs
//! ([`inputs`]); then the control plane decides.
//! Every refusal is `{"error": sentence, "code": code}` with the code's status.

pub mod added;
mod body;
mod clock;
pub mod fields;
pub mod inputs;
pub mod measure;
mod operate;
pub mod routes;
pub mod server;
mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use serde::Serialize;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Duplicate, Health, Lost};

use crate::control::Control;
use crate::store::{Closed, TokenStatus};
use body::BodyError;
use fields::named_fields;
use inputs::{
    ClaimInput, FireInput, HeartbeatInput, ListInput, MemoryInput, NoteInput, ReportInput,
    StartInput,
};
use measure::labelled;
use routes::{NoRoute, Route, TaskId};

pub use body::{MAX_BODY, MAX_DEPTH};

/// An answer of the API: the status and the bytes of its JSON body (none for 204).
pub type Answer = Response<Full<Bytes>>;

/// The API over one control plane. Cheap to clone: each connection holds one.
#[derive(Clone)]
pub struct Api {
    control: Control,
    /// `GET /workflow`'s body, the graph document, serialized once.
    workflow: Bytes,
    /// `GET /health`'s body without a dev clock, serialized once.
    health: Bytes,
    /// Set when this control plane no longer holds the database; shared with the
    /// clock, which finds it out.
    lost: Arc<AtomicBool>,
    /// The supervisors heard from, for `GET /supervisors`.
    seen: added::SupervisorsSeen,
}

impl Api {
    /// The API over `control`. `lost` is shared with whatever watches the hold on
    /// the database (the clock of `stateous serve`).
    pub fn new(control: Control, lost: Arc<AtomicBool>) -> Api {
        let graph = control.graph();
        let health = Health {
            workflow: graph.main.name.clone(),
            checksum: graph.checksum.clone(),
            dev_clock: None,
        };
        Api {
            workflow: Bytes::from(to_json(&graph.document)),
            health: Bytes::from(to_json(&health)),
            control,
            lost,
            seen: added::SupervisorsSeen::default(),
        }
    }

    /// Whether this control plane lost its database.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst) || self.control.lost()
    }

    /// The answer to one request. It never fails: every problem is a refusal.
    /// The answer carries its route's name for the metrics
    /// ([`measure::RouteLabel`]).
    pub async fn answer(&self, request: Request<Incoming>) -> Answer {
        // The refusals before routing are rare: their label is found apart.
        let unrouted = |request: &Parts| measure::route_label(&request.method, request.uri.path());
        let (parts, incoming) = request.into_parts();
        if self.is_lost() {
            let lost = refusal(&Refusal::new(Code::NotServing, crate::engine::LOST));
            return labelled(lost, unrouted(&parts));
        }
        let head = parts.method == hyper::Method::HEAD;
        let raw = match body::read_limited(&parts.headers, incoming).await {
            Ok(raw) => raw,
            Err(BodyError::TooLarge) => {
                let refused =
                    with_status(refusal(&body::too_large()), StatusCode::PAYLOAD_TOO_LARGE);
                return labelled(refused, unrouted(&parts));
            }
            Err(BodyError::Broken) => {
                let broken = Refusal::new(Code::BadRequest, "the request body broke off");
                return labelled(refusal(&broken), unrouted(&parts));
            }
        };
        let (route, answered) = self.routed(&parts, &raw).await;
        let answer = match answered {
            Ok(answer) => answer,
            Err(refused) => refusal(&refused),
        };
        let answer = labelled(answer, route.unwrap_or_else(|| unrouted(&parts)));
        if head {
            let (parts, _) = answer.into_parts();
            return Response::from_parts(parts, Full::new(Bytes::new()));
        }
        answer
    }

    /// The answer of the request's route, with the route's template; `None` for
    /// a request no route takes (a 404, 405 or 307: its label is then found
    /// apart, by `measure::route_label`).
    async fn routed(
        &self,
        parts: &Parts,
        raw: &[u8],
    ) -> (Option<&'static str>, Result<Answer, Refusal>) {
        let path = routes::decode(parts.uri.path(), false);
        if let Some(found) = operate::route(parts.method.as_str(), &path) {
            return (Some(found.template()), self.operate(found, raw).await);
        }
        let route = match routes::route(parts.method.as_str(), &path) {
            Err(NoRoute::NotFound) => Err(ours_elsewhere(&path).unwrap_or(NoRoute::NotFound)),
            other => other,
        };
        let route = match route {
            Ok(route) => route,
            Err(NoRoute::NotFound) => {
                let sentence = format!("this API has no path {path}");
                return (None, Err(Refusal::new(Code::NotFound, sentence)));
            }
            Err(NoRoute::MethodNotAllowed) => {
                let sentence = format!("{path} does not take the method {}", parts.method);
                let mut refused = refusal(&Refusal::new(Code::MethodNotAllowed, sentence));
                if let Ok(allow) = hyper::header::HeaderValue::from_str(&allowed(&path)) {
                    refused.headers_mut().insert(hyper::header::ALLOW, allow);
                }
                return (None, Ok(refused));
            }
            Err(NoRoute::Redirect(_)) => {
                let raw_path = parts.uri.path();
                let bare = raw_path.strip_suffix('/').unwrap_or(raw_path);
                return (None, Ok(redirect(bare, parts.uri.query())));
            }
        };
        let template = route.template();
        (Some(template), self.dispatch(route, parts, raw).await)
    }

    async fn dispatch(&self, route: Route, parts: &Parts, raw: &[u8]) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Start => {
                let input = StartInput::parse(&named_fields(raw, StartInput::FIELDS)?)?;
                let started = control.start(input).await?;
                let status = if started.created { 201 } else { 200 };
                Ok(json(status, &started.token))
            }
            Route::List => {
                let pairs = routes::query_pairs(parts.uri.query().unwrap_or(""));
                let input = ListInput::parse(&pairs)?;
                let selection = crate::engine::select::Selection {
                    filter: input.filter,
                    status: input.status.as_deref().and_then(TokenStatus::parse),
                    state: input.state,
                    parent: input.parent,
                };
                let listing = control.list(selection, input.limit, input.offset).await?;
                // The body stays the reference's list; the total travels in a header.
                let mut answer = json(200, &listing.tokens);
                answer.headers_mut().insert(
                    stateous_shared::operate::TOTAL_COUNT,
                    hyper::header::HeaderValue::from(listing.total),
                );
                Ok(answer)
            }
            Route::Token(token) => Ok(json(200, &control.token(token).await?)),
            Route::History(token) => Ok(json(200, &control.history(token).await?)),
            Route::Fire(token, event) => {
                let key = parts
                    .headers
                    .get("idempotency-key")
                    .map(|value| value.as_bytes());
                let input = FireInput::parse(token, event, &body::json_object(raw)?, key)?;
                let fired = control.fire(input).await?;
                if fired.duplicate {
                    let duplicate = Duplicate {
                        duplicate: true,
                        token: fired.token,
                    };
                    Ok(json(200, &duplicate))
                } else {
                    Ok(json(200, &fired.token))
                }
            }
            Route::Pause(token) => Ok(json(200, &control.pause(token).await?)),
            Route::Resume(token) => Ok(json(200, &control.resume(token).await?)),
            Route::Cancel(token) => Ok(json(200, &control.cancel(token).await?)),
            Route::Workflow => Ok(json_bytes(200, self.workflow.clone())),
            Route::Health => Ok(self.health()),
            Route::Clock(how) => self.clock(how, raw).await,
            route => self.dispatch_task(route, parts, raw).await,
        }
    }

    /// The grant as a claim answers it: the reference's fields, and our addition
    /// `lease_seconds`, the lease it was granted with, so that a supervisor can
    /// pace its heartbeat from it (the reference's supervisor ignores the field).
    /// Written straight from the grant, not through a `serde_json::Value` (issue
    /// "Speed": building the value cost a claim about a sixth of its request
    /// thread's instructions).
    fn with_lease<'g>(&self, grant: &'g stateous_shared::wire::Grant) -> Granted<'g> {
        Granted {
            grant,
            lease_seconds: self.control.options().lease.as_secs_f64(),
        }
    }

    async fn dispatch_task(
        &self,
        route: Route,
        parts: &Parts,
        raw: &[u8],
    ) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Claim => {
                let object = named_fields(raw, ClaimInput::FIELDS)?;
                let input = ClaimInput::parse(&object)?;
                let now = self.control.options().clock.now();
                let outbox = added::outbox_of(&object);
                let (name, states) = (input.supervisor.as_str(), input.states.names());
                self.seen.heard(name, Some(states), outbox, now);
                match control.claim(input).await? {
                    Some(grant) => Ok(json(200, &self.with_lease(&grant))),
                    None => Ok(no_content()),
                }
            }
            Route::Heartbeat => {
                let object = body::json_object(raw)?;
                let input = HeartbeatInput::parse(&object)?;
                let now = self.control.options().clock.now();
                let name = input.supervisor.as_str();
                self.seen.heard(name, None, added::outbox_of(&object), now);
                let lost = control.heartbeat(input).await?;
                Ok(json(200, &Lost { lost }))
            }
            Route::Report(task) => {
                let task = known_task(task)?;
                let input = ReportInput::parse(task, &named_fields(raw, ReportInput::FIELDS)?)?;
                Ok(json(200, &control.report(input).await?))
            }
            Route::Note(task) => {
                let task = known_task(task)?;
                let key = parts
                    .headers
                    .get("idempotency-key")
                    .map(|value| value.as_bytes());
                let input = NoteInput::parse(task, &body::json_object(raw)?, key)?;
                control.note(input).await?;
                Ok(no_content())
            }
            Route::Memory(task) => {
                let task = known_task(task)?;
                let input = MemoryInput::parse(task, &body::json_object(raw)?)?;
                control.set_memory(input).await?;
                Ok(no_content())
            }
            _ => Err(Refusal::new(
                Code::Unexpected,
                "the request reached no handler",
            )),
        }
    }
}

/// A claim's answer: the grant's fields, then `lease_seconds` (`Api::with_lease`).
#[derive(Serialize)]
struct Granted<'g> {
    #[serde(flatten)]
    grant: &'g stateous_shared::wire::Grant,
    lease_seconds: f64,
}

/// Why a request that no route of the reference's takes has none, when its path
/// is one of this product's routes (`added.rs`, `operate.rs`), which match only
/// their own methods: another method is 405, and the path with a trailing slash
/// a 307 to the path without it, as the reference's routes answer. `None` for
/// any other path.
fn ours_elsewhere(path: &str) -> Option<NoRoute> {
    if !ours(path).is_empty() {
        return Some(NoRoute::MethodNotAllowed);
    }
    let bare = path.strip_suffix('/').filter(|bare| !bare.is_empty())?;
    (!ours(bare).is_empty()).then(|| NoRoute::Redirect(bare.to_string()))
}

/// The methods that this product's routes (`added.rs`, `operate.rs`) take on
/// `path`, without `HEAD`.
fn ours(path: &str) -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = ["GET", "POST"]
        .into_iter()
        .filter(|method| operate::route(method, path).is_some())
        .collect();
    if added::template(path).is_some() {
        methods.push("GET");
    }
    methods
}

/// A 405's `Allow` header: every method that some route takes on `path`, the
/// reference's and ours, `HEAD` wherever `GET`, sorted (`GET, HEAD, POST`).
/// RFC 9110 asks for it; the reference's 405 has none, and a header more
/// changes nothing for its clients.
fn allowed(path: &str) -> String {
    let mut methods = routes::methods(path);
    methods.extend(ours(path));
    if methods.contains(&"GET") {
        methods.push("HEAD");
    }
    methods.sort_unstable();
    methods.dedup();
    methods.join(", ")
}

/// A task id from a path, or `task_not_found` when no task can have it.
fn known_task(task: TaskId) -> Result<i64, Refusal> {
    match task {
        TaskId::Id(id) => Ok(id),
        TaskId::TooLarge(digits) => Err(Refusal::new(
            Code::TaskNotFound,
            format!("there is no task {digits}"),
        )),
    }
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own wire types and JSON values cannot fail: their keys are
    // strings and they hold no non-finite floats.
    serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec())
}

/// A JSON answer with `status`.
fn json<T: Serialize>(status: u16, value: &T) -> Answer {
    json_bytes(status, Bytes::from(to_json(value)))
}

fn json_bytes(status: u16, body: Bytes) -> Answer {
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    answer.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    answer
}

/// The 204 answer: no body.
fn no_content() -> Answer {
    let mut answer = Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = StatusCode::NO_CONTENT;
    answer
}

/// A refusal: `{"error": sentence, "code": code}` with the code's status. The
/// answer carries its code as an extension, for the metrics (`measure`).
pub fn refusal(refused: &Refusal) -> Answer {
    let mut answer = json(refused.status(), refused);
    answer.extensions_mut().insert(refused.code);
    answer
}

fn with_status(mut answer: Answer, status: StatusCode) -> Answer {
    *answer.status_mut() = status;
    answer
}

/// A 307 to the same path without its trailing slash, keeping the query.
fn redirect(bare: &str, query: Option<&str>) -> Answer {
    let target = match query {
        Some(query) => format!("{bare}?{query}"),
        None => bare.to_string(),
    };
    let mut answer = Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = StatusCode::TEMPORARY_REDIRECT;
    if let Ok(location) = hyper::header::HeaderValue::from_str(&target) {
        answer
            .headers_mut()
            .insert(hyper::header::LOCATION, location);
    }
    answer
}
