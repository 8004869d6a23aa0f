//! Fire an event from outside (`docs/inside/workflows.md`, "Fire").

use stateous_shared::refusal::Code;
use stateous_shared::wire::TokenView;

use super::route::route;
use super::{lock, py, refuse, reject, view, Rules, Step, OWN_EVENTS};
use crate::input::{FireInput, Key};
use crate::store::Tx;

/// Fire the event: `(token, duplicate)`. A repeated key answers the token as it
/// is now and changes nothing. An event that cannot move the token is recorded as
/// `event_rejected`, then refused.
pub fn fire(rules: &Rules, tx: &dyn Tx, input: &FireInput) -> Step<(TokenView, bool)> {
    let FireInput {
        token,
        event,
        payload,
        key,
    } = input;
    let mut row = lock(tx, token)?;
    if let Some(key) = &key {
        if tx.has_key(&row.token, key.as_str())? {
            return Ok((view(&row), true));
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
    if let Some(reason) = route(
        rules,
        tx,
        &mut row,
        event,
        payload.as_ref(),
        key.as_ref().map(Key::as_str),
    )? {
        return Err(reject(tx, &row, event, reason, Code::EventNotAllowed));
    }
    Ok((view(&row), false))
}
