//! A scripted stand-in for the control plane, for tests of the supervisor's side
//! of the protocol (refusals, lost answers, outages) that a real control plane
//! cannot be made to give on cue. Plain std threads and HTTP/1.1 with one request
//! per connection, as the client's transport sends them. Built only for tests
//! (`cfg(test)` or the `fake` feature).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stateous_client::routes;

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// `GET`, `POST`, `PUT`.
    pub method: String,
    /// The path, e.g. `/tasks/3/report`.
    pub path: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

#[derive(Debug, Default)]
struct Script {
    checksum: String,
    workflow: Value,
    grants: VecDeque<Value>,
    report_answers: VecDeque<(u16, Value)>,
    lost: Vec<i64>,
    down: bool,
    drop_claims: usize,
    seen: Vec<Seen>,
}

/// The fake control plane; it serves until dropped with the test process.
#[derive(Clone)]
pub struct FakeControlPlane {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    script: Arc<Mutex<Script>>,
}

impl FakeControlPlane {
    /// Serve `GET /health` with `checksum` and `GET /workflow` with `workflow`.
    pub fn start(checksum: &str, workflow: Value) -> FakeControlPlane {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let script = Arc::new(Mutex::new(Script {
            checksum: checksum.into(),
            workflow,
            ..Script::default()
        }));
        let shared = script.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = shared.clone();
                std::thread::spawn(move || serve(stream, &script));
            }
        });
        FakeControlPlane { url, script }
    }

    fn with<T>(&self, work: impl FnOnce(&mut Script) -> T) -> T {
        work(&mut self.script.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Queue a grant for the next claim.
    pub fn grant(&self, grant: Value) {
        self.with(|s| s.grants.push_back(grant));
    }

    /// Answer the next report with `status` and `body` (else 200 with `{}`).
    pub fn answer_next_report(&self, status: u16, body: Value) {
        self.with(|s| s.report_answers.push_back((status, body)));
    }

    /// Answer heartbeats with these tasks lost.
    pub fn set_lost(&self, tasks: Vec<i64>) {
        self.with(|s| s.lost = tasks);
    }

    /// While down, every request gets 503 `database_busy` (counts as no answer).
    pub fn set_down(&self, down: bool) {
        self.with(|s| s.down = down);
    }

    /// Close the next `n` claims' connections without an answer, after taking
    /// a grant for them: a lost answer.
    pub fn drop_claim_answers(&self, n: usize) {
        self.with(|s| s.drop_claims = n);
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.with(|s| s.seen.clone())
    }

    /// The requests so far to paths that start with `prefix`, claims left out
    /// unless asked for.
    pub fn seen_at(&self, prefix: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.starts_with(prefix))
            .collect()
    }

    /// Wait up to `limit` until `check` holds for the requests seen.
    pub fn wait_for(&self, limit: Duration, check: impl Fn(&[Seen]) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if check(&self.seen()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        check(&self.seen())
    }
}

fn serve(stream: TcpStream, script: &Mutex<Script>) {
    let Some(seen) = read_request(&stream) else {
        return;
    };
    let answer = {
        let mut s = script.lock().unwrap_or_else(|e| e.into_inner());
        s.seen.push(seen.clone());
        answer(&mut s, &seen)
    };
    if let Some((status, body)) = answer {
        let text = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let reply = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{text}",
            text.len()
        );
        let mut stream = stream;
        let _ = stream.write_all(reply.as_bytes());
    }
}

fn answer(s: &mut Script, seen: &Seen) -> Option<(u16, Value)> {
    if s.down {
        return Some((
            503,
            json!({"error": "down for a test", "code": "database_busy"}),
        ));
    }
    let path = seen.path.as_str();
    Some(match (seen.method.as_str(), path) {
        ("GET", routes::HEALTH) => (200, json!({"workflow": "w", "checksum": s.checksum})),
        ("GET", routes::WORKFLOW) => (200, s.workflow.clone()),
        // As the reference's control plane: no watch stream.
        ("GET", routes::WATCH) => (
            404,
            json!({"error": "there is no route GET /watch", "code": "not_found"}),
        ),
        ("POST", routes::CLAIM) => match s.grants.pop_front() {
            None => (204, Value::Null),
            Some(grant) if s.drop_claims > 0 => {
                s.drop_claims -= 1;
                // The same request id gets the same grant again, as the real one does.
                s.grants.push_front(grant);
                return None;
            }
            Some(grant) => (200, grant),
        },
        ("POST", routes::HEARTBEAT) => {
            let asked: Vec<i64> = seen.body["tasks"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            let lost: Vec<i64> = asked.into_iter().filter(|t| s.lost.contains(t)).collect();
            (200, json!({ "lost": lost }))
        }
        ("POST", p) if p.ends_with("/report") => {
            s.report_answers.pop_front().unwrap_or((200, json!({})))
        }
        _ => (204, Value::Null),
    })
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
