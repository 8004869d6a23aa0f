//! Refusal codes: the closed list of reasons the control plane gives for saying no.
//!
//! The codes, their HTTP statuses and their meanings are the reference's, and are
//! listed in `docs/reference/http.md`, "Refusals". A program reads the code, never the
//! sentence; the sentence is for people.

use serde::{Deserialize, Serialize};

/// Why the control plane refused a request. The wire string is the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// 404: no token has this id.
    TokenNotFound,
    /// 404: no task has this id.
    TaskNotFound,
    /// 404: the API has no such path.
    NotFound,
    /// 405: the path does not take this method.
    MethodNotAllowed,
    /// 400 (413 for a body over 1 MiB, 414 for a path too long, 431 for a head too
    /// large): the request cannot be read.
    BadRequest,
    /// 422: a supervisor name, request id, status, limit or attempt is out of range.
    InvalidArgument,
    /// 422: a context or a context change does not agree with its model.
    InvalidContext,
    /// 422: a payload, schedule, note, memory write or idempotency key is not valid.
    InvalidPayload,
    /// 422: a token id breaks the pattern, or differs only in case from another.
    InvalidTokenId,
    /// 422: the body does not have the shape of the request.
    InvalidBody,
    /// 409: the event cannot move the token in its state.
    EventNotAllowed,
    /// 409: the token's status does not allow the request.
    TokenNotActive,
    /// 409: the token is a child of a parallel state; steer its top token.
    ChildToken,
    /// 409: the task is not this supervisor's, or no one works on it now.
    TaskNotHeld,
    /// 409: the request is for an attempt of the task that is over.
    AttemptOver,
    /// 503: the database cannot take the request now; try again.
    DatabaseBusy,
    /// 503: this control plane no longer holds the database.
    NotServing,
    /// 503: this control plane is a standby (`serve --standby`): it waits
    /// for the database's serving lock and answers only `GET /health` with this code.
    /// Ours, not the reference's: a client that knows several addresses tries the next.
    Standby,
    /// 401: a webhook delivery's signature is missing, stale or wrong
    /// (`POST /hooks/{name}`). Ours, not the reference's.
    BadSignature,
    /// 500: a failure that no other code names.
    Unexpected,
    /// 401: the request needs an access key and carries none, or one that is
    /// unknown or revoked (`docs/reference/http.md`, "Access"). Ours.
    Unauthenticated,
    /// 403: the request's access key has a role that does not allow it, or a
    /// supervise key acts for another supervisor; the sentence names the role
    /// needed. Ours.
    Forbidden,
    /// 404: no access key has this name. Ours.
    KeyNotFound,
    /// 409: an access key with this name exists already. Ours.
    KeyExists,
    /// 409: the token has used more than its budget, so it is not resumed until
    /// its budget is raised (`docs/concepts/budgets.md`). Ours.
    OverBudget,
    /// 422: a schedule's cron expression, time zone, interval, template or policy
    /// is not valid (`docs/schedules.md`). Ours.
    InvalidSchedule,
    /// 404: no schedule has this name. Ours.
    ScheduleNotFound,
    /// 409: a schedule with this name exists already (add it with `replace` to
    /// change it). Ours.
    ScheduleExists,
    /// 422: a subscription's URL is not http(s), its filter does not parse, it
    /// names an unknown state, workflow or kind, or its `no_move_for` is under
    /// 1 s (`docs/notifications.md`). Ours.
    InvalidSubscription,
    /// 404: no subscription has this name. Ours.
    SubscriptionNotFound,
    /// 409: a subscription with this name exists already. Ours.
    SubscriptionExists,
    /// 422: a limit's name, states, `max`, `per` expression or rate is not valid
    /// (`docs/limits.md`). Ours.
    InvalidLimit,
    /// 404: no limit has this name. Ours.
    LimitNotFound,
}

impl Code {
    /// Every code, in the order of the reference's table.
    pub const ALL: [Code; 33] = [
        Code::TokenNotFound,
        Code::TaskNotFound,
        Code::NotFound,
        Code::MethodNotAllowed,
        Code::BadRequest,
        Code::InvalidArgument,
        Code::InvalidContext,
        Code::InvalidPayload,
        Code::InvalidTokenId,
        Code::InvalidBody,
        Code::EventNotAllowed,
        Code::TokenNotActive,
        Code::ChildToken,
        Code::TaskNotHeld,
        Code::AttemptOver,
        Code::DatabaseBusy,
        Code::NotServing,
        Code::Standby,
        Code::BadSignature,
        Code::Unexpected,
        Code::Unauthenticated,
        Code::Forbidden,
        Code::KeyNotFound,
        Code::KeyExists,
        Code::OverBudget,
        Code::InvalidSchedule,
        Code::ScheduleNotFound,
        Code::ScheduleExists,
        Code::InvalidSubscription,
        Code::SubscriptionNotFound,
        Code::SubscriptionExists,
        Code::InvalidLimit,
        Code::LimitNotFound,
    ];

    /// The HTTP status that carries this code (`bad_request` may also travel as 413,
    /// 414 or 431).
    pub fn status(self) -> u16 {
        match self {
            Code::TokenNotFound | Code::TaskNotFound | Code::NotFound => 404,
            Code::MethodNotAllowed => 405,
            Code::BadRequest => 400,
            Code::InvalidArgument
            | Code::InvalidContext
            | Code::InvalidPayload
            | Code::InvalidTokenId
            | Code::InvalidBody => 422,
            Code::EventNotAllowed
            | Code::TokenNotActive
            | Code::ChildToken
            | Code::TaskNotHeld
            | Code::AttemptOver => 409,
            Code::DatabaseBusy | Code::NotServing | Code::Standby => 503,
            Code::BadSignature => 401,
            Code::Unexpected => 500,
            Code::Unauthenticated => 401,
            Code::Forbidden => 403,
            Code::KeyNotFound => 404,
            Code::KeyExists => 409,
            Code::OverBudget => 409,
            Code::InvalidSchedule => 422,
            Code::ScheduleNotFound => 404,
            Code::ScheduleExists => 409,
            Code::InvalidSubscription => 422,
            Code::SubscriptionNotFound => 404,
            Code::SubscriptionExists => 409,
            Code::InvalidLimit => 422,
            Code::LimitNotFound => 404,
        }
    }

    /// The code as it travels: `attempt_over`, `token_not_found`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Code::TokenNotFound => "token_not_found",
            Code::TaskNotFound => "task_not_found",
            Code::NotFound => "not_found",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::BadRequest => "bad_request",
            Code::InvalidArgument => "invalid_argument",
            Code::InvalidContext => "invalid_context",
            Code::InvalidPayload => "invalid_payload",
            Code::InvalidTokenId => "invalid_token_id",
            Code::InvalidBody => "invalid_body",
            Code::EventNotAllowed => "event_not_allowed",
            Code::TokenNotActive => "token_not_active",
            Code::ChildToken => "child_token",
            Code::TaskNotHeld => "task_not_held",
            Code::AttemptOver => "attempt_over",
            Code::DatabaseBusy => "database_busy",
            Code::NotServing => "not_serving",
            Code::Standby => "standby",
            Code::BadSignature => "bad_signature",
            Code::Unexpected => "unexpected",
            Code::Unauthenticated => "unauthenticated",
            Code::Forbidden => "forbidden",
            Code::KeyNotFound => "key_not_found",
            Code::KeyExists => "key_exists",
            Code::OverBudget => "over_budget",
            Code::InvalidSchedule => "invalid_schedule",
            Code::ScheduleNotFound => "schedule_not_found",
            Code::ScheduleExists => "schedule_exists",
            Code::InvalidSubscription => "invalid_subscription",
            Code::SubscriptionNotFound => "subscription_not_found",
            Code::SubscriptionExists => "subscription_exists",
            Code::InvalidLimit => "invalid_limit",
            Code::LimitNotFound => "limit_not_found",
        }
    }

    /// The code of a wire string, or `None` for a string that is not a code.
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|code| code.as_str() == text)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: a code and one sentence for people. On the wire it is
/// `{"error": "<sentence>", "code": "<code>"}` with the code's HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{error} ({code})")]
pub struct Refusal {
    /// The sentence, for people; it may change between versions.
    pub error: String,
    /// The code, for programs; it never changes.
    pub code: Code,
}

impl Refusal {
    /// A refusal with this code and sentence.
    pub fn new(code: Code, error: impl Into<String>) -> Refusal {
        Refusal {
            error: error.into(),
            code,
        }
    }

    /// The HTTP status of the refusal's code.
    pub fn status(&self) -> u16 {
        self.code.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_strings_match_the_documented_list() {
        let documented = [
            ("token_not_found", 404),
            ("task_not_found", 404),
            ("not_found", 404),
            ("method_not_allowed", 405),
            ("bad_request", 400),
            ("invalid_argument", 422),
            ("invalid_context", 422),
            ("invalid_payload", 422),
            ("invalid_token_id", 422),
            ("invalid_body", 422),
            ("event_not_allowed", 409),
            ("token_not_active", 409),
            ("child_token", 409),
            ("task_not_held", 409),
            ("attempt_over", 409),
            ("database_busy", 503),
            ("not_serving", 503),
            ("standby", 503),
            ("bad_signature", 401),
            ("unexpected", 500),
            ("unauthenticated", 401),
            ("forbidden", 403),
            ("key_not_found", 404),
            ("key_exists", 409),
            ("over_budget", 409),
            ("invalid_schedule", 422),
            ("schedule_not_found", 404),
            ("schedule_exists", 409),
            ("invalid_subscription", 422),
            ("subscription_not_found", 404),
            ("subscription_exists", 409),
            ("invalid_limit", 422),
            ("limit_not_found", 404),
        ];
        assert_eq!(Code::ALL.len(), documented.len());
        for (code, (text, status)) in Code::ALL.iter().zip(documented) {
            assert_eq!(code.as_str(), text);
            assert_eq!(code.status(), status);
            assert_eq!(Code::parse(text), Some(*code));
            assert_eq!(serde_json::to_value(code).unwrap(), text);
        }
    }
}
