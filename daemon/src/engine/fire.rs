//! Fire an event from outside (`docs/inside/workflows.md`, "Fire").

use stateous_shared::refusal::Code;
use stateous_shared::wire::TokenView;

use super::route::route;
use super::scope::out_of_scope;
use super::{lock, py, refuse, reject, view, Rules, Step, Via, OWN_EVENTS};
use crate::store::Tx;
use crate::validated::{FireInput, HookStart};

/// Fire the event: `(token, duplicate)`. A repeated key answers the token as it
/// is now and changes nothing. An event that cannot move the token is recorded as
/// `event_rejected`, then refused.
pub fn fire(rules: &Rules, tx: &dyn Tx, input: &FireInput) -> Step<(TokenView, bool)> {
    let FireInput {
        token,
        event,
        payload,
        key,
        hook,
        scope,
    } = input;
    let mut row = lock(tx, token)?;
    if let Some(key) = &key {
        if tx.has_key(&row.token, key.as_str())? {
            return Ok((view(&row), true));
        }
    }
    if let Some(scope) = scope {
        if let Some(sentence) = out_of_scope(rules, &row, event, scope, tx.now()) {
            return refuse(Code::Forbidden, sentence);
        }
    }
    if row.status.ended() {
        let reason = format!(
            "token {} is {}; it takes no events",
            py(&row.token),
            row.status
        );
        return Err(reject(tx, &row, event, reason, Code::TokenNotActive));
    }
    let workflow = rules.workflow(&row)?;
    if OWN_EVENTS.contains(&event.as_str()) {
        let reason = format!(
            "{} is Stateous's own event; only Stateous fires it",
            py(event)
        );
        return Err(reject(tx, &row, event, reason, Code::EventNotAllowed));
    }
    if !workflow.declares(event) {
        let reason = format!(
            "the workflow {} has no event {}",
            py(&workflow.name),
            py(event)
        );
        return Err(reject(tx, &row, event, reason, Code::EventNotAllowed));
    }
    let errors = workflow.payload_errors(event, payload.as_ref());
    if !errors.is_empty() {
        return refuse(
            Code::InvalidPayload,
            format!("{event}: {}", errors.join("; ")),
        );
    }
    let hook = hook.as_ref().map(|hook| hook.value());
    let via = Via {
        key: key.as_ref().map(|key| key.as_str()),
        hook: hook.as_ref(),
    };
    if let Some(reason) = route(rules, tx, &mut row, event, payload.as_ref(), via)? {
        return Err(reject(tx, &row, event, reason, Code::EventNotAllowed));
    }
    Ok((view(&row), false))
}

/// An event from a hook (`docs/inside/workflows.md`, "Fire"): with `start`, a
/// missing token is started first, in the same transaction as the event, so that
/// redeliveries start it once and apply the event once. An event refused with its
/// `event_rejected` entry kept (409) keeps the start too; any other refusal undoes
/// both. A start the delivery cannot make (`HookStart::Cannot`) is refused only
/// when the token is missing; a token that exists takes the event as without it.
pub fn fire_or_start(
    rules: &Rules,
    tx: &dyn Tx,
    start: Option<&HookStart>,
    input: &FireInput,
) -> Step<(TokenView, bool)> {
    match start {
        None => {}
        Some(HookStart::Start(start)) => {
            super::start::start(rules, tx, start)?;
        }
        Some(HookStart::Cannot(refusal)) => {
            // Held as a start holds it, so a start of the same id by another
            // request is seen here whole or not at all.
            tx.lock_family(&input.token, true)?;
            if tx.token(&input.token)?.is_none() {
                return Err(refusal.clone().into());
            }
        }
    }
    fire(rules, tx, input)
}
