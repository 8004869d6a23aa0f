//! The client against a tiny in-test HTTP server that records each request and
//! answers from a table, over TCP and over a Unix socket.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use super::testserver::{serve_io, server, Handler, Log, Seen};
use super::*;
use crate::refusal::Code;
use crate::wire::{Object, Outcome};

fn token_json(id: &str, state: &str, status: &str) -> Value {
    json!({"token": id, "state": state, "status": status, "visit": 1,
           "context": {"repo": "a"}, "entered_at": "2026-10-07T05:43:39Z"})
}

fn object(value: Value) -> Object {
    value.as_object().cloned().unwrap()
}

#[tokio::test]
async fn token_routes_send_the_documented_requests() {
    let (url, log) = server(|seen| match (seen.method.as_str(), seen.path.as_str()) {
        ("POST", "/tokens") => (201, token_json("T-1", "coding", "active").to_string()),
        ("GET", "/tokens?status=active&limit=2") => (
            200,
            json!([token_json("T-1", "coding", "active")]).to_string(),
        ),
        ("GET", "/tokens/T-1/history") => (
            200,
            json!([{"seq": 1, "at": "2026-10-07T05:43:39Z", "kind": "started",
                    "data": {"context": {}}}])
            .to_string(),
        ),
        ("POST", "/tokens/T-1/pause") => (200, token_json("T-1", "coding", "paused").to_string()),
        ("GET", "/health") => (
            200,
            r#"{"workflow":"orders","checksum":"sha256:ab"}"#.into(),
        ),
        _ => (404, r#"{"error":"no such path","code":"not_found"}"#.into()),
    })
    .await;
    let client = Client::new(&url).unwrap();

    let started = client
        .start("T-1", &object(json!({"repo": "a"})))
        .await
        .unwrap();
    assert_eq!(started.state, "coding");
    assert_eq!(
        log.last().body,
        json!({"token": "T-1", "context": {"repo": "a"}})
    );

    let query = TokenQuery {
        status: Some("active".into()),
        limit: Some(2),
        ..TokenQuery::default()
    };
    assert_eq!(client.tokens(&query).await.unwrap().len(), 1);
    assert_eq!(client.history("T-1").await.unwrap()[0].kind, "started");
    assert_eq!(client.pause("T-1").await.unwrap().status, "paused");
    assert_eq!(client.health().await.unwrap().workflow, "orders");

    let missing = client.workflow().await.unwrap_err();
    assert_eq!(missing.code(), Some(Code::NotFound));
    assert_eq!(missing.status(), Some(404));
    assert!(!missing.is_retryable());
}

#[tokio::test]
async fn fire_sends_the_key_and_reads_a_duplicate() {
    let (url, log) = server(|seen| {
        let token = token_json("T-1", "testing", "active");
        if seen.key.as_deref() == Some("seen") {
            (200, json!({"duplicate": true, "token": token}).to_string())
        } else {
            (200, token.to_string())
        }
    })
    .await;
    let client = Client::new(&url).unwrap();
    let payload = object(json!({"passed": 3}));

    let first = client
        .fire("T-1", "done", Some(&payload), Some("new"))
        .await
        .unwrap();
    assert!(!first.duplicate);
    let seen = log.last();
    assert_eq!(seen.path, "/tokens/T-1/events/done");
    assert_eq!(seen.body, json!({"payload": {"passed": 3}}));
    assert_eq!(seen.key.as_deref(), Some("new"));

    let again = client
        .fire("T-1", "done", None, Some("seen"))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.token.state, "testing");
    assert_eq!(log.last().body, json!({}));
}

#[tokio::test]
async fn task_routes_claim_beat_report_note_and_save_memory() {
    let (url, log) = server(|seen| match seen.path.as_str() {
        "/tasks/claim" if seen.body["request"] == "r-1" => (
            200,
            json!({"task": 2, "token": "T-1", "state": "draft", "visit": 1, "attempt": 1,
                   "context": {}, "memory": {}, "entered_by": {"name": "__started__"}})
            .to_string(),
        ),
        "/tasks/claim" => (204, String::new()),
        "/tasks/heartbeat" => (200, r#"{"lost": [7]}"#.into()),
        "/tasks/2/report" => (200, token_json("T-1", "review", "active").to_string()),
        "/tasks/2/note" | "/tasks/2/memory" => (204, String::new()),
        _ => (
            409,
            r#"{"error":"task 9 is at attempt 2, not attempt 1","code":"attempt_over"}"#.into(),
        ),
    })
    .await;
    let client = Client::new(&url).unwrap();
    let mut claim = ClaimRequest {
        supervisor: "box-1".into(),
        states: vec!["draft".into()],
        ..ClaimRequest::default()
    };
    assert_eq!(client.claim(&claim).await.unwrap(), None);
    claim.request = Some("r-1".into());
    let grant = client.claim(&claim).await.unwrap().expect("a grant");
    assert_eq!((grant.task, grant.attempt), (2, 1));
    assert_eq!(grant.entered_by.unwrap().name, "__started__");

    assert_eq!(
        client.heartbeat("box-1", &[2, 7], None).await.unwrap(),
        vec![7]
    );
    assert_eq!(
        log.last().body,
        json!({"supervisor": "box-1", "tasks": [2, 7]})
    );

    let outcome = Outcome {
        kind: "event".into(),
        event: Some("submitted".into()),
        payload: None,
        error: None,
        context: Object::new(),
        schedules: Vec::new(),
        attempt: Some(1),
        supervisor: Some("box-1".into()),
    };
    assert_eq!(client.report(2, &outcome).await.unwrap().state, "review");
    assert_eq!(log.last().body["attempt"], 1);
    client.note(2, "half way", Some(1)).await.unwrap();
    assert_eq!(log.last().body, json!({"text": "half way", "attempt": 1}));
    client.set_memory(2, "k", &Value::Null, None).await.unwrap();
    assert_eq!(log.last().method, "PUT");
    assert_eq!(log.last().body, json!({"key": "k", "value": null}));

    let over = client.note(9, "late", Some(1)).await.unwrap_err();
    assert_eq!(over.code(), Some(Code::AttemptOver));
    assert_eq!(
        over.to_string(),
        format!("the control plane at {url} refused (409): task 9 is at attempt 2, not attempt 1")
    );
}

#[tokio::test]
async fn an_answer_that_is_not_the_apis_is_a_bad_answer() {
    let (url, _) = server(|_| (200, "<html>hello</html>".into())).await;
    let client = Client::new(&url).unwrap();
    let error = client.token("T-1").await.unwrap_err();
    assert!(matches!(error, ClientError::BadAnswer { status: 200, .. }));
    assert!(error.to_string().contains("check the URL"));
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn nothing_listening_is_unreachable_and_retryable() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let client = Client::new(&url).unwrap();
    let error = client.health().await.unwrap_err();
    assert!(matches!(error, ClientError::Unreachable { .. }));
    assert!(error.is_retryable());
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot reach the control plane at {url}: ")),
        "{error}"
    );
}

#[tokio::test]
async fn keep_alive_reuses_one_connection() {
    let (url, log) = server(|_| (200, r#"{"workflow":"w","checksum":"c"}"#.into())).await;
    let pooled = Client::keep_alive(&url, DEFAULT_TIMEOUT).unwrap();
    for _ in 0..5 {
        pooled.health().await.unwrap();
    }
    assert_eq!(log.connections.load(Ordering::SeqCst), 1);

    let fresh = Client::new(&url).unwrap();
    for _ in 0..3 {
        fresh.health().await.unwrap();
    }
    assert_eq!(log.connections.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_unix_socket_serves_the_same_api() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("s.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let log = Arc::new(Log::default());
    let handler: Arc<Handler> =
        Arc::new(|_: &Seen| (200, r#"{"workflow":"w","checksum":"c"}"#.to_string()));
    let served = log.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_io(
                TokioIo::new(stream),
                served.clone(),
                handler.clone(),
            ));
        }
    });
    let client = Client::new(&format!("unix://{}", path.display())).unwrap();
    assert_eq!(client.health().await.unwrap().checksum, "c");
    assert_eq!(log.last().path, "/health");
}

#[tokio::test]
async fn watch_reads_entries_and_sends_the_last_event_id() {
    let (url, log) = server(|seen| match seen.path.as_str() {
        "/watch?token=T-1" => (
            200,
            "id: 4\nevent: entry\ndata: {\"id\": 4, \"token\": \"T-1\", \"seq\": 2, \
             \"at\": \"2026-10-07T05:43:39Z\", \"kind\": \"paused\", \"data\": {}}\n\n\
             : keep-alive\n\nevent: supervisor\ndata: {\"name\": \"box\"}\n\n"
                .into(),
        ),
        _ => (404, r#"{"error":"no such path","code":"not_found"}"#.into()),
    })
    .await;
    let client = Client::new(&url).unwrap();
    let mut watch = client.watch(Some("T-1"), Some("3")).await.unwrap();
    assert_eq!(log.last().last_event_id.as_deref(), Some("3"));
    let first = watch.next().await.unwrap().expect("an event");
    assert_eq!(first.id.as_deref(), Some("4"));
    assert_eq!(first.entry().expect("an entry").entry.kind, "paused");
    let second = watch.next().await.unwrap().expect("an event");
    assert_eq!(second.event.as_deref(), Some("supervisor"));
    assert_eq!(second.entry(), None);
    assert_eq!(watch.next().await.unwrap(), None);

    let missing = client.watch(None, None).await.unwrap_err();
    assert_eq!(missing.code(), Some(Code::NotFound));
}
