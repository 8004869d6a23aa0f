//! Which queues wait for a receiver they could not reach
//! (`docs/notifications.md`, "A receiver that cannot be reached"): the sender
//! marks a subscription when an attempt could not reach its receiver and
//! clears the mark at the first attempt that reaches it; the control plane
//! shows the mark (`GET /notify`, `/metrics`). In memory only, no table: after
//! a restart a queue finds out again at its first attempt. A pause, a removal
//! (or the name added again) and another URL drop the mark
//! ([`Subscribed::replace`]), and a mark is shown only for the subscription it
//! was made for, while it is active.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::Subscribed;
use crate::store::notifications::SubscriptionRow;

/// A queue that waits for its receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// When its subscription was added (microseconds): one added again under
    /// its name is another.
    pub added: i64,
    /// The URL it could not reach.
    pub url: String,
    /// The first attempt, of those in a row, that could not reach it
    /// (microseconds).
    pub since: i64,
    /// Why the latest could not, as that attempt recorded it.
    pub reason: String,
    /// When the queue tries again (microseconds); none: when its next
    /// notification is due (it has none due to try now).
    pub next_try: Option<i64>,
}

fn locked(map: &Mutex<HashMap<String, Waiting>>) -> MutexGuard<'_, HashMap<String, Waiting>> {
    match map.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Subscribed {
    /// The queue of `row` could not reach its receiver at `at` (microseconds)
    /// for `reason`, and tries again at `next_try`. Marked only while the copy
    /// says the subscription is active: a pause or a removal that answered
    /// meanwhile leaves no mark. `since` stays that of the first attempt of
    /// those in a row.
    pub fn unreachable(&self, row: &SubscriptionRow, at: i64, reason: &str, next_try: Option<i64>) {
        let mut waiting = locked(&self.waiting);
        // Under the lock: `replace` changes the copy before it takes it.
        if !self.snapshot().active(&row.name, row.created_at) {
            return;
        }
        let since = match waiting.get(&row.name) {
            Some(mark) if mark.added == row.created_at && mark.url == row.url => mark.since,
            _ => at,
        };
        waiting.insert(
            row.name.clone(),
            Waiting {
                added: row.created_at,
                url: row.url.clone(),
                since,
                reason: reason.to_string(),
                next_try,
            },
        );
    }

    /// The queue of `row` reached its receiver: no mark.
    pub fn reached(&self, row: &SubscriptionRow) {
        let mut waiting = locked(&self.waiting);
        if waiting
            .get(&row.name)
            .is_some_and(|mark| mark.added == row.created_at)
        {
            waiting.remove(&row.name);
        }
    }

    /// The mark of the subscription `row` as it is now: none while it is
    /// paused, nor one made for another subscription of its name or URL.
    pub fn waiting(&self, row: &SubscriptionRow) -> Option<Waiting> {
        if row.status != "active" {
            return None;
        }
        locked(&self.waiting)
            .get(&row.name)
            .filter(|mark| mark.added == row.created_at && mark.url == row.url)
            .cloned()
    }

    /// Every subscription of the copy, by name, and whether its queue waits
    /// for its receiver (for `/metrics`).
    pub fn unreachable_now(&self) -> Vec<(String, bool)> {
        let snapshot = self.snapshot();
        let waiting = locked(&self.waiting);
        let mut all: Vec<(String, bool)> = snapshot
            .added
            .iter()
            .map(|(name, added)| {
                let marked = waiting.get(name).is_some_and(|mark| mark.added == *added);
                (name.clone(), marked && snapshot.active(name, *added))
            })
            .collect();
        all.sort();
        all
    }

    /// Drop the marks of subscriptions that `rows` (every subscription, as
    /// [`Subscribed::replace`] gets them) no longer has active with the same
    /// URL.
    pub(super) fn forget_waits(&self, rows: &[SubscriptionRow]) {
        locked(&self.waiting).retain(|name, mark| {
            rows.iter().any(|row| {
                &row.name == name
                    && row.created_at == mark.added
                    && row.url == mark.url
                    && row.status == "active"
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, status: &str, added: i64) -> SubscriptionRow {
        SubscriptionRow {
            name: name.into(),
            url: format!("http://127.0.0.1:9/{name}"),
            kinds: r#"["completed"]"#.into(),
            states: "[]".into(),
            workflow: None,
            filter: None,
            format: "json".into(),
            no_move_for: None,
            status: status.into(),
            secrets: "[]".into(),
            created_at: added,
            changed_at: added,
        }
    }

    #[test]
    fn a_mark_keeps_its_first_moment_until_the_receiver_is_reached() {
        let subscribed = Subscribed::default();
        let ops = row("ops", "active", 1);
        subscribed.replace(std::slice::from_ref(&ops), "orders");
        subscribed.unreachable(&ops, 10, "cannot connect: refused", Some(20));
        subscribed.unreachable(&ops, 30, "cannot connect: reset", Some(50));
        let mark = subscribed.waiting(&ops).expect("marked");
        assert_eq!((mark.since, mark.next_try), (10, Some(50)));
        assert_eq!(mark.reason, "cannot connect: reset");
        assert_eq!(subscribed.unreachable_now(), vec![("ops".into(), true)]);
        subscribed.reached(&ops);
        assert_eq!(subscribed.waiting(&ops), None);
        assert_eq!(subscribed.unreachable_now(), vec![("ops".into(), false)]);
    }

    #[test]
    fn a_pause_a_removal_or_another_url_drops_the_mark_and_a_late_one_is_not_made() {
        let subscribed = Subscribed::default();
        let ops = row("ops", "active", 1);
        subscribed.replace(std::slice::from_ref(&ops), "orders");
        subscribed.unreachable(&ops, 10, "refused", Some(20));
        let paused = row("ops", "paused", 1);
        subscribed.replace(std::slice::from_ref(&paused), "orders");
        assert_eq!(subscribed.waiting(&ops), None);
        // The queue's attempt that ends after the pause marks nothing.
        subscribed.unreachable(&ops, 11, "refused", Some(21));
        subscribed.replace(std::slice::from_ref(&ops), "orders");
        assert_eq!(subscribed.waiting(&ops), None, "resumed, not marked");
        subscribed.unreachable(&ops, 12, "refused", Some(22));
        let moved = SubscriptionRow {
            url: "http://127.0.0.1:10/ops".into(),
            ..ops.clone()
        };
        subscribed.replace(std::slice::from_ref(&moved), "orders");
        assert_eq!(subscribed.waiting(&moved), None);
        subscribed.unreachable(&ops, 13, "refused", Some(23));
        let again = row("ops", "active", 2);
        subscribed.replace(std::slice::from_ref(&again), "orders");
        assert_eq!(subscribed.waiting(&again), None, "added again");
        subscribed.unreachable(&ops, 14, "refused", Some(24));
        assert_eq!(subscribed.waiting(&again), None, "the old queue's");
        subscribed.replace(&[], "orders");
        assert_eq!(subscribed.unreachable_now(), vec![]);
    }
}
