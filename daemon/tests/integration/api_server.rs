//! In process: the HTTP server over a real control plane, for what a black-box test
//! cannot time: the answer of every request once the database is lost.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stateous_client::{Endpoint, Transport};
use stateous_daemon::api::server::{Server, Stop};
use stateous_daemon::api::Api;
use stateous_daemon::control::{Control, Options};
use stateous_shared::graph::Graph;
use stateous_shared::refusal::{Code, Refusal};

async fn control(dir: &Path) -> Control {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/tickets.json");
    let text = std::fs::read_to_string(path).expect("the test graph");
    let graph = Arc::new(Graph::load(&text).expect("a graph"));
    Control::open(graph, Options::new(dir.join("stateous.db")))
        .await
        .expect("a control plane")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_after_the_database_is_lost_answers_503_not_serving() {
    let dir = tempfile::tempdir().unwrap();
    let lost = Arc::new(AtomicBool::new(false));
    let api = Api::new(control(dir.path()).await, lost.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let (stop, stops) = tokio::sync::watch::channel(Stop::Serving);
    let server = tokio::spawn(Server::new(api, listener, None, Duration::from_secs(5)).run(stops));
    let client = Transport::new(Endpoint::Tcp { authority }, Duration::from_secs(10));

    let health = client.send("GET", "/health", None, &[]).await.unwrap();
    assert_eq!(health.status, 200);
    lost.store(true, Ordering::SeqCst);
    for (method, path) in [("GET", "/health"), ("POST", "/tokens"), ("GET", "/nothing")] {
        let answer = client.send(method, path, None, &[]).await.unwrap();
        assert_eq!(answer.status, 503, "{method} {path}");
        let refusal: Refusal = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(refusal.code, Code::NotServing);
    }

    stop.send(Stop::Graceful).unwrap();
    server.await.unwrap();
}
