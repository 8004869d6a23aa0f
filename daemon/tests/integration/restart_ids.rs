//! Ids after a graceful restart go on where they stopped, as the reference's do:
//! on Postgres the ids a control plane took from the sequences ahead of time
//! (a block at a time) and did not hand out go back to them at its stop, so the
//! next task after a restart is task 2, not 129 (task ids are in the API).

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::Db;
use serde_json::json;
use stateous_daemon::control::Control;
use stateous_daemon::validated::StartInput;
use stateous_shared::graph::Graph;

/// `coding` (where a token without `urgent` starts) queues a task and sets a timer.
fn triage() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/triage.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

async fn ids_go_on_without_a_gap_after_a_graceful_restart(db: Db) {
    for token in ["A", "B"] {
        let control = Control::open(triage(), db.options()).await.unwrap();
        let context = json!({"repo": "r"}).as_object().unwrap().clone();
        control
            .start(StartInput::new(token.into(), context).unwrap())
            .await
            .unwrap();
        control.shutdown().await.unwrap();
    }
    let ids = |table: &str| -> Vec<String> {
        db.rows(&format!("SELECT id FROM {table} ORDER BY id"))
            .into_iter()
            .map(|r| r[0].clone().unwrap())
            .collect()
    };
    assert_eq!(ids("tasks"), ["1", "2"], "task ids");
    assert_eq!(ids("timers"), ["1", "2"], "timer ids");
    let ledger: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
    assert_eq!(ids("ledger"), ledger, "ledger ids");
}

both!(ids_go_on_without_a_gap_after_a_graceful_restart);
