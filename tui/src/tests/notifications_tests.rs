//! The notifications view: `N` reads and shows each subscription with its state
//! and counts, reads them again each tick while open, arrows pick one and show
//! what it is about, a subscription whose queue waits for a receiver it could
//! not reach is marked and the picked one says since when and why, a refused
//! list (no admin key) says why; a snapshot at 100x30.

use crossterm::event::KeyCode;
use stateous_shared::notify::{Counts, SubscriptionView, Unreachable};

use super::view_tests::{screen, snapshot};
use super::*;
use crate::model::{Mode, Problem};

fn subscription(name: &str, status: &str, counts: Counts) -> SubscriptionView {
    SubscriptionView {
        name: name.into(),
        url: format!("https://hooks.example.com/{name}"),
        kinds: vec!["completed".into(), "failed".into()],
        states: vec!["review".into()],
        workflow: None,
        filter: Some("ctx['title'] != ''".into()),
        format: "json".into(),
        no_move_seconds: None,
        status: status.into(),
        secrets: 1,
        counts,
        created: "2026-11-01T00:00:00Z".into(),
        changed: "2026-11-01T00:00:00Z".into(),
        unreachable: None,
    }
}

/// [`full_model`] with the notifications view open on two subscriptions, the
/// second picked.
fn notifications_model() -> Model {
    let mut model = full_model();
    let asked = press(&mut model, KeyCode::Char('N'));
    assert_eq!(asked, vec![Command::Subscriptions]);
    assert_eq!(model.mode, Mode::Notifications);
    let mut waiting = subscription(
        "waiting",
        "paused",
        Counts {
            pending: 0,
            retrying: 0,
            delivered: 3,
            dead: 0,
        },
    );
    waiting.kinds = vec!["no_move".into()];
    waiting.no_move_seconds = Some(4.0 * 3600.0);
    waiting.format = "slack".into();
    waiting.filter = None;
    let ops = subscription(
        "ops",
        "active",
        Counts {
            pending: 4,
            retrying: 2,
            delivered: 1250,
            dead: 7,
        },
    );
    let list = vec![ops, waiting];
    update(&mut model, Msg::Subscriptions(Ok(list)));
    press(&mut model, KeyCode::Down);
    model
}

#[test]
fn the_notifications_view_shows_each_subscription_with_its_counts() {
    let model = notifications_model();
    let text = screen(&model);
    for fact in [
        "NAME         STATUS  FORMAT PENDING RETRYING DELIVERED DEAD URL",
        "ops          active  json         4        2      1250    7 https://hooks.example.com/ops",
        "waiting      paused  slack        0        0         3    0 https://hooks.example.com/waiting",
        "waiting: no move for 4h in review",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    snapshot("notifications", &model);
}

#[test]
fn the_picked_one_with_dead_notifications_says_how_to_send_them_again() {
    let mut model = notifications_model();
    press(&mut model, KeyCode::Up);
    let text = screen(&model);
    for fact in [
        "ops: completed, failed in review where ctx['title'] != ''",
        "7 dead: stateous notify failed lists them, stateous notify redeliver ops sends",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
}

#[test]
fn a_subscription_whose_receiver_cannot_be_reached_is_marked_and_says_why() {
    let mut model = notifications_model();
    let mut list = model.subscriptions.clone().expect("the subscriptions");
    list[0].unreachable = Some(Unreachable {
        since: "2026-11-30T11:59:50Z".into(),
        reason: "cannot connect: Connection refused".into(),
        next_try: Some("2026-11-30T12:00:10Z".into()),
    });
    update(&mut model, Msg::Subscriptions(Ok(list)));
    press(&mut model, KeyCode::Up);
    let text = screen(&model);
    for fact in [
        "ops          active  json         4        2      1250    7 unreachable https://hooks.example.",
        "waiting      paused  slack        0        0         3    0 https://hooks.example.com/waiting",
        "  the receiver cannot be reached since 11:59:50; next try at 12:00:10",
        "  reason: cannot connect: Connection refused",
    ] {
        assert!(text.contains(fact), "no {fact:?} in\n{text}");
    }
    // Reached again: the mark is gone.
    let mut list = model.subscriptions.clone().expect("the subscriptions");
    list[0].unreachable = None;
    update(&mut model, Msg::Subscriptions(Ok(list)));
    let text = screen(&model);
    assert!(!text.contains("unreachable"), "{text}");
    assert!(!text.contains("cannot be reached"), "{text}");
}

#[test]
fn a_tick_reads_the_counts_again_and_esc_closes_the_view() {
    let mut model = notifications_model();
    assert!(update(&mut model, Msg::Tick(now())).contains(&Command::Subscriptions));
    // One read at a time: the next tick asks again only once it is answered.
    assert!(!update(&mut model, Msg::Tick(now())).contains(&Command::Subscriptions));
    update(&mut model, Msg::Subscriptions(Ok(Vec::new())));
    assert!(screen(&model).contains("no subscription: stateous notify add NAME URL adds one"));
    assert!(press(&mut model, KeyCode::Esc).is_empty());
    assert_eq!(model.mode, Mode::Normal);
    assert!(!update(&mut model, Msg::Tick(now())).contains(&Command::Subscriptions));
}

#[test]
fn a_refused_list_says_why_in_the_view() {
    let mut model = full_model();
    press(&mut model, KeyCode::Char('N'));
    let refused = Problem::Refused {
        status: 403,
        code: "forbidden".into(),
        sentence: "this key's role is read; the route needs admin".into(),
    };
    update(&mut model, Msg::Subscriptions(Err(refused)));
    assert!(screen(&model).contains("refused: this key's role is read; the route needs admin"));
    assert_eq!(model.mode, Mode::Notifications);
}
