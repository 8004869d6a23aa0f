//! Time in which the control plane did not run is given back to the claimed leases,
//! on both backends with a clock moved by hand (a test declares the stall): the
//! first write after it, a heartbeat or the clock's tick, ends no lease that the
//! stall alone made overdue; a lease that nobody renews still ends afterwards.

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

async fn failures(control: &Control) -> usize {
    let history = control.history("T-1".into()).await.unwrap();
    history.iter().filter(|e| e.kind == "task_failed").count()
}

async fn a_stall_ends_no_lease_and_a_lease_nobody_renews_still_ends(db: Db) {
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
    let claim = ClaimInput::new("box".into(), vec!["coding".into()], None).unwrap();
    let task = control.claim(claim).await.unwrap().unwrap().task;
    let beat = || {
        let input = HeartbeatInput::new("box".into(), vec![task], BTreeMap::new()).unwrap();
        control.heartbeat(input)
    };
    let stall = Duration::from_secs(8);
    // The lease (5 s) ran out during the stall; the heartbeat waiting after it is
    // the first write, and keeps the attempt.
    clock.advance(stall);
    control.stalls().stalled(stall);
    assert_eq!(beat().await.unwrap(), Vec::<i64>::new());
    control.tick().await.unwrap();
    assert_eq!(failures(&control).await, 0);
    // Again, with the clock's tick first.
    clock.advance(stall);
    control.stalls().stalled(stall);
    control.tick().await.unwrap();
    assert_eq!(failures(&control).await, 0);
    assert_eq!(beat().await.unwrap(), Vec::<i64>::new());
    // No heartbeat for a whole lease, and no stall: the lease ends.
    clock.advance(Duration::from_secs(6));
    control.tick().await.unwrap();
    assert_eq!(failures(&control).await, 1);
}

both!(a_stall_ends_no_lease_and_a_lease_nobody_renews_still_ends);
