//! Black-box: a subscription's queue (`docs/notifications.md`, "The guarantee"
//! and "Seen"). Hundreds of tokens whose first notification waits for a retry do
//! not hold up another token's, while each of them keeps its order; and the
//! counts stay right through deliveries, failures, retention and a redelivery,
//! with the delivered ones counted in the subscription's row; what a queue has
//! not read yet counts, and goes with its subscription; a pause stops the sends
//! of what the queue had read already, and so does a removal, also when the
//! name is added again at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::harness;

use harness::{asset_graph, eventually, Daemon, Setup};
use serde_json::{json, Value};

/// One request a [`Picky`] receiver got: the token, the notification's kind,
/// and whether it was accepted.
type Request = (String, String, bool);

/// A receiver that answers 500 to the notifications of tokens named `x-...`
/// while `failing` is set, and 204 to the others, each once `holding` is
/// unset; it keeps every request in the order it came. (Signatures are checked
/// by `notifications.rs`.)
struct Picky {
    url: String,
    failing: Arc<AtomicBool>,
    holding: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Picky {
    fn start() -> Picky {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the receiver");
        let url = format!(
            "http://{}/hook",
            listener.local_addr().expect("its address")
        );
        let picky = Picky {
            url,
            failing: Arc::new(AtomicBool::new(true)),
            holding: Arc::new(AtomicBool::new(false)),
            requests: Arc::default(),
        };
        let (failing, holding, requests) = (
            Arc::clone(&picky.failing),
            Arc::clone(&picky.holding),
            Arc::clone(&picky.requests),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (failing, holding, requests) = (
                    Arc::clone(&failing),
                    Arc::clone(&holding),
                    Arc::clone(&requests),
                );
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().expect("a second handle");
                    let mut reader = BufReader::new(stream);
                    while let Some(body) = request_body(&mut reader) {
                        let token = body["token"]["token"].as_str().unwrap_or("").to_string();
                        let kind = body["type"].as_str().unwrap_or("").to_string();
                        let refused = token.starts_with("x-") && failing.load(Ordering::SeqCst);
                        requests.lock().unwrap().push((token, kind, !refused));
                        while holding.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        let status = if refused { "500 No" } else { "204 No Content" };
                        let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                        if writer.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        picky
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The accepted requests of the token named `token`: their kinds in order.
    fn accepted(&self, token: &str) -> Vec<String> {
        let requests = self.requests();
        let of = requests.iter().filter(|(t, _, ok)| t == token && *ok);
        of.map(|(_, kind, _)| kind.clone()).collect()
    }
}

/// The body of the next request on a kept-alive connection, as JSON; `None`
/// once it closes.
fn request_body(reader: &mut BufReader<std::net::TcpStream>) -> Option<Value> {
    let mut line = String::new();
    let mut length = 0;
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    loop {
        line.clear();
        reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
        let header = line.trim_end().to_ascii_lowercase();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn orders(args: &[&str]) -> Daemon {
    Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "100ms", "--notify-timeout", "2s"])
        .args(args)
        .start()
}

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"title": token}}),
        )
        .expect(201);
}

/// The counts of the subscription `name`, as `GET /notify/{name}` shows them.
fn counts(daemon: &Daemon, name: &str) -> Value {
    daemon.get(&format!("/notify/{name}")).expect(200)["subscription"]["counts"].clone()
}

/// More tokens than a queue reads at once (256), each with two notifications.
const WAITING: usize = 300;

fn other_tokens_go_while_hundreds_wait_for_a_retry() {
    let receiver = Picky::start();
    let daemon = orders(&[]);
    let body = json!({"name": "all", "url": receiver.url, "kinds": ["started", "entered"]});
    daemon.post("/notify", &body).expect(201);
    for i in 0..WAITING {
        start(&daemon, &format!("x-{i}"));
    }
    let report = || format!("{} requests", receiver.requests().len());
    eventually(
        Duration::from_secs(30),
        "every x token's first notification is tried",
        report,
        || {
            let requests = receiver.requests();
            let tried: std::collections::BTreeSet<&str> =
                requests.iter().map(|(t, _, _)| t.as_str()).collect();
            tried.len() >= WAITING
        },
    );
    // The oldest pending notifications of the queue all wait for a retry now.
    start(&daemon, "y-1");
    eventually(
        Duration::from_secs(20),
        "the other token's notifications arrive while the x tokens wait",
        report,
        || receiver.accepted("y-1") == ["started", "entered"],
    );
    // A token's second notification is never sent before its first went.
    let early: Vec<Request> = receiver
        .requests()
        .into_iter()
        .filter(|(t, kind, _)| t.starts_with("x-") && kind != "started")
        .collect();
    assert!(
        early.is_empty(),
        "sent before their token's first: {early:?}"
    );
    receiver.failing.store(false, Ordering::SeqCst);
    eventually(
        Duration::from_secs(60),
        "every x token's notifications arrive once it accepts them",
        report,
        || counts(&daemon, "all")["delivered"] == json!(2 * WAITING + 2),
    );
    for i in 0..WAITING {
        let token = format!("x-{i}");
        assert_eq!(receiver.accepted(&token), ["started", "entered"], "{token}");
    }
    assert_eq!(
        counts(&daemon, "all"),
        json!({"pending": 0, "retrying": 0, "delivered": 2 * WAITING + 2, "dead": 0})
    );
}

fn the_counts_stay_right_through_delivery_retention_and_redelivery() {
    let receiver = Picky::start();
    let daemon = orders(&[
        "--notify-keep",
        "4s",
        "--retain-every",
        "300ms",
        "--notify-dead-after",
        "1s",
    ]);
    let body = json!({"name": "c", "url": receiver.url, "kinds": ["started"]});
    daemon.post("/notify", &body).expect(201);
    for token in ["y-1", "y-2", "x-1"] {
        start(&daemon, token);
    }
    eventually(
        Duration::from_secs(10),
        "two delivered, one dead",
        || counts(&daemon, "c").to_string(),
        || counts(&daemon, "c") == json!({"pending": 0, "retrying": 0, "delivered": 2, "dead": 1}),
    );
    // Kept in the subscription's row, as the rows say.
    let row = "SELECT delivered FROM subscriptions WHERE name = 'c'";
    assert_eq!(daemon.count(row), 2);
    let metrics = String::from_utf8_lossy(&daemon.get("/metrics").body).into_owned();
    assert!(
        metrics.contains("stateous_notifications{subscription=\"c\",status=\"delivered\"} 2"),
        "{metrics}"
    );
    // Retention deletes the delivered ones, and they leave the count.
    eventually(
        Duration::from_secs(10),
        "the delivered ones are deleted",
        || counts(&daemon, "c").to_string(),
        || counts(&daemon, "c")["delivered"] == 0,
    );
    let left =
        "SELECT count(*) FROM notifications WHERE subscription = 'c' AND status = 'delivered'";
    assert_eq!(daemon.count(left), 0);
    // The dead one, sent again and accepted, counts as delivered once.
    receiver.failing.store(false, Ordering::SeqCst);
    daemon.post("/notify/c/redeliver", &json!({})).expect(200);
    eventually(
        Duration::from_secs(10),
        "the redelivered one is delivered",
        || counts(&daemon, "c").to_string(),
        || counts(&daemon, "c") == json!({"pending": 0, "retrying": 0, "delivered": 1, "dead": 0}),
    );
    assert_eq!(daemon.count(row), 1);
}

/// What a queue has not read yet counts as pending, and goes with its
/// subscription. The write path writes each write's notifications of a
/// subscription as one batch, which the queue makes rows of before it
/// reads (`notification_batches`): while the queue waits for an answer, the
/// later tokens' notifications stay in their batches.
fn notifications_not_yet_read_count_and_go_with_their_subscription() {
    let receiver = Picky::start();
    receiver.holding.store(true, Ordering::SeqCst);
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--notify-timeout", "60s"])
        .start();
    let body = json!({"name": "h", "url": receiver.url, "kinds": ["started"]});
    daemon.post("/notify", &body).expect(201);
    start(&daemon, "y-0");
    eventually(
        Duration::from_secs(10),
        "the queue sends the first notification and waits for its answer",
        || format!("{} requests", receiver.requests().len()),
        || receiver.requests().len() == 1,
    );
    for i in 1..=5 {
        start(&daemon, &format!("y-{i}"));
    }
    assert_eq!(
        counts(&daemon, "h"),
        json!({"pending": 6, "retrying": 0, "delivered": 0, "dead": 0})
    );
    let batches = daemon.count("SELECT count(*) FROM notification_batches");
    assert!(batches >= 1, "{batches} batches");
    daemon.request("DELETE", "/notify/h", &[], b"").expect(204);
    for table in ["notifications", "notification_batches"] {
        assert_eq!(
            daemon.count(&format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
    }
    receiver.holding.store(false, Ordering::SeqCst);
}

/// A subscription removed while tokens are being written leaves no
/// notification behind: the write path matched entries against its copy of
/// the subscriptions, which changed only after the removal committed, so the
/// writes between wrote notifications of a subscription that was gone (seen
/// on both backends: a few to tens of them, sent later to a new subscription
/// of the same name).
fn a_subscription_removed_during_a_burst_leaves_no_notification() {
    let receiver = Picky::start();
    receiver.holding.store(true, Ordering::SeqCst);
    let daemon = orders(&[]);
    let body = json!({"name": "r", "url": receiver.url, "kinds": ["started", "entered"]});
    daemon.post("/notify", &body).expect(201);
    let tokens = "SELECT count(*) FROM tokens";
    std::thread::scope(|scope| {
        for writer in 0..8 {
            let daemon = &daemon;
            scope.spawn(move || {
                for i in 0..40 {
                    start(daemon, &format!("b-{writer}-{i}"));
                }
            });
        }
        eventually(
            Duration::from_secs(20),
            "the burst is under way",
            || format!("{} tokens", daemon.count(tokens)),
            || daemon.count(tokens) >= 40,
        );
        daemon.request("DELETE", "/notify/r", &[], b"").expect(204);
    });
    assert_eq!(daemon.count(tokens), 320);
    for table in ["notifications", "notification_batches"] {
        let left = format!("SELECT count(*) FROM {table} WHERE subscription = 'r'");
        assert_eq!(daemon.count(&left), 0, "{table}");
    }
    receiver.holding.store(false, Ordering::SeqCst);
}

/// A pause stops the sends at once: the notifications its queue had read
/// already, and not sent yet, wait for the resume with the rest (the queue
/// looks at the write path's copy of the subscriptions before each send). One
/// send under way when the pause came ends as it would have.
fn a_pause_stops_the_sends_of_notifications_already_read() {
    let receiver = Picky::start();
    receiver.holding.store(true, Ordering::SeqCst);
    let daemon = orders(&[]);
    let body = json!({"name": "p", "url": receiver.url, "kinds": ["started"]});
    daemon.post("/notify", &body).expect(201);
    for i in 0..10 {
        start(&daemon, &format!("p-{i}"));
    }
    eventually(
        Duration::from_secs(10),
        "the first send, held by the receiver",
        || format!("{:?}", receiver.requests()),
        || receiver.requests().len() == 1,
    );
    daemon.post("/notify/p/pause", &json!({})).expect(200);
    // A second pause changes nothing, and the journal says it once.
    daemon.post("/notify/p/pause", &json!({})).expect(200);
    let journal = daemon
        .get("/journal?subject=subscription&name=p")
        .expect(200);
    let said: Vec<&str> = journal["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(said, ["added", "paused"], "{journal}");
    receiver.holding.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.requests().len(), 1, "{:?}", receiver.requests());
    daemon.post("/notify/p/resume", &json!({})).expect(200);
    eventually(
        Duration::from_secs(10),
        "the rest after the resume",
        || format!("{:?}", receiver.requests()),
        || receiver.requests().len() >= 10,
    );
    let mut tokens: Vec<String> = receiver.requests().into_iter().map(|r| r.0).collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 10, "{tokens:?}");
}

/// A removal stops the sends too, also when a subscription of the same name is
/// added at once (a name pointed at a new URL): what the queue had read went
/// with the removal, so neither the old URL nor the new subscription gets any
/// of it, and the new one shows none of its attempts, not even the attempt of
/// the send that was under way. Queue `a` read one notification (its send
/// under way is the last of its batch); queue `b` read ten, written by one
/// bulk pause (one commit), and was sending the first.
fn a_removed_subscription_sends_nothing_more_though_its_name_is_added_again() {
    let (old_a, old_b) = (Picky::start(), Picky::start());
    old_a.holding.store(true, Ordering::SeqCst);
    old_b.holding.store(true, Ordering::SeqCst);
    let new = Picky::start();
    let daemon = orders(&[]);
    for (name, url, kind) in [("a", &old_a.url, "started"), ("b", &old_b.url, "paused")] {
        let body = json!({"name": name, "url": url, "kinds": [kind]});
        daemon.post("/notify", &body).expect(201);
    }
    start(&daemon, "s-0");
    let held = |picky: &Picky, what: &str| {
        eventually(
            Duration::from_secs(10),
            what,
            || format!("{:?}", picky.requests()),
            || picky.requests().len() == 1,
        )
    };
    held(&old_a, "a's first send, held by its receiver");
    let tokens: Vec<String> = (0..10).map(|i| format!("s-{i}")).collect();
    for token in &tokens[1..] {
        start(&daemon, token);
    }
    let bulk = json!({"action": "pause", "tokens": tokens, "reason": "a batch for b"});
    let paused = daemon.post("/tokens/bulk", &bulk).expect(200);
    assert_eq!(paused["applied"], 10, "{paused}");
    held(&old_b, "b's first send, held by its receiver");
    for name in ["a", "b"] {
        daemon
            .request("DELETE", &format!("/notify/{name}"), &[], b"")
            .expect(204);
        let body = json!({"name": name, "url": new.url, "kinds": ["completed"]});
        daemon.post("/notify", &body).expect(201);
    }
    old_a.holding.store(false, Ordering::SeqCst);
    old_b.holding.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(old_a.requests().len(), 1, "{:?}", old_a.requests());
    assert_eq!(old_b.requests().len(), 1, "{:?}", old_b.requests());
    assert_eq!(new.requests(), [], "the new ones are about completed only");
    for name in ["a", "b"] {
        let shown = daemon.get(&format!("/notify/{name}")).expect(200);
        assert_eq!(shown["attempts"], json!([]), "{shown}");
    }
}

both!(
    a_removed_subscription_sends_nothing_more_though_its_name_is_added_again,
    a_pause_stops_the_sends_of_notifications_already_read,
    a_subscription_removed_during_a_burst_leaves_no_notification,
    notifications_not_yet_read_count_and_go_with_their_subscription,
    other_tokens_go_while_hundreds_wait_for_a_retry,
    the_counts_stay_right_through_delivery_retention_and_redelivery,
);
