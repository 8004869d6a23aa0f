//! The path of every route a client calls, written once outside the daemon's
//! route table (`docs/reference/http.md`).
//!
//! Fixed paths are constants, so that a scripted stand-in for the control plane
//! can match on them; paths with a name in them are built here, each name
//! percent-encoded whole by [`segment`], so that a name with a `/` never reaches
//! another route.

/// `GET /health`.
pub const HEALTH: &str = "/health";
/// `GET /workflow`.
pub const WORKFLOW: &str = "/workflow";
/// `GET /states` (ours).
pub const STATES: &str = "/states";
/// `GET /graphs` (ours).
pub const GRAPHS: &str = "/graphs";
/// `GET /supervisors` (ours).
pub const SUPERVISORS: &str = "/supervisors";
/// `GET /access` and `POST /access` (ours, admin).
pub const ACCESS: &str = "/access";

/// `GET /access/callers` (ours, admin): the TCP callers without a key seen lately.
pub const ACCESS_CALLERS: &str = "/access/callers";

/// `GET /access/self` (ours, any caller): the caller's own key.
pub const ACCESS_SELF: &str = "/access/self";
/// `GET /tokens` and `POST /tokens`.
pub const TOKENS: &str = "/tokens";
/// `POST /tokens/bulk` (ours).
pub const BULK: &str = "/tokens/bulk";
/// `POST /tasks/claim`.
pub const CLAIM: &str = "/tasks/claim";
/// `POST /tasks/heartbeat`.
pub const HEARTBEAT: &str = "/tasks/heartbeat";
/// `GET /watch` (ours).
pub const WATCH: &str = "/watch";
/// `POST /clock/advance` (ours, `serve --dev-clock`).
pub const CLOCK_ADVANCE: &str = "/clock/advance";
/// `POST /clock/freeze` (ours, `serve --dev-clock`).
pub const CLOCK_FREEZE: &str = "/clock/freeze";
/// `POST /clock/thaw` (ours, `serve --dev-clock`).
pub const CLOCK_THAW: &str = "/clock/thaw";

/// `/tokens/{id}`.
pub fn token(token: &str) -> String {
    format!("{TOKENS}/{}", segment(token))
}

/// `/tokens/{id}/{what}`: `history`, `detail`, `why`, `retry`, `pause`, ...
pub fn of_token(token: &str, what: &str) -> String {
    format!("{TOKENS}/{}/{what}", segment(token))
}

/// `/tokens/{id}/events/{event}`.
pub fn event(token: &str, event: &str) -> String {
    format!("{TOKENS}/{}/events/{}", segment(token), segment(event))
}

/// `/tokens?QUERY`, or `/tokens` when `pairs` is empty; each pair is
/// `name=value` with its value encoded already.
pub fn tokens(pairs: &[String]) -> String {
    if pairs.is_empty() {
        TOKENS.to_string()
    } else {
        format!("{TOKENS}?{}", pairs.join("&"))
    }
}

/// `GET /journal?subject=S[&name=N][&after=ID]` (ours): a page of the journal.
pub fn journal(subject: &str, name: Option<&str>, after: i64) -> String {
    let mut path = format!("/journal?subject={}", segment(subject));
    if let Some(name) = name {
        path.push_str(&format!("&name={}", segment(name)));
    }
    if after > 0 {
        path.push_str(&format!("&after={after}"));
    }
    path
}

/// `/tasks/{id}/{what}`: `report`, `note` or `memory`.
pub fn of_task(task: i64, what: &str) -> String {
    format!("/tasks/{task}/{what}")
}

/// `/supervisors/{name}/stop` (ours).
pub fn supervisor_stopped(name: &str) -> String {
    format!("{SUPERVISORS}/{}/stop", segment(name))
}

/// `/access/{name}` (ours, admin).
pub fn access_key(name: &str) -> String {
    format!("{ACCESS}/{}", segment(name))
}

/// `/watch`, or `/watch?token=ID` for one token's entries.
pub fn watch(token: Option<&str>) -> String {
    match token {
        Some(token) => format!("{WATCH}?token={}", segment(token)),
        None => WATCH.to_string(),
    }
}

/// `/hooks/{name}` (ours): where a webhook delivery goes. A hook's name is
/// checked where the hooks file is read, so it goes as it is.
pub fn hook(name: &str) -> String {
    format!("/hooks/{name}")
}

/// `GET /budgets` (ours): the workflows' default budgets.
pub const BUDGETS: &str = "/budgets";

/// `/budgets/{workflow}` (ours): one workflow's default budget.
pub fn budget(workflow: &str) -> String {
    format!("{BUDGETS}/{}", segment(workflow))
}

/// `GET /limits` (ours): every limit on claims (`docs/limits.md`).
pub const LIMITS: &str = "/limits";

/// `/limits/{name}` (ours): one limit.
pub fn limit(name: &str) -> String {
    format!("{LIMITS}/{}", segment(name))
}

/// `GET /retry-policies` (ours): every state's retry policy (`docs/limits.md`).
pub const RETRY_POLICIES: &str = "/retry-policies";

/// `/retry-policies/{state}` (ours): one state's retry policy.
pub fn retry_policy(state: &str) -> String {
    format!("{RETRY_POLICIES}/{}", segment(state))
}

/// `name` as one path segment or query value: every byte but the unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded, `/` included, as the reference's client
/// quotes names (so a name with a `/` never reaches another route).
pub fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `GET /schedules` and `POST /schedules` (ours, `docs/schedules.md`).
pub const SCHEDULES: &str = "/schedules";

/// `/schedules/{name}`, or `/schedules/{name}/{what}` (`pause`, `resume`,
/// `trigger`) when `what` is given.
pub fn schedule(name: &str, what: Option<&str>) -> String {
    match what {
        Some(what) => format!("{SCHEDULES}/{}/{what}", segment(name)),
        None => format!("{SCHEDULES}/{}", segment(name)),
    }
}

/// `GET /notify` and `POST /notify` (ours, `docs/notifications.md`).
pub const NOTIFY: &str = "/notify";

/// `GET /notifications/failed` (ours): the dead notifications.
pub const NOTIFICATIONS_FAILED: &str = "/notifications/failed";

/// `/notify/{name}`, or `/notify/{name}/{what}` (`pause`, `resume`, `rotate`,
/// `test`, `redeliver`) when `what` is given.
pub fn subscription(name: &str, what: Option<&str>) -> String {
    match what {
        Some(what) => format!("{NOTIFY}/{}/{what}", segment(name)),
        None => format!("{NOTIFY}/{}", segment(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_percent_encoded_whole() {
        assert_eq!(segment("T-1.a_b~"), "T-1.a_b~");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment("é"), "%C3%A9");
        assert_eq!(of_token("a/b", "history"), "/tokens/a%2Fb/history");
        assert_eq!(supervisor_stopped("box 1"), "/supervisors/box%201/stop");
        assert_eq!(watch(Some("T/1")), "/watch?token=T%2F1");
        assert_eq!(of_task(4, "note"), "/tasks/4/note");
    }
}
