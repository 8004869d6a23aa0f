//! Retry a failed token: it enters again the state where it failed, or a state of its
//! workflow that the operator names, as a new visit with a new task and so fresh
//! retries. Its context is kept; its memory went when it failed. The history says who
//! retried it and why (`retried`), then reads as any entry into a state does
//! (`entered`, `task_queued`, `timer_set`, `branch_started`).
//!
//! A family: only a top token is retried; a child is refused (`child_token`),
//! since its parent's join has already counted it as ended. A parent that failed
//! in a parallel state left its live children cancelled; retrying it enters the
//! parallel state as a new visit, which starts a new child for each workflow
//! (`<parent>.<state>.<visit>.<workflow>`). The old children stay as they ended.

use serde_json::{json, Value};
use stateous_shared::graph::{END, START};
use stateous_shared::refusal::Code;
use stateous_shared::wire::TokenView;

use super::join::cannot_enter;
use super::route::enter;
use super::{append, py, refuse, steered, view, Rules, Step};
use crate::store::{EntryKind, TokenStatus, Tx};
use crate::validated::RetryInput;

/// Retry the token: the answer is the token in its state again, active.
///
/// Refusals: 404 `token_not_found`; 409 `child_token` for a child; 409
/// `token_not_active` for a token that is not failed; 422 `invalid_argument` for
/// a state its workflow does not have; 409 `event_not_allowed` when the state
/// cannot be entered now (a parallel state whose child ids are taken).
pub fn retry(rules: &Rules, tx: &dyn Tx, input: &RetryInput) -> Step<TokenView> {
    let failed = |status| status == TokenStatus::Failed;
    let only = "only a failed token can be retried";
    let mut row = steered(tx, &input.token, "retry", failed, only)?;
    let workflow = rules.workflow(&row)?;
    let state = input.state.clone().unwrap_or_else(|| row.state.clone());
    if state == START || state == END || !workflow.states.contains_key(&state) {
        let sentence = if input.state.is_none() {
            format!(
                "token {} failed before it entered a state; name the state to enter",
                py(&row.token)
            )
        } else {
            format!(
                "the workflow {} has no state {} to enter",
                py(&workflow.name),
                py(&state)
            )
        };
        return refuse(Code::InvalidArgument, sentence);
    }
    if let Some(problem) = cannot_enter(
        rules.graph_of(&row),
        tx,
        &row.token,
        workflow,
        &state,
        &row.context,
    )? {
        let sentence = format!(
            "token {} cannot enter {}: {problem}",
            py(&row.token),
            py(&state)
        );
        return refuse(Code::EventNotAllowed, sentence);
    }
    let mut data = json!({"state": state, "from": row.state, "by": input.by});
    if let (Some(reason), Some(map)) = (&input.reason, data.as_object_mut()) {
        map.insert("reason".into(), Value::String(reason.clone()));
    }
    append(tx, &row.token, EntryKind::Retried, None, data)?;
    row.status = TokenStatus::Active;
    enter(rules, tx, &mut row, &state)?;
    Ok(view(&row))
}
