//! A heartbeat that names its attempts (our addition), on both backends with a
//! clock moved by hand: an attempt that is over is answered lost even by the name
//! that holds the next one, and a heartbeat without `attempts` keeps the
//! reference's meaning.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::json;
use stateous_daemon::control::Control;
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::{ClaimInput, HeartbeatInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::time::{parse_iso, to_micros};

async fn an_attempt_that_is_over_is_lost_even_to_the_name_that_holds_the_next(db: Db) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/sdlc.json");
    let graph = Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap());
    let clock = Clock::manual(to_micros(parse_iso("2026-10-06T09:00:00Z").unwrap()));
    let mut options = db.options();
    options.clock = clock.clone();
    options.holder = Some("a:1:1".into());
    options.lease = Duration::from_secs(5);
    let control = Control::open(graph, options).await.unwrap();
    let context = json!({"repo": "r"}).as_object().unwrap().clone();
    control
        .start(StartInput::new("T-1".into(), context).unwrap())
        .await
        .unwrap();
    let claim =
        || control.claim(ClaimInput::new("box".into(), vec!["coding".into()], None).unwrap());
    let first = claim().await.unwrap().unwrap();
    let task = first.task;
    let beat = |attempts: &[(i64, i64)]| {
        let named: BTreeMap<i64, i64> = attempts.iter().copied().collect();
        control.heartbeat(HeartbeatInput::new("box".into(), vec![task], named).unwrap())
    };
    assert_eq!(beat(&[(task, 1)]).await.unwrap(), Vec::<i64>::new());
    clock.advance(Duration::from_secs(6));
    control.tick().await.unwrap();
    let second = claim().await.unwrap().unwrap();
    assert_eq!((second.task, second.attempt), (task, 2));
    assert_eq!(beat(&[(task, 1)]).await.unwrap(), vec![task]);
    assert_eq!(beat(&[(task, 3)]).await.unwrap(), vec![task]);
    assert_eq!(beat(&[(task, 2)]).await.unwrap(), Vec::<i64>::new());
    assert_eq!(beat(&[]).await.unwrap(), Vec::<i64>::new());
    // The lost heartbeat did not renew attempt 2: its lease is the one attempt 2's
    // own heartbeat gave it.
    clock.advance(Duration::from_secs(4));
    assert_eq!(beat(&[(task, 1)]).await.unwrap(), vec![task]);
    clock.advance(Duration::from_secs(2));
    control.tick().await.unwrap();
    let kinds: Vec<String> = control
        .history("T-1".into())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "task_failed").count(),
        2,
        "{kinds:?}"
    );
}

both!(an_attempt_that_is_over_is_lost_even_to_the_name_that_holds_the_next);
