//! The body of a notification and its signature headers (`docs/notifications.md`,
//! "What a receiver gets"): `json` is the ledger entry and the token as `GET
//! /tokens/{id}` shows it; `slack` is `{"text": ...}` with one line. The headers
//! are Standard Webhooks': `webhook-id` (`msg_` and the notification's id, the
//! same on every attempt), `webhook-timestamp` (seconds) and `webhook-signature`
//! (`v1,` and a base64 HMAC-SHA256 for each secret, separated by a space).

use serde_json::{json, Value};
use stateous_shared::hooks::sign::{standard_signature, Verify};
use stateous_shared::notify::{NO_MOVE, TEST};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::WatchEntry;
use stateous_shared::wire::TokenView;

use crate::store::notifications::NotificationRow;

/// What a notification's body is made of, read just before it is sent.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// The ledger entry (none for `no_move` and `test`, or once it is pruned).
    pub entry: Option<WatchEntry>,
    /// The token as `GET /tokens/{id}` shows it now (none once it is gone).
    pub token: Option<TokenView>,
}

/// The `webhook-id` of a notification.
pub fn webhook_id(id: i64) -> String {
    format!("msg_{id}")
}

/// One line about the notification, as the `slack` format sends it.
pub fn sentence(row: &NotificationRow, parts: &Parts, no_move_for: Option<i64>) -> String {
    let token = &row.token;
    let state = parts
        .entry
        .as_ref()
        .and_then(|e| e.data.get("state"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| row.state.clone())
        .or_else(|| parts.token.as_ref().map(|t| t.state.clone()))
        .unwrap_or_default();
    match row.kind.as_str() {
        TEST => format!(
            "A test notification of the subscription {}.",
            row.subscription
        ),
        NO_MOVE => {
            let seconds = no_move_for.unwrap_or(0) / 1_000_000;
            format!(
                "Token {token} has not moved from {state} for {}.",
                stateous_shared::durations::span_packed(seconds)
            )
        }
        "entered" => format!("Token {token} entered {state}."),
        "completed" => format!("Token {token} completed."),
        "failed" => format!("Token {token} failed in {state}."),
        "cancelled" => format!("Token {token} was cancelled."),
        "paused" => format!("Token {token} was paused in {state}."),
        "task_failed" => format!("A task of token {token} failed in {state}."),
        "task_retrying" => format!("A task of token {token} failed in {state} and runs again."),
        "budget_exceeded" => format!("Token {token} went over its budget and was paused."),
        kind => format!("Token {token}: {kind}."),
    }
}

/// The body of a notification in the subscription's `format`.
pub fn body(
    row: &NotificationRow,
    parts: &Parts,
    format: &str,
    no_move_for: Option<i64>,
) -> Vec<u8> {
    let value = if format == "slack" {
        json!({"text": sentence(row, parts, no_move_for)})
    } else {
        let mut value = json!({
            "type": row.kind,
            "id": webhook_id(row.id),
            "subscription": row.subscription,
            "created": iso(from_micros(row.at)),
            "entry": parts.entry,
            "token": parts.token,
        });
        if row.kind == NO_MOVE {
            value["no_move"] = json!({
                "state": row.state,
                "visit": row.visit,
                "seconds": no_move_for.map(|m| m as f64 / 1e6),
            });
        }
        value
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The `webhook-signature` header's value: a `v1,` signature for each secret
/// (`whsec_...`), separated by a space; a secret that cannot be read signs
/// nothing.
pub fn signature(secrets: &[String], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .filter_map(|secret| Verify::Standard.key(secret).ok())
        .map(|key| standard_signature(&key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateous_shared::hooks::sign::{verify, WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP};

    #[test]
    fn both_secrets_of_a_rotation_sign_and_a_receiver_checks_either() {
        let (old, new) = (
            crate::notify::input::new_secret(),
            crate::notify::input::new_secret(),
        );
        let body = br#"{"type":"completed"}"#;
        let header = signature(&[new.clone(), old.clone()], "msg_7", 1_700_000_000, body);
        assert_eq!(header.split(' ').count(), 2);
        for secret in [old, new] {
            let key = Verify::Standard.key(&secret).unwrap();
            let headers = |name: &str| match name {
                WEBHOOK_ID => Some("msg_7"),
                WEBHOOK_TIMESTAMP => Some("1700000000"),
                WEBHOOK_SIGNATURE => Some(header.as_str()),
                _ => None,
            };
            verify(Verify::Standard, &[key], headers, body, 1_700_000_010).unwrap();
        }
    }
}
