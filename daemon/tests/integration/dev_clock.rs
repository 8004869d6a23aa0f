//! The dev clock of `serve --dev-clock` on real databases (SQLite, and Postgres when
//! `STATEOUS_TEST_POSTGRES` names a server): an advance fires what falls due inside it
//! in due order and once, and a database served on the real clock refuses a dev clock
//! (schema 0005, `control_plane.clock`).

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::json;
use stateous_daemon::control::{Control, Options};
use stateous_daemon::engine::serving::DEV_CLOCK_REFUSED;
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::{ClaimInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::Code;

fn sdlc() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/sdlc.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn options(db: &Db, clock: Clock) -> Options {
    let mut options = db.options();
    options.clock = clock;
    options
}

async fn open(db: &Db, clock: Clock) -> Result<Control, String> {
    Control::open(sdlc(), options(db, clock)).await
}

async fn start(control: &Control, token: &str) {
    let context = json!({"repo": "r"}).as_object().unwrap().clone();
    control
        .start(StartInput::new(token.into(), context).unwrap())
        .await
        .unwrap();
}

/// `(token, kind, at)` of the ledger rows of these kinds, in id order.
fn rows_of(db: &Db, kinds: &str) -> Vec<(String, String, i64)> {
    db.rows(&format!(
        "SELECT token, kind, at FROM ledger WHERE kind IN ({kinds}) ORDER BY id"
    ))
    .into_iter()
    .map(|row| {
        let text = |i: usize| row[i].clone().unwrap();
        (text(0), text(1), text(2).parse().unwrap())
    })
    .collect()
}

fn entered_at(db: &Db, token: &str) -> i64 {
    let rows = db.rows(&format!(
        "SELECT at FROM ledger WHERE token = '{token}' AND kind = 'entered' ORDER BY seq"
    ));
    rows[0][0].clone().unwrap().parse().unwrap()
}

const HOUR: i64 = 3_600_000_000;

async fn an_advance_fires_what_falls_due_inside_it_in_due_order_and_once(db: Db) {
    let clock = Clock::dev();
    let control = open(&db, clock.clone()).await.unwrap();
    // Frozen, the times in the ledger are the due moments themselves.
    control.freeze().unwrap();
    start(&control, "T-1").await;
    control.advance(Duration::from_secs(3600)).await.unwrap();
    start(&control, "T-2").await;
    control.advance(Duration::from_secs(3600)).await.unwrap();
    start(&control, "T-3").await;
    // The oldest queued task is T-1's.
    control
        .claim(ClaimInput::new("box".into(), vec!["coding".into()], None).unwrap())
        .await
        .unwrap()
        .unwrap();
    let lease_until = clock.now() + 120_000_000;

    // coding's timeout is 6h: T-1's falls due first, T-3's at the advance's end;
    // the claim's 2-minute lease ends before them all.
    let moved = control
        .advance(Duration::from_secs(6 * 3600))
        .await
        .unwrap();
    assert!(moved.frozen);
    assert_eq!(
        moved.steps,
        Some(4),
        "the lease's end, then the three timeouts"
    );
    let fired = rows_of(&db, "'timer_fired', 'task_retrying'");
    let expected = vec![
        (
            "T-1".to_string(),
            "task_retrying".to_string(),
            lease_until + 1,
        ),
        (
            "T-1".into(),
            "timer_fired".into(),
            entered_at(&db, "T-1") + 6 * HOUR,
        ),
        (
            "T-2".into(),
            "timer_fired".into(),
            entered_at(&db, "T-2") + 6 * HOUR,
        ),
        (
            "T-3".into(),
            "timer_fired".into(),
            entered_at(&db, "T-3") + 6 * HOUR,
        ),
    ];
    assert_eq!(fired, expected);
    // Each once: a later advance finds nothing more to fire.
    let again = control
        .advance(Duration::from_secs(24 * 3600))
        .await
        .unwrap();
    assert_eq!(again.steps, Some(0));
    assert_eq!(rows_of(&db, "'timer_fired'").len(), 3);
    let state = control.dev_clock().unwrap();
    assert!(
        state.ahead > 31.9 * 3600.0,
        "frozen, it falls behind by the time the test takes: {state:?}"
    );
}

async fn a_dev_clock_is_refused_on_a_database_the_real_clock_served(db: Db) {
    // A new database takes a dev clock, and takes it again.
    for _ in 0..2 {
        let dev = open(&db, Clock::dev()).await.unwrap();
        dev.shutdown().await.unwrap();
    }
    // The real clock may serve it; from then on a dev clock may not.
    let real = open(&db, Clock::system()).await.unwrap();
    let refused = real.advance(Duration::from_secs(60)).await.unwrap_err();
    assert_eq!(refused.code, Code::NotFound);
    assert!(refused.error.contains("--dev-clock"), "{}", refused.error);
    real.shutdown().await.unwrap();
    let error = open(&db, Clock::dev()).await.err().unwrap();
    assert_eq!(error, DEV_CLOCK_REFUSED);
    assert_eq!(
        db.rows("SELECT clock FROM control_plane"),
        vec![vec![Some("system".to_string())]]
    );
    // The refusal gave the database back at once.
    open(&db, Clock::system()).await.unwrap();
}

async fn a_database_served_before_schema_0005_counts_as_served_on_the_real_clock(db: Db) {
    // A database of version 0004 that a control plane served: it has a graph on
    // record, and no `clock` column yet.
    db.make_at(4);
    db.execute("UPDATE control_plane SET structure = 'sha256:served', checksum = 'sha256:served'");
    let error = open(&db, Clock::dev()).await.err().unwrap();
    assert_eq!(error, DEV_CLOCK_REFUSED);
    assert_eq!(
        db.rows("SELECT version_num FROM stateous_version"),
        vec![vec![Some(
            stateous_daemon::store::schema::newest().to_string()
        )]]
    );
}

both!(
    an_advance_fires_what_falls_due_inside_it_in_due_order_and_once,
    a_dev_clock_is_refused_on_a_database_the_real_clock_served,
    a_database_served_before_schema_0005_counts_as_served_on_the_real_clock,
);
