//! The token commands against the in-test server: the lines they print, their
//! `--json` output, and their one-sentence errors.

use serde_json::{json, Value};

use super::*;
use stateous_client::testserver::{server, Seen};

fn token_json(id: &str, state: &str, status: &str, visit: i64) -> Value {
    json!({"token": id, "state": state, "status": status, "visit": visit,
           "context": {}, "entered_at": "2026-10-07T05:43:39Z"})
}

/// A control plane with one token `T-1` that has `children` children.
fn answers(children: usize) -> impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static {
    move |seen: &Seen| {
        let path = seen.path.as_str();
        let (status, body) = match (seen.method.as_str(), path) {
            ("POST", "/tokens") => (201, token_json("T-1", "coding", "active", 1)),
            ("GET", "/tokens") => (200, json!([])),
            ("GET", "/tokens?parent=T-1&limit=1000") => {
                let kids: Vec<Value> = (0..children)
                    .map(|n| token_json(&format!("T-1.r.1.w{n}"), "triage", "active", 1))
                    .collect();
                (200, Value::Array(kids))
            }
            ("GET", "/tokens/T-1") => (200, token_json("T-1", "testing", "active", 2)),
            ("GET", "/tokens/T-1/history") => (
                200,
                json!([{"seq": 1, "at": "2026-10-07T05:43:39Z", "kind": "started",
                        "data": {"context": {}}}]),
            ),
            ("POST", "/tokens/T-1/events/done") if seen.key.as_deref() == Some("k") => (
                200,
                json!({"duplicate": true, "token": token_json("T-1", "testing", "active", 1)}),
            ),
            ("POST", "/tokens/T-1/events/done") => (200, token_json("T-1", "testing", "active", 1)),
            ("POST", "/tokens/T-1/pause") => (200, token_json("T-1", "coding", "paused", 1)),
            ("POST", "/tokens/T-4/events/done") => (
                409,
                json!({"error": "token 'T-4' is cancelled; it takes no events",
                       "code": "token_not_active"}),
            ),
            _ => (
                404,
                json!({"error": "no token 'NOPE'", "code": "token_not_found"}),
            ),
        };
        (status, body.to_string())
    }
}

async fn run_at(url: &str, json: bool, action: TokenAction) -> Result<String, CommandError> {
    let command = TokenCommand {
        connection: stateous_client::Connection {
            url: Some(url.to_string()),
            ..Default::default()
        },
        json,
        action,
    };
    let mut out = Vec::new();
    run(&command, &mut out).await?;
    Ok(String::from_utf8(out).expect("utf-8 output"))
}

fn show(id: Option<&str>) -> TokenAction {
    TokenAction::Show {
        id: id.map(str::to_string),
        graph: false,
        follow: false,
    }
}

fn fire(id: &str, payload: Option<&str>, key: Option<&str>) -> TokenAction {
    TokenAction::Fire {
        id: id.into(),
        event: "done".into(),
        payload: payload.map(str::to_string),
        key: key.map(str::to_string),
    }
}

#[tokio::test]
async fn start_fire_and_steer_print_token_lines() {
    let (url, log) = server(answers(0)).await;
    let start = TokenAction::Start {
        id: "T-1".into(),
        context: Some(r#"{"repo": "acme/api"}"#.into()),
        budget: Vec::new(),
        priority: None,
    };
    assert_eq!(
        run_at(&url, false, start).await.unwrap(),
        "T-1: coding, active\n"
    );
    assert_eq!(log.last().body["context"], json!({"repo": "acme/api"}));

    let fired = run_at(&url, false, fire("T-1", Some(r#"{"passed": 1}"#), None));
    assert_eq!(fired.await.unwrap(), "T-1: testing, active\n");
    assert_eq!(log.last().body, json!({"payload": {"passed": 1}}));
    let again = run_at(&url, false, fire("T-1", None, Some("k")))
        .await
        .unwrap();
    assert_eq!(again, "duplicate: T-1: testing, active\n");

    let pause = TokenAction::Steer {
        id: "T-1".into(),
        action: Steer::Pause,
    };
    assert_eq!(
        run_at(&url, false, pause).await.unwrap(),
        "T-1: coding, paused\n"
    );
}

#[tokio::test]
async fn show_prints_the_token_its_children_and_its_history() {
    let (url, _) = server(answers(2)).await;
    let shown = run_at(&url, false, show(Some("T-1"))).await.unwrap();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "T-1: testing (visit 2), active");
    assert_eq!(lines[1], "  child T-1.r.1.w0: triage, active");
    assert_eq!(lines[2], "  child T-1.r.1.w1: triage, active");
    assert!(lines[3].ends_with("  #1  started"), "{}", lines[3]);
    assert_eq!(lines.len(), 4);

    assert_eq!(
        run_at(&url, false, show(None)).await.unwrap(),
        "no tokens\n"
    );
}

#[tokio::test]
async fn show_says_when_the_children_are_cut() {
    let (url, _) = server(answers(1000)).await;
    let shown = run_at(&url, false, show(Some("T-1"))).await.unwrap();
    assert_eq!(shown.matches("  child ").count(), 1000);
    assert!(shown.contains(
        "\n  (only the 1000 most recently moved children are shown; there can be more)\n"
    ));
}

#[tokio::test]
async fn json_prints_the_daemons_answer() {
    let (url, _) = server(answers(1)).await;
    let printed = run_at(&url, true, fire("T-1", None, Some("k")))
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(answer["duplicate"], true);
    let printed = run_at(&url, true, show(Some("T-1"))).await.unwrap();
    let answer: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(answer["token"]["visit"], 2);
    assert_eq!(answer["children"].as_array().unwrap().len(), 1);
    assert_eq!(answer["history"][0]["kind"], "started");
}

#[tokio::test]
async fn refusals_and_mistakes_are_one_sentence() {
    let (url, log) = server(answers(0)).await;
    let refused = run_at(&url, false, fire("T-4", None, None))
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "the control plane at {url} refused (409): token 'T-4' is cancelled; it takes no events"
        )
    );
    let missing = run_at(&url, false, show(Some("NOPE"))).await.unwrap_err();
    assert!(missing.to_string().contains("refused (404)"));

    let asked = log.requests.lock().unwrap().len();
    let bad = TokenAction::Start {
        id: "T-1".into(),
        context: Some("[1]".into()),
        budget: Vec::new(),
        priority: None,
    };
    let error = run_at(&url, false, bad).await.unwrap_err().to_string();
    assert!(error.starts_with("CONTEXT_JSON must be a JSON object"));
    let error = run_at(&url, false, fire("T-1", Some("nope"), None))
        .await
        .unwrap_err();
    assert!(error
        .to_string()
        .starts_with("PAYLOAD_JSON is not valid JSON"));
    let both = TokenAction::Show {
        id: Some("T-1".into()),
        graph: true,
        follow: false,
    };
    let error = run_at(&url, false, both).await.unwrap_err().to_string();
    assert!(error.contains("not both"));
    assert_eq!(
        log.requests.lock().unwrap().len(),
        asked,
        "no request was sent"
    );
}

#[tokio::test]
async fn a_control_plane_that_does_not_answer_is_one_sentence() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let error = run_at(&url, false, show(None))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with(&format!("cannot reach the control plane at {url}: ")));
    assert!(!error.contains('\n'));
    let error = run_at("http://my host:8000", false, show(None))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("has a host that is not valid"));
}

/// A control plane that reads each request and closes the connection without an
/// answer, as one that crashed after it took the request.
fn closes_after_the_request() -> String {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
        }
    });
    url
}

#[tokio::test]
async fn a_change_without_an_answer_says_it_may_have_been_applied_and_what_is_safe() {
    let url = closes_after_the_request();
    let said = |error: CommandError| {
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("cannot reach the control plane at {url}: ")),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        text
    };
    let start = TokenAction::Start {
        id: "T-1".into(),
        context: None,
        budget: Vec::new(),
        priority: None,
    };
    let text = said(run_at(&url, false, start).await.unwrap_err());
    assert!(
        text.ends_with(
            ", so the token may have been started; the same command again is safe \
             (an id starts one token)"
        ),
        "{text}"
    );
    let text = said(
        run_at(&url, true, fire("T-1", None, Some("k")))
            .await
            .unwrap_err(),
    );
    assert!(
        text.contains("the same command again is safe (its --key"),
        "{text}"
    );
    let text = said(
        run_at(&url, false, fire("T-1", None, None))
            .await
            .unwrap_err(),
    );
    assert!(
        text.contains("look with `stateous token show T-1` before firing it again"),
        "{text}"
    );
    let pause = TokenAction::Steer {
        id: "T-1".into(),
        action: Steer::Pause,
    };
    let text = said(run_at(&url, false, pause).await.unwrap_err());
    assert!(
        text.contains("so the pause may have been applied"),
        "{text}"
    );
    // A read changes nothing: its sentence is the client's alone.
    let text = said(run_at(&url, false, show(Some("T-1"))).await.unwrap_err());
    assert!(!text.contains("may have been"), "{text}");
}

fn sse(id: u64, seq: i64, kind: &str) -> String {
    let entry = json!({"id": id, "token": "T-1", "seq": seq, "at": "2026-10-07T05:43:39Z",
                       "kind": kind, "data": {}});
    format!("id: {id}\nevent: entry\ndata: {entry}\n\n")
}

fn history_of(kinds: &[&str]) -> String {
    let entries: Vec<Value> = kinds
        .iter()
        .enumerate()
        .map(|(n, kind)| json!({"seq": n + 1, "at": "2026-10-07T05:43:39Z", "kind": kind, "data": {}}))
        .collect();
    Value::Array(entries).to_string()
}

#[tokio::test]
async fn follow_prints_new_entries_once_and_reconnects_until_the_token_ends() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let watches = AtomicUsize::new(0);
    let histories = AtomicUsize::new(0);
    let (url, log) = server(move |seen| match seen.path.as_str() {
        "/watch?token=T-1" => match watches.fetch_add(1, Ordering::SeqCst) {
            // The first stream repeats entry 1, brings entry 2, then breaks.
            0 => (200, sse(10, 1, "started") + &sse(11, 2, "paused")),
            _ => (200, sse(13, 4, "completed")),
        },
        "/tokens/T-1" => (200, token_json("T-1", "draft", "active", 1).to_string()),
        "/tokens?parent=T-1&limit=1000" => (200, "[]".into()),
        "/tokens/T-1/history" => match histories.fetch_add(1, Ordering::SeqCst) {
            0 => (200, history_of(&["started"])),
            // While the stream was down, entry 3 committed.
            _ => (200, history_of(&["started", "paused", "resumed"])),
        },
        _ => (404, r#"{"error":"no","code":"not_found"}"#.into()),
    })
    .await;
    let action = TokenAction::Show {
        id: Some("T-1".into()),
        graph: false,
        follow: true,
    };
    let shown = run_at(&url, false, action).await.unwrap();
    let kinds: Vec<&str> = shown
        .lines()
        .skip(1)
        .map(|line| line.split("  ").last().unwrap())
        .collect();
    assert_eq!(kinds, ["started", "paused", "resumed", "completed"]);
    let resumed = log
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|seen| seen.path.starts_with("/watch"))
        .map(|seen| seen.last_event_id.clone())
        .collect::<Vec<_>>();
    assert_eq!(resumed, [None, Some("11".to_string())]);
}

#[tokio::test]
async fn follow_needs_one_token_and_ends_at_once_for_an_ended_token() {
    let (url, _) = server(|seen| match seen.path.as_str() {
        "/watch?token=T-1" => (200, String::new()),
        "/tokens/T-1" => (200, token_json("T-1", "review", "completed", 1).to_string()),
        "/tokens?parent=T-1&limit=1000" => (200, "[]".into()),
        "/tokens/T-1/history" => (200, history_of(&["started", "completed"])),
        _ => (404, r#"{"error":"no","code":"not_found"}"#.into()),
    })
    .await;
    let follow = |id: Option<&str>| TokenAction::Show {
        id: id.map(str::to_string),
        graph: false,
        follow: true,
    };
    let shown = run_at(&url, false, follow(Some("T-1"))).await.unwrap();
    assert_eq!(shown.lines().count(), 3);
    let error = run_at(&url, false, follow(None)).await.unwrap_err();
    assert!(error.to_string().starts_with("--follow follows one token"));
    let error = run_at(&url, true, follow(Some("T-1"))).await.unwrap_err();
    assert!(error.to_string().contains("without --json"));
}

#[tokio::test]
async fn show_graph_draws_the_served_workflow() {
    let (url, _) = server(|seen| match seen.path.as_str() {
        "/workflow" => (
            200,
            json!({"stateous": 1, "workflow": "w", "context": null,
                   "states": {"coding": {}, "testing": {}},
                   "events": {"done": {}},
                   "transitions": [
                       {"from": "__start__", "to": "coding"},
                       {"from": "coding", "to": "testing", "on": "done"},
                       {"from": "testing", "to": "__end__", "on": "done"}]})
            .to_string(),
        ),
        _ => (404, r#"{"error":"no","code":"not_found"}"#.into()),
    })
    .await;
    let graph = TokenAction::Show {
        id: None,
        graph: true,
        follow: false,
    };
    let drawn = run_at(&url, false, graph).await.unwrap();
    assert!(drawn.starts_with("stateDiagram-v2\n"), "{drawn}");
    assert!(drawn.contains("    coding --> testing: done\n"), "{drawn}");
}
