//! The client against a tiny in-test HTTP server that records each request and
//! answers from a table, over TCP and over a Unix socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use super::testserver::{serve_io, server, Handler, Log, Seen};
use super::*;
use stateous_shared::refusal::Code;
use stateous_shared::wire::{Object, Outcome};

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

/// The follower resumes each new stream after the last event it passed on, and
/// says when a stream broke and when one could not be opened.
#[tokio::test]
async fn the_follower_resumes_after_the_last_event_and_says_what_happened() {
    let (url, log) = server(|seen| match seen.last_event_id.as_deref() {
        None => (
            200,
            "id: 4\ndata: {\"id\": 4, \"token\": \"T-1\", \"seq\": 2, \
             \"at\": \"2026-10-07T05:43:39Z\", \"kind\": \"paused\", \"data\": {}}\n\n"
                .into(),
        ),
        Some(_) => (404, r#"{"error":"no such path","code":"not_found"}"#.into()),
    })
    .await;
    let client = Client::new(&url).unwrap();
    let backoff = Backoff::new(vec![std::time::Duration::from_millis(1)]);
    let mut follower = Follower::new(client, Some("T-1"), backoff);
    assert!(matches!(follower.next().await, Followed::Opened));
    assert_eq!(log.last().path, "/watch?token=T-1");
    let Followed::Event(event) = follower.next().await else {
        panic!("an event");
    };
    assert_eq!(event.id.as_deref(), Some("4"));
    assert_eq!(follower.last_event_id(), Some("4"));
    assert!(matches!(follower.next().await, Followed::Broke));
    let Followed::Unopened(error) = follower.next().await else {
        panic!("no stream");
    };
    assert_eq!(error.code(), Some(Code::NotFound));
    assert_eq!(log.last().last_event_id.as_deref(), Some("4"));
}

/// A URL where nothing listens.
fn dead_url() -> String {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    url
}

const HEALTH: &str = r#"{"workflow":"w","checksum":"c"}"#;

fn refusal(code: &str) -> (u16, String) {
    (
        503,
        json!({"error": format!("answered {code}"), "code": code}).to_string(),
    )
}

#[tokio::test]
async fn a_refused_connection_moves_to_the_next_address_and_stays_there() {
    let dead = dead_url();
    let (live, log) = server(|_| (200, HEALTH.into())).await;
    let client = Client::new(&format!("{dead},{live}")).unwrap();
    assert_eq!(client.urls(), vec![dead.as_str(), live.as_str()]);
    assert_eq!(client.url(), dead);
    assert_eq!(client.health().await.unwrap().workflow, "w");
    assert_eq!(client.url(), live);
    assert_eq!(log.last().path, "/health");
    // A clone shares which address serves.
    assert_eq!(client.clone().url(), live);
}

#[tokio::test]
async fn a_standby_or_not_serving_answer_moves_to_the_next_address_with_the_same_request() {
    for code in ["standby", "not_serving"] {
        let (waiting, waited) = server(move |_| refusal(code)).await;
        let (live, log) = server(|seen| {
            (
                200,
                token_json(seen.body["token"].as_str().unwrap_or("?"), "a", "active").to_string(),
            )
        })
        .await;
        let client = Client::new(&format!("{waiting},{live}")).unwrap();
        let token = client.start("T-1", &Object::new()).await.unwrap();
        assert_eq!(token.token, "T-1", "{code}");
        assert_eq!(waited.requests.lock().unwrap().len(), 1);
        assert_eq!(log.last().path, "/tokens");
        assert_eq!(log.last().body["token"], "T-1");
        assert_eq!(client.url(), live);
    }
}

#[tokio::test]
async fn a_busy_database_does_not_move_to_the_next_address() {
    let (busy, _) = server(|_| refusal("database_busy")).await;
    let (live, log) = server(|_| (200, HEALTH.into())).await;
    let client = Client::new(&format!("{busy},{live}")).unwrap();
    let error = client.health().await.unwrap_err();
    assert_eq!(error.code(), Some(Code::DatabaseBusy));
    assert!(error.to_string().contains(&busy), "{error}");
    assert!(error.is_retryable());
    assert!(log.requests.lock().unwrap().is_empty());
    assert_eq!(client.url(), busy);
}

#[tokio::test]
async fn the_address_that_served_gets_the_next_request_first() {
    let (standby, waited) = server(|_| refusal("standby")).await;
    let (live, log) = server(|_| (200, HEALTH.into())).await;
    let client = Client::new(&format!("{standby},{live}")).unwrap();
    for _ in 0..3 {
        client.health().await.unwrap();
    }
    assert_eq!(waited.requests.lock().unwrap().len(), 1);
    assert_eq!(log.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn when_no_address_serves_the_last_error_stands_and_the_next_request_starts_over() {
    let (standby, waited) = server(|_| refusal("standby")).await;
    let dead = dead_url();
    let client = Client::new(&format!("{standby},{dead}")).unwrap();
    let error = client.health().await.unwrap_err();
    assert!(matches!(error, ClientError::Unreachable { ref url, .. } if *url == dead));
    assert!(error.is_retryable());
    let error = client.health().await.unwrap_err();
    assert!(matches!(error, ClientError::Unreachable { .. }));
    assert_eq!(waited.requests.lock().unwrap().len(), 2);
    assert_eq!(client.url(), standby);

    let reversed = Client::new(&format!("{dead},{standby}")).unwrap();
    let error = reversed.health().await.unwrap_err();
    assert_eq!(error.code(), Some(Code::Standby));
}

/// A server that takes every connection and never answers: a control plane
/// stopped with SIGSTOP (the kernel still accepts on its port).
async fn hung() -> String {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    url
}

fn timed_out(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Unreachable {
            source: TransportError::Timeout(_),
            ..
        }
    )
}

#[tokio::test]
async fn a_timeout_is_returned_never_sent_to_the_next_address_and_the_next_request_starts_there() {
    let hung = hung().await;
    let (live, log) = server(|_| (200, token_json("T-1", "a", "active").to_string())).await;
    let timeout = std::time::Duration::from_millis(300);
    let client = Client::with_timeout(&format!("{hung},{live}"), timeout).unwrap();
    let error = client.start("T-1", &Object::new()).await.unwrap_err();
    assert!(timed_out(&error), "{error:?}");
    assert!(log.requests.lock().unwrap().is_empty());
    // The address that answered last is still the first (none answered).
    assert_eq!(client.url(), hung);
    // The caller sends it again: it goes to the next address, which serves.
    client.start("T-1", &Object::new()).await.unwrap();
    assert_eq!(log.requests.lock().unwrap().len(), 1);
    assert_eq!(client.url(), live);
    client.start("T-2", &Object::new()).await.unwrap();
    assert_eq!(log.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_hung_control_plane_is_passed_for_its_standby_once_the_standby_serves() {
    let hung = hung().await;
    let serves = Arc::new(AtomicBool::new(false));
    let (standby, log) = {
        let serves = serves.clone();
        server(move |_| {
            if serves.load(Ordering::SeqCst) {
                (200, HEALTH.into())
            } else {
                refusal("standby")
            }
        })
        .await
    };
    let timeout = std::time::Duration::from_millis(300);
    let client = Client::with_timeout(&format!("{hung},{standby}"), timeout).unwrap();
    // While the standby waits: each try costs a timeout at the hung one, and
    // each next try asks the standby first.
    for tries in 1..=2 {
        let error = client.health().await.unwrap_err();
        assert!(timed_out(&error), "{error:?}");
        assert_eq!(log.requests.lock().unwrap().len(), tries - 1);
    }
    serves.store(true, Ordering::SeqCst);
    assert_eq!(client.health().await.unwrap().workflow, "w");
    assert_eq!(client.url(), standby);
}

#[tokio::test]
async fn a_keep_alive_client_moves_on_too() {
    let dead = dead_url();
    let (live, log) = server(|_| (200, HEALTH.into())).await;
    let client = Client::keep_alive(&format!("{dead}, {live}/"), DEFAULT_TIMEOUT).unwrap();
    client.health().await.unwrap();
    client.health().await.unwrap();
    assert_eq!(log.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_watch_stream_reopens_at_the_next_address_after_its_last_event() {
    let (standby, waited) = server(|_| refusal("standby")).await;
    let (live, log) = server(|_| {
        (
            200,
            "id: 9\nevent: entry\ndata: {\"id\": 9, \"token\": \"T-1\", \"seq\": 4, \
             \"at\": \"2026-10-07T05:43:39Z\", \"kind\": \"resumed\", \"data\": {}}\n\n"
                .into(),
        )
    })
    .await;
    let client = Client::new(&format!("{standby},{live}")).unwrap();
    let mut watch = client.watch(None, Some("8")).await.unwrap();
    assert_eq!(waited.last().last_event_id.as_deref(), Some("8"));
    assert_eq!(log.last().last_event_id.as_deref(), Some("8"));
    let event = watch.next().await.unwrap().expect("an event");
    assert_eq!(event.id.as_deref(), Some("9"));
    assert_eq!(client.url(), live);
}

#[tokio::test]
async fn an_access_key_goes_with_every_call_at_every_address_and_on_the_watch_stream() {
    let (standby, waited) = server(|_| refusal("standby")).await;
    let (live, log) = server(|seen| match seen.path.as_str() {
        "/health" => (200, r#"{"workflow":"w","checksum":"c"}"#.into()),
        _ => (200, "id: 1\nevent: entry\ndata: {}\n\n".into()),
    })
    .await;
    let secret = format!("stateous_key_{}", "0f".repeat(32));
    let key = AccessKey::parse(&format!(" {secret}\n"), "the test").unwrap();
    assert_eq!(format!("{key:?}"), "AccessKey(..)");
    let client = Client::new(&format!("{standby},{live}"))
        .unwrap()
        .with_access_key(Some(&key));
    client.health().await.unwrap();
    let bearer = format!("Bearer {secret}");
    assert_eq!(
        waited.last().authorization.as_deref(),
        Some(bearer.as_str())
    );
    assert_eq!(log.last().authorization.as_deref(), Some(bearer.as_str()));
    let _watch = client.watch(None, None).await.unwrap();
    assert_eq!(log.last().path, "/watch");
    assert_eq!(log.last().authorization.as_deref(), Some(bearer.as_str()));
    let without = Client::new(&live).unwrap();
    without.health().await.unwrap();
    assert_eq!(log.last().authorization, None);
    assert!(AccessKey::parse("stateous_key_short", "the test").is_err());
}

#[test]
fn a_list_with_an_empty_or_bad_address_is_refused() {
    let error = Client::new("http://a:1,,http://b:2").unwrap_err();
    assert!(matches!(error, ClientError::BadUrl(_)));
    assert!(error.to_string().contains("address 2 is empty"), "{error}");
    let error = Client::new("http://a:1,ftp://b:2").unwrap_err();
    assert!(
        error.to_string().starts_with("ftp://b:2 is not a URL"),
        "{error}"
    );
    assert!(Client::new("http://a:1,https://b:2").is_ok());
}
