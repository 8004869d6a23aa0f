//! The clock's tick fires what is due in the reference's order, one transaction
//! after another, so the rows each fire makes take the ids the reference gives
//! them: timeouts due at the same moment queue their tasks in the order of their
//! timers. Side by side (Postgres, before the fix), a later timer's fire often
//! took the lower task id: the flake of `reference_scenarios.rs`
//! `start_guards_error_transitions_and_timeouts_match_the_reference::postgres`.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Db;
use serde_json::json;
use stateous_daemon::control::Control;
use stateous_daemon::time_source::Clock;
use stateous_daemon::validated::StartInput;
use stateous_shared::graph::Graph;

/// `coding` has a 6 h timeout; `timeout` leads to `triage`, which queues a task.
fn triage() -> Arc<Graph> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/triage.json");
    Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// How many timeouts fall due together: side by side on a pool of 4, that many
/// fires reach the sequences in their own order nearly every time.
const TOKENS: usize = 32;

async fn timeouts_due_together_queue_their_tasks_in_due_order(db: Db) {
    let clock = Clock::manual(1_000_000);
    let mut options = db.options();
    options.clock = clock.clone();
    let control = Control::open(triage(), options).await.unwrap();
    // Each token enters `coding` (tasks 1 to 32) and sets its timeout (timers 1 to
    // 32), all due at the same moment: the reference fires them in timer order.
    let tokens: Vec<String> = (0..TOKENS).map(|i| format!("T-{i:02}")).collect();
    for token in &tokens {
        let context = json!({"repo": "r"}).as_object().unwrap().clone();
        control
            .start(StartInput::new(token.clone(), context).unwrap())
            .await
            .unwrap();
    }
    clock.advance(Duration::from_secs(6 * 3600));
    control.tick().await.unwrap();

    let column = |sql: &str| -> Vec<String> {
        db.rows(sql)
            .into_iter()
            .map(|r| r[0].clone().unwrap())
            .collect()
    };
    let queued = column("SELECT token FROM tasks WHERE state = 'triage' ORDER BY id");
    assert_eq!(
        queued, tokens,
        "each timeout's task takes its id in the order of the timers, as in the reference"
    );
    let first = column("SELECT min(id) FROM tasks WHERE state = 'triage'");
    assert_eq!(first, [(TOKENS + 1).to_string()], "no id is skipped");
    let fired = column("SELECT token FROM ledger WHERE kind = 'timer_fired' ORDER BY id");
    assert_eq!(fired, tokens, "the ledger records the fires in due order");
}

both!(timeouts_due_together_queue_their_tasks_in_due_order);
