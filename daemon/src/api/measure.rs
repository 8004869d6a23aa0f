//! `GET /metrics`, and what the server measures of each request for it: how long
//! its answer took, by route, and its refusal code, if any (the answer carries it:
//! [`super::refusal`]). The families themselves are `crate::metrics`.
//!
//! A route is named by its label in the route table (`POST /tokens/:id/pause`,
//! [`super::routes::TABLE`]), so the labels stay as few as the routes; a path no
//! route has counts as `unrouted`. The answer carries its route's label
//! ([`RouteLabel`]), set where the request was routed, so that a request is
//! routed once: routing it a second time for the label was about 4% of the
//! request threads' instructions.

use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;
use stateous_shared::refusal::{Code, Refusal};

use super::{routes, Api};

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
            .map_or(routes::UNROUTED, |label| label.0);
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

impl Api {
    /// `GET /metrics`: the families in Prometheus's text format.
    pub(super) async fn metrics(&self) -> Result<super::Answer, Refusal> {
        let (outbox, supervisors) = self.seen.outboxes();
        let heard = crate::metrics::Heard {
            outbox,
            supervisors,
            commits: self.control.commits(),
            claims_waiting: self.control.waiting_claims(),
        };
        let mut text = self.control.scrape(heard).await?;
        text.push_str(&notification_gauges(
            &self.control.notification_counts().await?,
        ));
        text.push_str(&unreachable_gauges(&self.control.receivers_unreachable()));
        let mut answer = Response::new(Full::new(Bytes::from(text)));
        answer.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        );
        Ok(answer)
    }
}

/// The family `stateous_notifications` (`docs/notifications.md`, "Seen"): each
/// subscription's notifications by where they are, read at the scrape (`delivered`
/// counts those still kept: retention deletes them after `serve --notify-keep`). A
/// subscription's name needs no escaping (`A-Z a-z 0-9 . _ -`); no secret is here.
fn notification_gauges(counts: &[(String, stateous_shared::notify::Counts)]) -> String {
    let mut text = String::from(
        "# HELP stateous_notifications Notifications of each subscription: pending, retrying, delivered (those kept, serve --notify-keep), dead.\n\
         # TYPE stateous_notifications gauge\n",
    );
    for (name, c) in counts {
        for (status, count) in [
            ("pending", c.pending),
            ("retrying", c.retrying),
            ("delivered", c.delivered),
            ("dead", c.dead),
        ] {
            text.push_str(&format!(
                "stateous_notifications{{subscription=\"{name}\",status=\"{status}\"}} {count}\n"
            ));
        }
    }
    text
}

/// The family `stateous_notify_receiver_unreachable` (`docs/notifications.md`,
/// "A receiver that cannot be reached"): for each subscription, 1 while its
/// queue waits for a receiver it could not reach, else 0 (a paused one, 0).
fn unreachable_gauges(subscriptions: &[(String, bool)]) -> String {
    let mut text = String::from(
        "# HELP stateous_notify_receiver_unreachable Whether each subscription's queue waits for a receiver it could not reach: 1, else 0.\n\
         # TYPE stateous_notify_receiver_unreachable gauge\n",
    );
    for (name, waits) in subscriptions {
        text.push_str(&format!(
            "stateous_notify_receiver_unreachable{{subscription=\"{name}\"}} {}\n",
            u8::from(*waits)
        ));
    }
    text
}
