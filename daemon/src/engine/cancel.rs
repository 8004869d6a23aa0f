//! Cancel (reference `docs/inside/workflows.md`, "Cancel").

use serde_json::{json, Value};
use stateous_shared::refusal::Code;
use stateous_shared::wire::TokenView;

use super::pause::held_events;
use super::route::{end, leave};
use super::{append, existing, py, refuse, refuse_child, view, Rules, Step};
use crate::store::{TokenRow, Tx};

/// Stop a token for good: a paused token drops what it held; its tasks, timers and
/// live children are cancelled; its memory is deleted. A child is refused.
pub fn cancel<T: Tx>(rules: &Rules, tx: &T, token: &str) -> Step<TokenView> {
    let mut row = existing(tx, token)?;
    refuse_child(tx, &row, "cancel")?;
    if row.status != "active" && row.status != "paused" {
        let sentence = format!(
            "token {} is {}; only an active or paused token can be cancelled",
            py(&row.token),
            row.status
        );
        return refuse(Code::TokenNotActive, sentence);
    }
    cancel_row(rules, tx, &mut row, json!({}))?;
    Ok(view(&row))
}

/// End a live token as cancelled (reference `_cancel`): a paused token drops what
/// it held; all that its state started stops, its children too. `data` goes in the
/// `cancelled` entry (a child's `reason`).
pub fn cancel_row<T: Tx>(rules: &Rules, tx: &T, row: &mut TokenRow, data: Value) -> Step<()> {
    if row.status == "paused" {
        for held in held_events(&tx.entries(&row.token)?) {
            let data = json!({"event": held.event, "reason": "the token was cancelled"});
            append(tx, &row.token, "event_dropped", None, data)?;
        }
    }
    leave(rules, tx, row, None, "the parent was cancelled")?;
    end(rules, tx, row, "cancelled", data)
}
