//! The tables of notifications (schema 0016, `docs/inside/data.md`;
//! `docs/notifications.md`): `subscriptions` (what each is about, where it sends,
//! its secrets), `notifications` (the outbox: one row per notification, written in
//! the transaction of the ledger entry that causes it) and `notification_attempts`
//! (each delivery attempt's answer and latency). The index `notifications_due`
//! (schema 0019) holds the rows not yet delivered by subscription, due moment and
//! id, so that a sender reads the due ones from its queue's head and never those
//! waiting for a retry; `notifications_token` holds them by token, so that it
//! knows whether an earlier one of a token is still pending. Each subscription's
//! row counts its delivered notifications (`delivered`), kept by the writes that
//! deliver and delete them, so that counting reads only the pending and dead
//! rows.

use super::rows::Stored;
use super::through::passed_through;
use super::StoreResult;

/// A row of `subscriptions`. Times are microseconds since 1970.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionRow {
    /// Its name (the key).
    pub name: String,
    /// An `http://` or `https://` URL.
    pub url: String,
    /// The kinds it is about, as a JSON array of text.
    pub kinds: String,
    /// The states it is narrowed to, as a JSON array of text (empty: any).
    pub states: String,
    /// The workflow it is narrowed to.
    pub workflow: Option<String>,
    /// The filter it is narrowed by, as given.
    pub filter: Option<String>,
    /// `json` or `slack`.
    pub format: String,
    /// `no_move`: after how long in a state, in microseconds.
    pub no_move_for: Option<i64>,
    /// `active` or `paused`.
    pub status: String,
    /// The signing secrets (`whsec_...`), newest first, as a JSON array of text.
    /// Never shown after the add or a rotation.
    pub secrets: String,
    /// When it was added.
    pub created_at: i64,
    /// When its settings last changed.
    pub changed_at: i64,
}

/// The columns of `subscriptions` in the order [`SubscriptionRow::read`] takes them.
pub const SUBSCRIPTION_COLUMNS: &str = "name, url, kinds, states, workflow, filter, format, \
                                        no_move_for, status, secrets, created_at, changed_at";

impl SubscriptionRow {
    /// From [`SUBSCRIPTION_COLUMNS`].
    pub fn read<R: Stored>(row: &R) -> Result<SubscriptionRow, R::Error> {
        Ok(SubscriptionRow {
            name: row.text(0)?,
            url: row.text(1)?,
            kinds: row.text(2)?,
            states: row.text(3)?,
            workflow: row.maybe_text(4)?,
            filter: row.maybe_text(5)?,
            format: row.text(6)?,
            no_move_for: row.maybe_int(7)?,
            status: row.text(8)?,
            secrets: row.text(9)?,
            created_at: row.int(10)?,
            changed_at: row.int(11)?,
        })
    }
}

/// A notification to write: a [`NotificationRow`] before the store gives it its id.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNotification<'a> {
    /// The subscription.
    pub subscription: &'a str,
    /// The ledger entry that caused it (none for `no_move` and `test`).
    pub entry: Option<i64>,
    /// The token.
    pub token: &'a str,
    /// The entry's kind, `no_move` or `test`.
    pub kind: &'a str,
    /// `no_move`: the state and the visit it is about (one per visit).
    pub state: Option<&'a str>,
    /// See `state`.
    pub visit: Option<i64>,
}

/// A [`NewNotification`] with its moment, as the Postgres flush holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingNotification {
    /// See [`NewNotification`].
    pub subscription: String,
    /// See [`NewNotification`].
    pub entry: Option<i64>,
    /// See [`NewNotification`].
    pub token: String,
    /// See [`NewNotification`].
    pub kind: String,
    /// See [`NewNotification`].
    pub state: Option<String>,
    /// See [`NewNotification`].
    pub visit: Option<i64>,
    /// `Tx::now` of the transaction that wrote it.
    pub at: i64,
}

/// A row of `notifications`: the outbox of the notifications.
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationRow {
    /// The id, from 1, never reused: the `webhook-id` is `msg_` and this.
    pub id: i64,
    /// The subscription.
    pub subscription: String,
    /// The ledger entry that caused it.
    pub entry: Option<i64>,
    /// The token.
    pub token: String,
    /// The entry's kind, `no_move` or `test`.
    pub kind: String,
    /// `no_move`: the state.
    pub state: Option<String>,
    /// `no_move`: the visit.
    pub visit: Option<i64>,
    /// When it was written.
    pub at: i64,
    /// `pending`, `delivered` or `dead`.
    pub status: String,
    /// How many times it was sent.
    pub attempts: i64,
    /// When it is sent next (pending; 0 until it is first tried or moved behind
    /// an earlier one of its token: due at once); when it was delivered
    /// (delivered), which retention (`serve --notify-keep`) counts from.
    pub next_at: i64,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

/// The columns of `notifications` in the order [`NotificationRow::read`] takes them.
pub const NOTIFICATION_COLUMNS: &str =
    "id, subscription, entry, token, kind, state, visit, at, status, attempts, next_at, \
     last_error";

impl NotificationRow {
    /// From [`NOTIFICATION_COLUMNS`].
    pub fn read<R: Stored>(row: &R) -> Result<NotificationRow, R::Error> {
        Ok(NotificationRow {
            id: row.int(0)?,
            subscription: row.text(1)?,
            entry: row.maybe_int(2)?,
            token: row.text(3)?,
            kind: row.text(4)?,
            state: row.maybe_text(5)?,
            visit: row.maybe_int(6)?,
            at: row.int(7)?,
            status: row.text(8)?,
            attempts: row.int(9)?,
            next_at: row.int(10)?,
            last_error: row.maybe_text(11)?,
        })
    }
}

/// A due notification as the sender reads it ([`Notifications::due_notifications`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DueNotification {
    /// The notification.
    pub row: NotificationRow,
    /// The latest `next_at` of the earlier notifications of its token that are
    /// still pending (none: it is its token's first). Later than the row's own,
    /// one of them waits for a retry, and the row must wait until then.
    pub behind: Option<i64>,
}

/// A pending notification moved behind an earlier one of its token
/// ([`Notifications::record_attempts`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deferral {
    /// The notification.
    pub id: i64,
    /// Its attempts when it was read.
    pub attempts: i64,
    /// When it may be sent, in microseconds.
    pub next_at: i64,
}

/// A row of `notification_attempts`: one delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    /// The subscription.
    pub subscription: String,
    /// The notification.
    pub notification: i64,
    /// 1, 2, 3 ... per notification.
    pub attempt: i64,
    /// When it was sent, in microseconds.
    pub at: i64,
    /// The HTTP status of the answer, if one came.
    pub status: Option<i64>,
    /// From sending to the end of the answer, in microseconds.
    pub latency: i64,
    /// Why it failed; none for a delivery.
    pub reason: Option<String>,
}

/// The columns of `notification_attempts` in the order [`AttemptRow::read`] takes them.
pub const ATTEMPT_COLUMNS: &str =
    "subscription, notification, attempt, at, status, latency, reason";

impl AttemptRow {
    /// From [`ATTEMPT_COLUMNS`].
    pub fn read<R: Stored>(row: &R) -> Result<AttemptRow, R::Error> {
        Ok(AttemptRow {
            subscription: row.text(0)?,
            notification: row.int(1)?,
            attempt: row.int(2)?,
            at: row.int(3)?,
            status: row.maybe_int(4)?,
            latency: row.int(5)?,
            reason: row.maybe_text(6)?,
        })
    }
}

/// What one attempt did to its notification.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A 2xx answer: delivered.
    Delivered,
    /// Failed; sent again at this moment (microseconds).
    Again(i64),
    /// Failed past the limit: dead.
    Dead,
}

impl Outcome {
    /// The notification's status after it, and its next moment if it is sent again.
    pub fn status(&self) -> (&'static str, Option<i64>) {
        match self {
            Outcome::Delivered => ("delivered", None),
            Outcome::Again(at) => ("pending", Some(*at)),
            Outcome::Dead => ("dead", None),
        }
    }

    /// The notification's `next_at` after it, for an attempt made at `attempted`
    /// (microseconds): its next moment if it is sent again, the attempt's moment
    /// if delivered (retention counts from it), else unchanged (`None`).
    pub fn next_at(&self, attempted: i64) -> Option<i64> {
        match self {
            Outcome::Delivered => Some(attempted),
            Outcome::Again(at) => Some(*at),
            Outcome::Dead => None,
        }
    }
}

/// `(subscription, status, retried, count)`: how many notifications of a
/// subscription have a status, split by whether they were tried.
pub type NotificationCount = (String, String, bool, i64);

/// `(token, state, visit)` of a token that stayed in its state too long.
pub type Stalled = (String, String, i64);

passed_through! {
    /// The tables `subscriptions`, `notifications` and `notification_attempts`.
    pub trait Notifications {
        /// Add a subscription.
        fn insert_subscription(&self, row: &SubscriptionRow) -> StoreResult<()>;
        /// Write its status, secrets and `changed_at`.
        fn update_subscription(&self, row: &SubscriptionRow) -> StoreResult<()>;
        /// Delete the subscription and its notifications and attempts; false when
        /// there was none.
        fn delete_subscription(&self, name: &str) -> StoreResult<bool>;
        /// The subscription.
        fn subscription(&self, name: &str) -> StoreResult<Option<SubscriptionRow>>;
        /// Every subscription, by name.
        fn subscriptions(&self) -> StoreResult<Vec<SubscriptionRow>>;
        /// Write notifications at `Tx::now`, due at once (`next_at` 0): those
        /// of ledger entries as one batch for each subscription
        /// (`notification_batches`, which its queue makes rows of), the others
        /// (`no_move`, `test`) as rows (on Postgres with the transaction's other
        /// writes, `postgres/pending.rs`). A `no_move` of a visit that has one
        /// already writes nothing, nor does one of a subscription that is gone
        /// when the write commits, or one of a ledger entry for a subscription
        /// that is paused then.
        fn insert_notifications(&self, rows: &[NewNotification<'_>]) -> StoreResult<()>;
        /// Whether the subscription has batches (`notification_batches`) that
        /// its queue has not made rows of yet. With `written_by`
        /// (microseconds), only a batch whose first notification is of an
        /// entry written at or before it counts.
        fn batches_waiting(&self, subscription: &str, written_by: Option<i64>)
            -> StoreResult<bool>;
        /// Turn at most `most` of the subscription's oldest batches into rows
        /// of `notifications`, pending and due at once, numbered in the order
        /// they were written, and delete the batches, in one statement; how
        /// many notifications that made.
        fn expand_batches(&self, subscription: &str, most: i64) -> StoreResult<i64>;
        /// At most `limit` pending notifications of the subscription due at `now`
        /// (microseconds), by due moment and id, read through `notifications_due`
        /// (those waiting for a retry are not read), each with what it waits
        /// behind (`notifications_token`).
        fn due_notifications(
            &self,
            subscription: &str,
            now: i64,
            limit: i64,
        ) -> StoreResult<Vec<DueNotification>>;
        /// Record attempts and what each did to its notification, and count the
        /// notifications delivered in their subscriptions' rows; then move each
        /// notification of `deferred` to be sent no sooner than its moment. One
        /// statement each whatever their number (the sender's batch). A
        /// notification tried since it was read is left as it is: each change
        /// is made only where `attempts` is still what was read (the key is read,
        /// not the partial indexes, which a test of `status` would bring in).
        fn record_attempts(
            &self,
            done: &[(AttemptRow, Outcome)],
            deferred: &[Deferral],
        ) -> StoreResult<()>;
        /// At most `limit` notifications with an id above `after`, by id: a
        /// window of retention (`serve --notify-keep`), read through the key.
        fn notifications_after(&self, after: i64, limit: i64) -> StoreResult<Vec<NotificationRow>>;
        /// Delete the notifications `ids` and their attempts, less the delivered
        /// ones from their subscriptions' counts; how many notifications went.
        fn delete_notifications(&self, ids: &[i64]) -> StoreResult<i64>;
        /// How many notifications there are by subscription and status: the
        /// pending and dead rows counted (through their indexes), the delivered
        /// ones read from each subscription's row.
        fn notification_counts(&self) -> StoreResult<Vec<NotificationCount>>;
        /// At most `limit` latest attempts of the subscription, newest first.
        fn latest_attempts(&self, subscription: &str, limit: i64) -> StoreResult<Vec<AttemptRow>>;
        /// At most `limit` dead notifications (of one subscription, when given), by id.
        fn dead_notifications(
            &self,
            subscription: Option<&str>,
            limit: i64,
        ) -> StoreResult<Vec<NotificationRow>>;
        /// Make dead notifications pending again, due now (of one subscription,
        /// or only `id`, when given); how many.
        fn revive_notifications(&self, subscription: &str, id: Option<i64>) -> StoreResult<i64>;
        /// Make the subscription's pending notifications that wait for a retry
        /// due now (`Tx::now`): its queue reached the receiver it could not
        /// reach (`docs/notifications.md`, "A receiver that cannot be
        /// reached"); how many.
        fn hasten_notifications(&self, subscription: &str) -> StoreResult<i64>;
        /// The live tokens (in `states` when not empty) that entered their state
        /// at or before `until` and whose visit has no `no_move` notification of
        /// the subscription; at most `limit`.
        fn stalled_tokens(
            &self,
            subscription: &str,
            states: &[String],
            until: i64,
            limit: i64,
        ) -> StoreResult<Vec<Stalled>>;
    }
}
