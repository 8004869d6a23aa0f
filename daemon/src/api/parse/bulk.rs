//! The bodies of the bulk actions: `POST /tokens/bulk` and `POST
//! /tokens/{id}/retry`, checked here as every other body is in `parse/mod.rs`.
//!
//! A wrong shape is 422 `invalid_body`: a value of the wrong JSON type, or a key
//! the body does not take (these routes are ours, so a misspelt `dry_run` is
//! refused rather than read as absent; the reference's routes ignore unknown
//! keys, as the reference does). A filter that does not parse, a limit or a walk's
//! point out of range is `invalid_argument` (as for `GET /tokens`); a payload or
//! key that a fire would refuse is `invalid_payload`.

use std::collections::BTreeMap;

use serde_json::Value;
use stateous_shared::bulk::{BulkAction, DEFAULT_PER_RUN, MAX_REASON, MOST_PER_RUN};
use stateous_shared::guards::filter::parse_filter;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

use super::{object_or_null, refuse, MAX_ITEMS, MAX_STATE, MAX_TOKEN};
use crate::control::bulk::{cursor_of, BulkInput};
use crate::engine::bulk::BulkStep;
use crate::engine::migrate::MigrateStep;
use crate::engine::select::Selection;
use crate::validated::Key;
use crate::validated::{RetryInput, MAX_BY};

/// Who asks when a body names no one.
pub const OPERATOR: &str = "operator";

fn shape(sentence: impl Into<String>) -> Refusal {
    refuse(Code::InvalidBody, sentence)
}

/// The keys of a `POST /tokens/bulk` body.
pub const BULK_FIELDS: &[&str] = &[
    "action",
    "where",
    "tokens",
    "event",
    "payload",
    "key",
    "state",
    "priority",
    "map",
    "undo",
    "reason",
    "by",
    "dry_run",
    "after",
    "limit",
    "archive",
    "include_ended",
    "every",
];

/// The keys of a `POST /tokens/{id}/retry` body.
pub const RETRY_FIELDS: &[&str] = &["state", "reason", "by"];

/// `invalid_body` naming the first key of `body` that is not among `fields`.
fn only(body: &Object, fields: &[&str], what: &str) -> Result<(), Refusal> {
    match body.keys().find(|key| !fields.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(shape(format!(
            "{what} takes no field '{key}'; its fields are {}",
            fields.join(", ")
        ))),
    }
}

/// An optional string field of 1 to `most` characters, or `invalid_body`.
fn text(body: &Object, name: &str, most: usize) -> Result<Option<String>, Refusal> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if (1..=most).contains(&text.chars().count()) => {
            Ok(Some(text.clone()))
        }
        Some(_) => Err(shape(format!(
            "'{name}' must be a string of 1 to {most} characters"
        ))),
    }
}

/// The operator's reason: trimmed, 1 to 500 characters.
fn reason(body: &Object) -> Result<Option<String>, Refusal> {
    match body.get("reason") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            if trimmed.is_empty() || trimmed.chars().count() > MAX_REASON {
                return Err(shape(format!(
                    "'reason' must say why in 1 to {MAX_REASON} characters"
                )));
            }
            Ok(Some(trimmed.to_string()))
        }
        Some(_) => Err(shape("'reason' must be a string")),
    }
}

/// A migration's `map` (state names of 1 to `MAX_STATE` characters) and `undo`; an
/// undo takes no map (the ledger says which states to go back to).
fn migrate_step(body: &Object) -> Result<MigrateStep, Refusal> {
    const MAP: &str = "'map' must be an object of state names: {\"OLD\": \"NEW\"}";
    let mut map = BTreeMap::new();
    match body.get("map") {
        None | Some(Value::Null) => {}
        Some(Value::Object(pairs)) if pairs.len() <= MAX_ITEMS => {
            for (old, new) in pairs {
                let fits = |name: &str| (1..=MAX_STATE).contains(&name.chars().count());
                match new {
                    Value::String(new) if fits(old) && fits(new) => {
                        map.insert(old.clone(), new.clone());
                    }
                    _ => return Err(shape(MAP)),
                }
            }
        }
        Some(_) => return Err(shape(MAP)),
    }
    let undo = match body.get("undo") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(shape("'undo' must be true or false")),
    };
    if undo && !map.is_empty() {
        return Err(shape(
            "an undo takes no 'map': each token goes back to the states its ledger names",
        ));
    }
    Ok(MigrateStep { map, undo })
}

/// `POST /tokens/bulk`.
pub fn bulk(body: &Object) -> Result<BulkInput, Refusal> {
    only(body, BULK_FIELDS, "a bulk action")?;
    let names: Vec<&str> = BulkAction::ALL.iter().map(|a| a.as_str()).collect();
    let action = match body.get("action") {
        Some(Value::String(name)) => BulkAction::parse(name),
        _ => None,
    }
    .ok_or_else(|| shape(format!("'action' must be one of: {}", names.join(", "))))?;
    let filter = match body.get("where") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            Some(parse_filter(text).map_err(|error| refuse(Code::InvalidArgument, error.0))?)
        }
        Some(_) => return Err(shape("'where' must be a filter, as a string")),
    };
    let tokens = match body.get("tokens") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if (1..=MAX_ITEMS).contains(&items.len()) => Some(
            items
                .iter()
                .map(|item| match item {
                    Value::String(id) if (1..=MAX_TOKEN).contains(&id.chars().count()) => {
                        Ok(id.clone())
                    }
                    _ => Err(shape(format!(
                        "'tokens' must list token ids of 1 to {MAX_TOKEN} characters"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(once_each)?,
        ),
        Some(_) => {
            return Err(shape(format!(
                "'tokens' must be a list of 1 to {MAX_ITEMS} token ids"
            )))
        }
    };
    if filter.is_none() && tokens.is_none() {
        return Err(shape(
            "a bulk action needs 'where' (a filter) or 'tokens' (a list of ids); \
             to mean every token, write \"where\": \"true\"",
        ));
    }
    let event = text(body, "event", MAX_STATE)?;
    let event = match (action, event) {
        (BulkAction::Fire, Some(event)) => event,
        (BulkAction::Fire, None) => return Err(shape("a bulk fire needs 'event'")),
        (_, Some(_)) => return Err(shape("only a bulk fire takes 'event'")),
        (_, None) => String::new(),
    };
    let payload = object_or_null(body.get("payload"), "payload", Code::InvalidPayload)?;
    let key = match body.get("key") {
        None | Some(Value::Null) => None,
        // The operator's key follows the rule of every idempotency key.
        Some(Value::String(key)) => Some(Key::new(key.clone())?.as_str().to_string()),
        Some(_) => {
            return Err(refuse(
                Code::InvalidPayload,
                "'key' must be an idempotency key, as a string",
            ))
        }
    };
    if action != BulkAction::Fire && (payload.is_some() || key.is_some()) {
        return Err(shape("only a bulk fire takes 'payload' and 'key'"));
    }
    let state = text(body, "state", MAX_STATE)?;
    if action != BulkAction::Retry && state.is_some() {
        return Err(shape("only a bulk retry takes 'state'"));
    }
    let priority = match body.get("priority") {
        None | Some(Value::Null) => None,
        Some(value) => Some(crate::engine::priority::priority_of(value).map_err(|f| f.refusal())?),
    };
    match (action, priority) {
        (BulkAction::Priority, None) => {
            return Err(shape("a bulk priority needs 'priority', a whole number"))
        }
        (BulkAction::Priority, Some(_)) | (_, None) => {}
        (_, Some(_)) => return Err(shape("only a bulk priority takes 'priority'")),
    }
    let migrate = migrate_step(body)?;
    if action != BulkAction::Migrate && migrate != MigrateStep::default() {
        return Err(shape("only a bulk migrate takes 'map' and 'undo'"));
    }
    let dry_run = match body.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(shape("'dry_run' must be true or false")),
    };
    let reason = reason(body)?;
    // A pruned token keeps no history to write a reason into: the log has it.
    if !dry_run && reason.is_none() && action != BulkAction::Prune {
        return Err(shape(
            "a bulk action needs a 'reason': it is written into each token's history",
        ));
    }
    let after = match body.get("after") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(cursor_of(text).ok_or_else(|| {
            refuse(
                Code::InvalidArgument,
                "'after' must be the 'next' of an earlier answer",
            )
        })?),
        Some(_) => return Err(shape("'after' must be the 'next' of an earlier answer")),
    };
    let limit = match body.get("limit").map(|value| (value, value.as_i64())) {
        None | Some((Value::Null, _)) => DEFAULT_PER_RUN,
        Some((_, Some(limit))) if (1..=MOST_PER_RUN).contains(&limit) => limit,
        // A whole number out of range is a value out of range; anything else
        // (a string, a fraction) is the wrong shape.
        Some((_, whole)) => {
            let code = match whole {
                Some(_) => Code::InvalidArgument,
                None => Code::InvalidBody,
            };
            return Err(refuse(
                code,
                format!("'limit' must be a whole number from 1 to {MOST_PER_RUN}"),
            ));
        }
    };
    let every = match body.get("every") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(shape("'every' must be true or false")),
    };
    let include_ended = match body.get("include_ended") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(shape("'include_ended' must be true or false")),
    };
    // An ended token would be refused by these: left out unless asked, or unless
    // the filter chooses statuses itself, or the tokens are listed one by one.
    let live_only = matches!(
        action,
        BulkAction::Pause
            | BulkAction::Resume
            | BulkAction::Cancel
            | BulkAction::Fire
            | BulkAction::Migrate
            | BulkAction::Priority
    ) && !include_ended
        && tokens.is_none()
        && filter
            .as_ref()
            .is_none_or(|f| f.statuses_named().is_empty());
    let step = BulkStep {
        action,
        selection: Selection {
            filter,
            live_only,
            ..Selection::default()
        },
        event,
        payload,
        key,
        state,
        priority: priority.unwrap_or_default(),
        migrate,
        reason,
        by: text(body, "by", MAX_BY)?.unwrap_or_else(|| OPERATOR.to_string()),
    };
    Ok(BulkInput {
        step,
        tokens,
        dry_run,
        every: dry_run && every,
        after,
        limit,
        archive: archive(body, action)?,
    })
}

/// `archive`: only a prune takes it, as an absolute path.
fn archive(body: &Object, action: BulkAction) -> Result<Option<std::path::PathBuf>, Refusal> {
    let Some(text) = text(body, "archive", MAX_PATH)? else {
        return Ok(None);
    };
    if action != BulkAction::Prune {
        return Err(shape("only a bulk prune takes 'archive'"));
    }
    let path = std::path::PathBuf::from(text);
    if !path.is_absolute() {
        return Err(refuse(
            Code::InvalidArgument,
            "'archive' must be an absolute path of a folder on the control plane's machine",
        ));
    }
    Ok(Some(path))
}

/// The longest archive path taken, in characters (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// Each id once, where it first occurs. A bulk action acts on a token once: an id
/// listed twice was acted on twice (the second outcome read a status the first had
/// just changed) and counted twice by a dry run. Ids are compared exactly, as a
/// token is looked up.
fn once_each(ids: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

/// `POST /tokens/{id}/retry`: `state`, `reason` and `by`, each optional.
pub fn retry(token: String, body: &Object) -> Result<RetryInput, Refusal> {
    only(body, RETRY_FIELDS, "a retry")?;
    Ok(RetryInput {
        token,
        state: text(body, "state", MAX_STATE)?,
        reason: reason(body)?,
        by: text(body, "by", MAX_BY)?.unwrap_or_else(|| OPERATOR.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(value: Value) -> Object {
        value.as_object().cloned().unwrap_or_default()
    }

    fn code(value: Value) -> Code {
        bulk(&body(value)).unwrap_err().code
    }

    #[test]
    fn a_bulk_body_names_an_action_targets_and_a_reason() {
        let input = bulk(&body(json!({
            "action": "fire", "where": "state == 'review'", "event": "reviewed",
            "payload": {"approved": true}, "key": "k-1", "reason": " backlog ", "by": "ann",
        })))
        .unwrap();
        assert_eq!(input.step.action, BulkAction::Fire);
        assert_eq!(input.step.reason.as_deref(), Some("backlog"));
        assert_eq!(input.step.by, "ann");
        assert_eq!(input.limit, DEFAULT_PER_RUN);
        let preview = bulk(&body(
            json!({"action": "cancel", "tokens": ["A"], "dry_run": true}),
        ));
        assert_eq!(preview.unwrap().step.by, OPERATOR);
    }

    #[test]
    fn a_key_the_body_does_not_take_is_named() {
        let refusal = bulk(&body(json!({"action": "cancel", "wher": "true"}))).unwrap_err();
        assert_eq!(refusal.code, Code::InvalidBody);
        assert!(refusal
            .error
            .starts_with("a bulk action takes no field 'wher'; "));
        let refusal = retry("T-1".into(), &body(json!({"reason": "r", "stat": "a"}))).unwrap_err();
        assert_eq!(refusal.code, Code::InvalidBody);
        assert_eq!(
            refusal.error,
            "a retry takes no field 'stat'; its fields are state, reason, by"
        );
        let every: Object = BULK_FIELDS
            .iter()
            .map(|f| (f.to_string(), Value::Null))
            .collect();
        assert_eq!(
            bulk(&every).unwrap_err().error,
            "'action' must be one of: pause, resume, cancel, fire, retry, migrate, prune, priority",
            "every field it lists is taken"
        );
    }

    #[test]
    fn a_bulk_body_out_of_shape_is_refused_with_its_code() {
        let cases = [
            (json!({"where": "true", "reason": "r"}), Code::InvalidBody),
            (
                json!({"action": "drop", "where": "true", "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "true"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "  "}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "x ==", "reason": "r"}),
                Code::InvalidArgument,
            ),
            (
                json!({"action": "cancel", "tokens": [], "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "tokens": [1], "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "fire", "where": "true", "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "pause", "where": "true", "event": "e", "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "pause", "where": "true", "state": "s", "reason": "r"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "fire", "where": "true", "event": "e", "payload": 1, "reason": "r"}),
                Code::InvalidPayload,
            ),
            (
                json!({"action": "fire", "where": "true", "event": "e", "key": "a\tb", "reason": "r"}),
                Code::InvalidPayload,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "limit": 0}),
                Code::InvalidArgument,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "limit": 1001}),
                Code::InvalidArgument,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "after": "7:C-1"}),
                Code::InvalidArgument,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "dry_run": "yes"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "dryrun": true}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "limit": "5"}),
                Code::InvalidBody,
            ),
            (
                json!({"action": "cancel", "where": "true", "reason": "r", "limit": 2.0}),
                Code::InvalidBody,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(code(value.clone()), expected, "{value}");
        }
    }
}
