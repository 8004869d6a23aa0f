//! Cancel (`docs/inside/workflows.md`, "Cancel").

use serde_json::{json, Value};
use stateous_shared::wire::TokenView;

use super::pause::held_events;
use super::route::{end, leave};
use super::{append, steered, view, Rules, Step};
use crate::store::{EntryKind, TokenRow, TokenStatus, Tx};

/// Stop a token for good: a paused token drops what it held; its tasks, timers and
/// live children are cancelled; its memory is deleted. A child is refused.
pub fn cancel(rules: &Rules, tx: &dyn Tx, token: &str) -> Step<TokenView> {
    let only = "only an active or paused token can be cancelled";
    let live = |status: TokenStatus| !status.ended();
    let mut row = steered(tx, token, "cancel", live, only)?;
    cancel_row(rules, tx, &mut row, json!({}))?;
    Ok(view(&row))
}

/// End a live token as cancelled (reference `_cancel`): a paused token drops what
/// it held; all that its state started stops, its children too. `data` goes in the
/// `cancelled` entry (a child's `reason`).
pub fn cancel_row(rules: &Rules, tx: &dyn Tx, row: &mut TokenRow, data: Value) -> Step<()> {
    if row.status == TokenStatus::Paused {
        for held in held_events(&tx.entries(&row.token)?) {
            let data = json!({"event": held.event, "reason": "the token was cancelled"});
            append(tx, &row.token, EntryKind::EventDropped, None, data)?;
        }
    }
    leave(rules, tx, row, None, "the parent was cancelled")?;
    end(rules, tx, row, TokenStatus::Cancelled, data)
}
