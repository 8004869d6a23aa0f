//! Retention of notifications (`serve --notify-keep`, `docs/notifications.md`,
//! "Kept"): delivered notifications, with their attempts, are deleted once they
//! were delivered longer ago than the period, a window of the table at a time by
//! id, each window its own short write, with a pause between windows. Pending and
//! dead ones are kept: a dead one until it is sent again (`redeliver`) or its
//! subscription is removed.
//!
//! One delivered notification is kept past the period: a `no_move` whose token
//! is still in the visit it is about, since its row is what keeps that visit to
//! one notification (deleted, the next tick would write another).

use std::time::Duration;

use stateous_shared::notify::NO_MOVE;
use stateous_shared::refusal::Refusal;

use super::Control;
use crate::engine::Step;
use crate::store::notifications::NotificationRow;
use crate::store::Tx;
use crate::time_source::micros;

/// One pass of the notifications' retention: what to delete and how gently.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyRetainPass {
    /// Delete the notifications delivered longer ago than this.
    pub keep: Duration,
    /// How many notifications one write reads by id (and deletes at most).
    pub window: i64,
    /// The pause between two windows, so that a pass over many rows leaves the
    /// write path to others.
    pub pause: Duration,
}

/// Whether the delivered notification `row` must stay past the period: a
/// `no_move` of a token still live in the visit it is about.
fn still_stalled(tx: &dyn Tx, row: &NotificationRow) -> Step<bool> {
    if row.kind != NO_MOVE {
        return Ok(false);
    }
    Ok(tx.token(&row.token)?.is_some_and(|token| {
        token.status.live()
            && Some(token.state.as_str()) == row.state.as_deref()
            && Some(token.visit) == row.visit
    }))
}

impl Control {
    /// One pass of the notifications' retention: each delivered notification
    /// whose delivery is older than `pass.keep` is deleted with its attempts, a
    /// window at a time; how many were deleted. Ids grow with the moment a row is
    /// written, so the pass ends at the table's end or at a window that deleted
    /// nothing and whose every row was written within the period (a
    /// redelivered one counts as written at its redelivery).
    pub async fn retain_notifications(&self, pass: &NotifyRetainPass) -> Result<u64, Refusal> {
        let keep = micros(pass.keep);
        let window = pass.window.max(1);
        let mut after = 0;
        let mut deleted = 0;
        loop {
            let (gone, next) = self
                .write(move |_, tx| {
                    let cutoff = tx.now().saturating_sub(keep);
                    let rows = tx.notifications_after(after, window)?;
                    let mut old = Vec::new();
                    for row in &rows {
                        if row.status == "delivered"
                            && row.next_at <= cutoff
                            && !still_stalled(tx, row)?
                        {
                            old.push(row.id);
                        }
                    }
                    let gone = tx.delete_notifications(&old)?;
                    let younger = old.is_empty() && rows.iter().all(|row| row.at > cutoff);
                    let next = match rows.last() {
                        Some(last) if rows.len() as i64 == window && !younger => Some(last.id),
                        _ => None,
                    };
                    Ok((gone, next))
                })
                .await?;
            deleted += u64::try_from(gone).unwrap_or(0);
            match next {
                Some(id) => after = id,
                None => return Ok(deleted),
            }
            tokio::time::sleep(pass.pause).await;
        }
    }
}
