//! The SQL of `subscriptions`, `notifications` and `notification_attempts`
//! (`store/notifications.rs`).

use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::notifications::{
    AttemptRow, Deferral, DueNotification, NewNotification, NotificationCount, NotificationRow,
    Notifications, Outcome, Stalled, SubscriptionRow, ATTEMPT_COLUMNS, NOTIFICATION_COLUMNS,
    SUBSCRIPTION_COLUMNS,
};
use crate::store::StoreResult;

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
              WHERE e.subscription = ?1 AND e.status = 'pending' AND e.next_at > 0
                AND e.token = n.token AND e.id < n.id)
         FROM notifications n
         WHERE n.subscription = ?1 AND n.status = 'pending' AND n.attempts >= 0
           AND n.next_at <= ?2
         ORDER BY n.next_at, n.id LIMIT ?3"
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
     SELECT subscription, status, 1, count(*) FROM notifications
     WHERE status = 'dead' GROUP BY subscription, status
     UNION ALL
     SELECT subscription, 'pending', 0, sum(json_array_length(entries))
     FROM notification_batches GROUP BY subscription
     UNION ALL
     SELECT name, 'delivered', 1, delivered FROM subscriptions";

/// One subscription's notifications of ledger entries in one write, as
/// [`Notifications::insert_notifications`] makes its batch.
#[derive(Default)]
struct Batch<'a> {
    entries: Vec<i64>,
    tokens: Vec<&'a str>,
    kinds: Vec<&'a str>,
}

/// `items` as a JSON array (a batch's column).
fn array<T: serde::Serialize>(items: &[T]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_string())
}

impl SqliteTx<'_> {
    /// A notification of no ledger entry (`no_move`, `test`) as a row of its
    /// own, at `now`; only for a subscription still there (a `test` of a
    /// paused one waits for its resume).
    fn insert_row(&self, row: &NewNotification<'_>, now: i64) -> StoreResult<()> {
        self.prepare(
            "INSERT INTO notifications
                     (subscription, entry, token, kind, state, visit, at, status, attempts,
                      next_at)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', 0, 0
                 WHERE EXISTS (SELECT 1 FROM subscriptions WHERE name = ?1)
                 ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            row.subscription,
            row.entry,
            row.token,
            row.kind,
            row.state,
            row.visit,
            now
        ])?;
        Ok(())
    }
}

impl Notifications for SqliteTx<'_> {
    fn insert_subscription(&self, row: &SubscriptionRow) -> StoreResult<()> {
        let sql = format!(
            "INSERT INTO subscriptions ({SUBSCRIPTION_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
        );
        self.prepare(&sql)?.execute(params![
            row.name,
            row.url,
            row.kinds,
            row.states,
            row.workflow,
            row.filter,
            row.format,
            row.no_move_for,
            row.status,
            row.secrets,
            row.created_at,
            row.changed_at
        ])?;
        Ok(())
    }

    fn update_subscription(&self, row: &SubscriptionRow) -> StoreResult<()> {
        self.prepare(
            "UPDATE subscriptions SET status = ?2, secrets = ?3, changed_at = ?4 WHERE name = ?1",
        )?
        .execute(params![row.name, row.status, row.secrets, row.changed_at])?;
        Ok(())
    }

    fn delete_subscription(&self, name: &str) -> StoreResult<bool> {
        self.prepare("DELETE FROM notification_attempts WHERE subscription = ?1")?
            .execute([name])?;
        self.prepare("DELETE FROM notifications WHERE subscription = ?1")?
            .execute([name])?;
        self.prepare("DELETE FROM notification_batches WHERE subscription = ?1")?
            .execute([name])?;
        let mut statement = self.prepare("DELETE FROM subscriptions WHERE name = ?1")?;
        Ok(statement.execute([name])? > 0)
    }

    fn subscription(&self, name: &str) -> StoreResult<Option<SubscriptionRow>> {
        let sql = format!("SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE name = ?1");
        let mut statement = self.prepare(&sql)?;
        Ok(statement
            .query_row([name], |row| SubscriptionRow::read(row))
            .optional()?)
    }

    fn subscriptions(&self) -> StoreResult<Vec<SubscriptionRow>> {
        let sql = format!("SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions ORDER BY name");
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map([], |row| SubscriptionRow::read(row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn batches_waiting(&self, subscription: &str, written_by: Option<i64>) -> StoreResult<bool> {
        // A batch's entries are in the order written: its first is its oldest.
        Ok(self
            .prepare(
                "SELECT EXISTS (SELECT 1 FROM notification_batches
                     WHERE subscription = ?1 AND (?2 IS NULL OR ats ->> 0 <= ?2))",
            )?
            .query_row(params![subscription, written_by], |row| row.get(0))?)
    }

    fn expand_batches(&self, subscription: &str, most: i64) -> StoreResult<i64> {
        // The rows in the order of the batches' ids and of each array, which is
        // the order their ids are given in; this writer's transactions go one
        // at a time, so the delete takes the same batches.
        let made = self
            .prepare(
                "INSERT INTO notifications
                     (subscription, entry, token, kind, state, visit, at, status, attempts,
                      next_at)
                 SELECT b.subscription, e.value, b.tokens ->> e.key, b.kinds ->> e.key, NULL,
                        NULL, b.ats ->> e.key, 'pending', 0, 0
                 FROM (SELECT id, subscription, entries, tokens, kinds, ats
                       FROM notification_batches WHERE subscription = ?1
                       ORDER BY id LIMIT ?2) AS b, json_each(b.entries) AS e
                 ORDER BY b.id, e.key",
            )?
            .execute(params![subscription, most])?;
        self.prepare(
            "DELETE FROM notification_batches WHERE id IN (
                 SELECT id FROM notification_batches WHERE subscription = ?1
                 ORDER BY id LIMIT ?2)",
        )?
        .execute(params![subscription, most])?;
        Ok(i64::try_from(made).unwrap_or(i64::MAX))
    }

    fn insert_notifications(&self, rows: &[NewNotification<'_>]) -> StoreResult<()> {
        let now = self.now();
        // Those of ledger entries: one batch for each subscription, its arrays
        // in the order written.
        let mut batches: Vec<(&str, Batch<'_>)> = Vec::new();
        for row in rows {
            let Some(entry) = row.entry else {
                self.insert_row(row, now)?;
                continue;
            };
            let at = match batches
                .iter()
                .position(|(name, _)| *name == row.subscription)
            {
                Some(at) => at,
                None => {
                    batches.push((row.subscription, Batch::default()));
                    batches.len() - 1
                }
            };
            let batch = &mut batches[at].1;
            batch.entries.push(entry);
            batch.tokens.push(row.token);
            batch.kinds.push(row.kind);
        }
        for (subscription, batch) in batches {
            let ats = vec![now; batch.entries.len()];
            // Only for a subscription still there and active: the write path
            // matched the entries against its copy of the subscriptions, which
            // changes only after a pause or a removal commits; this writer's
            // transactions go one at a time, so the row is as the change left
            // it. Looked up apart: an `INSERT ... SELECT ... WHERE EXISTS`
            // is a statement that may write many rows, which SQLite guards
            // with a statement journal: a copy of each page before it changes
            // it (`memjrnlWrite` in a profile of the bench).
            let active: bool = self
                .prepare(
                    "SELECT EXISTS (SELECT 1 FROM subscriptions
                                    WHERE name = ?1 AND status = 'active')",
                )?
                .query_row([subscription], |row| row.get(0))?;
            if !active {
                continue;
            }
            self.prepare(
                "INSERT INTO notification_batches (subscription, entries, tokens, kinds, ats)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                subscription,
                array(&batch.entries),
                array(&batch.tokens),
                array(&batch.kinds),
                array(&ats)
            ])?;
        }
        Ok(())
    }

    fn due_notifications(
        &self,
        subscription: &str,
        now: i64,
        limit: i64,
    ) -> StoreResult<Vec<DueNotification>> {
        let mut statement = self.prepare(&due_sql())?;
        let rows = statement.query_map(params![subscription, now, limit], |row| {
            Ok(DueNotification {
                row: NotificationRow::read(row)?,
                behind: row.get(12)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
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
            let rows: Vec<[i64; 3]> = deferred
                .iter()
                .map(|d| [d.id, d.attempts, d.next_at])
                .collect();
            let rows = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into());
            self.prepare(
                "UPDATE notifications SET next_at = d.next_at
                 FROM (SELECT value ->> 0 AS id, value ->> 1 AS attempts, value ->> 2 AS next_at
                       FROM json_each(?1)) AS d
                 WHERE notifications.id = d.id AND notifications.attempts = d.attempts
                   AND notifications.next_at < d.next_at",
            )?
            .execute([&rows])?;
        }
        Ok(())
    }

    fn notifications_after(&self, after: i64, limit: i64) -> StoreResult<Vec<NotificationRow>> {
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE id > ?1 ORDER BY id LIMIT ?2"
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params![after, limit], |row| NotificationRow::read(row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn delete_notifications(&self, ids: &[i64]) -> StoreResult<i64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        self.prepare(
            "DELETE FROM notification_attempts
             WHERE notification IN (SELECT value FROM json_each(?1))",
        )?
        .execute([&ids])?;
        // The delivered ones go from their subscriptions' counts first.
        self.prepare(
            "UPDATE subscriptions SET delivered = delivered - (
                 SELECT count(*) FROM notifications n
                 WHERE n.id IN (SELECT value FROM json_each(?1))
                   AND n.subscription = subscriptions.name AND n.status = 'delivered')
             WHERE name IN (SELECT n.subscription FROM notifications n
                            WHERE n.id IN (SELECT value FROM json_each(?1))
                              AND n.status = 'delivered')",
        )?
        .execute([&ids])?;
        let deleted = self
            .prepare("DELETE FROM notifications WHERE id IN (SELECT value FROM json_each(?1))")?
            .execute([&ids])?;
        Ok(deleted as i64)
    }

    fn notification_counts(&self) -> StoreResult<Vec<NotificationCount>> {
        let mut statement = self.prepare(COUNTS)?;
        let rows = statement.query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn latest_attempts(&self, subscription: &str, limit: i64) -> StoreResult<Vec<AttemptRow>> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM notification_attempts WHERE subscription = ?1
             ORDER BY at DESC, notification DESC, attempt DESC LIMIT ?2"
        );
        let mut statement = self.prepare(&sql)?;
        let rows =
            statement.query_map(params![subscription, limit], |row| AttemptRow::read(row))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn dead_notifications(
        &self,
        subscription: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<NotificationRow>> {
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM notifications
             WHERE status = 'dead' AND (?1 IS NULL OR subscription = ?1) ORDER BY id LIMIT ?2"
        );
        let mut statement = self.prepare(&sql)?;
        let rows = statement.query_map(params![subscription, limit], |row| {
            NotificationRow::read(row)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn revive_notifications(&self, subscription: &str, id: Option<i64>) -> StoreResult<i64> {
        let changed = self
            .prepare(
                "UPDATE notifications SET status = 'pending', next_at = ?3, at = ?3
                 WHERE status = 'dead' AND subscription = ?1 AND (?2 IS NULL OR id = ?2)",
            )?
            .execute(params![subscription, id, self.now()])?;
        Ok(changed as i64)
    }

    fn hasten_notifications(&self, subscription: &str) -> StoreResult<i64> {
        let changed = self
            .prepare(
                "UPDATE notifications SET next_at = ?2
                 WHERE status = 'pending' AND subscription = ?1 AND next_at > ?2",
            )?
            .execute(params![subscription, self.now()])?;
        Ok(changed as i64)
    }

    fn stalled_tokens(
        &self,
        subscription: &str,
        states: &[String],
        until: i64,
        limit: i64,
    ) -> StoreResult<Vec<Stalled>> {
        let states = serde_json::to_string(states).unwrap_or_else(|_| "[]".into());
        let mut statement = self.prepare(
            "SELECT k.token, k.state, k.visit FROM tokens k
             WHERE k.status IN ('active', 'paused') AND k.entered_at <= ?3
               AND (json_array_length(?2) = 0
                    OR k.state IN (SELECT value FROM json_each(?2)))
               AND NOT EXISTS (SELECT 1 FROM notifications n
                    WHERE n.subscription = ?1 AND n.kind = 'no_move' AND n.token = k.token
                      AND n.state = k.state AND n.visit = k.visit)
             ORDER BY k.entered_at LIMIT ?4",
        )?;
        let rows = statement.query_map(params![subscription, states, until, limit], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl SqliteTx<'_> {
    /// The attempts of [`Notifications::record_attempts`], and what each did to
    /// its notification; a notification newly delivered counts in its
    /// subscription's row.
    fn record_done(&self, done: &[(AttemptRow, Outcome)]) -> StoreResult<()> {
        // One statement each for the whole batch: the rows as a JSON array.
        let rows: Vec<serde_json::Value> = done
            .iter()
            .map(|(attempt, outcome)| {
                let (status, next_at) = (outcome.status().0, outcome.next_at(attempt.at));
                serde_json::json!([
                    attempt.subscription,
                    attempt.notification,
                    attempt.attempt,
                    attempt.at,
                    attempt.status,
                    attempt.latency,
                    attempt.reason,
                    status,
                    next_at
                ])
            })
            .collect();
        let rows = serde_json::Value::Array(rows).to_string();
        // Only the attempts of notifications still there: a removal took its
        // subscription's, with their attempts, and a subscription added again
        // under the name must not show the attempts of a send that was under
        // way.
        self.prepare(&format!(
            "INSERT OR REPLACE INTO notification_attempts ({ATTEMPT_COLUMNS})
             SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4,
                    value ->> 5, value ->> 6
             FROM json_each(?1)
             WHERE EXISTS (SELECT 1 FROM notifications n WHERE n.id = value ->> 1)"
        ))?
        .execute([&rows])?;
        // Counted before the rows change: those not tried since they were read
        // that this delivers.
        self.prepare(
            "UPDATE subscriptions SET delivered = delivered + (
                 SELECT count(*) FROM json_each(?1) AS u
                 JOIN notifications n ON n.id = u.value ->> 1
                 WHERE n.subscription = subscriptions.name AND n.attempts = u.value ->> 2 - 1
                   AND u.value ->> 7 = 'delivered')
             WHERE name IN (SELECT value ->> 0 FROM json_each(?1)
                            WHERE value ->> 7 = 'delivered')",
        )?
        .execute([&rows])?;
        self.prepare(
            "UPDATE notifications SET status = u.status, attempts = u.attempt,
                 next_at = coalesce(u.next_at, notifications.next_at), last_error = u.reason
             FROM (SELECT value ->> 1 AS id, value ->> 2 AS attempt, value ->> 6 AS reason,
                          value ->> 7 AS status, value ->> 8 AS next_at
                   FROM json_each(?1)) AS u
             WHERE notifications.id = u.id AND notifications.attempts = u.attempt - 1",
        )?
        .execute([&rows])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::{due_sql, COUNTS};
    use crate::store::sqlite::schema::migrate;

    /// Each line of SQLite's plan of `sql` on a migrated database.
    fn plan(sql: &str) -> Vec<String> {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn).unwrap();
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let nulls = vec![rusqlite::types::Null; statement.parameter_count()];
        let rows = statement
            .query_map(rusqlite::params_from_iter(nulls), |row| {
                row.get::<_, String>(3)
            })
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn the_queue_and_the_counts_read_notifications_through_their_partial_indexes() {
        for (sql, indexes) in [
            (
                COUNTS.to_string(),
                &["notifications_due", "notifications_dead"][..],
            ),
            (due_sql(), &["notifications_due", "notifications_token"][..]),
        ] {
            let plan = plan(&sql);
            let reads: Vec<&String> = plan
                .iter()
                .filter(|l| l.contains("notifications"))
                .collect();
            for index in indexes {
                assert!(reads.iter().any(|l| l.contains(index)), "{index}: {plan:?}");
            }
            assert!(reads.iter().all(|l| l.contains("INDEX")), "{plan:?}");
        }
    }
}
