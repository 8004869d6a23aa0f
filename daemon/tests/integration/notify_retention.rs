//! The notifications' retention (`serve --notify-keep`, `docs/notifications.md`,
//! "Kept") through the control plane's handle, on both backends, with a clock
//! moved by hand: a pass deletes the notifications delivered longer ago than the
//! period, with their attempts, and keeps the pending, retrying and dead ones, the
//! ones delivered within the period (counted from the delivery, not the write),
//! and a `no_move` whose token is still in its visit.

use crate::common;

use std::time::Duration;

use common::Db;
use serde_json::json;
use stateous_daemon::control::notify_retain::NotifyRetainPass;
use stateous_daemon::control::Control;
use stateous_daemon::store::notifications::{AttemptRow, Outcome};
use stateous_daemon::validated::{FireInput, StartInput};
use stateous_shared::notify::{Counts, NewSubscription};

use crate::operate::{clock, open};

const DAY: Duration = Duration::from_secs(86_400);

fn pass() -> NotifyRetainPass {
    NotifyRetainPass {
        keep: 7 * DAY,
        // Small windows, so that a pass goes through several.
        window: 2,
        pause: Duration::from_millis(1),
    }
}

async fn subscribe(control: &Control, name: &str, kinds: &[&str], no_move_for: Option<&str>) {
    let body = NewSubscription {
        name: name.into(),
        url: "http://127.0.0.1:9/hook".into(),
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        states: if no_move_for.is_some() {
            vec!["intake".into()]
        } else {
            vec![]
        },
        workflow: None,
        filter: None,
        format: None,
        no_move_for: no_move_for.map(str::to_string),
    };
    control.add_subscription(body).await.unwrap();
}

/// The ids of `notifications`, by id, with their kinds.
fn notifications(db: &Db) -> Vec<(i64, String)> {
    db.rows("SELECT id, kind FROM notifications ORDER BY id")
        .into_iter()
        .map(|row| {
            (
                row[0].as_deref().unwrap().parse().unwrap(),
                row[1].clone().unwrap(),
            )
        })
        .collect()
}

/// The notifications that have attempts, by id.
fn attempted(db: &Db) -> Vec<i64> {
    db.rows("SELECT DISTINCT notification FROM notification_attempts ORDER BY notification")
        .into_iter()
        .map(|row| row[0].as_deref().unwrap().parse().unwrap())
        .collect()
}

/// Record one attempt of the notification `id` (of `subscription`), made now.
async fn attempt(control: &Control, subscription: &str, id: i64, number: i64, outcome: Outcome) {
    let row = AttemptRow {
        subscription: subscription.into(),
        notification: id,
        attempt: number,
        at: control.now(),
        status: Some(if outcome == Outcome::Delivered {
            204
        } else {
            500
        }),
        latency: 1_000,
        reason: (outcome != Outcome::Delivered).then(|| "HTTP 500".to_string()),
    };
    control
        .record_attempts(vec![(row, outcome)], Vec::new())
        .await
        .unwrap();
}

async fn counts(control: &Control, name: &str) -> Counts {
    let list = control.subscriptions().await.unwrap();
    let found = list.subscriptions.iter().find(|s| s.name == name).unwrap();
    found.counts
}

/// Four `test` notifications of `ops` and a `no_move` of `stall` (T stayed in
/// `intake`) are written; the first and the `no_move` are delivered, the second
/// dies, the third fails (and is delivered 8 days later), the fourth is never
/// tried. 8 days on, a pass keeping 7 days deletes the first only, with its
/// attempts; once T moves on, the next pass deletes the `no_move` too.
async fn a_pass_deletes_only_what_was_delivered_longer_ago_than_the_period(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    subscribe(&control, "ops", &["completed"], None).await;
    subscribe(&control, "stall", &["no_move"], Some("1s")).await;
    for _ in 0..4 {
        control.test_subscription("ops".into()).await.unwrap();
    }
    let context = json!({"customer": "ACME", "score": 5});
    let start = StartInput::new("T".into(), context.as_object().unwrap().clone()).unwrap();
    control.start(start).await.unwrap();
    clock.advance(Duration::from_secs(2));
    control.tick().await.unwrap();
    let written = notifications(&db);
    let kinds: Vec<&str> = written.iter().map(|(_, kind)| kind.as_str()).collect();
    assert_eq!(kinds, ["test", "test", "test", "test", "no_move"]);
    let ids: Vec<i64> = written.iter().map(|(id, _)| *id).collect();

    attempt(&control, "ops", ids[0], 1, Outcome::Delivered).await;
    attempt(&control, "ops", ids[1], 1, Outcome::Dead).await;
    let later = control.now() + 3_600_000_000;
    attempt(&control, "ops", ids[2], 1, Outcome::Again(later)).await;
    attempt(&control, "stall", ids[4], 1, Outcome::Delivered).await;
    assert_eq!(
        counts(&control, "ops").await,
        Counts {
            pending: 1,
            retrying: 1,
            delivered: 1,
            dead: 1
        }
    );

    // Within the period nothing goes.
    clock.advance(DAY);
    assert_eq!(control.retain_notifications(&pass()).await.unwrap(), 0);
    assert_eq!(notifications(&db).len(), 5);

    clock.advance(7 * DAY);
    attempt(&control, "ops", ids[2], 2, Outcome::Delivered).await;
    assert_eq!(control.retain_notifications(&pass()).await.unwrap(), 1);
    let left: Vec<i64> = notifications(&db).iter().map(|(id, _)| *id).collect();
    assert_eq!(left, ids[1..]);
    assert_eq!(attempted(&db), vec![ids[1], ids[2], ids[4]]);
    // `delivered` counts what is kept.
    assert_eq!(
        counts(&control, "ops").await,
        Counts {
            pending: 1,
            retrying: 0,
            delivered: 1,
            dead: 1
        }
    );
    // The kept `no_move` still holds its visit to one notification.
    clock.advance(Duration::from_secs(2));
    control.tick().await.unwrap();
    assert_eq!(notifications(&db).len(), 4);

    let moved = FireInput::new("T".into(), "submitted".into(), None, None).unwrap();
    control.fire(moved).await.unwrap();
    assert_eq!(control.retain_notifications(&pass()).await.unwrap(), 1);
    let left: Vec<i64> = notifications(&db).iter().map(|(id, _)| *id).collect();
    assert_eq!(left, ids[1..4]);
    assert_eq!(attempted(&db), vec![ids[1], ids[2]]);

    // The dead one stays however old, until it is sent again.
    clock.advance(30 * DAY);
    assert_eq!(control.retain_notifications(&pass()).await.unwrap(), 1);
    let left: Vec<i64> = notifications(&db).iter().map(|(id, _)| *id).collect();
    assert_eq!(left, [ids[1], ids[3]]);
}

both!(a_pass_deletes_only_what_was_delivered_longer_ago_than_the_period);
