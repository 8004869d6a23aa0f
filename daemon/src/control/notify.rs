//! Notifications on the control plane (`docs/notifications.md`): the requests of
//! `/notify`, each change in the journal (with the key's name, never a secret),
//! the write path's copy of the active subscriptions kept current
//! ([`Control::reload_subscriptions`]), and the clock's part, which writes a
//! `no_move` notification for each visit that stayed too long
//! ([`Control::scan_no_move`]).

use std::collections::HashMap;

use serde_json::json;
use stateous_shared::notify::{
    AttemptView, Counts, FailedList, NewSubscription, NotificationView, Queued, SubscriptionAdded,
    SubscriptionDetail, SubscriptionList, SubscriptionView, Unreachable, NO_MOVE, TEST,
};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::Object;

use super::Control;
use crate::engine::{refuse, Step};
use crate::notify::input::{new_secret, new_subscription, shown_url};
use crate::notify::Subscribed;
use crate::store::notifications::{
    AttemptRow, Deferral, DueNotification, NewNotification, NotificationRow, Outcome,
    SubscriptionRow,
};
use crate::store::{StoreResult, Tx};

/// The most attempts `GET /notify/{name}` shows.
const MOST_ATTEMPTS_SHOWN: i64 = 50;

/// The most dead notifications `GET /notify/failed` lists.
const MOST_FAILED_LISTED: i64 = 1000;

/// The most `no_move` notifications one tick writes per subscription.
const MOST_NO_MOVE_PER_TICK: i64 = 1000;

/// The most batches of notifications (`notification_batches`) a tick
/// makes rows of before it writes a subscription's `no_move` notifications.
const MOST_BATCHES_PER_TICK: i64 = 32;

/// Whether no batch of the subscription's notifications of entries written by
/// `until` (microseconds: the visits it would write `no_move` for began by
/// then) waits any more, once at most [`MOST_BATCHES_PER_TICK`] of its oldest
/// batches were made rows. A `no_move` row written while the entry that began
/// its visit waits in a batch would be numbered, and so sent, before it: it is
/// written at a later tick instead, once those batches are rows (the sender
/// makes rows of them too). Batches of newer entries, which a busy write path
/// keeps adding, do not hold it back.
fn batches_made_rows(tx: &dyn Tx, subscription: &str, until: i64) -> StoreResult<bool> {
    if !tx.batches_waiting(subscription, Some(until))? {
        return Ok(true);
    }
    tx.expand_batches(subscription, MOST_BATCHES_PER_TICK)?;
    Ok(!tx.batches_waiting(subscription, Some(until))?)
}

/// Where a subscription stands ([`Control::subscription_now`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// It sends.
    Active,
    /// Its notifications wait for the resume.
    Paused,
    /// Gone with its notifications (perhaps added again under its name).
    Removed,
}

/// The journal's subject of subscriptions.
const SUBJECT: &str = "subscription";

fn not_found(name: &str) -> Refusal {
    Refusal::new(
        Code::SubscriptionNotFound,
        format!("no subscription is named {name}"),
    )
}

fn existing(tx: &dyn Tx, name: &str) -> Step<SubscriptionRow> {
    match tx.subscription(name)? {
        Some(row) => Ok(row),
        None => Err(not_found(name).into()),
    }
}

fn list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn journal(tx: &dyn Tx, name: &str, kind: &str, data: serde_json::Value) -> Step<()> {
    let data: Object = match data {
        serde_json::Value::Object(map) => map,
        _ => Object::new(),
    };
    tx.journal_append(SUBJECT, name, kind, &data)?;
    Ok(())
}

/// Each subscription's counts, by name.
fn counts(tx: &dyn Tx) -> Step<HashMap<String, Counts>> {
    let mut all: HashMap<String, Counts> = HashMap::new();
    for (name, status, tried, count) in tx.notification_counts()? {
        let counts = all.entry(name).or_default();
        match (status.as_str(), tried) {
            ("pending", false) => counts.pending += count,
            ("pending", true) => counts.retrying += count,
            ("delivered", _) => counts.delivered += count,
            _ => counts.dead += count,
        }
    }
    Ok(all)
}

/// What the API says of a subscription: never its secrets; whether its queue
/// waits for a receiver it could not reach, from `subscribed`.
pub fn view(row: &SubscriptionRow, counts: Counts, subscribed: &Subscribed) -> SubscriptionView {
    let at = |micros: i64| iso(from_micros(micros));
    SubscriptionView {
        name: row.name.clone(),
        url: shown_url(&row.url),
        kinds: list(&row.kinds),
        states: list(&row.states),
        workflow: row.workflow.clone(),
        filter: row.filter.clone(),
        format: row.format.clone(),
        no_move_seconds: row.no_move_for.map(|micros| micros as f64 / 1e6),
        status: row.status.clone(),
        secrets: list(&row.secrets).len(),
        counts,
        created: iso(from_micros(row.created_at)),
        changed: iso(from_micros(row.changed_at)),
        unreachable: subscribed.waiting(row).map(|mark| Unreachable {
            since: at(mark.since),
            reason: mark.reason,
            next_try: mark.next_try.map(at),
        }),
    }
}

/// What the API says of a notification.
pub fn notification_view(row: &NotificationRow) -> NotificationView {
    NotificationView {
        id: row.id,
        subscription: row.subscription.clone(),
        token: row.token.clone(),
        kind: row.kind.clone(),
        entry: row.entry,
        status: row.status.clone(),
        attempts: row.attempts,
        last_error: row.last_error.clone(),
        created: iso(from_micros(row.at)),
    }
}

fn attempt_view(row: &AttemptRow) -> AttemptView {
    AttemptView {
        notification: row.notification,
        attempt: row.attempt,
        at: iso(from_micros(row.at)),
        status: row.status.and_then(|s| u16::try_from(s).ok()),
        latency_ms: row.latency as f64 / 1000.0,
        reason: row.reason.clone(),
    }
}

fn show(tx: &dyn Tx, name: &str, subscribed: &Subscribed) -> Step<SubscriptionView> {
    let row = existing(tx, name)?;
    let counts = counts(tx)?.remove(name).unwrap_or_default();
    Ok(view(&row, counts, subscribed))
}

impl Control {
    /// Read the subscriptions into the write path's copy (at the start, and after
    /// each change to one).
    pub async fn reload_subscriptions(&self) -> Result<(), Refusal> {
        let rows = self.read_now(|tx| Ok(tx.subscriptions()?)).await?;
        let main = self.inner.rules.graph.main.name.clone();
        self.inner.subscribed.replace(&rows, &main);
        Ok(())
    }

    /// What the write path's copy of the subscriptions, which a pause or a
    /// removal changes before it answers, says of the subscription `name`
    /// added at `added` (microseconds): the sender looks before each send, so
    /// that none starts after the pause or the removal has answered.
    pub fn subscription_now(&self, name: &str, added: i64) -> Standing {
        let snapshot = self.inner.subscribed.snapshot();
        if !snapshot.has(name, added) {
            Standing::Removed
        } else if snapshot.active(name, added) {
            Standing::Active
        } else {
            Standing::Paused
        }
    }

    /// The queue of `row` could not reach its receiver at `at`
    /// (microseconds) for `reason`, and tries again at `next_try` (none: when
    /// its next notification is due): `GET /notify` and `/metrics` show it.
    pub fn receiver_unreachable(
        &self,
        row: &SubscriptionRow,
        at: i64,
        reason: &str,
        next_try: Option<i64>,
    ) {
        self.inner.subscribed.unreachable(row, at, reason, next_try);
    }

    /// The queue of `row` reached its receiver: it no longer shows as waiting.
    pub fn receiver_reached(&self, row: &SubscriptionRow) {
        self.inner.subscribed.reached(row);
    }

    /// Every subscription, by name, and whether its queue waits for a
    /// receiver it could not reach (for `/metrics`).
    pub fn receivers_unreachable(&self) -> Vec<(String, bool)> {
        self.inner.subscribed.unreachable_now()
    }

    /// The subscription `name` as the API shows it, read after a change.
    async fn shown(&self, name: String) -> Result<SubscriptionView, Refusal> {
        let subscribed = self.inner.subscribed.clone();
        self.read(move |tx| show(tx, &name, &subscribed)).await
    }

    /// Wake the queues that wait for a receiver they could not reach.
    fn ask_sends(&self) {
        self.inner.subscribed.ask_sends();
    }

    /// Until an operator asks for notifications to go now (`notify test`,
    /// `redeliver`, `resume`).
    pub async fn sends_asked(&self) {
        self.inner.subscribed.sends_asked().await;
    }

    /// How many times an operator asked for notifications to go now (`notify
    /// test`, `redeliver`, `resume`) since the control plane started.
    pub fn operator_words(&self) -> u64 {
        self.inner.subscribed.words()
    }

    /// The active subscriptions' rows (the sender's list).
    pub async fn active_subscriptions(&self) -> Result<Vec<SubscriptionRow>, Refusal> {
        let rows = self.read(|tx| Ok(tx.subscriptions()?)).await?;
        Ok(rows.into_iter().filter(|r| r.status == "active").collect())
    }

    /// `POST /notify`: add a subscription; its view and its secret, shown once.
    pub async fn add_subscription(
        &self,
        body: NewSubscription,
    ) -> Result<SubscriptionAdded, Refusal> {
        let now = self.inner.options.clock.now();
        let (row, secret) = new_subscription(&self.inner.rules, &body, now)?;
        let name = row.name.clone();
        self.write(move |_, tx| {
            if tx.subscription(&row.name)?.is_some() {
                return refuse(
                    Code::SubscriptionExists,
                    format!(
                        "a subscription named {} exists already; remove it first",
                        row.name
                    ),
                );
            }
            let mut written = row.clone();
            written.created_at = tx.now();
            written.changed_at = tx.now();
            tx.insert_subscription(&written)?;
            let data = json!({
                "url": shown_url(&written.url), "kinds": list(&written.kinds),
                "states": list(&written.states), "workflow": written.workflow,
                "filter": written.filter, "format": written.format,
                "no_move_for": written.no_move_for.map(|m| m as f64 / 1e6),
            });
            journal(tx, &written.name, "added", data)
        })
        .await?;
        self.reload_subscriptions().await?;
        let subscription = self.shown(name).await?;
        Ok(SubscriptionAdded {
            subscription,
            secret,
        })
    }

    /// `GET /notify`: every subscription with its counts.
    pub async fn subscriptions(&self) -> Result<SubscriptionList, Refusal> {
        let subscribed = self.inner.subscribed.clone();
        self.read(move |tx| {
            let mut counts = counts(tx)?;
            let subscriptions = tx
                .subscriptions()?
                .iter()
                .map(|row| {
                    let counts = counts.remove(&row.name).unwrap_or_default();
                    view(row, counts, &subscribed)
                })
                .collect();
            Ok(SubscriptionList { subscriptions })
        })
        .await
    }

    /// `GET /notify/{name}`: the subscription and its latest attempts.
    pub async fn subscription(&self, name: String) -> Result<SubscriptionDetail, Refusal> {
        let subscribed = self.inner.subscribed.clone();
        self.read(move |tx| {
            let subscription = show(tx, &name, &subscribed)?;
            let attempts = tx
                .latest_attempts(&name, MOST_ATTEMPTS_SHOWN)?
                .iter()
                .map(attempt_view)
                .collect();
            Ok(SubscriptionDetail {
                subscription,
                attempts,
            })
        })
        .await
    }

    /// `POST /notify/{name}/pause` (`pause` true) or `/resume`. Pausing a paused
    /// subscription (or resuming an active one) changes nothing and writes no
    /// journal entry, as for a schedule.
    pub async fn pause_subscription(
        &self,
        name: String,
        pause: bool,
    ) -> Result<SubscriptionView, Refusal> {
        let asked = name.clone();
        self.write(move |_, tx| {
            let mut row = existing(tx, &asked)?;
            let status = if pause { "paused" } else { "active" };
            if row.status == status {
                return Ok(());
            }
            row.status = status.into();
            row.changed_at = tx.now();
            tx.update_subscription(&row)?;
            journal(
                tx,
                &asked,
                if pause { "paused" } else { "resumed" },
                json!({}),
            )
        })
        .await?;
        self.reload_subscriptions().await?;
        if !pause {
            self.ask_sends();
        }
        self.shown(name).await
    }

    /// `POST /notify/{name}/rotate`: a new secret signs from now on beside the
    /// newest one before it (two signatures in each header) until the next
    /// rotation; the new one, shown once.
    pub async fn rotate_subscription(&self, name: String) -> Result<SubscriptionAdded, Refusal> {
        let secret = new_secret();
        let asked = name.clone();
        let given = secret.clone();
        self.write(move |_, tx| {
            let mut row = existing(tx, &asked)?;
            let mut secrets = list(&row.secrets);
            secrets.insert(0, given.clone());
            secrets.truncate(2);
            row.secrets = serde_json::to_string(&secrets).unwrap_or_default();
            row.changed_at = tx.now();
            tx.update_subscription(&row)?;
            journal(tx, &asked, "rotated", json!({}))
        })
        .await?;
        let subscription = self.shown(name).await?;
        Ok(SubscriptionAdded {
            subscription,
            secret,
        })
    }

    /// `DELETE /notify/{name}`: the subscription and its notifications.
    pub async fn remove_subscription(&self, name: String) -> Result<(), Refusal> {
        self.write(move |_, tx| {
            if !tx.delete_subscription(&name)? {
                return Err(not_found(&name).into());
            }
            journal(tx, &name, "removed", json!({}))
        })
        .await?;
        self.reload_subscriptions().await
    }

    /// `POST /notify/{name}/test`: one notification of the kind `test`, sent
    /// as the others are.
    pub async fn test_subscription(&self, name: String) -> Result<Queued, Refusal> {
        let queued = self
            .write(move |_, tx| {
                existing(tx, &name)?;
                tx.insert_notifications(&[NewNotification {
                    subscription: &name,
                    entry: None,
                    token: "",
                    kind: TEST,
                    state: None,
                    visit: None,
                }])?;
                Ok(Queued { queued: 1 })
            })
            .await;
        self.ask_sends();
        queued
    }

    /// `GET /notify/failed`: the dead notifications, oldest first.
    pub async fn failed_notifications(&self) -> Result<FailedList, Refusal> {
        self.read(|tx| {
            let failed = tx
                .dead_notifications(None, MOST_FAILED_LISTED)?
                .iter()
                .map(notification_view)
                .collect();
            Ok(FailedList { failed })
        })
        .await
    }

    /// `POST /notify/{name}/redeliver`: the subscription's dead notifications
    /// (or only `id`) are pending again, due now, with the same `webhook-id`.
    ///
    /// Errors: 404 `subscription_not_found`; 404 `not_found` when `id` is given
    /// and is no dead notification of the subscription (nothing changes).
    pub async fn redeliver(&self, name: String, id: Option<i64>) -> Result<Queued, Refusal> {
        let revived = self
            .write(move |_, tx| {
                existing(tx, &name)?;
                let queued = tx.revive_notifications(&name, id)?;
                if let (Some(id), 0) = (id, queued) {
                    let found = tx
                        .notifications_after(id.saturating_sub(1), 1)?
                        .into_iter()
                        .find(|row| row.id == id && row.subscription == name);
                    let what = match found {
                        Some(row) if row.status == "delivered" => {
                            format!("notification {id} of {name} was delivered: it is not dead")
                        }
                        Some(row) if row.attempts > 0 => format!(
                            "notification {id} of {name} is not dead: it is retrying ({} attempts \
                         so far)",
                            row.attempts
                        ),
                        Some(_) => {
                            format!("notification {id} of {name} is not dead: it waits to be sent")
                        }
                        None => format!("the subscription {name} has no notification {id}"),
                    };
                    return refuse(
                        Code::NotFound,
                        format!("{what}; `stateous notify failed` lists the dead ones"),
                    );
                }
                journal(tx, &name, "redelivered", json!({"count": queued, "id": id}))?;
                Ok(Queued { queued })
            })
            .await;
        self.ask_sends();
        revived
    }

    /// The sender's read: at most `limit` notifications of a subscription due
    /// at `now` (microseconds), by due moment and id, each with what it waits
    /// behind, with the subscription as it is now (`None`: gone), and whether
    /// batches of it wait to be made rows ([`Control::expand_batches`]).
    pub async fn due_notifications(
        &self,
        name: String,
        now: i64,
        limit: i64,
    ) -> Result<Option<(SubscriptionRow, Vec<DueNotification>, bool)>, Refusal> {
        self.read(move |tx| {
            let Some(row) = tx.subscription(&name)? else {
                return Ok(None);
            };
            let due = tx.due_notifications(&name, now, limit)?;
            Ok(Some((row, due, tx.batches_waiting(&name, None)?)))
        })
        .await
    }

    /// The sender's write before it reads: at most `most` of the subscription's
    /// oldest batches of notifications (the write path writes a write's
    /// notifications of a subscription as one batch) made rows of the outbox;
    /// how many notifications that made.
    pub async fn expand_batches(&self, name: String, most: i64) -> Result<i64, Refusal> {
        self.write(move |_, tx| Ok(tx.expand_batches(&name, most)?))
            .await
    }

    /// The sender's write: the attempts made, each with what it did, and the
    /// notifications moved behind an earlier one of their token.
    pub async fn record_attempts(
        &self,
        done: Vec<(AttemptRow, Outcome)>,
        deferred: Vec<Deferral>,
    ) -> Result<(), Refusal> {
        self.write(move |_, tx| Ok(tx.record_attempts(&done, &deferred)?))
            .await
    }

    /// Make the notifications of subscription `name` that wait for a retry due
    /// now, as its queue reaches the receiver it could not reach; how many.
    pub async fn hasten_notifications(&self, name: String) -> Result<i64, Refusal> {
        self.write(move |_, tx| Ok(tx.hasten_notifications(&name)?))
            .await
    }

    /// The clock's part: for each active `no_move` subscription, one
    /// notification for each visit of a live token that stayed in its state
    /// longer than `no_move_for` (the unique index keeps it to one per visit,
    /// through restarts).
    pub(super) async fn scan_no_move(&self) -> Result<(), Refusal> {
        let snapshot = self.inner.subscribed.snapshot();
        if snapshot.matchers.iter().all(|m| !m.wants(NO_MOVE)) {
            return Ok(());
        }
        self.write(|rules, tx| {
            let main = rules.graph.main.name.clone();
            for row in tx.subscriptions()? {
                let Some(after) = row.no_move_for else {
                    continue;
                };
                if row.status != "active" {
                    continue;
                }
                let Some(matcher) = crate::notify::Matcher::of(&row) else {
                    continue;
                };
                let until = tx.now().saturating_sub(after);
                // By the state's name (`legal/check` as `check`): the matcher
                // then judges the workflow.
                let states: Vec<String> = list(&row.states)
                    .iter()
                    .map(|given| {
                        given
                            .rsplit_once('/')
                            .map_or(given.as_str(), |(_, name)| name)
                    })
                    .map(str::to_string)
                    .collect();
                let mut stalled = Vec::new();
                for (token, state, visit) in
                    tx.stalled_tokens(&row.name, &states, until, MOST_NO_MOVE_PER_TICK)?
                {
                    let Some(found) = tx.token(&token)? else {
                        continue;
                    };
                    // The workflow and the filter judge the token as it is now.
                    if matcher.matches(NO_MOVE, Some(&state), &found, &main, tx.now()) {
                        stalled.push((token, state, visit));
                    }
                }
                if stalled.is_empty() || !batches_made_rows(tx, &row.name, until)? {
                    continue;
                }
                let rows: Vec<NewNotification<'_>> = stalled
                    .iter()
                    .map(|(token, state, visit)| NewNotification {
                        subscription: &row.name,
                        entry: None,
                        token,
                        kind: NO_MOVE,
                        state: Some(state),
                        visit: Some(*visit),
                    })
                    .collect();
                tx.insert_notifications(&rows)?;
            }
            Ok(())
        })
        .await
    }

    /// Each subscription's counts (for `/metrics`).
    pub async fn notification_counts(&self) -> Result<Vec<(String, Counts)>, Refusal> {
        self.read(|tx| {
            let mut all: Vec<(String, Counts)> = counts(tx)?.into_iter().collect();
            all.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(all)
        })
        .await
    }
}

impl Control {
    /// The control plane's `now`, in microseconds.
    pub fn now(&self) -> i64 {
        self.inner.options.clock.now()
    }

    /// The sender's read of what each notification's body is made of, in the
    /// order asked: the ledger entry (when one is named and still kept) and the
    /// token as `GET /tokens/{id}` shows it (when it is still kept). Two
    /// statements on Postgres whatever the number asked, the entries' and the
    /// tokens' (one a notification, before, cost the server more than the write
    /// path's rows of it).
    pub async fn notification_parts(
        &self,
        wanted: Vec<(Option<i64>, String)>,
    ) -> Result<Vec<crate::notify::body::Parts>, Refusal> {
        self.read(move |tx| {
            let mut ids: Vec<i64> = wanted.iter().filter_map(|(entry, _)| *entry).collect();
            ids.sort_unstable();
            ids.dedup();
            let mut tokens: Vec<String> = wanted
                .iter()
                .filter(|(_, token)| !token.is_empty())
                .map(|(_, token)| token.clone())
                .collect();
            tokens.sort_unstable();
            tokens.dedup();
            let entries: HashMap<i64, _> = tx
                .entries_of(&ids)?
                .into_iter()
                .map(|row| (row.id, row))
                .collect();
            let rows: HashMap<String, _> = tx
                .tokens_of(&tokens)?
                .into_iter()
                .map(|row| (row.token.clone(), row))
                .collect();
            Ok(wanted
                .iter()
                .map(|(entry, token)| crate::notify::body::Parts {
                    // The entry of the token named: a notification names both.
                    entry: entry
                        .and_then(|id| entries.get(&id))
                        .filter(|row| &row.token == token)
                        .map(super::views::watch_entry),
                    token: rows.get(token).map(crate::engine::view),
                })
                .collect())
        })
        .await
    }
}
