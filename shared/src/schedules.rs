//! The wire shapes of schedules (`docs/reference/http.md`, "Schedules";
//! `docs/schedules.md`): the body that adds one, and what the control plane says of
//! each.

use serde::{Deserialize, Serialize};

use crate::wire::Object;

/// The body of `POST /schedules`. Only `name` and `spec` are needed; each field
/// left out takes its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewSchedule {
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`, a letter or digit first.
    pub name: String,
    /// A cron expression (5 fields, or 6 with seconds first) or an interval,
    /// `every 15m`.
    pub spec: String,
    /// The IANA time zone the cron expression is read in; `UTC` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The token id template; `{schedule}-{occurrence}` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The context template; `{}` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Object>,
    /// The most an occurrence's start moves after its moment, e.g. `30s`; none
    /// by default; at most `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// `skip` (the default), `buffer_one` or `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<String>,
    /// `none`, `latest` (the default) or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
    /// With `all`: how far back a missed occurrence still starts, e.g. `6h`;
    /// `1d` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// With `all`: the most starts of one catch-up, 1 to 1000; 10 by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<i64>,
    /// Change the schedule of this name if there is one (else 409
    /// `schedule_exists`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

/// The fields a body of `POST /schedules` may have.
pub const NEW_SCHEDULE_FIELDS: [&str; 11] = [
    "name", "spec", "zone", "token", "context", "jitter", "overlap", "catch_up", "window", "cap",
    "replace",
];

/// One coming occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coming {
    /// Its moment in UTC (ISO 8601 with `Z`).
    pub at: String,
    /// Its moment on the schedule's wall clock, with the zone's offset.
    pub local: String,
    /// The token it starts.
    pub token: String,
}

/// An occurrence that started nothing, and why (from the journal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The occurrence's moment in UTC (the first of a run of them).
    pub occurrence: String,
    /// How many occurrences the entry stands for (a run missed in an outage).
    pub count: i64,
    /// Why.
    pub reason: String,
}

/// What the control plane says of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleView {
    /// Its name.
    pub name: String,
    /// Its spec, as given.
    pub spec: String,
    /// Its time zone.
    pub zone: String,
    /// Its token id template.
    pub token: String,
    /// Its context template.
    pub context: Object,
    /// Its jitter, in seconds.
    pub jitter_seconds: f64,
    /// `skip`, `buffer_one` or `allow`.
    pub overlap: String,
    /// `none`, `latest` or `all`.
    pub catch_up: String,
    /// Its catch-up window, in seconds.
    pub window_seconds: f64,
    /// Its catch-up cap.
    pub cap: i64,
    /// `active` or `paused`.
    pub status: String,
    /// The next occurrences (three, or fewer when fewer come); none while paused.
    pub next: Vec<Coming>,
    /// The token of the last occurrence that started one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token: Option<String>,
    /// That token's status now (`active`, `completed`, ...; `pruned` when it is
    /// gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<String>,
    /// The occurrence waiting for the live token to end (`buffer_one`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffered: Option<String>,
    /// The latest occurrences that started nothing, newest first.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// When it was added.
    pub created: String,
    /// When its settings last changed (added, changed, paused, resumed).
    pub changed: String,
}

/// The answer of `GET /schedules`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleList {
    /// Every schedule, by name.
    pub schedules: Vec<ScheduleView>,
}

/// The answer of `POST /schedules/{name}/trigger`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Triggered {
    /// `started`, `skipped` (by the overlap policy, or a token of that id
    /// exists) or `buffered`.
    pub outcome: String,
    /// The token the occurrence starts (or would have started).
    pub token: String,
    /// Why it started nothing, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
