//! What an operator sees of one token beyond its row, as `GET /tokens/{id}/detail`
//! answers it: its open tasks (status, attempt, holder, lease), its pending timers
//! and the events it holds while paused. A read; it changes nothing. Built here
//! once, for the API and the tests alike.

use stateous_shared::time::{from_micros, iso};
use stateous_shared::watch::{short_checksum, HeldEvent, TaskView, TimerView, TokenDetail};

use super::pause::held_events;
use super::{existing, view, Rules, Step};
use crate::store::{TokenStatus, Tx};

fn at(micros: i64) -> String {
    iso(from_micros(micros))
}

/// The detail of one token, or 404 `token_not_found`. A claimed task's lease
/// left is counted from the transaction's `now`.
pub fn detail(rules: &Rules, tx: &dyn Tx, token: &str) -> Step<TokenDetail> {
    let row = existing(tx, token)?;
    let now = tx.now();
    let tasks = tx
        .open_tasks(token)?
        .into_iter()
        .map(|task| TaskView {
            task: task.id,
            state: task.state,
            status: task.status.as_str().to_string(),
            attempt: task.attempt,
            holder: task.claimed_by,
            lease_until: task.lease_until.map(at),
            lease_left: task
                .lease_until
                .map(|until| (until - now).max(0) as f64 / 1e6),
        })
        .collect();
    let timers = tx
        .pending_timers(token)?
        .into_iter()
        .map(|timer| TimerView {
            event: timer.event,
            due_at: at(timer.due_at),
        })
        .collect();
    let held = if row.status == TokenStatus::Paused {
        let mut held = held_events(&tx.entries(token)?);
        held.sort_by_key(|held| held.arrival);
        held.into_iter()
            .map(|held| HeldEvent {
                event: held.event,
                payload: held.payload,
                at: Some(at(held.at)),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(TokenDetail {
        token: view(&row),
        tasks,
        timers,
        held,
        graph: row.graph.as_deref().map(short_checksum),
        graph_served: rules.graph_of(&row).checksum == rules.graph.checksum,
        budget: {
            let view = super::budget::view_of(rules, tx, &row)?;
            (!view.usage.is_empty() || !view.budget.is_empty()).then(|| Box::new(view))
        },
        priority: tx.priority(token)?,
    })
}
