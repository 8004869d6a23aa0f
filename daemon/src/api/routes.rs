//! The one route table of the API (`docs/reference/http.md`): each route's method,
//! path template, the access it needs and how its path becomes a [`Route`].
//! Dispatch (`Api::answer`), the metrics' route labels (`measure`) and the access
//! checks all read [`TABLE`], so a route is added in one place.
//!
//! Paths are matched after percent-decoding, as the reference matches them, so
//! `/tokens/T%2F1` is the path `/tokens/T/1`, which no route has. A path with an
//! empty segment has no route. A task id in a path is digits; one larger than a
//! database integer names no task. A path with a trailing slash that would match
//! without it is redirected (307), as the reference's router does. `HEAD` is
//! answered wherever `GET` is. Where a literal segment and a parameter could both
//! take a path (`POST /tokens/bulk` and `GET /tokens/{id}`), the method decides,
//! so a token named `bulk` is still read with `GET /tokens/bulk`.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// What a caller must be allowed to do to use a route. Which roles of an access
/// key may use each class is `api/access.rs` `permit`; the classes are not a
/// ladder (a supervise key reads the graph and the stream, not the tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without a key: the health check, and webhook deliveries (whose
    /// signature is their authentication).
    Public,
    /// What every key may read, a supervisor's included: the graph and the
    /// watch stream.
    Follow,
    /// Reading tokens, their histories, the stream and the metrics.
    Read,
    /// Changing tokens from outside: start, fire, pause, resume, cancel, retry.
    Operate,
    /// What a supervisor does: claim, heartbeat, report, note, memory.
    Supervise,
    /// Running the control plane itself: the access keys and the dev clock.
    Admin,
}

impl Access {
    /// The class as configuration and logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Public => "public",
            Access::Follow => "follow",
            Access::Read => "read",
            Access::Operate => "operate",
            Access::Supervise => "supervise",
            Access::Admin => "admin",
        }
    }
}

/// A request the API serves, with its path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /tokens`.
    Start,
    /// `GET /tokens`.
    List,
    /// `GET /tokens/{id}`.
    Token(String),
    /// `GET /tokens/{id}/history`.
    History(String),
    /// `POST /tokens/{id}/events/{event}`.
    Fire(String, String),
    /// `POST /tokens/{id}/pause`.
    Pause(String),
    /// `POST /tokens/{id}/resume`.
    Resume(String),
    /// `POST /tokens/{id}/cancel`.
    Cancel(String),
    /// `GET /workflow`.
    Workflow,
    /// `GET /health`.
    Health,
    /// `POST /tasks/claim`.
    Claim,
    /// `POST /tasks/heartbeat`.
    Heartbeat,
    /// `POST /tasks/{id}/report`.
    Report(TaskId),
    /// `POST /tasks/{id}/note`.
    Note(TaskId),
    /// `PUT /tasks/{id}/memory`.
    Memory(TaskId),
    /// Ours: `POST /clock/advance`, `/clock/freeze` or `/clock/thaw` (the dev
    /// clock of `serve --dev-clock`).
    Clock(ClockMove),
    /// Ours: `POST /tokens/bulk`, one action on every token a filter matches.
    Bulk,
    /// Ours: `POST /tokens/{id}/retry`.
    Retry(String),
    /// Ours: `GET /tokens/{id}/why`.
    Why(String),
    /// Ours: `GET /tokens/{id}/detail`, with its tasks, timers and held events.
    Detail(String),
    /// Ours: `GET /watch`, the ledger as server-sent events.
    Watch,
    /// Ours: `GET /supervisors`.
    Supervisors,
    /// Ours: `POST /supervisors/{name}/stop`, a supervisor saying it stopped.
    SupervisorStop(String),
    /// Ours: `GET /states`, tokens by workflow, state and status.
    States,
    /// Ours: `GET /graphs`, every graph served, with its tokens by status.
    Graphs,
    /// Ours: `GET /journal`, the ledger of what is not a token.
    Journal,
    /// Ours: `GET /graphs/{checksum}`, a kept graph's document.
    Graph(String),
    /// Ours: `GET /metrics`.
    Metrics,
    /// Ours: `GET /access`, the access keys.
    AccessList,
    /// Ours: `POST /access`, a new access key.
    AccessAdd,
    /// Ours: `DELETE /access/{name}`, revoke a key.
    AccessRevoke(String),
    /// Ours: `GET /access/callers`, the TCP callers without a key seen lately.
    AccessCallers,
    /// Ours: `GET /access/self`, the caller's own key.
    AccessSelf,
    /// Ours: `POST /hooks/{name}`, a webhook delivery.
    Hook(String),
    /// Ours: `GET /hooks`, the hooks served.
    Hooks,
    /// Ours: `POST /tasks/{id}/usage`, what an attempt spent.
    Usage(TaskId),
    /// Ours: `PUT /tokens/{id}/budget`, change a token's budget.
    TokenBudget(String),
    /// Ours: `GET /budgets`, the workflows' default budgets.
    Budgets,
    /// Ours: `PUT /budgets/{workflow}`, set a workflow's default budget.
    BudgetSet(String),
    /// Ours: `DELETE /budgets/{workflow}`, remove it.
    BudgetRemove(String),
    /// Ours: `/schedules...`, the schedules (`docs/schedules.md`).
    Schedule(ScheduleRoute),
    /// Ours: `/notify...`, the subscriptions (`docs/notifications.md`).
    Notify(NotifyRoute),
    /// Ours: `GET /limits`, every limit on claims (`docs/limits.md`).
    Limits,
    /// Ours: `PUT /tokens/{id}/priority`, change a token's priority.
    TokenPriority(String),
    /// Ours: `GET /retry-policies`, every state's retry policy.
    RetryPolicies,
    /// Ours: `PUT /retry-policies/{state}`, set one.
    RetryPolicySet(String),
    /// Ours: `DELETE /retry-policies/{state}`, remove one.
    RetryPolicyRemove(String),
    /// Ours: `PUT /limits/{name}`, set a limit whole.
    LimitSet(String),
    /// Ours: `DELETE /limits/{name}`, remove a limit.
    LimitRemove(String),
}

/// What a request of `/notify` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyRoute {
    /// `POST /notify`: add one.
    Add,
    /// `GET /notify`: every subscription.
    List,
    /// `GET /notify/{name}`: one, with its latest attempts.
    Show(String),
    /// `DELETE /notify/{name}`.
    Remove(String),
    /// `POST /notify/{name}/pause`.
    Pause(String),
    /// `POST /notify/{name}/resume`.
    Resume(String),
    /// `POST /notify/{name}/rotate`: a new secret beside the last.
    Rotate(String),
    /// `POST /notify/{name}/test`: a test notification.
    Test(String),
    /// `POST /notify/{name}/redeliver`: its dead notifications again.
    Redeliver(String),
    /// `GET /notifications/failed`: the dead notifications.
    Failed,
}

/// What a request of `/schedules` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleRoute {
    /// `POST /schedules`: add or change one.
    Add,
    /// `GET /schedules`: every schedule.
    List,
    /// `GET /schedules/{name}`.
    Show(String),
    /// `DELETE /schedules/{name}`.
    Remove(String),
    /// `POST /schedules/{name}/pause`.
    Pause(String),
    /// `POST /schedules/{name}/resume`.
    Resume(String),
    /// `POST /schedules/{name}/trigger`: an occurrence now.
    Trigger(String),
}

/// How `POST /clock/...` moves the dev clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMove {
    /// `/clock/advance`, by the body's `by`.
    Advance,
    /// `/clock/freeze`.
    Freeze,
    /// `/clock/thaw`.
    Thaw,
}

/// A task id from a path: digits that fit a database integer, or digits that do
/// not (answered `task_not_found`, as no task can have that id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskId {
    /// An id from 0 to `i64::MAX`.
    Id(i64),
    /// The digits of an id larger than any task's, without leading zeros.
    TooLarge(String),
}

/// One route of the table.
#[derive(Debug)]
pub struct Entry {
    /// The method (`GET` also takes `HEAD`).
    pub method: &'static str,
    /// The path, with each parameter as `:name`.
    pub path: &'static str,
    /// The method and the path, as the metrics name the route: one label stands
    /// for every token (braces would trip simple parsers of the text format).
    pub label: &'static str,
    /// What a caller must be allowed to do.
    pub access: Access,
    /// The route of the path's parameters, in order; `None` when a parameter is
    /// not one this route takes (a task id that is not digits).
    make: fn(&[&str]) -> Option<Route>,
}

/// An entry of [`TABLE`]; the label is the method and the path.
macro_rules! entry {
    ($method:literal $path:literal, $access:ident, $make:expr) => {
        Entry {
            method: $method,
            path: $path,
            label: concat!($method, " ", $path),
            access: Access::$access,
            make: $make,
        }
    };
}

/// Every route of the API. Where two routes take one path, the first listed is
/// the first in a 405's `Allow` order before sorting; nothing else depends on the
/// order.
pub static TABLE: &[Entry] = &[
    entry!("GET" "/health", Public, |_| Some(Route::Health)),
    entry!("GET" "/workflow", Follow, |_| Some(Route::Workflow)),
    entry!("POST" "/tokens", Operate, |_| Some(Route::Start)),
    entry!("GET" "/tokens", Read, |_| Some(Route::List)),
    entry!("POST" "/tokens/bulk", Operate, |_| Some(Route::Bulk)),
    entry!("GET" "/tokens/:id", Read, |p| Some(Route::Token(p[0].into()))),
    entry!("GET" "/tokens/:id/history", Read, |p| Some(Route::History(p[0].into()))),
    entry!("POST" "/tokens/:id/events/:event", Operate, |p| {
        Some(Route::Fire(p[0].into(), p[1].into()))
    }),
    entry!("POST" "/tokens/:id/pause", Operate, |p| Some(Route::Pause(p[0].into()))),
    entry!("POST" "/tokens/:id/resume", Operate, |p| Some(Route::Resume(p[0].into()))),
    entry!("POST" "/tokens/:id/cancel", Operate, |p| Some(Route::Cancel(p[0].into()))),
    entry!("POST" "/tokens/:id/retry", Operate, |p| Some(Route::Retry(p[0].into()))),
    entry!("GET" "/tokens/:id/why", Read, |p| Some(Route::Why(p[0].into()))),
    entry!("GET" "/tokens/:id/detail", Read, |p| Some(Route::Detail(p[0].into()))),
    entry!("POST" "/tasks/claim", Supervise, |_| Some(Route::Claim)),
    entry!("POST" "/tasks/heartbeat", Supervise, |_| Some(Route::Heartbeat)),
    entry!("POST" "/tasks/:id/report", Supervise, |p| Some(Route::Report(task_id(p[0])?))),
    entry!("POST" "/tasks/:id/note", Supervise, |p| Some(Route::Note(task_id(p[0])?))),
    entry!("PUT" "/tasks/:id/memory", Supervise, |p| Some(Route::Memory(task_id(p[0])?))),
    entry!("GET" "/watch", Follow, |_| Some(Route::Watch)),
    entry!("GET" "/supervisors", Read, |_| Some(Route::Supervisors)),
    entry!("POST" "/supervisors/:name/stop", Supervise, |p| {
        Some(Route::SupervisorStop(p[0].into()))
    }),
    entry!("GET" "/states", Read, |_| Some(Route::States)),
    entry!("GET" "/graphs", Read, |_| Some(Route::Graphs)),
    entry!("GET" "/graphs/:checksum", Read, |p| Some(Route::Graph(p[0].into()))),
    entry!("GET" "/metrics", Read, |_| Some(Route::Metrics)),
    entry!("GET" "/journal", Read, |_| Some(Route::Journal)),
    // A delivery needs no access key: its signature, checked against the hook's
    // secret, is its authentication (`api/hooks.rs`).
    entry!("POST" "/hooks/:name", Public, |p| Some(Route::Hook(p[0].into()))),
    entry!("GET" "/hooks", Read, |_| Some(Route::Hooks)),
    entry!("POST" "/clock/advance", Admin, |_| Some(Route::Clock(ClockMove::Advance))),
    entry!("POST" "/clock/freeze", Admin, |_| Some(Route::Clock(ClockMove::Freeze))),
    entry!("POST" "/clock/thaw", Admin, |_| Some(Route::Clock(ClockMove::Thaw))),
    entry!("GET" "/access", Admin, |_| Some(Route::AccessList)),
    entry!("POST" "/access", Admin, |_| Some(Route::AccessAdd)),
    entry!("DELETE" "/access/:name", Admin, |p| Some(Route::AccessRevoke(p[0].into()))),
    entry!("GET" "/access/callers", Admin, |_| Some(Route::AccessCallers)),
    entry!("GET" "/access/self", Follow, |_| Some(Route::AccessSelf)),
    // Usage and budgets (`docs/concepts/budgets.md`).
    entry!("POST" "/tasks/:id/usage", Supervise, |p| Some(Route::Usage(task_id(p[0])?))),
    entry!("PUT" "/tokens/:id/budget", Operate, |p| Some(Route::TokenBudget(p[0].into()))),
    entry!("GET" "/budgets", Read, |_| Some(Route::Budgets)),
    entry!("PUT" "/budgets/:name", Admin, |p| Some(Route::BudgetSet(p[0].into()))),
    entry!("DELETE" "/budgets/:name", Admin, |p| Some(Route::BudgetRemove(p[0].into()))),
    // Schedules start tokens: operating them is starting tokens (`docs/schedules.md`).
    entry!("POST" "/schedules", Operate, |_| Some(Route::Schedule(ScheduleRoute::Add))),
    entry!("GET" "/schedules", Read, |_| Some(Route::Schedule(ScheduleRoute::List))),
    entry!("GET" "/schedules/:name", Read, |p| schedule(ScheduleRoute::Show, p)),
    entry!("DELETE" "/schedules/:name", Operate, |p| schedule(ScheduleRoute::Remove, p)),
    entry!("POST" "/schedules/:name/pause", Operate, |p| schedule(ScheduleRoute::Pause, p)),
    entry!("POST" "/schedules/:name/resume", Operate, |p| schedule(ScheduleRoute::Resume, p)),
    entry!("POST" "/schedules/:name/trigger", Operate, |p| schedule(ScheduleRoute::Trigger, p)),
    // A subscription's URL makes the daemon send requests: admin only
    // (`docs/notifications.md`).
    entry!("POST" "/notify", Admin, |_| Some(Route::Notify(NotifyRoute::Add))),
    entry!("GET" "/notify", Admin, |_| Some(Route::Notify(NotifyRoute::List))),
    entry!("GET" "/notify/:name", Admin, |p| notify(NotifyRoute::Show, p)),
    entry!("DELETE" "/notify/:name", Admin, |p| notify(NotifyRoute::Remove, p)),
    entry!("POST" "/notify/:name/pause", Admin, |p| notify(NotifyRoute::Pause, p)),
    entry!("POST" "/notify/:name/resume", Admin, |p| notify(NotifyRoute::Resume, p)),
    entry!("POST" "/notify/:name/rotate", Admin, |p| notify(NotifyRoute::Rotate, p)),
    entry!("POST" "/notify/:name/test", Admin, |p| notify(NotifyRoute::Test, p)),
    entry!("POST" "/notify/:name/redeliver", Admin, |p| notify(NotifyRoute::Redeliver, p)),
    entry!("GET" "/notifications/failed", Admin, |_| Some(Route::Notify(NotifyRoute::Failed))),
    // Limits govern the whole fleet: changing one is an admin's (`docs/limits.md`).
    entry!("GET" "/limits", Read, |_| Some(Route::Limits)),
    entry!("PUT" "/tokens/:id/priority", Operate, |p| Some(Route::TokenPriority(p[0].into()))),
    entry!("PUT" "/limits/:name", Admin, |p| Some(Route::LimitSet(p[0].into()))),
    entry!("DELETE" "/limits/:name", Admin, |p| Some(Route::LimitRemove(p[0].into()))),
    entry!("GET" "/retry-policies", Read, |_| Some(Route::RetryPolicies)),
    entry!("PUT" "/retry-policies/:name", Admin, |p| Some(Route::RetryPolicySet(p[0].into()))),
    entry!("DELETE" "/retry-policies/:name", Admin, |p| {
        Some(Route::RetryPolicyRemove(p[0].into()))
    }),
];

/// The most parameters a template has.
const MOST_PARAMS: usize = 2;

impl Entry {
    /// The route of `segments` (a path split at its slashes) if this entry's
    /// template takes them, whatever the method.
    fn take(&self, segments: &[&str]) -> Option<Route> {
        let mut params = [""; MOST_PARAMS];
        let mut found = 0;
        let mut template = self.path[1..].split('/');
        for segment in segments {
            match template.next()? {
                param if param.starts_with(':') => {
                    *params.get_mut(found)? = segment;
                    found += 1;
                }
                literal if literal == *segment => {}
                _ => return None,
            }
        }
        if template.next().is_some() {
            return None;
        }
        (self.make)(&params[..found])
    }
}

/// A request's route and the table's entry for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The route, with its parameters.
    pub route: Route,
    /// Its entry in [`TABLE`]: its label and its access.
    pub entry: &'static Entry,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Entry {}

/// Why a request has no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoute {
    /// 404 `not_found`: no route has this path.
    NotFound,
    /// 405 `method_not_allowed`: a route has this path, not for this method.
    MethodNotAllowed,
    /// 307: the same path without its trailing slash has a route.
    Redirect(String),
}

/// The route of `method` and the decoded `path`.
pub fn route(method: &str, path: &str) -> Result<Routed, NoRoute> {
    let method = if method == "HEAD" { "GET" } else { method };
    let mut has_path = false;
    if let Some(segments) = segments(path) {
        for entry in TABLE {
            if let Some(route) = entry.take(&segments) {
                if entry.method == method {
                    return Ok(Routed { route, entry });
                }
                has_path = true;
            }
        }
    }
    if has_path {
        return Err(NoRoute::MethodNotAllowed);
    }
    match path.strip_suffix('/') {
        Some(bare) if !bare.is_empty() && !methods(bare).is_empty() => {
            Err(NoRoute::Redirect(bare.to_string()))
        }
        _ => Err(NoRoute::NotFound),
    }
}

/// The templates whose name may hold a `/`: a main workflow's name and a
/// supervisor's are any string, and a child workflow's state is
/// `WORKFLOW/STATE`. A client sends such
/// a name as one percent-encoded segment (`/retry-policies/legal%2Fcheck`), which
/// the decoded path splits; [`route_raw`] then decodes these paths segment by
/// segment.
const ONE_SEGMENT_NAMES: [&str; 3] = [
    "/budgets/:name",
    "/retry-policies/:name",
    "/supervisors/:name/stop",
];

/// The route of `method` and the raw (not yet decoded) `path`: [`route`] of the
/// decoded path, as the reference matches it (`/tokens/T%2F1` has no route);
/// when no route has that, the routes of [`ONE_SEGMENT_NAMES`] are tried with
/// each segment of the raw path decoded alone, so `/budgets/team%2Forders` is the
/// budget of `team/orders`.
pub fn route_raw(method: &str, path: &str) -> Result<Routed, NoRoute> {
    let decoded = match route(method, &decode_path(path)) {
        // The decoded path ends with a slash that the raw one does not: it is
        // a name's (`/tokens/T-1%2F`), not a trailing slash to redirect from
        // (the redirect, to the same raw path, went round without end).
        Err(NoRoute::Redirect(_)) if !path.ends_with('/') => Err(NoRoute::NotFound),
        Err(NoRoute::NotFound) => Err(NoRoute::NotFound),
        found => return found,
    };
    let Some(raw) = segments(path) else {
        return decoded;
    };
    let segments: Vec<Cow<'_, str>> = raw.iter().map(|segment| decode_path(segment)).collect();
    let segments: Vec<&str> = segments.iter().map(|segment| segment.as_ref()).collect();
    let get = if method == "HEAD" { "GET" } else { method };
    let mut has_path = false;
    for entry in TABLE
        .iter()
        .filter(|entry| ONE_SEGMENT_NAMES.contains(&entry.path))
    {
        if let Some(route) = entry.take(&segments) {
            if entry.method == get {
                return Ok(Routed { route, entry });
            }
            has_path = true;
        }
    }
    if has_path {
        Err(NoRoute::MethodNotAllowed)
    } else {
        decoded
    }
}

/// The methods that the routes of `path` take, in the table's order (`HEAD` is
/// not listed: it goes wherever `GET` does); none when no route has the path.
pub fn methods(path: &str) -> Vec<&'static str> {
    let Some(segments) = segments(path) else {
        return Vec::new();
    };
    TABLE
        .iter()
        .filter(|entry| entry.take(&segments).is_some())
        .map(|entry| entry.method)
        .collect()
}

/// The label of the route that `method` and the raw (not yet decoded) `path`
/// reach, or `unrouted`.
pub fn label(method: &str, path: &str) -> &'static str {
    route_raw(method, path).map_or(UNROUTED, |routed| routed.entry.label)
}

/// The label of a request that no route takes.
pub const UNROUTED: &str = "unrouted";

/// A path's segments; `None` when it does not start with `/` or has an empty
/// segment (`//health`, `/tokens/`).
fn segments(path: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    (!segments.iter().any(|segment| segment.is_empty())).then_some(segments)
}

/// A route of `/schedules/:name...`, of the schedule's name.
fn schedule(make: fn(String) -> ScheduleRoute, params: &[&str]) -> Option<Route> {
    Some(Route::Schedule(make(params[0].into())))
}

/// A route of `/notify/:name...`, of the subscription's name.
fn notify(make: fn(String) -> NotifyRoute, params: &[&str]) -> Option<Route> {
    Some(Route::Notify(make(params[0].into())))
}

fn task_id(part: &str) -> Option<TaskId> {
    if !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = part.trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    Some(match digits.parse::<i64>() {
        Ok(id) => TaskId::Id(id),
        Err(_) => TaskId::TooLarge(digits.to_string()),
    })
}

/// Percent-decode a path (the `percent-encoding` crate); bytes that are not UTF-8
/// become U+FFFD, and a `%` not followed by two hex digits stays as it is.
/// Borrows `path` when there is nothing to decode.
pub fn decode_path(path: &str) -> Cow<'_, str> {
    percent_decode_str(path).decode_utf8_lossy()
}

/// The query's name and value pairs, in order, decoded as an HTML form's are
/// (the `form_urlencoded` crate: `+` is a space). A part without `=` has an empty
/// value; empty parts are skipped.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(method: &str, path: &str) -> Result<Route, NoRoute> {
        route(method, path).map(|routed| routed.route)
    }

    #[test]
    fn the_table_lists_every_route_with_its_access() {
        let listed: Vec<String> = TABLE
            .iter()
            .map(|entry| format!("{} {}", entry.label, entry.access.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                "GET /health public",
                "GET /workflow follow",
                "POST /tokens operate",
                "GET /tokens read",
                "POST /tokens/bulk operate",
                "GET /tokens/:id read",
                "GET /tokens/:id/history read",
                "POST /tokens/:id/events/:event operate",
                "POST /tokens/:id/pause operate",
                "POST /tokens/:id/resume operate",
                "POST /tokens/:id/cancel operate",
                "POST /tokens/:id/retry operate",
                "GET /tokens/:id/why read",
                "GET /tokens/:id/detail read",
                "POST /tasks/claim supervise",
                "POST /tasks/heartbeat supervise",
                "POST /tasks/:id/report supervise",
                "POST /tasks/:id/note supervise",
                "PUT /tasks/:id/memory supervise",
                "GET /watch follow",
                "GET /supervisors read",
                "POST /supervisors/:name/stop supervise",
                "GET /states read",
                "GET /graphs read",
                "GET /graphs/:checksum read",
                "GET /metrics read",
                "GET /journal read",
                "POST /hooks/:name public",
                "GET /hooks read",
                "POST /clock/advance admin",
                "POST /clock/freeze admin",
                "POST /clock/thaw admin",
                "GET /access admin",
                "POST /access admin",
                "DELETE /access/:name admin",
                "GET /access/callers admin",
                "GET /access/self follow",
                "POST /tasks/:id/usage supervise",
                "PUT /tokens/:id/budget operate",
                "GET /budgets read",
                "PUT /budgets/:name admin",
                "DELETE /budgets/:name admin",
                "POST /schedules operate",
                "GET /schedules read",
                "GET /schedules/:name read",
                "DELETE /schedules/:name operate",
                "POST /schedules/:name/pause operate",
                "POST /schedules/:name/resume operate",
                "POST /schedules/:name/trigger operate",
                "POST /notify admin",
                "GET /notify admin",
                "GET /notify/:name admin",
                "DELETE /notify/:name admin",
                "POST /notify/:name/pause admin",
                "POST /notify/:name/resume admin",
                "POST /notify/:name/rotate admin",
                "POST /notify/:name/test admin",
                "POST /notify/:name/redeliver admin",
                "GET /notifications/failed admin",
                "GET /limits read",
                "PUT /tokens/:id/priority operate",
                "PUT /limits/:name admin",
                "DELETE /limits/:name admin",
                "GET /retry-policies read",
                "PUT /retry-policies/:name admin",
                "DELETE /retry-policies/:name admin",
            ]
        );
    }

    #[test]
    fn each_entry_routes_its_own_template_to_itself() {
        for entry in TABLE {
            let path = entry
                .path
                .replace(":id", "7")
                .replace(":event", "done")
                .replace(":name", "box")
                .replace(":checksum", "sha256:ab");
            let routed = route(entry.method, &path).unwrap();
            assert_eq!(routed.entry.label, entry.label, "{path}");
        }
    }

    /// Each case: a method and a path, and the route they find.
    fn each_is_found(cases: &[(&str, &str, Route)]) {
        for (method, path, expected) in cases {
            assert_eq!(
                found(method, path).as_ref(),
                Ok(expected),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn each_route_of_the_reference_is_found_with_its_parameters() {
        let token = || "T-1".to_string();
        each_is_found(&[
            ("POST", "/tokens", Route::Start),
            ("GET", "/tokens", Route::List),
            ("GET", "/tokens/T-1", Route::Token(token())),
            ("HEAD", "/tokens/T-1/history", Route::History(token())),
            (
                "POST",
                "/tokens/T-1/events/done",
                Route::Fire(token(), "done".into()),
            ),
            ("POST", "/tokens/T-1/cancel", Route::Cancel(token())),
            ("GET", "/health", Route::Health),
            ("POST", "/clock/advance", Route::Clock(ClockMove::Advance)),
            ("POST", "/tasks/claim", Route::Claim),
            ("POST", "/tasks/007/report", Route::Report(TaskId::Id(7))),
            ("PUT", "/tasks/1/memory", Route::Memory(TaskId::Id(1))),
            (
                "POST",
                "/tasks/99999999999999999999/note",
                Route::Note(TaskId::TooLarge("99999999999999999999".into())),
            ),
        ]);
        assert_eq!(
            route("POST", "/tokens/T-1/events/done").map(|r| r.entry.label),
            Ok("POST /tokens/:id/events/:event")
        );
    }

    #[test]
    fn our_routes_are_found_and_a_token_named_like_one_is_still_read() {
        let token = || "T-1".to_string();
        each_is_found(&[
            ("POST", "/tokens/bulk", Route::Bulk),
            ("GET", "/tokens/bulk", Route::Token("bulk".into())),
            ("POST", "/tokens/T-1/retry", Route::Retry(token())),
            ("HEAD", "/tokens/T-1/why", Route::Why(token())),
            ("GET", "/tokens/T-1/detail", Route::Detail(token())),
            ("GET", "/watch", Route::Watch),
            ("HEAD", "/metrics", Route::Metrics),
            (
                "POST",
                "/supervisors/box-1/stop",
                Route::SupervisorStop("box-1".into()),
            ),
        ]);
        for (method, path) in [
            ("GET", "/tokens/T-1/retry"),
            ("POST", "/tokens/T-1/why"),
            ("POST", "/watch"),
            ("PUT", "/tokens/bulk"),
            ("GET", "/tokens/T-1/pause"),
            ("OPTIONS", "/health"),
            ("POST", "/tasks/5/memory"),
            ("GET", "/supervisors/box/stop"),
        ] {
            let refused = found(method, path);
            assert_eq!(refused, Err(NoRoute::MethodNotAllowed), "{method} {path}");
        }
        assert_eq!(methods("/tokens/bulk"), ["POST", "GET"]);
        assert_eq!(found("POST", "/tokens//retry"), Err(NoRoute::NotFound));
        for (path, bare) in [("/tokens/bulk/", "/tokens/bulk"), ("/watch/", "/watch")] {
            assert_eq!(found("POST", path), Err(NoRoute::Redirect(bare.into())));
        }
    }

    #[test]
    fn an_unknown_path_is_404_and_one_with_a_trailing_slash_307() {
        for path in [
            "/nothing",
            "/",
            "//health",
            "/tasks/abc/report",
            "/tasks/-1/report",
            "/tokens/T/1",
        ] {
            assert_eq!(found("GET", path), Err(NoRoute::NotFound), "{path}");
        }
        assert_eq!(
            found("GET", "/tokens/"),
            Err(NoRoute::Redirect("/tokens".into()))
        );
        assert_eq!(found("GET", "/nothing/"), Err(NoRoute::NotFound));
        assert_eq!(methods("/tokens"), ["POST", "GET"]);
        assert_eq!(methods("/tasks/abc/report"), Vec::<&str>::new());
    }

    #[test]
    fn a_workflow_or_a_child_state_with_a_slash_is_one_segment_of_its_routes() {
        let route = |method, path| route_raw(method, path).map(|routed| routed.route);
        assert_eq!(
            route("PUT", "/budgets/team%2Forders"),
            Ok(Route::BudgetSet("team/orders".into()))
        );
        assert_eq!(
            route("DELETE", "/retry-policies/legal%2Fcheck"),
            Ok(Route::RetryPolicyRemove("legal/check".into()))
        );
        assert_eq!(
            route("POST", "/supervisors/team%2Fbox/stop"),
            Ok(Route::SupervisorStop("team/box".into()))
        );
        assert_eq!(
            route("GET", "/budgets/a%2Fb"),
            Err(NoRoute::MethodNotAllowed)
        );
        // Elsewhere the decoded path is matched, as the reference matches it.
        for path in ["/tokens/T%2F1", "/budgets/a/b", "/limits/a%2Fb"] {
            assert_eq!(route("PUT", path), Err(NoRoute::NotFound), "{path}");
        }
        assert_eq!(route("GET", "/budgets"), Ok(Route::Budgets));
        // A name that ends with an encoded slash is a name, not a trailing
        // slash: no redirect (it pointed to itself).
        assert_eq!(
            route("PUT", "/retry-policies/legal%2F"),
            Ok(Route::RetryPolicySet("legal/".into()))
        );
        assert_eq!(route("GET", "/tokens/T-1%2F"), Err(NoRoute::NotFound));
        assert!(matches!(
            route("GET", "/tokens/T-1/"),
            Err(NoRoute::Redirect(_))
        ));
    }

    #[test]
    fn paths_and_queries_are_percent_decoded() {
        assert_eq!(decode_path("/tokens/T%2F1"), "/tokens/T/1");
        assert_eq!(decode_path("100%"), "100%");
        assert_eq!(decode_path("%ff"), "\u{fffd}");
        assert_eq!(query_pairs("q=a+b%20c"), vec![("q".into(), "a b c".into())]);
        assert_eq!(
            query_pairs("status=active&limit&&x=1=2"),
            vec![
                ("status".into(), "active".into()),
                ("limit".into(), "".into()),
                ("x".into(), "1=2".into())
            ]
        );
    }

    #[test]
    fn each_route_is_labelled_by_its_template() {
        assert_eq!(label("POST", "/tokens/A%2F1/pause"), UNROUTED);
        assert_eq!(label("POST", "/tokens/A-1/pause"), "POST /tokens/:id/pause");
        assert_eq!(label("GET", "/tokens/A-1/detail"), "GET /tokens/:id/detail");
        assert_eq!(label("GET", "/states"), "GET /states");
        assert_eq!(label("HEAD", "/states"), "GET /states");
        assert_eq!(label("POST", "/tokens/A-1/retry"), "POST /tokens/:id/retry");
        assert_eq!(label("POST", "/tokens/bulk"), "POST /tokens/bulk");
        assert_eq!(label("GET", "/nothing"), UNROUTED);
    }
}
