//! The control plane's HTTP API (`docs/reference/http.md`): each request becomes a
//! validated input, one call of [`Control`], and a JSON answer or a refusal.
//!
//! The layers, outermost first, in the reference's order: a control plane that
//! lost its database answers every request 503 `not_serving`; a body over 1 MiB is
//! 413 `bad_request`; then the route, from the one table [`routes::TABLE`] (404,
//! 405 with the path's methods in `Allow`, or a 307 for a trailing slash); then
//! who sent it and whether its access key may use the route ([`access`]: 401
//! `unauthenticated`, 403 `forbidden`), before its body is read; then
//! the body and query become inputs ([`parse`]); then the control plane decides.
//! Every refusal is `{"error": sentence, "code": code}` with the code's status.

pub mod access;
mod body;
mod bulk;
mod dev_clock;
pub mod fields;
mod head_check;
pub mod hooks;
pub mod measure;
mod notify;
pub mod parse;
pub mod routes;
mod schedules;
pub mod server;
pub mod supervisors;
pub mod tls;
mod trace_header;
mod watch;
mod why;
// Usage and budgets (`docs/concepts/budgets.md`).
mod access_keys;
mod budgets;
mod limits;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use serde::Serialize;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Duplicate, Health, Lost};
use tokio::sync::watch as signal;

use crate::control::Control;
use crate::store::{Closed, TokenStatus};
use access::{Caller, Door, Keys};
use body::BodyError;
use fields::named_fields;
use measure::labelled;
use parse::{
    ClaimInput, FireInput, HeartbeatInput, ListInput, MemoryInput, NoteInput, ReportInput,
    StartInput,
};
use routes::{NoRoute, Route, Routed, TaskId};
use server::Stop;

pub use body::{MAX_BODY, MAX_DEPTH};

/// Ends once the server leaves [`Stop::Serving`] (or its sender is gone): a
/// waiting claim then answers at once.
async fn server_stops(mut stop: signal::Receiver<Stop>) {
    while *stop.borrow_and_update() == Stop::Serving {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// A whole answer of the API: the status and the bytes of its JSON body (none
/// for 204).
pub type Answer = Response<Full<Bytes>>;

/// The body of every answer of the server: whole JSON, or a stream of events.
pub type Body = BoxBody<Bytes, Infallible>;

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
    seen: supervisors::SupervisorsSeen,
    /// The access keys, in memory ([`Api::load_keys`]).
    keys: Keys,
    /// The hooks of `serve --hooks FILE` (none without it).
    hooks: hooks::Hooks,
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
            seen: supervisors::SupervisorsSeen::default(),
            keys: Keys::default(),
            hooks: hooks::Hooks::default(),
        }
    }

    /// The same API, serving `hooks` at `POST /hooks/{name}`.
    pub fn with_hooks(mut self, hooks: hooks::Hooks) -> Api {
        self.hooks = hooks;
        self
    }

    /// Read the access keys from the database: a control plane does this once it
    /// holds the database, before it serves (a standby when it takes over).
    pub async fn load_keys(&self) -> Result<(), Refusal> {
        let rows = self.control.access_keys().await?;
        self.keys.replace(&rows);
        Ok(())
    }

    /// Whether this control plane lost its database.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst) || self.control.lost()
    }

    /// The answer to one request. It never fails: every problem is a refusal.
    /// The answer carries its route's label for the metrics
    /// ([`measure::RouteLabel`]), found once, in the route table, even for a
    /// request refused before its route is used (a lost database, a body too
    /// large). A `GET /watch` stream ends when `stop` leaves serving. `door`:
    /// how the request came in, which decides whether it needs an access key.
    pub async fn answer(
        &self,
        request: Request<Incoming>,
        door: Door,
        stop: signal::Receiver<Stop>,
    ) -> Response<Body> {
        let (parts, incoming) = request.into_parts();
        let path = routes::decode_path(parts.uri.path());
        let routed = routes::route_raw(parts.method.as_str(), parts.uri.path());
        let label = routed
            .as_ref()
            .map_or(routes::UNROUTED, |routed| routed.entry.label);
        let answer = self
            .layered(&parts, &path, routed, incoming, door, stop)
            .await;
        let answer = labelled(answer, label);
        if parts.method == hyper::Method::HEAD {
            let (parts, _) = answer.into_parts();
            return Response::from_parts(parts, Full::new(Bytes::new()).boxed());
        }
        answer
    }

    /// The layers of the module's doc, in order: the lost database, the caller
    /// and its access, the body's size, the route, then the route's handler.
    async fn layered(
        &self,
        parts: &Parts,
        path: &str,
        routed: Result<Routed, NoRoute>,
        incoming: Incoming,
        door: Door,
        stop: signal::Receiver<Stop>,
    ) -> Response<Body> {
        if self.is_lost() {
            return whole(refusal(&Refusal::new(
                Code::NotServing,
                crate::engine::LOST,
            )));
        }
        // A request without a route is taken as a read: without a key it learns
        // nothing about the routes.
        let class = routed
            .as_ref()
            .map_or(routes::Access::Read, |routed| routed.entry.access);
        let route_of = routed.as_ref().ok().map(|routed| &routed.route);
        let caller = match self.checked_caller(door, &parts.headers, class, route_of) {
            Ok(caller) => caller,
            Err(refused) => return whole(refusal(&refused)),
        };
        let raw = match body::read_limited(&parts.headers, incoming).await {
            Ok(raw) => raw,
            Err(BodyError::TooLarge) => {
                let refused =
                    with_status(refusal(&body::too_large()), StatusCode::PAYLOAD_TOO_LARGE);
                return whole(refused);
            }
            Err(BodyError::Broken) => {
                let broken = Refusal::new(Code::BadRequest, "the request body broke off");
                return whole(refusal(&broken));
            }
        };
        let route = match routed {
            Ok(routed) => routed.route,
            Err(no_route) => return whole(unrouted(no_route, parts, path)),
        };
        // Health checks and webhook deliveries need no key ever, and the one who
        // makes the first key is using it: none of them is a caller it locks out.
        if let (Caller::Open, Door::Tcp(Some(ip))) = (&caller, door) {
            let about_keys = matches!(
                route,
                Route::AccessList | Route::AccessAdd | Route::AccessCallers | Route::AccessSelf
            );
            if class != routes::Access::Public && !about_keys {
                self.note_open_caller(ip, &route, &raw);
            }
        }
        if route == Route::Watch {
            return watch::stream(self, parts, stop).await;
        }
        let answer = match caller.key_name() {
            Some(name) => {
                let acting = self.acting_as(name);
                acting.dispatch(route, parts, &raw, &caller, &stop).await
            }
            None => self.dispatch(route, parts, &raw, &caller, &stop).await,
        };
        whole(answer.unwrap_or_else(|refused| refusal(&refused)))
    }

    /// This API, its writes' ledger entries naming the access key `name`.
    fn acting_as(&self, name: &str) -> Api {
        Api {
            control: self.control.acting_as(Some(name)),
            ..self.clone()
        }
    }

    /// The caller of a request by `door` with `headers` to a route of `class`,
    /// allowed to use it ([`access::permit`], the one check); its use noted.
    fn checked_caller(
        &self,
        door: Door,
        headers: &hyper::HeaderMap,
        class: routes::Access,
        route: Option<&Route>,
    ) -> Result<Caller, Refusal> {
        let caller = self.keys.caller(door, headers, class)?;
        access::permit(&caller, class, route)?;
        let now = self.control.options().clock.now();
        if let Some(name) = access::due_to_write(&caller, now) {
            // Written beside the request, never in its way; a failure only
            // leaves the moment older.
            let control = self.control.clone();
            tokio::spawn(async move { control.touch_access_keys(vec![(name, now)]).await });
        }
        Ok(caller)
    }

    /// Note a request served over TCP without a key ([`access::OpenCallers`]):
    /// the address, and the supervisor a claim or heartbeat names, at most every
    /// few seconds an address, so that the body is rarely read twice.
    fn note_open_caller(&self, ip: std::net::IpAddr, route: &Route, raw: &[u8]) {
        let now = self.control.options().clock.now();
        let named = matches!(route, Route::Claim | Route::Heartbeat);
        if !self.keys.open.due(ip, now, named) {
            return;
        }
        let supervisor = named
            .then(|| serde_json::from_slice::<serde_json::Value>(raw).ok())
            .flatten()
            .and_then(|body| Some(body.get("supervisor")?.as_str()?.to_string()));
        self.keys.open.note(ip, now, supervisor);
    }

    async fn dispatch(
        &self,
        route: Route,
        parts: &Parts,
        raw: &[u8],
        caller: &Caller,
        stop: &signal::Receiver<Stop>,
    ) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Start => {
                let fields = named_fields(raw, StartInput::FIELDS)?;
                let input = StartInput::parse(&fields)?;
                let trace = trace_header::caller_trace(parts, control.metrics());
                let input = input.in_trace(trace);
                // Ours: the token's own budget (`docs/concepts/budgets.md`).
                let budget = parse::budgets::start_budget(&fields)?;
                // Ours: the token's priority (`docs/limits.md`).
                let priority = match crate::api::fields::Fields::field(&fields, "priority") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(value) => {
                        Some(crate::engine::priority::priority_of(value).map_err(|f| f.refusal())?)
                    }
                };
                let started = if budget.is_some() || priority.is_some() {
                    control.start_with_budget(input, budget, priority).await?
                } else {
                    control.start(input).await?
                };
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
                    live_only: false,
                };
                let listing = control.list(selection, input.limit, input.offset).await?;
                // The body stays the reference's list; the total travels in a header.
                let mut answer = json(200, &listing.tokens);
                answer.headers_mut().insert(
                    stateous_shared::wire::TOTAL_COUNT,
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
                let mut input = FireInput::parse(token, event, &body::json_object(raw)?, key)?;
                input.scope = caller.scope();
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
            Route::Bulk => self.bulk(raw, caller).await,
            Route::Retry(token) => self.retry(token, raw).await,
            Route::Why(token) => self.why(token).await,
            Route::Detail(token) => Ok(json(200, &control.detail(token).await?)),
            Route::Supervisors => Ok(json(200, &self.seen.listed(control).await?)),
            Route::SupervisorStop(name) => {
                caller.may_act_for(&name)?;
                self.supervisor_stopped(name)
            }
            Route::States => Ok(json(200, &control.states().await?)),
            Route::Graphs => Ok(json(200, &control.graphs().await?)),
            Route::Journal => {
                let pairs = routes::query_pairs(parts.uri.query().unwrap_or(""));
                let query = parse::JournalQuery::parse(&pairs)?;
                let page = control
                    .journal(query.subject, query.name, query.after, query.limit)
                    .await?;
                Ok(json(200, &page))
            }
            Route::Graph(checksum) => Ok(json(200, &control.graph_document(checksum).await?)),
            Route::Metrics => self.metrics().await,
            Route::AccessList => self.access_list().await,
            Route::AccessAdd => self.access_add(raw).await,
            Route::AccessRevoke(name) => self.access_revoke(name).await,
            Route::AccessCallers => Ok(self.access_callers()),
            Route::AccessSelf => Ok(access_keys::access_self(caller)),
            Route::Hooks => Ok(self.list_hooks()),
            Route::Hook(name) => self.hook(&name, parts, raw).await,
            route @ (Route::Usage(_)
            | Route::TokenBudget(_)
            | Route::Budgets
            | Route::BudgetSet(_)
            | Route::BudgetRemove(_)) => self.budgets(route, parts, raw, caller).await,
            Route::Schedule(route) => self.schedule(route, raw).await,
            Route::Notify(route) => self.notify(route, raw).await,
            route @ (Route::Limits
            | Route::RetryPolicies
            | Route::RetryPolicySet(_)
            | Route::RetryPolicyRemove(_)
            | Route::TokenPriority(_)
            | Route::LimitSet(_)
            | Route::LimitRemove(_)) => self.limits(route, raw).await,
            route => self.dispatch_task(route, parts, raw, caller, stop).await,
        }
    }

    /// The grant as a claim answers it: the reference's fields, and our addition
    /// `lease_seconds`, the lease it was granted with, so that a supervisor can
    /// pace its heartbeat from it (the reference's supervisor ignores the field).
    /// Written straight from the grant, not through a `serde_json::Value`:
    /// building the value cost a claim about a sixth of its request thread's
    /// instructions.
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
        caller: &Caller,
        stop: &signal::Receiver<Stop>,
    ) -> Result<Answer, Refusal> {
        let control = &self.control;
        match route {
            Route::Claim => {
                let object = named_fields(raw, ClaimInput::FIELDS)?;
                let input = ClaimInput::parse(&object)?;
                let wait = parse::claim_wait(&object)?;
                caller.may_act_for(input.supervisor.as_str())?;
                let now = self.control.options().clock.now();
                let outbox = supervisors::outbox_of(&object);
                let (name, states) = (input.supervisor.clone(), input.states.clone());
                // Heard only once the claim was accepted: a refused request
                // changes nothing, not even the list of supervisors.
                let claimed = if wait.is_zero() {
                    control.claim(input).await?
                } else {
                    // A waiting claim is heard as it starts too, so that an idle
                    // supervisor is listed while its claim waits.
                    let served = Some(states.names());
                    self.seen.heard(name.as_str(), served, outbox, now);
                    control
                        .claim_waiting(input, wait, server_stops(stop.clone()))
                        .await?
                };
                let now = if wait.is_zero() {
                    now
                } else {
                    self.control.options().clock.now()
                };
                self.seen
                    .heard(name.as_str(), Some(states.names()), outbox, now);
                match claimed {
                    Some(grant) => Ok(json(200, &self.with_lease(&grant))),
                    None => Ok(no_content()),
                }
            }
            Route::Heartbeat => {
                let object = body::json_object(raw)?;
                let input = HeartbeatInput::parse(&object)?;
                caller.may_act_for(input.supervisor.as_str())?;
                let now = self.control.options().clock.now();
                let name = input.supervisor.clone();
                let lost = control.heartbeat(input).await?;
                let outbox = supervisors::outbox_of(&object);
                self.seen.heard(name.as_str(), None, outbox, now);
                Ok(json(200, &Lost { lost }))
            }
            Route::Report(task) => {
                let task = self.held_task(task, caller).await?;
                let input = ReportInput::parse(task, &named_fields(raw, ReportInput::FIELDS)?)?;
                Ok(json(200, &control.report(input).await?))
            }
            Route::Note(task) => {
                let task = self.held_task(task, caller).await?;
                let key = parts
                    .headers
                    .get("idempotency-key")
                    .map(|value| value.as_bytes());
                let input = NoteInput::parse(task, &body::json_object(raw)?, key)?;
                control.note(input).await?;
                Ok(no_content())
            }
            Route::Memory(task) => {
                let task = self.held_task(task, caller).await?;
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

impl Api {
    /// The task of a report, note or memory write; for a supervise key, 403
    /// `forbidden` when another supervisor claimed it last (a task no one
    /// claimed is left to the engine's own refusal).
    async fn held_task(&self, task: TaskId, caller: &Caller) -> Result<i64, Refusal> {
        let task = known_task(task)?;
        if caller.bound().is_some() {
            if let Some(holder) = self.control.task_holder(task).await? {
                caller.may_act_for(&holder)?;
            }
        }
        Ok(task)
    }
}

/// A claim's answer: the grant's fields, then `lease_seconds` (`Api::with_lease`).
#[derive(Serialize)]
struct Granted<'g> {
    #[serde(flatten)]
    grant: &'g stateous_shared::wire::Grant,
    lease_seconds: f64,
}

/// The answer to a request that no route takes: 404 `not_found`, 405
/// `method_not_allowed` with the path's methods in `Allow`, or a 307 to the path
/// without its trailing slash.
fn unrouted(no_route: NoRoute, parts: &Parts, path: &str) -> Answer {
    match no_route {
        NoRoute::NotFound => {
            let sentence = format!("this API has no path {path}");
            refusal(&Refusal::new(Code::NotFound, sentence))
        }
        NoRoute::MethodNotAllowed => {
            let sentence = format!("{path} does not take the method {}", parts.method);
            let mut refused = refusal(&Refusal::new(Code::MethodNotAllowed, sentence));
            if let Ok(allow) = hyper::header::HeaderValue::from_str(&allowed(path)) {
                refused.headers_mut().insert(hyper::header::ALLOW, allow);
            }
            refused
        }
        NoRoute::Redirect(_) => {
            let raw_path = parts.uri.path();
            let bare = raw_path.strip_suffix('/').unwrap_or(raw_path);
            redirect(bare, parts.uri.query())
        }
    }
}

/// A 405's `Allow` header: every method that some route takes on `path`, `HEAD`
/// wherever `GET`, sorted (`GET, HEAD, POST`). RFC 9110 asks for it; the
/// reference's 405 has none, and a header more changes nothing for its clients.
fn allowed(path: &str) -> String {
    let mut methods = routes::methods(path);
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

/// A whole answer as the server sends it.
fn whole(answer: Answer) -> Response<Body> {
    answer.map(BodyExt::boxed)
}

/// `name` from a path, when a `what` (`subscription`, `schedule`, `limit`) can
/// have it (`stateous_shared::limits::is_name`); else no `what` has it: 404
/// `code`, the code of an unknown one, with the rule
/// (`stateous_shared::limits::no_such_name`).
pub(super) fn named(name: String, what: &str, code: Code) -> Result<String, Refusal> {
    if stateous_shared::limits::is_name(&name) {
        Ok(name)
    } else {
        Err(Refusal::new(
            code,
            stateous_shared::limits::no_such_name(what, &name),
        ))
    }
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
