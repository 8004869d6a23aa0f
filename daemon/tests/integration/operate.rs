//! Operating many tokens through the control plane's handle, on both backends, with a
//! clock moved by hand: the filter language over the store (what SQL selects and what
//! is evaluated row by row agree), the total and the pages of a listing, and bulk
//! actions (preview, walk, per-token outcomes, the reason in each history, a bulk fire
//! that applies once).

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::{json, Value};
use stateous_daemon::control::bulk::BulkInput;
use stateous_daemon::control::{Control, Options};
use stateous_daemon::engine::bulk::BulkStep;
use stateous_daemon::engine::select::Selection;
use stateous_daemon::store::TokenStatus;
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::{FireInput, StartInput};
use stateous_shared::bulk::{BulkAction, Outcome};
use stateous_shared::graph::Graph;
use stateous_shared::guards::filter::parse_filter;
use stateous_shared::refusal::Code;
use stateous_shared::time::{parse_iso, to_micros};
use stateous_shared::wire::Object;

/// The `desk` workflow of the black-box tests (`tests/data/desk/flow.yaml`).
pub fn desk() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/desk/build/desk.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// A clock moved by hand, from 2026-10-06 09:00 UTC.
pub fn clock() -> Clock {
    Clock::manual(to_micros(parse_iso("2026-10-06T09:00:00Z").unwrap()))
}

/// A control plane serving `desk` on `db` at `clock`.
pub async fn open(db: &Db, clock: &Clock) -> Control {
    let mut options: Options = db.options();
    options.clock = clock.clone();
    options.holder = Some("a:1:1".into());
    Control::open(desk(), options).await.unwrap()
}

fn ctx(value: Value) -> Object {
    value.as_object().unwrap().clone()
}

fn kinds(db: &Db, token: &str) -> Vec<String> {
    db.rows(&format!(
        "SELECT kind FROM ledger WHERE token = '{token}' ORDER BY seq"
    ))
    .into_iter()
    .map(|row| row[0].clone().unwrap())
    .collect()
}

fn filtered(text: &str) -> Selection {
    Selection {
        filter: Some(parse_filter(text).unwrap()),
        ..Selection::default()
    }
}

async fn ids(
    control: &Control,
    selection: Selection,
    limit: i64,
    offset: i64,
) -> (Vec<String>, i64) {
    let listing = control.list(selection, limit, offset).await.unwrap();
    let ids = listing.tokens.into_iter().map(|t| t.token).collect();
    (ids, listing.total)
}

/// C-00 .. C-29, one a second; the even ones are ACME's, score `i % 5`. At +40 s
/// C-00 .. C-09 go to `review`; then the clock stands at +100 s.
async fn thirty(control: &Control, clock: &Clock) {
    for i in 0..30 {
        let customer = if i % 2 == 0 { "ACME" } else { "BETA" };
        let context = ctx(json!({"customer": customer, "score": i % 5}));
        control
            .start(StartInput::new(format!("C-{i:02}"), context).unwrap())
            .await
            .unwrap();
        clock.advance(Duration::from_secs(1));
    }
    clock.advance(Duration::from_secs(10));
    for i in 0..10 {
        let token = format!("C-{i:02}");
        control
            .fire(FireInput::new(token, "submitted".into(), None, None).unwrap())
            .await
            .unwrap();
    }
    clock.advance(Duration::from_secs(60));
}

async fn a_filter_lists_what_it_matches_with_the_total_and_pages(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    // Wholly in SQL, and partly: the same counts.
    assert_eq!(
        ids(&control, filtered("state == 'review'"), 100, 0).await.1,
        10
    );
    let acme = "state == 'review' and ctx['customer'] == 'ACME'";
    let (found, total) = ids(&control, filtered(acme), 100, 0).await;
    assert_eq!(total, 5);
    assert_eq!(found, ["C-00", "C-02", "C-04", "C-06", "C-08"]);
    // The intake tokens moved 100 - i seconds ago.
    assert_eq!(ids(&control, filtered("moved >= 75"), 100, 0).await.1, 16);
    assert_eq!(
        ids(&control, filtered("moved >= 75 and visit == 1"), 100, 0)
            .await
            .1,
        16
    );
    assert_eq!(
        ids(&control, filtered("moved < 61 or moved > 89"), 100, 0)
            .await
            .1,
        11
    );
    // Pages: the most recently moved first, then by id.
    let beta = filtered("ctx['customer'] == 'BETA'");
    let (page, total) = ids(&control, beta, 4, 4).await;
    assert_eq!(
        (page, total),
        (strings(&["C-09", "C-29", "C-27", "C-25"]), 15)
    );
    let (page, total) = ids(&control, filtered("state == 'intake'"), 3, 2).await;
    assert_eq!((page, total), (strings(&["C-27", "C-26", "C-25"]), 20));
    let review = Selection {
        status: Some(TokenStatus::Active),
        state: Some("review".into()),
        ..filtered("ctx['score'] >= 3")
    };
    assert_eq!(
        ids(&control, review, 100, 0).await.0,
        ["C-03", "C-04", "C-08", "C-09"]
    );
    assert_eq!(
        ids(&control, filtered("state == 'closing'"), 100, 0)
            .await
            .1,
        0
    );
    // A state that no workflow has is refused, not matched by no token.
    let nowhere = control.list(filtered("state == 'nowhere'"), 100, 0).await;
    assert_eq!(nowhere.unwrap_err().code, Code::InvalidArgument);
    assert_eq!(ids(&control, Selection::default(), 1, 0).await.1, 30);
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn step(action: BulkAction, filter: &str) -> BulkStep {
    BulkStep {
        action,
        selection: filtered(filter),
        event: String::new(),
        payload: None,
        key: None,
        state: None,
        priority: 0,
        migrate: Default::default(),
        reason: Some("incident 42".into()),
        by: "ann".into(),
    }
}

fn input(step: BulkStep, dry_run: bool, after: Option<String>, limit: i64) -> BulkInput {
    BulkInput {
        step,
        tokens: None,
        dry_run,
        every: false,
        after,
        limit,
        archive: None,
    }
}

async fn a_bulk_cancel_previews_then_cancels_the_matches_with_the_reason(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    let filter = "state == 'intake' and ctx['customer'] == 'ACME'";
    let preview = control
        .bulk(input(step(BulkAction::Cancel, filter), true, None, 500))
        .await
        .unwrap();
    assert_eq!(preview.count, 10);
    assert_eq!(preview.sample.len(), 10);
    assert_eq!(preview.sample[0].token, "C-28");
    assert_eq!(preview.sample[0].detail, "cancels it in 'intake'");
    assert!(
        kinds(&db, "C-28").iter().all(|k| k != "cancelled"),
        "a preview changes nothing"
    );
    // Walk in pages of 3.
    let mut after = None;
    let mut applied = Vec::new();
    loop {
        let run = control
            .bulk(input(
                step(BulkAction::Cancel, filter),
                false,
                after.clone(),
                3,
            ))
            .await
            .unwrap();
        assert!(run.outcomes.len() <= 3);
        applied.extend(run.outcomes.iter().map(|o| (o.token.clone(), o.outcome)));
        match run.next {
            Some(next) => after = stateous_daemon::control::bulk::cursor_of(&next),
            None => break,
        }
    }
    // The walk goes by token id (the preview's sample, the most recently moved
    // first).
    let expected: Vec<(String, Outcome)> = (10..30)
        .filter(|i| i % 2 == 0)
        .map(|i| (format!("C-{i:02}"), Outcome::Applied))
        .collect();
    assert_eq!(applied, expected);
    for i in 0..30 {
        let token = control.token(format!("C-{i:02}")).await.unwrap();
        let cancelled = i >= 10 && i % 2 == 0;
        assert_eq!(token.status == "cancelled", cancelled, "C-{i:02}");
    }
    let history = control.history("C-12".into()).await.unwrap();
    let tail: Vec<&str> = history
        .iter()
        .rev()
        .take(3)
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(tail, ["cancelled", "task_cancelled", "operator"]);
    let operator = &history[history.len() - 3].data;
    assert_eq!(operator["reason"], "incident 42");
    assert_eq!(operator["by"], "ann");
    assert_eq!(operator["action"], "cancel");
    // The same run again meets ended tokens: each refused, nothing written.
    let before = kinds(&db, "C-12");
    let again = control
        .bulk(input(step(BulkAction::Cancel, filter), false, None, 500))
        .await
        .unwrap();
    assert_eq!((again.count, again.refused), (10, 10));
    assert_eq!(again.outcomes[0].code.as_deref(), Some("token_not_active"));
    assert_eq!(kinds(&db, "C-12"), before);
}

async fn a_second_bulk_fire_applies_nothing_twice(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    control.pause("C-19".into()).await.unwrap();
    let fire = || BulkStep {
        event: "submitted".into(),
        ..step(BulkAction::Fire, "state == 'intake' and moved > 80")
    };
    let preview = control.bulk(input(fire(), true, None, 500)).await.unwrap();
    assert_eq!(preview.count, 10);
    assert_eq!(
        preview.sample[0].detail,
        "holds 'submitted' until it is resumed"
    );
    assert_eq!(
        preview.sample[1].detail,
        "moves it from 'intake' to 'review'"
    );
    let first = control.bulk(input(fire(), false, None, 500)).await.unwrap();
    assert_eq!((first.applied, first.duplicate), (10, 0));
    // The moved tokens no longer match; the paused one still does, and its key
    // is taken: a second run applies nothing, whatever the filter now says.
    let widened = BulkStep {
        selection: filtered("true"),
        ..fire()
    };
    let second = control
        .bulk(input(widened, false, None, 500))
        .await
        .unwrap();
    assert_eq!(second.applied + second.refused + second.duplicate, 30);
    assert_eq!(second.duplicate, 10);
    for i in 10..30 {
        let history = control.history(format!("C-{i:02}")).await.unwrap();
        let took = history
            .iter()
            .filter(|e| matches!(e.kind.as_str(), "event_accepted" | "event_deferred"))
            .filter(|e| e.data["event"] == "submitted")
            .count();
        assert_eq!(took, 1, "C-{i:02}: {history:?}");
    }
    // Another key fires it again.
    let again = BulkStep {
        key: Some("second-round".into()),
        ..fire()
    };
    let third = control.bulk(input(again, true, None, 500)).await.unwrap();
    assert_eq!(third.count, 1, "only the paused C-19 is still in intake");
    assert_eq!(third.sample[0].outcome, Outcome::Applied);
}

async fn bulk_outcomes_are_per_token(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    control.cancel("C-01".into()).await.unwrap();
    let listed = BulkInput {
        tokens: Some(strings(&["C-00", "C-01", "NOPE", "C-02"])),
        ..input(step(BulkAction::Pause, "true"), false, None, 500)
    };
    let run = control.bulk(listed).await.unwrap();
    let got: Vec<(&str, Outcome, Option<&str>)> = run
        .outcomes
        .iter()
        .map(|o| (o.token.as_str(), o.outcome, o.code.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("C-00", Outcome::Applied, None),
            ("C-01", Outcome::Refused, Some("token_not_active")),
            ("NOPE", Outcome::Refused, Some("token_not_found")),
            ("C-02", Outcome::Applied, None),
        ]
    );
    // A listed token that no longer matches the filter is skipped.
    let before = kinds(&db, "C-03");
    let listed = BulkInput {
        tokens: Some(strings(&["C-00", "C-03"])),
        ..input(
            step(BulkAction::Resume, "ctx['customer'] == 'ACME'"),
            false,
            None,
            500,
        )
    };
    let run = control.bulk(listed).await.unwrap();
    assert_eq!(run.outcomes[0].outcome, Outcome::Applied);
    assert_eq!(run.outcomes[0].status, "active");
    assert_eq!(run.outcomes[1].outcome, Outcome::Skipped);
    assert_eq!(kinds(&db, "C-03"), before);
}

async fn names_with_nul_match_nothing_and_reach_no_database(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    let nul = "a\u{0}b".to_string();
    let parent = Selection {
        parent: Some(nul.clone()),
        ..Selection::default()
    };
    assert_eq!(ids(&control, parent, 100, 0).await.1, 0);
    // No state has a NUL: a state named with one is refused as no state of the
    // graph, before any database is asked.
    for selection in [
        filtered("state == 'a\\x00b'"),
        filtered("state in ['review', 'a\\x00b'] and state == 'a\\x00b'"),
        filtered("state not in ['a\\x00b']"),
        Selection {
            state: Some(nul.clone()),
            ..Selection::default()
        },
    ] {
        let refused = control.list(selection, 100, 0).await.unwrap_err();
        assert_eq!(refused.code, Code::InvalidArgument);
    }
    let listed = BulkInput {
        tokens: Some(vec![nul]),
        ..input(step(BulkAction::Pause, "true"), false, None, 500)
    };
    let run = control.bulk(listed).await.unwrap();
    assert_eq!(run.outcomes[0].code.as_deref(), Some("token_not_found"));
}

async fn a_walk_meets_each_match_once_even_one_that_moves_meanwhile(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    thirty(&control, &clock).await;
    let filter = "ctx['customer'] == 'ACME'";
    let mut met = Vec::new();
    let first = control
        .bulk(input(step(BulkAction::Pause, filter), false, None, 3))
        .await
        .unwrap();
    met.extend(first.outcomes.iter().map(|o| o.token.clone()));
    // A match the walk has not met yet moves: it is now the most recently moved
    // token of all. A walk in the listing's order had gone past it.
    assert!(!met.contains(&"C-28".to_string()), "{met:?}");
    clock.advance(Duration::from_secs(5));
    control
        .fire(FireInput::new("C-28".into(), "submitted".into(), None, None).unwrap())
        .await
        .unwrap();
    let mut after = first.next.clone();
    while let Some(next) = after {
        let run = control
            .bulk(input(step(BulkAction::Pause, filter), false, Some(next), 3))
            .await
            .unwrap();
        met.extend(run.outcomes.iter().map(|o| o.token.clone()));
        after = run.next.clone();
    }
    let acme: Vec<String> = (0..30)
        .filter(|i| i % 2 == 0)
        .map(|i| format!("C-{i:02}"))
        .collect();
    assert_eq!(met, acme, "each match once, in id order");
    for token in &acme {
        let view = control.token(token.clone()).await.unwrap();
        assert_eq!(view.status, "paused", "{token}");
    }
}

both!(
    names_with_nul_match_nothing_and_reach_no_database,
    a_filter_lists_what_it_matches_with_the_total_and_pages,
    a_bulk_cancel_previews_then_cancels_the_matches_with_the_reason,
    a_second_bulk_fire_applies_nothing_twice,
    bulk_outcomes_are_per_token,
    a_walk_meets_each_match_once_even_one_that_moves_meanwhile,
);
