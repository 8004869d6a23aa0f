//! The soak's clients, on a thread of their own: they start tokens (a start that
//! gets no answer is sent again), and fire each token's `go` event with an
//! idempotency key, 1 to 3 times, as a webhook that arrives twice. Every answer is
//! kept for the checker; a request the daemon does not answer, or answers 503
//! (not served, nothing done), is only retried.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{exchange, Reply};

use super::faults::Rng;

/// One token the clients started or tried to start.
#[derive(Debug, Clone)]
pub struct Planned {
    pub id: String,
    /// How many first attempts of its routine fail.
    pub fails: u64,
    /// Whether a start was answered (201, or 200: already there).
    pub acked: bool,
    /// How many times its key is sent.
    pub sends: u64,
    /// The statuses of the answered sends of its key.
    pub answers: Vec<u16>,
    /// Whether the clients saw it completed.
    pub completed: bool,
}

impl Planned {
    /// The token's idempotency key for `go`.
    pub fn key(&self) -> String {
        format!("go-{}", self.id)
    }

    fn finished(&self) -> bool {
        self.completed && self.answers.len() as u64 >= self.sends
    }
}

/// What the clients did and saw.
#[derive(Debug, Default)]
pub struct Record {
    pub tokens: Vec<Planned>,
    /// Every answer 500, as `request: body`.
    pub errors: Vec<String>,
    /// Starts answered 201 and events answered 200 that were not duplicates.
    pub changes: u64,
    /// Requests that got no answer, or a 503 (sent again later).
    pub unanswered: u64,
    /// Sends of a key answered as a duplicate.
    pub duplicates: u64,
}

/// The clients' settings.
pub struct Clients {
    /// The daemon's `HOST:PORT` (a restart keeps it).
    pub authority: String,
    pub seed: u64,
    /// Set when the faults end: start no more tokens, finish the rest.
    pub ending: Arc<AtomicBool>,
    /// How long after `ending` the clients keep at it.
    pub drain: Duration,
}

impl Clients {
    /// Run to the end: until every token is finished after `ending`, or `drain` is
    /// over.
    pub fn run(self) -> Record {
        let mut rng = Rng::new(self.seed ^ 0x5EED_C11E);
        let mut record = Record::default();
        let mut next_start = Instant::now();
        let mut ended_at: Option<Instant> = None;
        loop {
            let ending = self.ending.load(Ordering::SeqCst);
            if ending && ended_at.is_none() {
                ended_at = Some(Instant::now());
            }
            let all_done = record.tokens.iter().all(|t| t.acked && t.finished());
            if ended_at.is_some_and(|at| at.elapsed() > self.drain) || (ending && all_done) {
                return record;
            }
            if !ending && Instant::now() >= next_start {
                let n = record.tokens.len() + 1;
                record.tokens.push(Planned {
                    id: format!("S-{n}"),
                    fails: rng.between(0, 2),
                    acked: false,
                    sends: rng.between(1, 3),
                    answers: Vec::new(),
                    completed: false,
                });
                next_start = Instant::now() + rng.millis(200, 700);
            }
            for i in 0..record.tokens.len() {
                let pause = rng.between(100, 800);
                self.step(&mut record, i, pause);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One move of the clients for token `i`: its start, or a send of its key.
    fn step(&self, record: &mut Record, i: usize, pause: u64) {
        let token = record.tokens[i].clone();
        if token.finished() {
            return;
        }
        if !token.acked {
            let body = json!({"token": token.id,
                              "context": {"repo": "soak", "fails": token.fails, "pause": pause}});
            if let Some(reply) = self.send(record, "POST", "/tokens", &[], &body) {
                if reply.status == 201 {
                    record.changes += 1;
                }
                record.tokens[i].acked = matches!(reply.status, 200 | 201);
            }
            return;
        }
        let Some(reply) = self.send(
            record,
            "GET",
            &format!("/tokens/{}", token.id),
            &[],
            &Value::Null,
        ) else {
            return;
        };
        let Ok(now) = serde_json::from_slice::<Value>(&reply.body) else {
            return;
        };
        record.tokens[i].completed = now["status"] == "completed";
        let due = token.answers.len() as u64 >= 1 || now["state"] == "gate";
        if !due || token.answers.len() as u64 >= token.sends {
            return;
        }
        let key = token.key();
        let path = format!("/tokens/{}/events/go", token.id);
        let headers = [
            ("idempotency-key", key.as_str()),
            ("content-type", "application/json"),
        ];
        if let Some(reply) = self.send(record, "POST", &path, &headers, &json!({})) {
            if reply.status == 503 {
                // Not served (the database did not answer, a daemon stopping):
                // nothing was done, and a client sends it again, as a webhook's
                // sender would.
                record.unanswered += 1;
                return;
            }
            let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
            if reply.status == 200 && body["duplicate"] == true {
                record.duplicates += 1;
            } else if reply.status == 200 {
                record.changes += 1;
            }
            record.tokens[i].answers.push(reply.status);
        }
    }

    /// One request; `None` when it got no answer in 5 s. A 500 is kept.
    fn send(
        &self,
        record: &mut Record,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Option<Reply> {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let mut all = vec![("content-type", "application/json")];
        all.extend(headers.iter().filter(|(n, _)| *n != "content-type"));
        let answered = TcpStream::connect(&self.authority).and_then(|stream| {
            stream.set_read_timeout(Some(Duration::from_secs(5)))?;
            stream.set_write_timeout(Some(Duration::from_secs(5)))?;
            exchange(stream, method, path, &all, &bytes)
        });
        match answered {
            Ok(reply) => {
                if reply.status == 500 {
                    let text = String::from_utf8_lossy(&reply.body).into_owned();
                    record.errors.push(format!("{method} {path}: {text}"));
                }
                Some(reply)
            }
            Err(_) => {
                record.unanswered += 1;
                None
            }
        }
    }
}
