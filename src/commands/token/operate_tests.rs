//! `token list`, `why`, `retry` and the bulk actions against the in-test server: a bulk
//! action previews, asks for the count (or refuses without a terminal), walks the pages
//! and summarizes; `list` prints the page and says the total; `why` reads as lines.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::bulk::skipped_lines;
use super::operate::why_lines;
use super::*;
use stateous_client::testserver::{server, Seen};
use stateous_shared::bulk::{BulkAction, Outcome, TokenOutcome};
use stateous_shared::why::{Why, WhyTask, WhyTimer, WhyTransition};

/// A console that answers from a script and keeps what it was told.
struct Scripted {
    terminal: bool,
    answer: String,
    asked: Vec<String>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl Console for Scripted {
    fn can_ask(&self) -> bool {
        self.terminal
    }

    fn ask(&mut self, question: &str) -> std::io::Result<String> {
        self.asked.push(question.to_string());
        Ok(self.answer.clone())
    }

    fn note(&mut self, text: &str) {
        self.notes.lock().unwrap().push(text.to_string());
    }
}

fn outcome(token: &str, outcome: &str) -> Value {
    let mut value = json!({"token": token, "outcome": outcome, "state": "intake",
        "status": "cancelled", "detail": "cancelled it"});
    if outcome == "refused" {
        value["code"] = json!("child_token");
        value["detail"] = json!("token 'C-3' is a child of 'C'");
        value["status"] = json!("active");
    }
    value
}

/// A control plane whose filter matches C-1, C-2 and C-3: the preview, then two
/// pages of the walk.
fn bulk_answers(seen: &Seen) -> (u16, String) {
    let body = &seen.body;
    let answer = if body["dry_run"] == true {
        json!({"action": "cancel", "dry_run": true, "count": 3, "sample": [
            {"token": "C-1", "outcome": "applied", "state": "intake", "status": "active",
             "detail": "cancels it in 'intake'"}], "applied": 2, "refused": 1,
            "refusals": [{"code": "child_token", "status": "active", "count": 1,
                          "example": "token 'C-3' is a child of 'C'"}],
            "left_out": 4})
    } else if body["after"].is_null() {
        json!({"action": "cancel", "dry_run": false, "count": 2, "applied": 2,
               "outcomes": [outcome("C-1", "applied"), outcome("C-2", "applied")],
               "next": "5:C-2"})
    } else {
        json!({"action": "cancel", "dry_run": false, "count": 1, "refused": 1,
               "outcomes": [outcome("C-3", "refused")]})
    };
    (200, answer.to_string())
}

fn cancel(reason: Option<&str>, yes: bool) -> TokenAction {
    TokenAction::Bulk(BulkOptions {
        reason: reason.map(str::to_string),
        yes,
        ..BulkOptions::new(BulkAction::Cancel, "state == 'intake'".into())
    })
}

async fn run_scripted(
    url: &str,
    action: TokenAction,
    console: &mut Scripted,
) -> Result<String, CommandError> {
    let command = TokenCommand {
        connection: stateous_client::Connection {
            url: Some(url.to_string()),
            ..Default::default()
        },
        json: false,
        action,
    };
    let mut out = Vec::new();
    run_with(&command, &mut out, console).await?;
    Ok(String::from_utf8(out).expect("utf-8 output"))
}

fn console(terminal: bool, answer: &str) -> Scripted {
    Scripted {
        terminal,
        answer: answer.to_string(),
        asked: Vec::new(),
        notes: Arc::default(),
    }
}

#[tokio::test]
async fn a_bulk_action_asks_for_the_count_then_walks_every_page() {
    let (url, log) = server(bulk_answers).await;
    let mut typed = console(true, "3\n");
    let out = run_scripted(&url, cancel(Some("incident 42"), false), &mut typed)
        .await
        .unwrap();
    assert_eq!(
        typed.asked,
        ["Type 3 to cancel them, anything else to stop: "]
    );
    assert_eq!(
        out,
        "3 tokens match state == 'intake'; cancel would do:\n\
         \x20 C-1: intake, active -> cancels it in 'intake'\n\
         \x20 ... and 2 more\n\
         cancel would apply to 2 tokens and refuse 1: 1 child_token (active); 4 ended \
         tokens left out (include them with --include-ended)\n\
         cancelled 2 tokens; 1 refused, 0 duplicate, 0 skipped; 4 ended tokens left out \
         (include them with --include-ended)\n\
         \x20 C-3: intake, active -> refused (child_token): token 'C-3' is a child of 'C'\n"
    );
    let requests = log.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body["reason"], "incident 42");
    assert_eq!(requests[1].body["dry_run"], false);
    assert_eq!(requests[2].body["after"], "5:C-2");
    let notes = typed.notes.lock().unwrap().clone();
    assert_eq!(
        notes.last().unwrap(),
        "cancel: 3 of 3 tokens (2 applied, 1 refused, 0 duplicate, 0 skipped)"
    );
}

#[tokio::test]
async fn a_bulk_action_changes_nothing_unless_confirmed() {
    let (url, log) = server(bulk_answers).await;
    let error = run_scripted(&url, cancel(Some("r"), false), &mut console(false, ""))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "cancel would act on 3 tokens: confirm at a terminal, or add --yes"
    );
    let error = run_scripted(&url, cancel(Some("r"), false), &mut console(true, "yes\n"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(error, "nothing was changed: the answer was not 3");
    let error = run_scripted(&url, cancel(None, true), &mut console(true, ""))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("needs --reason"), "{error}");
    let requests = log.requests.lock().unwrap().clone();
    assert!(
        requests.iter().all(|r| r.body["dry_run"] == true),
        "{requests:?}"
    );
    // --yes goes ahead without a terminal.
    let out = run_scripted(&url, cancel(Some("r"), true), &mut console(false, ""))
        .await
        .unwrap();
    assert!(out.contains("cancelled 2 tokens"), "{out}");
}

#[tokio::test]
async fn list_prints_the_page_and_tells_the_total() {
    let (url, log) = server(|_: &Seen| {
        let token = json!({"token": "T-1", "state": "review", "status": "active", "visit": 1,
                           "context": {}, "entered_at": "2026-10-07T05:43:39Z"});
        (200, json!([token]).to_string())
    })
    .await;
    let options = ListOptions {
        filter: Some("moved > 60".into()),
        state: Some("review".into()),
        limit: Some(1),
        ..ListOptions::default()
    };
    let mut told = console(false, "");
    let out = run_scripted(&url, TokenAction::List(options), &mut told)
        .await
        .unwrap();
    assert_eq!(out, "T-1: review, active\n");
    assert_eq!(
        log.last().path,
        "/tokens?limit=1&where=moved%20%3E%2060&state=review"
    );
}

#[test]
fn why_reads_as_lines_reasons_first() {
    let token = serde_json::from_value(json!({"token": "C-1", "state": "review",
        "status": "active", "visit": 2, "context": {}, "entered_at": "2026-10-07T05:43:39Z"}))
    .unwrap();
    let why = Why {
        token,
        moved: 750,
        reasons: vec!["its task 7 is queued".into()],
        timeout: Some("10m".into()),
        transitions: vec![WhyTransition {
            event: "approve".into(),
            to: "sign".into(),
            guard: Some("ctx['score'] > 3".into()),
            otherwise: false,
            holds: Some(false),
            reads_payload: false,
        }],
        timers: vec![WhyTimer {
            event: "timeout".into(),
            kind: "timeout".into(),
            due_at: "2026-10-07T05:53:39Z".into(),
            left: 100.0,
            frozen: false,
        }],
        task: Some(WhyTask {
            task: 7,
            state: "review".into(),
            status: "claimed".into(),
            attempt: 1,
            retries_left: 2,
            holder: Some("box-1".into()),
            lease_left: Some(90.0),
            holder_heard: Some(4.0),
            lease_renewed: Some(30.0),
        }),
        supervisors: Vec::new(),
        stopped: Vec::new(),
        held: Vec::new(),
        rejected: None,
        failure: None,
        children: Vec::new(),
        join: None,
        budget: None,
        limits: Vec::new(),
    };
    assert_eq!(
        why_lines(&why),
        [
            "C-1: review (visit 2), active, for 12m 30s",
            "why:",
            "  - its task 7 is queued",
            "transitions from review:",
            "  approve -> sign  when ctx['score'] > 3: false",
            "timeout of review: 10m",
            "timeout: due 2026-10-07T05:53:39Z (in 1m 40s)",
            "task 7 (review): claimed, attempt 1, 2 retries left, held by box-1, \
             lease left 1m 30s, renewed 30s ago, box-1 heard 4s ago",
        ]
    );
}

#[test]
fn skipped_tokens_are_counted_by_reason_with_their_first_ids() {
    let skipped = |token: &str, detail: &str| TokenOutcome {
        token: token.into(),
        outcome: Outcome::Skipped,
        state: "done".into(),
        status: "completed".into(),
        detail: detail.into(),
        code: None,
    };
    let mut outcomes: Vec<TokenOutcome> = (1..=7)
        .map(|n| skipped(&format!("T-{n}"), "it no longer matched"))
        .collect();
    outcomes.insert(2, skipped("N-1", "kept for now"));
    assert_eq!(
        skipped_lines(&outcomes),
        [
            "  7 skipped (T-1, T-2, T-3, T-4, T-5 and 2 more): it no longer matched",
            "  1 skipped (N-1): kept for now",
        ]
    );
}
