//! Usage and budgets over a family (`docs/concepts/budgets.md`), on both backends:
//! a child's usage is summed into its top token, whose budget covers the family; a
//! crossing gives back every claimed attempt of the family and pauses it, and a
//! resume waits for a raised budget.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use common::Db;
use serde_json::{json, Value};
use stateous_daemon::control::Control;
use stateous_daemon::validated::budgets::{
    BudgetChanges, TokenBudgetInput, UsageAmounts, UsageInput,
};
use stateous_daemon::validated::{ClaimInput, FireInput, HeartbeatInput, ReportInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::Code;

fn object(value: Value) -> stateous_shared::wire::Object {
    value.as_object().cloned().unwrap()
}

fn usage(task: i64, cost: f64) -> UsageInput {
    UsageInput {
        task,
        attempt: None,
        supervisor: None,
        usage: UsageAmounts::new(object(json!({"cost_usd": cost})), "usage", false).unwrap(),
        key: None,
    }
}

fn budget(token: &str, cost: f64) -> TokenBudgetInput {
    TokenBudgetInput {
        token: token.into(),
        changes: BudgetChanges::new(&object(json!({"cost_usd": cost}))).unwrap(),
    }
}

async fn a_familys_usage_counts_against_its_top_tokens_budget(db: Db) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/desk/build/desk.json");
    let graph = Arc::new(Graph::load(&std::fs::read_to_string(path).unwrap()).unwrap());
    let control = Control::open(graph, db.options()).await.unwrap();
    let context = object(json!({"customer": "acme", "score": 5}));
    let start = StartInput::new("C-1".into(), context).unwrap();
    let five = UsageAmounts::new(object(json!({"cost_usd": 5})), "budget", true).unwrap();
    control
        .start_with_budget(start, Some(five), None)
        .await
        .unwrap();
    let claim = |states: &[&str]| {
        let states = states.iter().map(|s| s.to_string()).collect();
        control.claim(ClaimInput::new("box".into(), states, None).unwrap())
    };
    let intake = claim(&["intake"]).await.unwrap().unwrap();
    let done = serde_json::from_value(json!({"kind": "event", "event": "submitted"})).unwrap();
    control
        .report(ReportInput::new(intake.task, done).unwrap())
        .await
        .unwrap();
    let approve = FireInput::new("C-1".into(), "approve".into(), None, None).unwrap();
    control.fire(approve).await.unwrap();
    let legal = claim(&["legal/check"]).await.unwrap().unwrap();
    let finance = claim(&["finance/check"]).await.unwrap().unwrap();

    let answer = control.report_usage(usage(legal.task, 3.0)).await.unwrap();
    assert!(answer.recorded && answer.stopped.is_empty(), "{answer:?}");
    let answer = control
        .report_usage(usage(finance.task, 3.0))
        .await
        .unwrap();
    let mut stopped = answer.stopped.clone();
    stopped.sort_unstable();
    assert_eq!(stopped, vec![legal.task, finance.task]);
    for token in ["C-1", &legal.token, &finance.token] {
        let token = control.token(token.to_string()).await.unwrap();
        assert_eq!(token.status, "paused", "{token:?}");
    }
    let detail = control.detail("C-1".into()).await.unwrap();
    let view = detail.budget.unwrap();
    assert_eq!(view.usage["cost_usd"], json!(6));
    assert_eq!(view.over, ["cost_usd"]);
    let child = control.detail(legal.token.clone()).await.unwrap();
    assert_eq!(child.budget.unwrap().usage["cost_usd"], json!(3));
    let beat = HeartbeatInput::new(
        "box".into(),
        vec![legal.task, finance.task],
        BTreeMap::new(),
    );
    let mut lost = control.heartbeat(beat.unwrap()).await.unwrap();
    lost.sort_unstable();
    assert_eq!(lost, stopped, "the stopped attempts are lost");

    let refused = control.resume("C-1".into()).await.unwrap_err();
    assert_eq!(refused.code, Code::OverBudget, "{refused:?}");
    let refused = control
        .set_token_budget(budget(&legal.token, 10.0))
        .await
        .unwrap_err();
    assert_eq!(refused.code, Code::ChildToken, "{refused:?}");
    control.set_token_budget(budget("C-1", 10.0)).await.unwrap();
    control.resume("C-1".into()).await.unwrap();
    let again = claim(&["legal/check"]).await.unwrap().unwrap();
    assert_eq!((again.task, again.attempt), (legal.task, 2));
    // `check` has no retries: attempt 2 is the one attempt that counts, as the
    // budget's stop was not one, and its failure is the last.
    let why = control.why(legal.token.clone()).await.unwrap();
    assert_eq!(why.task.unwrap().retries_left, 0);
    let failed = serde_json::from_value(json!({"kind": "failed", "error": "no"})).unwrap();
    control
        .report(ReportInput::new(again.task, failed).unwrap())
        .await
        .unwrap();
    let kinds: Vec<String> = control
        .history(legal.token.clone())
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.kind)
        .collect();
    assert!(!kinds.contains(&"task_retrying".to_string()), "{kinds:?}");
}

both!(a_familys_usage_counts_against_its_top_tokens_budget);
