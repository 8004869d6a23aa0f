//! Pause and resume (`docs/inside/workflows.md`, "Pause"). A paused token holds the
//! events that arrive; resume gives its timers the paused time back, then applies what
//! it held in the order of arrival.

use std::sync::Arc;

use serde_json::{json, Value};
use stateous_shared::wire::{Object, Schedule, TokenView};

use super::join::{children, family};
use super::route::{apply, decide, fail, take, Decision};
use super::{append, existing, py, steered, view, Rules, Step, OWN_EVENTS};
use crate::store::{EntryKind, LedgerRow, TokenRow, TokenStatus, Tx};

/// An event that a paused token holds, as its `event_deferred` entry records it.
#[derive(Debug, Clone)]
pub struct Held {
    /// The event.
    pub event: String,
    /// Its payload.
    pub payload: Option<Object>,
    /// The state and visit of the task it came from; `None` from outside.
    pub origin: Option<(String, i64)>,
    /// A held outcome's context changes.
    pub context: Object,
    /// A held outcome's timers.
    pub schedules: Vec<Schedule>,
    /// Its place in the order of arrival (0 for entries without one).
    pub arrival: i64,
    /// When it arrived.
    pub at: i64,
    /// Its token.
    pub token: String,
    /// Its entry's seq.
    pub seq: i64,
    /// The hook it came through (`{"name", "delivery"}`), if any.
    pub hook: Option<Value>,
}

/// The events held since the token was last paused.
pub fn held_events(entries: &[LedgerRow]) -> Vec<Held> {
    let since = entries
        .iter()
        .filter(|e| e.kind == "paused")
        .map(|e| e.seq)
        .max()
        .unwrap_or(0);
    entries
        .iter()
        .filter(|e| e.kind == "event_deferred" && e.seq > since)
        .map(held)
        .collect()
}

fn held(entry: &LedgerRow) -> Held {
    let data = &entry.data;
    let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
    let origin = match (text("state"), data.get("visit").and_then(Value::as_i64)) {
        (Some(state), Some(visit)) => Some((state, visit)),
        _ => None,
    };
    let schedules = data
        .get("schedules")
        .and_then(|list| serde_json::from_value::<Vec<Schedule>>(list.clone()).ok())
        .unwrap_or_default();
    Held {
        event: text("event").unwrap_or_default(),
        payload: data.get("payload").and_then(Value::as_object).cloned(),
        origin,
        context: data
            .get("context")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        schedules,
        arrival: data.get("arrival").and_then(Value::as_i64).unwrap_or(0),
        at: entry.at,
        token: entry.token.clone(),
        seq: entry.seq,
        hook: data.get("hook").cloned(),
    }
}

/// Pause an active token and its active children.
pub fn pause(rules: &Rules, tx: &dyn Tx, token: &str) -> Step<TokenView> {
    let active = |status| status == TokenStatus::Active;
    let mut row = steered(
        tx,
        token,
        "pause",
        active,
        "only an active token can be paused",
    )?;
    pause_row(rules, tx, &mut row)?;
    Ok(view(&row))
}

/// Pause the token, then each active child of its state, depth first.
pub(super) fn pause_row(rules: &Rules, tx: &dyn Tx, row: &mut TokenRow) -> Step<()> {
    row.status = TokenStatus::Paused;
    tx.update_token(row)?;
    append(tx, &row.token, EntryKind::Paused, None, json!({}))?;
    for mut child in children(rules, tx, row)? {
        if child.status == TokenStatus::Active {
            pause_row(rules, tx, &mut child)?;
        }
    }
    Ok(())
}

/// Resume a paused token and its paused children (each writes `resumed`), then apply
/// what they all held in one order of arrival (reference `_resume`): the ledger's
/// order inside this one transaction is the reference's.
pub fn resume(rules: &Rules, tx: &dyn Tx, token: &str) -> Step<TokenView> {
    let paused = |status| status == TokenStatus::Paused;
    let row = steered(
        tx,
        token,
        "resume",
        paused,
        "only a paused token can be resumed",
    )?;
    // Ours: a token over its budget stays paused until its budget is raised.
    super::budget::refuse_over_budget(rules, tx, &row)?;
    let mut held = Vec::new();
    for mut member in family(rules, tx, &row)? {
        if member.status == TokenStatus::Paused {
            held.extend(resume_row(tx, &mut member)?);
        }
    }
    held.sort_by(|a, b| {
        (a.arrival, a.at, &a.token, a.seq).cmp(&(b.arrival, b.at, &b.token, b.seq))
    });
    for event in held {
        // An earlier event can have moved this token (a join moves the parent).
        let mut member = existing(tx, &event.token)?;
        replay(rules, tx, &mut member, &event)?;
    }
    let row = existing(tx, token)?;
    Ok(view(&row))
}

/// Set one paused token active again: its pending timers get the paused time
/// back. Returns the events it held.
fn resume_row(tx: &dyn Tx, row: &mut TokenRow) -> Step<Vec<Held>> {
    let entries = tx.entries(&row.token)?;
    let now = tx.now();
    let paused_at = entries
        .iter()
        .filter(|e| e.kind == "paused")
        .map(|e| e.at)
        .max()
        .unwrap_or(now);
    for mut timer in tx.pending_timers(&row.token)? {
        // Only the part of the pause after the timer was set.
        timer.due_at += now - paused_at.max(timer.set_at);
        tx.update_timer(&timer)?;
    }
    row.status = TokenStatus::Active;
    tx.update_token(row)?;
    append(tx, &row.token, EntryKind::Resumed, None, json!({}))?;
    Ok(held_events(&entries))
}

fn dropped(tx: &dyn Tx, row: &TokenRow, event: &str, reason: &str) -> Step<()> {
    let data = json!({"event": event, "reason": reason});
    append(tx, &row.token, EntryKind::EventDropped, None, data)
}

/// Apply one held event, or drop it and say why. An event from a task applies only
/// in that task's state and visit. An own event that cannot apply fails the token.
fn replay(rules: &Rules, tx: &dyn Tx, row: &mut TokenRow, held: &Held) -> Step<()> {
    let event = held.event.as_str();
    if row.status != TokenStatus::Active {
        let reason = format!(
            "token {} is {}; it takes no events",
            py(&row.token),
            row.status
        );
        return dropped(tx, row, event, &reason);
    }
    if let Some((state, visit)) = &held.origin {
        if *state != row.state || *visit != row.visit {
            return dropped(tx, row, event, "the token left the state it came from");
        }
    }
    let mut context = Arc::clone(&row.context);
    if !held.context.is_empty() {
        Arc::make_mut(&mut context).extend(held.context.clone());
    }
    if !held.context.is_empty() {
        let errors = rules.workflow(row)?.context_errors(&context);
        if !errors.is_empty() {
            let reason = format!(
                "the context changes break the schema: {}",
                errors.join("; ")
            );
            return dropped(tx, row, event, &reason);
        }
    }
    let payload = held.payload.as_ref();
    match decide(rules, tx, row, event, payload, &context)? {
        Decision::Refuse { reason, fail: f } => {
            dropped(tx, row, event, &reason)?;
            if f || OWN_EVENTS.contains(&event) {
                fail(rules, tx, row, &reason)?;
            }
            Ok(())
        }
        Decision::Take(chosen) => {
            append(
                tx,
                &row.token,
                EntryKind::EventReplayed,
                None,
                json!({"event": event}),
            )?;
            apply(tx, row, &held.context, &held.schedules, &context)?;
            let via = super::Via {
                key: None,
                hook: held.hook.as_ref(),
            };
            take(rules, tx, row, chosen, event, payload, via)
        }
    }
}
