//! What the server measures of each request for `GET /metrics` (issue 12, item
//! 7): how long its answer took, by route, and its refusal code, if any (the
//! answer carries it: [`super::refusal`]).
//!
//! A route is named by its template (`POST /tokens/:id/pause`), so the labels
//! stay as few as the routes; a path no route has counts as `unrouted`.

use std::time::Instant;

use hyper::{Method, Response};
use stateous_shared::refusal::Code;

use super::{added, routes, Api};

/// A request being answered: its route's name and when it came.
pub struct Measured {
    route: &'static str,
    since: Instant,
}

impl Api {
    /// Start measuring a request of `method` to `path`.
    pub fn measure(&self, method: &Method, path: &str) -> Measured {
        Measured {
            route: route_label(method, path),
            since: Instant::now(),
        }
    }

    /// The request of `measured` was answered with `answer`.
    pub fn measured<B>(&self, measured: Measured, answer: &Response<B>) {
        let refused = answer.extensions().get::<Code>().copied();
        self.control
            .metrics()
            .answered(measured.route, measured.since.elapsed(), refused);
    }
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
