//! The wire shapes of notifications (`docs/notifications.md`; `docs/reference/http.md`,
//! "Notifications"): the body that adds a subscription, what the control plane says
//! of each, of each notification and of each delivery attempt.

use serde::{Deserialize, Serialize};

/// The kind of a subscription that fires when a token stayed in a state longer
/// than its `no_move_for`; every other kind is a ledger entry's kind.
pub const NO_MOVE: &str = "no_move";

/// The kind of the notification that `POST /notify/{name}/test` sends.
pub const TEST: &str = "test";

/// The refusal of a subscription that names no kind (`kinds: []`, or
/// `notify add --kinds ''`): left out, `kinds` means completed and failed.
pub const NO_KIND: &str =
    "'kinds' is empty: name at least one kind, or leave it out for completed and failed";

/// The body of `POST /notify`. Only `name` and `url` are needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewSubscription {
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`, a letter or digit first.
    pub name: String,
    /// Where notifications go: an `http://` or `https://` URL.
    pub url: String,
    /// The ledger entry kinds it is about (`entered`, `completed`, `failed`,
    /// `paused`, `task_failed`, `task_retrying`, `budget_exceeded`, ...), and
    /// `no_move` with `no_move_for`. By default `completed` and `failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Only entries of tokens in these states (for `entered`: the state entered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    /// Only tokens of this workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Only tokens that match this filter (the language of `token list --where`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// `json` (the default) or `slack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// With the kind `no_move`: how long a token stays in a state before one
    /// notification of its visit, e.g. `2h`; at least 1 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_move_for: Option<String>,
}

/// The fields a body of `POST /notify` may have.
pub const NEW_SUBSCRIPTION_FIELDS: [&str; 8] = [
    "name",
    "url",
    "kinds",
    "states",
    "workflow",
    "filter",
    "format",
    "no_move_for",
];

/// How many notifications of a subscription are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Not delivered yet and never tried.
    pub pending: i64,
    /// Not delivered yet, tried and failed at least once.
    pub retrying: i64,
    /// Delivered (a 2xx answer).
    pub delivered: i64,
    /// Given up after the limit: `stateous notify failed` lists them.
    pub dead: i64,
}

/// What the control plane says of a subscription; never its secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionView {
    /// Its name.
    pub name: String,
    /// Where its notifications go.
    pub url: String,
    /// The kinds it is about.
    pub kinds: Vec<String>,
    /// The states it is narrowed to (empty: any).
    #[serde(default)]
    pub states: Vec<String>,
    /// The workflow it is narrowed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The filter it is narrowed by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// `json` or `slack`.
    pub format: String,
    /// `no_move`: after how many seconds in a state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_move_seconds: Option<f64>,
    /// `active` or `paused` (a paused subscription writes no notification and
    /// sends none).
    pub status: String,
    /// How many secrets sign its notifications (2 during a rotation).
    pub secrets: usize,
    /// Its notifications, by where they are.
    pub counts: Counts,
    /// When it was added.
    pub created: String,
    /// When its settings last changed.
    pub changed: String,
    /// *Ours*: its queue waits for a receiver it could not reach (the
    /// connection refused, no such host, the TLS or HTTP handshake failed);
    /// absent while the receiver is reached, and for a paused subscription.
    /// Kept in the daemon's memory only: after a restart the queue finds out
    /// again at its first attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<Unreachable>,
}

/// A queue that waits for a receiver it could not reach
/// (`docs/notifications.md`, "A receiver that cannot be reached"):
/// `{"since": "2026-12-07T22:30:01.512345Z", "reason": "cannot connect: ...",
/// "next_try": "2026-12-07T22:30:09Z"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreachable {
    /// The first attempt that could not reach the receiver, of those in a row
    /// (ISO 8601, UTC).
    pub since: String,
    /// Why the latest attempt could not reach it, as that attempt recorded
    /// it (and the daemon's log says it).
    pub reason: String,
    /// When the queue tries again (ISO 8601, UTC): the end of its wait, or
    /// sooner on `notify test`, `redeliver` or `resume`. Absent when it has
    /// nothing due to try (those it had died at their limit): it tries the
    /// next notification when that is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_try: Option<String>,
}

impl Unreachable {
    /// In words: `the receiver cannot be reached since SINCE: REASON; next
    /// try at NEXT`.
    pub fn sentence(&self) -> String {
        let next = match &self.next_try {
            Some(at) => format!("next try at {at}"),
            None => "the next notification is tried when it is due".to_string(),
        };
        format!(
            "the receiver cannot be reached since {}: {}; {next}",
            self.since, self.reason
        )
    }
}

/// The answer of `POST /notify` and of `POST /notify/{name}/rotate`: the view,
/// and the new secret, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionAdded {
    /// The subscription.
    pub subscription: SubscriptionView,
    /// The new signing secret, `whsec_` and base64: shown only here.
    pub secret: String,
}

/// The answer of `GET /notify`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionList {
    /// Every subscription, by name.
    pub subscriptions: Vec<SubscriptionView>,
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptView {
    /// The notification.
    pub notification: i64,
    /// 1, 2, 3 ... per notification.
    pub attempt: i64,
    /// When it was sent.
    pub at: String,
    /// The HTTP status of the answer; none when no answer came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// From sending to the end of the answer, in milliseconds.
    pub latency_ms: f64,
    /// Why it failed; none for a delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotificationView {
    /// Its id: the `webhook-id` is `msg_` and this.
    pub id: i64,
    /// Its subscription.
    pub subscription: String,
    /// The token.
    pub token: String,
    /// The ledger entry's kind, or `no_move` or `test`.
    pub kind: String,
    /// The ledger entry's id, when one caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<i64>,
    /// `pending`, `delivered` or `dead`.
    pub status: String,
    /// How many times it was sent.
    pub attempts: i64,
    /// Why the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it was written.
    pub created: String,
}

/// The answer of `GET /notify/{name}`: the subscription, its latest attempts
/// (newest first) and its notifications not delivered yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionDetail {
    /// The subscription.
    pub subscription: SubscriptionView,
    /// Its latest delivery attempts, newest first.
    pub attempts: Vec<AttemptView>,
}

/// The answer of `GET /notify/failed`: dead notifications, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedList {
    /// The dead notifications.
    pub failed: Vec<NotificationView>,
}

/// The answer of `POST /notify/{name}/redeliver` and `POST /notify/{name}/test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    /// How many notifications were queued.
    pub queued: i64,
}
