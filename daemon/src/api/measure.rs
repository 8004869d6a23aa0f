//! What the server measures of each request for `GET /metrics` (issue 12, item
//! 7): how long its answer took, by route, and its refusal code, if any (the
//! answer carries it: [`super::refusal`]).
//!
//! A route is named by its template (`POST /tokens/:id/pause`), so the labels
//! stay as few as the routes; a path no route has counts as `unrouted`. The answer
//! carries its route's name ([`RouteLabel`]), set where the request was routed,
//! so that a request is routed once (issue "Speed": routing it a second time for
//! the label was about 4% of the request threads' instructions).

use std::time::Instant;

use hyper::{Method, Response};
use stateous_shared::refusal::Code;

use super::{added, routes, Api};

/// The template of the route an answer was given for, carried as an extension of
/// the answer; an answer without one counts as `unrouted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteLabel(pub &'static str);

/// A request being answered: when it came.
pub struct Measured {
    since: Instant,
}

impl Api {
    /// Start measuring a request.
    pub fn measure(&self) -> Measured {
        Measured {
            since: Instant::now(),
        }
    }

    /// The request of `measured` was answered with `answer`, labelled by its
    /// [`RouteLabel`].
    pub fn measured<B>(&self, measured: Measured, answer: &Response<B>) {
        let refused = answer.extensions().get::<Code>().copied();
        let route = answer
            .extensions()
            .get::<RouteLabel>()
            .map_or("unrouted", |label| label.0);
        self.control
            .metrics()
            .answered(route, measured.since.elapsed(), refused);
    }
}

/// `answer`, labelled with the route `route`.
pub fn labelled<B>(mut answer: Response<B>, route: &'static str) -> Response<B> {
    answer.extensions_mut().insert(RouteLabel(route));
    answer
}

/// The template of the route that `method` and `path` reach.
pub fn route_label(method: &Method, path: &str) -> &'static str {
    let path = routes::decode(path, false);
    if let Some(found) = super::operate::route(method.as_str(), &path) {
        return found.template();
    }
    if method == Method::GET || method == Method::HEAD {
        if let Some(label) = added::template(&path) {
            return label;
        }
    }
    match routes::route(method.as_str(), &path) {
        Ok(route) => route.template(),
        Err(_) => "unrouted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_named_by_its_template() {
        assert_eq!(
            route_label(&Method::POST, "/tokens/A%2F1/pause"),
            "unrouted"
        );
        assert_eq!(
            route_label(&Method::POST, "/tokens/A-1/pause"),
            "POST /tokens/:id/pause"
        );
        assert_eq!(
            route_label(&Method::GET, "/tokens/A-1/detail"),
            "GET /tokens/:id/detail"
        );
        assert_eq!(route_label(&Method::GET, "/states"), "GET /states");
        assert_eq!(
            route_label(&Method::POST, "/tokens/A-1/retry"),
            "POST /tokens/:id/retry"
        );
        assert_eq!(
            route_label(&Method::POST, "/tokens/bulk"),
            "POST /tokens/bulk"
        );
        assert_eq!(route_label(&Method::GET, "/nothing"), "unrouted");
    }
}
