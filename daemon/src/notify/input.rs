//! A new subscription's checks (`docs/notifications.md`, "Subscriptions"): each
//! refusal is 422 `invalid_subscription` with one sentence (a name that is not one
//! is `invalid_argument`, as a schedule's), and nothing is changed.

use std::collections::BTreeSet;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use stateous_shared::durations::{parse_duration, parse_timing, TimingOf};
use stateous_shared::graph::{END, START};
use stateous_shared::guards::filter::parse_filter;
use stateous_shared::notify::{NewSubscription, NO_MOVE};
use stateous_shared::refusal::{Code, Refusal};

use crate::engine::select::workflows;
use crate::engine::Rules;
use crate::schedule::input::{name_ok, name_refused};
use crate::store::backend::without_password;
use crate::store::notifications::SubscriptionRow;
use crate::store::{Closed, EntryKind};

/// The kinds a subscription is about when it names none.
pub const DEFAULT_KINDS: [&str; 2] = ["completed", "failed"];

/// The shortest `no_move_for`, in microseconds.
pub const SHORTEST_NO_MOVE: i64 = 1_000_000;

/// The longest URL, in bytes.
const LONGEST_URL: usize = 2048;

fn invalid(sentence: String) -> Refusal {
    Refusal::new(Code::InvalidSubscription, sentence)
}

/// A new signing secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("whsec_{}", BASE64.encode(bytes))
}

/// Whether `url` is one a subscription may send to: `http://` or `https://` with
/// a host and a port that fits, at most [`LONGEST_URL`] bytes.
pub fn url_ok(url: &str) -> bool {
    url.len() <= LONGEST_URL && stateous_otlp::is_http_url(url)
}

/// `url` as listings, the journal and logs show it: its password written `***`,
/// as every URL in a message is (`without_password`), and its query string too
/// (where receivers keep their tokens), so that what lets one send to the receiver
/// stays with the daemon (`docs/notifications.md`, "Secrets").
pub fn shown_url(url: &str) -> String {
    let shown = without_password(url);
    match shown.split_once('?') {
        Some((base, _)) => format!("{base}?***"),
        None => shown,
    }
}

/// The row of a new subscription at `now`, and its secret (shown once).
///
/// Errors: 422 `invalid_subscription` for a URL that is not http(s), a kind that
/// is neither a ledger entry kind nor `no_move`, a state or workflow the served
/// graph does not have, a filter that does not parse, a format other than `json`
/// and `slack`, a `no_move_for` that does not parse or is under 1 s (or is given
/// without `no_move`, or missing with it), or a name outside the rule of
/// `docs/notifications.md`.
pub fn new_subscription(
    rules: &Rules,
    body: &NewSubscription,
    now: i64,
) -> Result<(SubscriptionRow, String), Refusal> {
    if !name_ok(&body.name) {
        return Err(name_refused(
            &body.name,
            Code::InvalidSubscription,
            "subscription",
        ));
    }
    if body.url.len() > LONGEST_URL {
        // Not shown back: it may be of any length.
        return Err(invalid(format!(
            "the URL is {} bytes long; a subscription's is at most {LONGEST_URL}",
            body.url.len()
        )));
    }
    if !url_ok(&body.url) {
        return Err(invalid(format!(
            "the URL {:?} is not an http:// or https:// URL with a host and a port from 1 to 65535",
            shown_url(&body.url)
        )));
    }
    let mut kinds: Vec<String> = if body.kinds.is_empty() {
        DEFAULT_KINDS.iter().map(|k| k.to_string()).collect()
    } else {
        body.kinds.clone()
    };
    if body.no_move_for.is_some() && body.kinds.is_empty() {
        kinds = vec![NO_MOVE.to_string()];
    }
    for kind in &kinds {
        if kind != NO_MOVE && EntryKind::parse(kind).is_none() {
            return Err(invalid(format!(
                "{kind:?} is not a kind of ledger entry nor no_move (kinds: started, entered, \
                 completed, failed, cancelled, paused, task_failed, task_retrying, \
                 budget_exceeded, ...)"
            )));
        }
    }
    let kinds = once_each(&kinds);
    let no_move_for = match (&body.no_move_for, kinds.iter().any(|k| k == NO_MOVE)) {
        (Some(text), true) => Some(no_move_micros(text)?),
        (Some(_), false) => {
            return Err(invalid(
                "no_move_for is given but the kinds do not have no_move".into(),
            ))
        }
        (None, true) => {
            return Err(invalid(
                "the kind no_move needs no_move_for, how long a token stays in a state".into(),
            ))
        }
        (None, false) => None,
    };
    let given_states = once_each(&body.states);
    let states: BTreeSet<&str> = workflows(rules)
        .flat_map(|workflow| workflow.states.keys())
        .map(String::as_str)
        .filter(|state| *state != START && *state != END)
        .collect();
    for state in &body.states {
        // `WORKFLOW/STATE`: that workflow's state only, as limits write it.
        let known = match state.rsplit_once('/') {
            None => states.contains(state.as_str()),
            Some((workflow, name)) => {
                workflows(rules).any(|w| w.name == workflow && w.states.contains_key(name))
            }
        };
        if !known {
            let known: Vec<&str> = states.iter().copied().collect();
            return Err(invalid(format!(
                "the served graph has no state {state:?} (its states: {})",
                known.join(", ")
            )));
        }
    }
    if let Some(workflow) = &body.workflow {
        if !workflows(rules).any(|w| &w.name == workflow) {
            return Err(invalid(format!(
                "the served graph has no workflow {workflow:?}"
            )));
        }
    }
    if let Some(filter) = &body.filter {
        parse_filter(filter).map_err(|error| invalid(error.0))?;
    }
    let format = body.format.clone().unwrap_or_else(|| "json".into());
    if format != "json" && format != "slack" {
        return Err(invalid(format!(
            "the format {format:?} is not json or slack"
        )));
    }
    let secret = new_secret();
    let list = |items: &[String]| serde_json::to_string(items).unwrap_or_else(|_| "[]".into());
    let row = SubscriptionRow {
        name: body.name.clone(),
        url: body.url.clone(),
        kinds: list(&kinds),
        states: list(&given_states),
        workflow: body.workflow.clone(),
        filter: body.filter.clone(),
        format,
        no_move_for,
        status: "active".into(),
        secrets: list(std::slice::from_ref(&secret)),
        created_at: now,
        changed_at: now,
    };
    Ok((row, secret))
}

/// Each of `items` once, in the order first given (`--states review,review`
/// is `review`).
fn once_each(items: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items
        .iter()
        .filter(|item| seen.insert(item.as_str()))
        .cloned()
        .collect()
}

/// `no_move_for` in microseconds: a duration (`30s`, `2h`) of 1 second at
/// least. A timing under that (`999ms`, as a flag takes it) is refused as under
/// the floor, and a negative one (`-1s`) as negative, not as no duration at all;
/// one in milliseconds is taken when it is whole seconds (`2000ms`), else
/// refused as not whole seconds (`1500ms`).
fn no_move_micros(text: &str) -> Result<i64, Refusal> {
    let floor = Duration::from_micros(SHORTEST_NO_MOVE.unsigned_abs());
    let under = || {
        invalid(format!(
            "no_move_for {text:?} is under 1 second; the shortest is 1 second"
        ))
    };
    let why = match parse_duration(text) {
        Ok(span) if span < floor => return Err(under()),
        Ok(span) => return Ok(i64::try_from(span.as_micros()).unwrap_or(i64::MAX)),
        Err(why) => why,
    };
    let timing = |text: &str| parse_timing(text, TimingOf::Flag("no_move_for")).ok();
    if text.strip_prefix('-').and_then(timing).is_some() {
        return Err(invalid(format!(
            "no_move_for {text:?} is negative; the shortest is 1 second"
        )));
    }
    match timing(text) {
        Some(span) if span < floor => Err(under()),
        // As a flag takes it (`2000ms`): whole seconds are taken.
        Some(span) if span.subsec_nanos() == 0 => {
            Ok(i64::try_from(span.as_micros()).unwrap_or(i64::MAX))
        }
        Some(_) => Err(invalid(format!(
            "no_move_for {text:?} is not a whole number of seconds; write e.g. '2s' or '5m'"
        ))),
        None => Err(invalid(format!(
            "no_move_for {text:?}: {why}; the shortest is 1 second"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_urls_with_a_host_are_taken() {
        assert!(url_ok("http://127.0.0.1:9/x"));
        assert!(url_ok("https://hooks.example.com/a?b=c"));
        assert!(!url_ok("ftp://example.com/"));
        assert!(!url_ok("example.com/path"));
        assert!(!url_ok("http://"));
        assert!(!url_ok("file:///etc/passwd"));
        assert!(!url_ok("http://127.0.0.1:99999/hook"));
        assert!(url_ok("http://[::1]:8080/hook"));
        assert!(url_ok("https://user:secret@hooks.example.com/a"));
    }

    #[test]
    fn a_shown_url_keeps_no_password_and_no_query() {
        assert_eq!(
            shown_url("https://bot:hunter2@hooks.example.com:8443/in?token=abc&x=1"),
            "https://bot:***@hooks.example.com:8443/in?***"
        );
        assert_eq!(shown_url("http://127.0.0.1:9/x"), "http://127.0.0.1:9/x");
        assert_eq!(shown_url("http://bot@h/"), "http://bot@h/");
    }

    #[test]
    fn each_kind_and_state_is_kept_once_in_the_order_first_given() {
        let given = |items: &[&str]| items.iter().map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(
            once_each(&given(&["review", "draft", "review", "draft"])),
            given(&["review", "draft"])
        );
        assert_eq!(
            once_each(&given(&["completed", "failed", "completed"])),
            given(&["completed", "failed"])
        );
    }

    #[test]
    fn a_no_move_for_under_the_floor_is_said_to_be_under_it() {
        let said = |text: &str| no_move_micros(text).unwrap_err().error;
        assert_eq!(
            said("999ms"),
            "no_move_for \"999ms\" is under 1 second; the shortest is 1 second"
        );
        assert_eq!(
            said("-1s"),
            "no_move_for \"-1s\" is negative; the shortest is 1 second"
        );
        assert_eq!(
            said("1500ms"),
            "no_move_for \"1500ms\" is not a whole number of seconds; write e.g. '2s' or '5m'"
        );
        assert_eq!(no_move_micros("2000ms").ok(), Some(2_000_000));
        for unreadable in ["2x", "0s", "-", "1.5s"] {
            let sentence = said(unreadable);
            assert!(
                sentence.contains("; the shortest is 1 second") && !sentence.contains("under"),
                "{unreadable}: {sentence}"
            );
        }
        assert_eq!(no_move_micros("1s").ok(), Some(1_000_000));
        assert_eq!(no_move_micros("2h").ok(), Some(7_200_000_000));
    }

    #[test]
    fn a_secret_is_whsec_and_32_bytes_of_base64() {
        let secret = new_secret();
        let key = stateous_shared::hooks::sign::Verify::Standard
            .key(&secret)
            .unwrap();
        assert_eq!(key.len(), 32);
        assert_ne!(secret, new_secret());
    }
}
