//! The SQL of `subscriptions`, `notifications` and `notification_attempts`, as
//! SQLite's (`store/sqlite/notifications.rs`).

use super::columns::Columns;
use super::{get, PgTx};
use crate::store::notifications::{
    AttemptRow, Deferral, DueNotification, NewNotification, NotificationCount, NotificationRow,
    Notifications, Outcome, Stalled, SubscriptionRow, WaitingNotification, ATTEMPT_COLUMNS,
    NOTIFICATION_COLUMNS, SUBSCRIPTION_COLUMNS,
};
use crate::store::StoreResult;

/// The flush's part of new notifications of ledger entries: one row of
/// `notification_batches` for each subscription. [`batch_columns`] packs the
/// notifications as entry, token, kind and at, each subscription's together in
/// the order written, then the subscriptions with the first and last place of
/// theirs: each row's arrays are slices of the parameters. One row a write
/// rather than one a notification (13 a token of `orders` for a subscription to
/// every entry, each with two index entries): its queue makes the rows of
/// `notifications` after the commit ([`EXPAND`]), off the write path. (Grouping
/// in SQL with `array_agg` cost the server half as much as the rows.)
///
/// Only for a subscription that is still there and active: the write path
/// matched the entries against its copy of the subscriptions, which changes
/// only after a pause or a removal commits. The subscription's row is read by
/// its key (a `LATERAL` read for each subscription: a join was planned as a
/// read of the whole table) and locked `FOR KEY SHARE`, which only its
/// deletion waits for (`delete_subscription`
/// deletes it first), so that a write and a removal go one after the other:
/// a write that committed first has its notifications deleted with the
/// subscription, and one after finds it gone and writes none.
pub(super) const FLUSH_NEW: &str = "n AS (INSERT INTO notification_batches
          (subscription, entries, tokens, kinds, ats)
      SELECT w.s, ($1::bigint[])[w.lo:w.hi], ($2::text[])[w.lo:w.hi],
             ($3::text[])[w.lo:w.hi], ($4::bigint[])[w.lo:w.hi]
      FROM unnest($5::text[], $6::bigint[]::int[], $7::bigint[]::int[]) AS w(s, lo, hi),
           LATERAL (SELECT 1 FROM subscriptions u WHERE u.name = w.s AND u.status = 'active'
                    FOR KEY SHARE) AS u)";

/// The flush's part of the new notifications of no ledger entry (`no_move`,
/// `test`): rows of `notifications`, from the columns [`row_columns`] packs; a
/// `no_move` of a visit that has one already is left out by the unique index.
/// Only for a subscription still there, as [`FLUSH_NEW`] (a `test` of a paused
/// one waits for its resume).
pub(super) const FLUSH_ROWS: &str = "nv AS (INSERT INTO notifications
          (subscription, entry, token, kind, state, visit, at, status, attempts, next_at)
      SELECT s, e, t, k, st, v, a, 'pending', 0, 0
      FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[],
                  $6::bigint[], $7::bigint[]) AS w(s, e, t, k, st, v, a),
           LATERAL (SELECT 1 FROM subscriptions u WHERE u.name = w.s FOR KEY SHARE) AS u
      ON CONFLICT DO NOTHING)";

/// The new notifications of ledger entries, as the parameters of [`FLUSH_NEW`]
/// (taken, not copied).
pub(super) fn batch_columns(mut rows: Vec<WaitingNotification>) -> Option<Columns> {
    // Each subscription's together, in the order written (a stable sort).
    rows.sort_by(|a, b| a.subscription.cmp(&b.subscription));
    let (mut names, mut firsts, mut lasts) = (Vec::new(), Vec::new(), Vec::<i64>::new());
    for (index, row) in rows.iter().enumerate() {
        // Places in an array count from 1.
        let place = i64::try_from(index + 1).unwrap_or(i64::MAX);
        match lasts.last_mut() {
            Some(last) if names.last() == Some(&row.subscription) => *last = place,
            _ => {
                names.push(row.subscription.clone());
                firsts.push(place);
                lasts.push(place);
            }
        }
    }
    let mut columns = Columns::of(rows, |cells, row| {
        cells
            .put(row.entry)
            .put(row.token)
            .put(row.kind)
            .put(row.at);
    })?;
    columns.put_column(names);
    columns.put_column(firsts);
    columns.put_column(lasts);
    Some(columns)
}

/// The new notifications of no ledger entry, as the columns of [`FLUSH_ROWS`].
pub(super) fn row_columns(rows: &[WaitingNotification]) -> Option<Columns> {
    Columns::of(rows.iter(), |cells, row| {
        cells
            .put(row.subscription.clone())
            .put(row.entry)
            .put(row.token.clone())
            .put(row.kind.clone())
            .put(row.state.clone())
            .put(row.visit)
            .put(row.at);
    })
}

/// [`Notifications::expand_batches`]: the subscription's oldest batches, locked
/// (a second sender on the same table waits, rather than number later batches
/// first), deleted, and their notifications inserted in the order of the
/// batches' ids and of each array, which is the order their ids are given in.
/// The batches of one token are written in the order its transactions commit
/// (each takes the token's row first), so a token's notifications are numbered
/// in ledger order.
const EXPAND: &str = "WITH b AS (
        DELETE FROM notification_batches WHERE id IN (
            SELECT id FROM notification_batches WHERE subscription = $1
            ORDER BY id LIMIT $2 FOR UPDATE)
        RETURNING id, subscription, entries, tokens, kinds, ats)
     INSERT INTO notifications
          (subscription, entry, token, kind, state, visit, at, status, attempts, next_at)
     SELECT b.subscription, w.e, w.t, w.k, NULL, NULL, w.a, 'pending', 0, 0
     FROM b, unnest(b.entries, b.tokens, b.kinds, b.ats) WITH ORDINALITY AS w(e, t, k, a, o)
     ORDER BY b.id, w.o";

/// A subscription's due notifications (`Notifications::due_notifications`):
/// read from the head of `notifications_due`, each with the latest `next_at` of
/// the earlier ones of its token that were tried or moved (`notifications_token`;
/// one never tried has `next_at` 0, and those come first, by id). Each index's
/// terms are stated as `store/schema.rs` (`QUEUE_INDEXES`) says. `next_at + 0`:
/// a plain `max(next_at)` may be planned as a read of `notifications_due` from
/// its end, through every pending notification of the subscription.
fn due_sql() -> String {
    format!(
        "SELECT {NOTIFICATION_COLUMNS},
             (SELECT max(e.next_at + 0) FROM notifications e
              WHERE e.subscription = $1 AND e.status = 'pending' AND e.next_at > 0
                AND e.token = n.token AND e.id < n.id)
         FROM notifications n
         WHERE n.subscription = $1 AND n.status = 'pending' AND n.attempts >= 0
           AND n.next_at <= $2
         ORDER BY n.next_at, n.id LIMIT $3"
    )
}

/// Each subscription's counts (`Notifications::notification_counts`): the
/// pending and dead rows, each branch through a partial index
/// (`notifications_due`, `notifications_dead`), the notifications of batches
/// not yet made rows (pending, never tried), and the delivered ones as their
/// subscription's row counts them, so that the delivered history is not read.
const COUNTS: &str = "SELECT subscription, status, attempts > 0, count(*) FROM notifications
     WHERE status = 'pending' AND attempts >= 0 GROUP BY subscription, status, attempts > 0
     UNION ALL
     SELECT subscription, status, true, count(*) FROM notifications
     WHERE status = 'dead' GROUP BY subscription, status
     UNION ALL
     SELECT subscription, 'pending', false, sum(cardinality(entries))::bigint
     FROM notification_batches GROUP BY subscription
     UNION ALL
     SELECT name, 'delivered', true, delivered FROM subscriptions";

impl Notifications for PgTx<'_> {
    fn insert_subscription(&self, row: &SubscriptionRow) -> StoreResult<()> {
        self.execute(
            &format!(
                "INSERT INTO subscriptions ({SUBSCRIPTION_COLUMNS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
            ),
            &[
                &row.name,
                &row.url,
                &row.kinds,
                &row.states,
                &row.workflow,
                &row.filter,
                &row.format,
                &row.no_move_for,
                &row.status,
                &row.secrets,
                &row.created_at,
                &row.changed_at,
            ],
        )?;
        Ok(())
    }

    fn update_subscription(&self, row: &SubscriptionRow) -> StoreResult<()> {
        self.execute(
            "UPDATE subscriptions SET status = $2, secrets = $3, changed_at = $4 WHERE name = $1",
            &[&row.name, &row.status, &row.secrets, &row.changed_at],
        )?;
        Ok(())
    }

    fn delete_subscription(&self, name: &str) -> StoreResult<bool> {
        // The row first: it waits for the writes that locked it to commit
        // (`FLUSH_NEW`), so that the deletes after it see their notifications.
        let gone = self.execute("DELETE FROM subscriptions WHERE name = $1", &[&name])? > 0;
        self.execute(
            "DELETE FROM notification_attempts WHERE subscription = $1",
            &[&name],
        )?;
        self.execute(
            "DELETE FROM notifications WHERE subscription = $1",
            &[&name],
        )?;
        self.execute(
            "DELETE FROM notification_batches WHERE subscription = $1",
            &[&name],
        )?;
        Ok(gone)
    }

    fn subscription(&self, name: &str) -> StoreResult<Option<SubscriptionRow>> {
        let rows = self.query(
            &format!("SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE name = $1"),
            &[&name],
        )?;
        rows.first().map(SubscriptionRow::read).transpose()
    }

    fn subscriptions(&self) -> StoreResult<Vec<SubscriptionRow>> {
        let rows = self.query(
            &format!("SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions ORDER BY name"),
            &[],
        )?;
        rows.iter().map(SubscriptionRow::read).collect()
    }

    fn insert_notifications(&self, rows: &[NewNotification<'_>]) -> StoreResult<()> {
        // Written with the transaction's other writes (`pending.rs`, which
        // makes the batches): no round trip of its own on the write path.
        let at = self.now.get();
        let mut pending = self.pending.borrow_mut();
        pending
            .notifications
            .extend(rows.iter().map(|row| WaitingNotification {
                subscription: row.subscription.to_string(),
                entry: row.entry,
                token: row.token.to_string(),
                kind: row.kind.to_string(),
                state: row.state.map(str::to_string),
                visit: row.visit,
                at,
            }));
        Ok(())
    }

    fn batches_waiting(&self, subscription: &str, written_by: Option<i64>) -> StoreResult<bool> {
        // A batch's entries are in the order written: its first is its oldest.
        let rows = self.query(
            "SELECT EXISTS (SELECT 1 FROM notification_batches
                 WHERE subscription = $1 AND ($2::bigint IS NULL OR ats[1] <= $2))",
            &[&subscription, &written_by],
        )?;
        match rows.first() {
            Some(row) => get(row, 0),
            None => Ok(false),
        }
    }

    fn expand_batches(&self, subscription: &str, most: i64) -> StoreResult<i64> {
        Ok(self.execute(EXPAND, &[&subscription, &most])? as i64)
    }

    fn due_notifications(
        &self,
        subscription: &str,
        now: i64,
        limit: i64,
    ) -> StoreResult<Vec<DueNotification>> {
        let rows = self.query(&due_sql(), &[&subscription, &now, &limit])?;
        rows.iter()
            .map(|row| {
                Ok(DueNotification {
                    row: NotificationRow::read(row)?,
                    behind: get(row, 12)?,
                })
            })
            .collect()
    }

    fn record_attempts(
        &self,
        done: &[(AttemptRow, Outcome)],
        deferred: &[Deferral],
    ) -> StoreResult<()> {
        if !done.is_empty() {
            self.record_done(done)?;
        }
        if !deferred.is_empty() {
            let ids: Vec<i64> = deferred.iter().map(|d| d.id).collect();
            let attempts: Vec<i64> = deferred.iter().map(|d| d.attempts).collect();
            let nexts: Vec<i64> = deferred.iter().map(|d| d.next_at).collect();
            // `id = ANY($1)` as well as the join, as in `record_done`.
            self.execute(
                "UPDATE notifications n SET next_at = d.next_at
                 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS d(id, attempts, next_at)
                 WHERE n.id = d.id AND n.id = ANY($1) AND n.attempts = d.attempts
                   AND n.next_at < d.next_at",
                &[&ids, &attempts, &nexts],
            )?;
        }
        Ok(())
    }

    fn notifications_after(&self, after: i64, limit: i64) -> StoreResult<Vec<NotificationRow>> {
        let rows = self.query(
            &format!(
                "SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE id > $1
                 ORDER BY id LIMIT $2"
            ),
            &[&after, &limit],
        )?;
        rows.iter().map(NotificationRow::read).collect()
    }

    fn delete_notifications(&self, ids: &[i64]) -> StoreResult<i64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = ids.to_vec();
        self.execute(
            "DELETE FROM notification_attempts WHERE notification = ANY($1)",
            &[&ids],
        )?;
        // The delivered ones go from their subscriptions' counts in the same
        // statement.
        let rows = self.query(
            "WITH gone AS (DELETE FROM notifications WHERE id = ANY($1)
                           RETURNING subscription, status),
                  counted AS (UPDATE subscriptions s SET delivered = s.delivered - d.count
                              FROM (SELECT subscription, count(*) AS count FROM gone
                                    WHERE status = 'delivered' GROUP BY subscription) AS d
                              WHERE s.name = d.subscription)
             SELECT count(*) FROM gone",
            &[&ids],
        )?;
        match rows.first() {
            Some(row) => get(row, 0),
            None => Ok(0),
        }
    }

    fn notification_counts(&self) -> StoreResult<Vec<NotificationCount>> {
        let rows = self.query(COUNTS, &[])?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?, get(row, 2)?, get(row, 3)?)))
            .collect()
    }

    fn latest_attempts(&self, subscription: &str, limit: i64) -> StoreResult<Vec<AttemptRow>> {
        let rows = self.query(
            &format!(
                "SELECT {ATTEMPT_COLUMNS} FROM notification_attempts WHERE subscription = $1
                 ORDER BY at DESC, notification DESC, attempt DESC LIMIT $2"
            ),
            &[&subscription, &limit],
        )?;
        rows.iter().map(AttemptRow::read).collect()
    }

    fn dead_notifications(
        &self,
        subscription: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<NotificationRow>> {
        let rows = self.query(
            &format!(
                "SELECT {NOTIFICATION_COLUMNS} FROM notifications
                 WHERE status = 'dead' AND ($1::text IS NULL OR subscription = $1)
                 ORDER BY id LIMIT $2"
            ),
            &[&subscription, &limit],
        )?;
        rows.iter().map(NotificationRow::read).collect()
    }

    fn revive_notifications(&self, subscription: &str, id: Option<i64>) -> StoreResult<i64> {
        let changed = self.execute(
            "UPDATE notifications SET status = 'pending', next_at = $3, at = $3
             WHERE status = 'dead' AND subscription = $1 AND ($2::bigint IS NULL OR id = $2)",
            &[&subscription, &id, &self.now.get()],
        )?;
        Ok(changed as i64)
    }

    fn hasten_notifications(&self, subscription: &str) -> StoreResult<i64> {
        let changed = self.execute(
            "UPDATE notifications SET next_at = $2
             WHERE status = 'pending' AND subscription = $1 AND next_at > $2",
            &[&subscription, &self.now.get()],
        )?;
        Ok(changed as i64)
    }

    fn stalled_tokens(
        &self,
        subscription: &str,
        states: &[String],
        until: i64,
        limit: i64,
    ) -> StoreResult<Vec<Stalled>> {
        let states: Vec<&str> = states.iter().map(String::as_str).collect();
        let rows = self.query(
            "SELECT k.token, k.state, k.visit FROM tokens k
             WHERE k.status IN ('active', 'paused') AND k.entered_at <= $3
               AND (cardinality($2::text[]) = 0 OR k.state = ANY($2::text[]))
               AND NOT EXISTS (SELECT 1 FROM notifications n
                    WHERE n.subscription = $1 AND n.kind = 'no_move' AND n.token = k.token
                      AND n.state = k.state AND n.visit = k.visit)
             ORDER BY k.entered_at LIMIT $4",
            &[&subscription, &states, &until, &limit],
        )?;
        rows.iter()
            .map(|row| Ok((get(row, 0)?, get(row, 1)?, get(row, 2)?)))
            .collect()
    }
}

impl PgTx<'_> {
    /// The attempts of [`Notifications::record_attempts`], and what each did to
    /// its notification; a notification newly delivered counts in its
    /// subscription's row.
    fn record_done(&self, done: &[(AttemptRow, Outcome)]) -> StoreResult<()> {
        let column = |f: &dyn Fn(&AttemptRow, &Outcome) -> Option<i64>| -> Vec<Option<i64>> {
            done.iter().map(|(a, o)| f(a, o)).collect()
        };
        let subscriptions: Vec<&str> = done.iter().map(|(a, _)| a.subscription.as_str()).collect();
        let ids: Vec<i64> = done.iter().map(|(a, _)| a.notification).collect();
        let attempts: Vec<i64> = done.iter().map(|(a, _)| a.attempt).collect();
        let ats: Vec<i64> = done.iter().map(|(a, _)| a.at).collect();
        let statuses = column(&|a, _| a.status);
        let latencies: Vec<i64> = done.iter().map(|(a, _)| a.latency).collect();
        let reasons: Vec<Option<&str>> = done.iter().map(|(a, _)| a.reason.as_deref()).collect();
        let states: Vec<&str> = done.iter().map(|(_, o)| o.status().0).collect();
        let nexts = column(&|a, o| o.next_at(a.at));
        // Only the attempts of notifications still there, as in SQLite's
        // `record_done` (`id = ANY($2)` lets the plan probe the key's index).
        self.execute(
            &format!(
                "INSERT INTO notification_attempts ({ATTEMPT_COLUMNS})
                 SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[],
                                      $5::bigint[], $6::bigint[], $7::text[])
                      AS u(subscription, notification, attempt, at, status, latency, reason)
                 WHERE u.notification IN (SELECT id FROM notifications WHERE id = ANY($2))
                 ON CONFLICT (notification, attempt) DO UPDATE SET at = EXCLUDED.at,
                     status = EXCLUDED.status, latency = EXCLUDED.latency,
                     reason = EXCLUDED.reason"
            ),
            &[
                &subscriptions,
                &ids,
                &attempts,
                &ats,
                &statuses,
                &latencies,
                &reasons,
            ],
        )?;
        // `id = ANY($1)` as well as the join, so that the plan probes the key's
        // index (as `pending.rs` explains, a join alone may be planned as a read
        // of the whole table).
        self.execute(
            "WITH changed AS (
                 UPDATE notifications n SET status = u.status, attempts = u.attempt,
                     next_at = coalesce(u.next_at, n.next_at), last_error = u.reason
                 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[])
                      AS u(id, status, attempt, next_at, reason)
                 WHERE n.id = u.id AND n.id = ANY($1) AND n.attempts = u.attempt - 1
                 RETURNING n.subscription, n.status)
             UPDATE subscriptions s SET delivered = s.delivered + d.count
             FROM (SELECT subscription, count(*) AS count FROM changed
                   WHERE status = 'delivered' GROUP BY subscription) AS d
             WHERE s.name = d.subscription",
            &[&ids, &states, &attempts, &nexts, &reasons],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{due_sql, COUNTS};
    use crate::store::postgres::plan_tests::{kept_plan, new_database};
    use crate::testing::PgTestDb;

    /// Delivered notifications of `a` (`delivered` of them), and `pending` of
    /// `b` waiting for a retry, without statistics.
    const ROWS: &str = "ALTER TABLE notifications SET (autovacuum_enabled = false);
        INSERT INTO notifications
            (subscription, token, kind, at, status, attempts, next_at)
          SELECT 'a', 'ORDER-' || i, 'entered', i, 'delivered', 1, i
          FROM generate_series(1, {delivered}) i;
        INSERT INTO notifications
            (subscription, token, kind, at, status, attempts, next_at)
          SELECT 'b', 'ORDER-' || i, 'entered', i, 'pending', 1, i + 1000000000
          FROM generate_series(1, {pending}) i;";

    #[test]
    fn the_queue_and_the_counts_read_no_delivered_row_in_the_plans_postgres_keeps() {
        for (delivered, pending) in [(0, 0), (5000, 0), (5000, 500)] {
            let Some(db) = PgTestDb::create() else {
                return;
            };
            std::thread::spawn(move || {
                let mut conn = new_database(&db, 0);
                let rows = ROWS
                    .replace("{delivered}", &delivered.to_string())
                    .replace("{pending}", &pending.to_string());
                conn.batch(&rows).unwrap();
                let shape = format!("{delivered} delivered, {pending} pending");
                let plan = kept_plan(&mut conn, COUNTS);
                assert!(
                    !plan.contains("Seq Scan on notifications"),
                    "{shape}:\n{plan}"
                );
                let plan = kept_plan(&mut conn, &due_sql());
                assert!(plan.contains("notifications_due"), "{shape}:\n{plan}");
                assert!(plan.contains("notifications_token"), "{shape}:\n{plan}");
                let each = "notifications_due on notifications e";
                assert!(!plan.contains(each), "{shape}:\n{plan}");
                assert!(!plan.contains("Seq Scan"), "{shape}:\n{plan}");
            })
            .join()
            .unwrap();
        }
    }
}
