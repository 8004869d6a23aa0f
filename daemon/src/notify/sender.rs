//! The sender (`docs/notifications.md`, "The guarantee"): after the commit, a
//! queue per subscription reads its due notifications (by the moment each is
//! due, then id; first making rows of the batches that the write path wrote,
//! [`Control::expand_batches`]) and sends them one at a time, so that a
//! slow or dead receiver holds up only its own subscription. A token's notifications go in ledger
//! order: one of a token that failed holds back that token's later ones until it
//! is delivered or dead (they are moved to its retry's moment), and other tokens'
//! go on, however many wait for a retry.
//! A failed attempt is tried again after a backoff (1 s doubling to at most
//! 10 minutes, each moved by up to a fifth at random); past the limit (24 hours
//! by default) since it was written, the notification is dead. A receiver that
//! cannot be reached at all (refused, no such host, TLS) fails every
//! notification alike: the queue ends its batch at that attempt and waits for
//! the receiver ([`UNREACHABLE_WAIT`]) instead of trying the rest; once it
//! reaches the receiver again, the notifications tried meanwhile are due at
//! once, not at their backoff's end (after a restart, once an operator's word
//! reaches it). Every attempt is
//! recorded (at the batch's end, and at least once a second during a long one,
//! [`RECORD_EVERY`]); a notification sent whose record did not commit (a
//! SIGKILL) is sent again with the same `webhook-id`: delivery is at least once.
//!
//! The database is shared with the write path, which the sender must not slow:
//! a batch's bodies are read in one read ([`Control::notification_parts`]) and
//! its attempts recorded in one write; a queue that caught up lets new
//! notifications gather for a poll; and while the write path is busy a queue
//! works at most a tenth of the time (`yielded`), falling behind in the
//! outbox until the load passes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::body::{body, signature, webhook_id};
use super::send::{post, Kept};
use crate::control::{Control, Standing};
use crate::store::notifications::{
    AttemptRow, Deferral, DueNotification, NotificationRow, Outcome,
};
use crate::time_source::micros;
use stateous_shared::durations::limit_words;

/// The sender's timings (`serve --notify-*`, `docs/reference/bounds.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct SenderOptions {
    /// The deadline of one attempt, from connecting to the end of the answer.
    pub timeout: Duration,
    /// How long after it was written a notification not yet delivered is dead.
    pub dead_after: Duration,
    /// The first backoff; each failure doubles it, up to [`LONGEST_BACKOFF`].
    pub first_backoff: Duration,
    /// How often an idle queue looks for new notifications.
    pub poll: Duration,
}

impl Default for SenderOptions {
    fn default() -> SenderOptions {
        SenderOptions {
            timeout: Duration::from_secs(10),
            dead_after: Duration::from_secs(24 * 3600),
            first_backoff: Duration::from_secs(1),
            poll: Duration::from_millis(100),
        }
    }
}

/// The longest backoff between two attempts.
pub const LONGEST_BACKOFF: Duration = Duration::from_secs(600);

/// The most notifications a queue reads at once.
const BATCH: i64 = 256;

/// The most batches of the write path (`notification_batches`, one for each
/// write) a queue makes rows of at once: a write under load holds about a
/// hundred notifications of a subscription to every entry on Postgres (a write
/// carries many requests), an idle one or SQLite's (one request) a few.
const EXPAND_MOST: i64 = 32;

/// How many times a turn makes rows of [`EXPAND_MOST`] batches at most, until
/// a whole [`BATCH`] is there to read: small batches (SQLite's, two or three
/// notifications each) held a queue to about 80 notifications a turn, 750 a
/// second.
const EXPANSIONS_A_TURN: u32 = 8;

/// A batch whose sends take longer (a slow receiver, timeouts) records the
/// attempts made so far at least this often, rather than at its end only: what
/// `notify show` and the counts say lags by at most this much, and a SIGKILL
/// sends again only the notifications of the last this-long (each with its
/// `webhook-id`).
const RECORD_EVERY: Duration = Duration::from_secs(1);

/// The longest a queue waits, after an attempt that could not reach its
/// receiver, before it tries again (the wait starts at the first backoff and
/// doubles with each such batch in a row): a refusing address costs one
/// connection a this-long, and a receiver that comes back gets its
/// notifications within it.
const UNREACHABLE_WAIT: Duration = Duration::from_secs(30);

/// While the write path is busy, a queue waits this many times as long as its
/// last batch took before the next (so it works at most a tenth of the time).
const YIELD: u32 = 9;

/// The write path is busy while it appends more than this many ledger entries
/// a second (about 8 tokens of `orders` a second).
const BUSY_ENTRIES: f64 = 100.0;

/// The longest wait [`YIELD`] makes.
const LONGEST_YIELD: Duration = Duration::from_secs(2);

/// How long a queue waits after a batch that took `spent`, during which the
/// write path appended `appended` ledger entries: while the write path is busy,
/// nine times as long as the batch took, so that the sender's reads and records
/// (work for the same database, at the database's priority, where the sender's
/// thread is lowered) take the requests' turn at most a tenth of the time; else
/// none.
fn yielded(spent: Duration, appended: i64) -> Duration {
    let rate = appended as f64 / spent.as_secs_f64().max(1e-3);
    if appended >= 10 && rate > BUSY_ENTRIES {
        (spent * YIELD).min(LONGEST_YIELD)
    } else {
        Duration::ZERO
    }
}

/// The backoff after the `attempts`th failed attempt, before jitter.
pub fn backoff(first: Duration, attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    first
        .saturating_mul(2u32.saturating_pow(doublings))
        .min(LONGEST_BACKOFF.max(first))
}

/// `backoff` moved by up to a fifth either way, at random.
fn jittered(delay: Duration) -> Duration {
    let factor: f64 = 0.8 + rand::random::<f64>() * 0.4;
    delay.mul_f64(factor)
}

/// The queues, one task per active subscription, until `stop` turns true.
pub async fn run(control: Control, options: SenderOptions, mut stop: watch::Receiver<bool>) {
    let mut queues: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        if *stop.borrow() {
            break;
        }
        queues.retain(|_, task| !task.is_finished());
        if let Ok(rows) = control.active_subscriptions().await {
            for row in rows {
                if let std::collections::hash_map::Entry::Vacant(slot) = queues.entry(row.name) {
                    let name = slot.key().clone();
                    slot.insert(tokio::spawn(queue(control.clone(), name, options.clone())));
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(options.poll.max(Duration::from_millis(10)) * 5) => {}
            _ = stop.changed() => {}
        }
    }
    for (_, task) in queues {
        task.abort();
    }
}

/// Which of a batch's due notifications go now, in id order, and which wait
/// behind an earlier one of their token that is not in the batch: one whose
/// token has an earlier pending notification due later than itself. The others have every earlier one of their token before
/// them in the batch (read by due moment, then id), or none.
fn split(due: Vec<DueNotification>) -> (Vec<NotificationRow>, Vec<Deferral>) {
    let mut now = Vec::with_capacity(due.len());
    let mut deferred = Vec::new();
    for item in due {
        match item.behind {
            Some(until) if until > item.row.next_at => deferred.push(deferral(&item.row, until)),
            _ => now.push(item.row),
        }
    }
    now.sort_by_key(|row| row.id);
    (now, deferred)
}

/// `row`, moved to be sent no sooner than `until` (microseconds).
fn deferral(row: &NotificationRow, until: i64) -> Deferral {
    Deferral {
        id: row.id,
        attempts: row.attempts,
        next_at: until,
    }
}

/// One subscription's queue, until it is paused or removed. Each read takes
/// the due notifications only (`notifications_due`): those waiting for a
/// retry are not read again until it comes, so a queue to a dead receiver
/// costs a read that finds nothing per poll, and never holds up the due
/// notifications of other tokens.
async fn queue(control: Control, name: String, options: SenderOptions) {
    let mut kept: Option<Kept> = None;
    // The batches in a row that ended at a receiver it could not reach.
    let mut unreachable_batches: u32 = 0;
    // The log said the receiver cannot be reached, and not yet that it is
    // reached again.
    let mut told = false;
    // Whether the control plane shows it waiting for its receiver.
    let mut marked = false;
    // Notifications may wait for a retry of an attempt that could not reach
    // the receiver: after such an attempt here, or when an operator asked for
    // them to go (after a restart the queue cannot know why they wait, and
    // those of a receiver that answered 500 keep their backoff). At the next
    // attempt that reaches the receiver they are made due now (until that
    // write went through).
    let (mut hasten, mut words) = (false, 0);
    'queue: loop {
        let said = control.operator_words();
        if said != words {
            (words, hasten) = (said, true);
        }
        let (began, mark) = (Instant::now(), control.mark().safe());
        let mut expanded = false;
        let (subscription, due) = loop {
            let read = control
                .due_notifications(name.clone(), control.now(), BATCH)
                .await;
            match read {
                Ok(Some((row, due, batched))) if row.status == "active" => {
                    // Fewer due than a batch, and batches wait: make rows of
                    // enough for one (once a turn, inside its yield), then
                    // read again.
                    if batched && !expanded && (due.len() as i64) < BATCH {
                        expanded = true;
                        let mut made = 0;
                        for _ in 0..EXPANSIONS_A_TURN {
                            match control.expand_batches(name.clone(), EXPAND_MOST).await {
                                Ok(more) if more > 0 => made += more,
                                _ => break,
                            }
                            if due.len() as i64 + made >= BATCH {
                                break;
                            }
                        }
                        if made > 0 {
                            continue;
                        }
                    }
                    break (row, due);
                }
                Ok(_) => return,
                Err(_) => {
                    tokio::time::sleep(options.poll).await;
                    continue 'queue;
                }
            }
        };
        let full = i64::try_from(due.len()).unwrap_or(i64::MAX) >= BATCH;
        if due.is_empty() {
            tokio::time::sleep(options.poll).await;
            continue;
        }
        let (due, mut deferred) = split(due);
        // The bodies' parts of only those tried, in one read.
        let wanted: Vec<(Option<i64>, String)> = due
            .iter()
            .map(|row| (row.entry, row.token.clone()))
            .collect();
        let parts = if wanted.is_empty() {
            Vec::new()
        } else {
            match control.notification_parts(wanted).await {
                Ok(parts) => parts,
                Err(_) => {
                    // Read again, rather than send bodies without their parts.
                    tokio::time::sleep(options.poll).await;
                    continue;
                }
            }
        };
        let secrets: Vec<String> = serde_json::from_str(&subscription.secrets).unwrap_or_default();
        // The tokens whose notification failed in this batch, with its retry's
        // moment (none: it is dead): their later ones wait for it.
        let mut held: HashMap<String, Option<i64>> = HashMap::new();
        let mut done = Vec::new();
        let mut removed = false;
        // The latest attempt could not reach the receiver: why, and when.
        // Ended at it (it is tried again). Any attempt reached it.
        let mut missed: Option<(String, i64)> = None;
        let (mut cut, mut reached) = (false, false);
        let mut recorded = Instant::now();
        for (index, row) in due.iter().enumerate() {
            // A long batch: what it did so far, recorded now.
            if recorded.elapsed() >= RECORD_EVERY && !done.is_empty() {
                let (now_done, now_deferred) =
                    (std::mem::take(&mut done), std::mem::take(&mut deferred));
                if control
                    .record_attempts(now_done, now_deferred)
                    .await
                    .is_err()
                {
                    tokio::time::sleep(options.poll).await;
                    continue 'queue;
                }
                recorded = Instant::now();
            }
            // Paused meanwhile: the rest stay pending, unsent. Removed: they
            // went with it, and so do the attempts made (a subscription added
            // again under its name has none of them).
            match control.subscription_now(&name, subscription.created_at) {
                Standing::Active => {}
                Standing::Paused => break,
                Standing::Removed => {
                    removed = true;
                    break;
                }
            }
            if let Some(retry) = held.get(&row.token) {
                if let Some(at) = retry {
                    deferred.push(deferral(row, *at));
                }
                continue;
            }
            let part = parts.get(index).cloned().unwrap_or_default();
            let payload = body(row, &part, &subscription.format, subscription.no_move_for);
            let id = webhook_id(row.id);
            let timestamp = control.now().div_euclid(1_000_000);
            let headers = [
                ("webhook-id", id.clone()),
                ("webhook-timestamp", timestamp.to_string()),
                (
                    "webhook-signature",
                    signature(&secrets, &id, timestamp, &payload),
                ),
            ];
            let started = Instant::now();
            let at = control.now();
            let answered = post(
                &mut kept,
                &subscription.url,
                &headers,
                payload,
                options.timeout,
            )
            .await;
            let latency = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
            let attempt = row.attempts + 1;
            let outcome = match &answered.failure {
                None => Outcome::Delivered,
                Some(_) => {
                    let outcome = failed(row, attempt, &options, control.now());
                    held.insert(
                        row.token.clone(),
                        match outcome {
                            Outcome::Again(next) => Some(next),
                            _ => None,
                        },
                    );
                    outcome
                }
            };
            // The receiver cannot be reached: the rest would fail alike, and
            // stay pending, untried (a dead one does not stop the batch, so
            // that those past their limit all die in one).
            if answered.unreachable {
                let why = answered.failure.clone().unwrap_or_default();
                missed = Some((why, at));
                cut = matches!(outcome, Outcome::Again(_));
            } else {
                (missed, reached) = (None, true);
            }
            done.push((
                AttemptRow {
                    subscription: name.clone(),
                    notification: row.id,
                    attempt,
                    at,
                    status: answered.status.map(i64::from),
                    latency,
                    reason: answered.failure.clone(),
                },
                outcome,
            ));
            if cut {
                break;
            }
        }
        if removed {
            continue;
        }
        let sent = done.len();
        let moved = !deferred.is_empty();
        if (sent > 0 || moved) && control.record_attempts(done, deferred).await.is_err() {
            tokio::time::sleep(options.poll).await;
            continue;
        }
        let appended = control.mark().safe().saturating_sub(mark);
        let pause = yielded(began.elapsed(), appended);
        if let (true, Some((why, at))) = (cut, &missed) {
            // The due ones before it in the batch were tried (those past their
            // limit died): wait for the receiver, or an operator's word.
            unreachable_batches = unreachable_batches.saturating_add(1);
            let wait = jittered(backoff(
                options.first_backoff,
                i64::from(unreachable_batches),
            ))
            .min(UNREACHABLE_WAIT)
            .max(pause);
            let next = control.now().saturating_add(micros(wait));
            control.receiver_unreachable(&subscription, *at, why, Some(next));
            (marked, hasten) = (true, true);
            if unreachable_batches == 1 {
                told = true;
                tracing::warn!(
                    target: "stateous.serve",
                    "notifications of {name}: the receiver cannot be reached ({why}); \
                     its queue tries one again after {}, the wait doubling to {}",
                    limit_words(options.first_backoff),
                    limit_words(UNREACHABLE_WAIT)
                );
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                // An operator's word (`notify test`, `redeliver`, `resume`):
                // tried at once, and a row of waits after it starts again
                // from the first (a resume after a pause waited as long as
                // the row before the pause).
                _ = control.sends_asked() => unreachable_batches = 0,
            }
            continue;
        }
        if told && reached {
            tracing::info!(
                target: "stateous.serve",
                "notifications of {name}: the receiver is reached again"
            );
            (told, unreachable_batches) = (false, 0);
        }
        if let Some((why, at)) = &missed {
            // Its last attempt could not reach the receiver, but nothing
            // waits (those left died at their limit): the next one due is
            // tried when it comes.
            control.receiver_unreachable(&subscription, *at, why, None);
            (marked, hasten) = (true, true);
        } else if marked && reached {
            control.receiver_reached(&subscription);
            marked = false;
        }
        // What was tried while the receiver could not be reached waits for its
        // retry no longer (up to 10 minutes of backoff): the receiver is back.
        if reached && hasten && control.hasten_notifications(name.clone()).await.is_ok() {
            hasten = false;
        }
        if full {
            // More are due: the next batch after the yield.
            tokio::time::sleep(pause).await;
        } else {
            // Caught up: let the next notifications gather for a moment, so that
            // each read and record of the queue carries many (every read and
            // record is work for the database the write path uses too). A retry
            // that comes meanwhile is read at the next poll.
            tokio::time::sleep(pause.max(options.poll)).await;
        }
    }
}

/// What a failed attempt (the `attempt`th) of `row` at `now` does to it: tried
/// again after its backoff, or dead when that would come past
/// `options.dead_after` since it was written.
fn failed(row: &NotificationRow, attempt: i64, options: &SenderOptions, now: i64) -> Outcome {
    let dead_at = row
        .at
        .saturating_add(i64::try_from(options.dead_after.as_micros()).unwrap_or(i64::MAX));
    let delay = jittered(backoff(options.first_backoff, attempt));
    let next = now.saturating_add(i64::try_from(delay.as_micros()).unwrap_or(i64::MAX));
    if next >= dead_at {
        Outcome::Dead
    } else {
        Outcome::Again(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_yields_nine_times_its_batch_only_while_the_write_path_is_busy() {
        let batch = Duration::from_millis(100);
        assert_eq!(yielded(batch, 50), Duration::from_millis(900));
        assert_eq!(yielded(batch, 9), Duration::ZERO);
        assert_eq!(yielded(Duration::from_secs(1), 99), Duration::ZERO);
        assert_eq!(yielded(Duration::from_secs(1), 1000), LONGEST_YIELD);
    }

    #[test]
    fn the_backoff_doubles_from_one_second_to_ten_minutes() {
        let first = Duration::from_secs(1);
        assert_eq!(backoff(first, 1), Duration::from_secs(1));
        assert_eq!(backoff(first, 2), Duration::from_secs(2));
        assert_eq!(backoff(first, 4), Duration::from_secs(8));
        assert_eq!(backoff(first, 10), Duration::from_secs(512));
        assert_eq!(backoff(first, 11), LONGEST_BACKOFF);
        assert_eq!(backoff(first, 1000), LONGEST_BACKOFF);
    }
}
