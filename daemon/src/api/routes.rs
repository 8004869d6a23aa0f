//! The route table of the API (`docs/reference/http.md`): a method and a path become
//! a [`Route`] with its path parameters, or the reason there is none.
//!
//! Paths are matched after percent-decoding, as the reference matches them, so
//! `/tokens/T%2F1` is the path `/tokens/T/1`, which no route has. A task id in a
//! path is digits; one larger than a database integer names no task. A path with
//! a trailing slash that would match without it is redirected (307), as the
//! reference's router does. `HEAD` is answered wherever `GET` is.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

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

impl Route {
    /// The route as the metrics name it: its method and its path with the
    /// parameters as `:name` (braces would trip simple parsers of the text format),
    /// so that one label stands for every token.
    pub fn template(&self) -> &'static str {
        match self {
            Route::Start => "POST /tokens",
            Route::List => "GET /tokens",
            Route::Token(_) => "GET /tokens/:id",
            Route::History(_) => "GET /tokens/:id/history",
            Route::Fire(..) => "POST /tokens/:id/events/:event",
            Route::Pause(_) => "POST /tokens/:id/pause",
            Route::Resume(_) => "POST /tokens/:id/resume",
            Route::Cancel(_) => "POST /tokens/:id/cancel",
            Route::Workflow => "GET /workflow",
            Route::Health => "GET /health",
            Route::Claim => "POST /tasks/claim",
            Route::Heartbeat => "POST /tasks/heartbeat",
            Route::Report(_) => "POST /tasks/:id/report",
            Route::Note(_) => "POST /tasks/:id/note",
            Route::Memory(_) => "PUT /tasks/:id/memory",
            Route::Clock(ClockMove::Advance) => "POST /clock/advance",
            Route::Clock(ClockMove::Freeze) => "POST /clock/freeze",
            Route::Clock(ClockMove::Thaw) => "POST /clock/thaw",
        }
    }
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
pub fn route(method: &str, path: &str) -> Result<Route, NoRoute> {
    let method = if method == "HEAD" { "GET" } else { method };
    match candidates(path) {
        Some(routes) => routes
            .into_iter()
            .find(|(allowed, _)| *allowed == method)
            .map(|(_, route)| route)
            .ok_or(NoRoute::MethodNotAllowed),
        None => match path.strip_suffix('/') {
            Some(bare) if !bare.is_empty() && candidates(bare).is_some() => {
                Err(NoRoute::Redirect(bare.to_string()))
            }
            _ => Err(NoRoute::NotFound),
        },
    }
}

/// The methods that the routes of `path` take (`HEAD` is not listed: it goes
/// wherever `GET` does); none when no route has the path.
pub fn methods(path: &str) -> Vec<&'static str> {
    candidates(path)
        .unwrap_or_default()
        .into_iter()
        .map(|(method, _)| method)
        .collect()
}

/// The routes that a path matches, each with its method; `None` when no route
/// has the path.
fn candidates(path: &str) -> Option<Vec<(&'static str, Route)>> {
    let rest = path.strip_prefix('/')?;
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|part| part.is_empty()) {
        return None;
    }
    let owned = |part: &str| part.to_string();
    let found = match parts.as_slice() {
        ["tokens"] => vec![("POST", Route::Start), ("GET", Route::List)],
        ["tokens", id] => vec![("GET", Route::Token(owned(id)))],
        ["tokens", id, "history"] => vec![("GET", Route::History(owned(id)))],
        ["tokens", id, "events", event] => vec![("POST", Route::Fire(owned(id), owned(event)))],
        ["tokens", id, "pause"] => vec![("POST", Route::Pause(owned(id)))],
        ["tokens", id, "resume"] => vec![("POST", Route::Resume(owned(id)))],
        ["tokens", id, "cancel"] => vec![("POST", Route::Cancel(owned(id)))],
        ["workflow"] => vec![("GET", Route::Workflow)],
        ["health"] => vec![("GET", Route::Health)],
        ["tasks", "claim"] => vec![("POST", Route::Claim)],
        ["tasks", "heartbeat"] => vec![("POST", Route::Heartbeat)],
        ["tasks", id, "report"] => vec![("POST", Route::Report(task_id(id)?))],
        ["tasks", id, "note"] => vec![("POST", Route::Note(task_id(id)?))],
        ["tasks", id, "memory"] => vec![("PUT", Route::Memory(task_id(id)?))],
        ["clock", "advance"] => vec![("POST", Route::Clock(ClockMove::Advance))],
        ["clock", "freeze"] => vec![("POST", Route::Clock(ClockMove::Freeze))],
        ["clock", "thaw"] => vec![("POST", Route::Clock(ClockMove::Thaw))],
        _ => return None,
    };
    Some(found)
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

/// Percent-decode a path or a query part (the `percent-encoding` crate); bytes
/// that are not UTF-8 become U+FFFD, and a `%` not followed by two hex digits
/// stays as it is. With `plus_is_space`, `+` is a space (query strings). Borrows
/// `text` when there is nothing to decode.
pub fn decode(text: &str, plus_is_space: bool) -> Cow<'_, str> {
    if plus_is_space && text.contains('+') {
        let spaced = text.replace('+', " ");
        return Cow::Owned(percent_decode_str(&spaced).decode_utf8_lossy().into_owned());
    }
    percent_decode_str(text).decode_utf8_lossy()
}

/// The query's name and value pairs, in order. A part without `=` has an empty
/// value; empty parts are skipped.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            (
                decode(name, true).into_owned(),
                decode(value, true).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_of_the_reference_is_found_with_its_parameters() {
        assert_eq!(route("POST", "/tokens"), Ok(Route::Start));
        assert_eq!(route("GET", "/tokens"), Ok(Route::List));
        assert_eq!(route("GET", "/tokens/T-1"), Ok(Route::Token("T-1".into())));
        assert_eq!(
            route("HEAD", "/tokens/T-1/history"),
            Ok(Route::History("T-1".into()))
        );
        assert_eq!(
            route("POST", "/tokens/T-1/events/done"),
            Ok(Route::Fire("T-1".into(), "done".into()))
        );
        assert_eq!(
            route("POST", "/tokens/T-1/cancel"),
            Ok(Route::Cancel("T-1".into()))
        );
        assert_eq!(route("GET", "/health"), Ok(Route::Health));
        assert_eq!(
            route("POST", "/clock/advance"),
            Ok(Route::Clock(ClockMove::Advance))
        );
        assert_eq!(
            route("POST", "/tokens/T-1/events/done").map(|r| r.template()),
            Ok("POST /tokens/:id/events/:event")
        );
        assert_eq!(route("POST", "/tasks/claim"), Ok(Route::Claim));
        assert_eq!(
            route("POST", "/tasks/007/report"),
            Ok(Route::Report(TaskId::Id(7)))
        );
        assert_eq!(
            route("PUT", "/tasks/1/memory"),
            Ok(Route::Memory(TaskId::Id(1)))
        );
        assert_eq!(
            route("POST", "/tasks/99999999999999999999/note"),
            Ok(Route::Note(TaskId::TooLarge("99999999999999999999".into())))
        );
    }

    #[test]
    fn a_wrong_method_is_405_and_an_unknown_path_404() {
        assert_eq!(
            route("GET", "/tokens/T-1/pause"),
            Err(NoRoute::MethodNotAllowed)
        );
        assert_eq!(route("OPTIONS", "/health"), Err(NoRoute::MethodNotAllowed));
        assert_eq!(
            route("POST", "/tasks/5/memory"),
            Err(NoRoute::MethodNotAllowed)
        );
        for path in [
            "/nothing",
            "/",
            "//health",
            "/tasks/abc/report",
            "/tasks/-1/report",
            "/tokens/T/1",
        ] {
            assert_eq!(route("GET", path), Err(NoRoute::NotFound), "{path}");
        }
        assert_eq!(
            route("GET", "/tokens/"),
            Err(NoRoute::Redirect("/tokens".into()))
        );
        assert_eq!(route("GET", "/nothing/"), Err(NoRoute::NotFound));
        assert_eq!(methods("/tokens"), ["POST", "GET"]);
        assert_eq!(methods("/tasks/abc/report"), Vec::<&str>::new());
    }

    #[test]
    fn paths_and_queries_are_percent_decoded() {
        assert_eq!(decode("/tokens/T%2F1", false), "/tokens/T/1");
        assert_eq!(decode("a+b%20c", true), "a b c");
        assert_eq!(decode("100%", false), "100%");
        assert_eq!(decode("%ff", false), "\u{fffd}");
        assert_eq!(
            query_pairs("status=active&limit&&x=1=2"),
            vec![
                ("status".into(), "active".into()),
                ("limit".into(), "".into()),
                ("x".into(), "1=2".into())
            ]
        );
    }
}
