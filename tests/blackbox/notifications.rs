//! Black-box: notifications (`docs/notifications.md`). A receiver inside the test
//! checks each delivery's signature by the Standard Webhooks rules and records
//! what it got: a receiver that fails its first attempts gets the entry later
//! with the same `webhook-id`; every matching ledger entry of 1,000 tokens
//! arrives through two SIGKILLs of the daemon, each token's in ledger order; `no_move` fires once
//! per visit, after the entry that began the visit; a dead notification is listed and sent again by hand; a receiver
//! that never answers holds up only its own subscription; bad
//! subscriptions are refused and change nothing; a delivered notification is
//! deleted with its attempts after `--notify-keep` and a dead one stays; a
//! receiver that cannot be reached is tried once a wait, and its notifications
//! arrive once it listens or die at their limit, and while its queue waits
//! the subscription shows it everywhere its counts are; a standby's takeover on
//! Postgres delivers what the old control plane left.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::harness;

use harness::{asset_graph, eventually, run, Daemon, Setup};
use serde_json::{json, Value};
use stateous_shared::hooks::sign::{verify, Verify};

/// One delivery the receiver accepted (its signature checked).
#[derive(Debug, Clone)]
struct Got {
    id: String,
    body: Value,
}

/// A receiver of notifications on 127.0.0.1: it refuses its first `fail_first`
/// requests with 500, checks each signature against `secrets` once they are set,
/// and records the rest.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Got>>>,
    /// Every request's `webhook-id`, the failed ones too, in arrival order.
    seen: Arc<Mutex<Vec<String>>>,
    secrets: Arc<Mutex<Vec<String>>>,
    fail_first: Arc<AtomicUsize>,
    bad_signatures: Arc<AtomicUsize>,
    /// Milliseconds each answer waits (a slow receiver keeps a backlog).
    delay: Arc<AtomicUsize>,
}

impl Receiver {
    fn start(fail_first: usize) -> Receiver {
        Receiver::listening(
            TcpListener::bind("127.0.0.1:0").expect("a port for the receiver"),
            fail_first,
        )
    }

    /// A receiver that answers on `listener`.
    fn listening(listener: TcpListener, fail_first: usize) -> Receiver {
        let url = format!(
            "http://{}/hook",
            listener.local_addr().expect("its address")
        );
        let receiver = Receiver {
            url,
            got: Arc::default(),
            seen: Arc::default(),
            secrets: Arc::default(),
            fail_first: Arc::new(AtomicUsize::new(fail_first)),
            bad_signatures: Arc::default(),
            delay: Arc::default(),
        };
        let (got, seen, secrets, fail, bad, delay) = (
            Arc::clone(&receiver.got),
            Arc::clone(&receiver.seen),
            Arc::clone(&receiver.secrets),
            Arc::clone(&receiver.fail_first),
            Arc::clone(&receiver.bad_signatures),
            Arc::clone(&receiver.delay),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (got, seen, secrets, fail, bad, delay) = (
                    Arc::clone(&got),
                    Arc::clone(&seen),
                    Arc::clone(&secrets),
                    Arc::clone(&fail),
                    Arc::clone(&bad),
                    Arc::clone(&delay),
                );
                std::thread::spawn(move || {
                    serve(stream, &got, &seen, &secrets, (&fail, &bad, &delay))
                });
            }
        });
        receiver
    }

    fn trust(&self, secret: &str) {
        self.secrets.lock().unwrap().push(secret.to_string());
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Answer the requests of one connection (kept alive) until it closes.
fn serve(
    stream: TcpStream,
    got: &Mutex<Vec<Got>>,
    seen: &Mutex<Vec<String>>,
    secrets: &Mutex<Vec<String>>,
    (fail, bad, delay): (&AtomicUsize, &AtomicUsize, &AtomicUsize),
) {
    let mut writer = stream.try_clone().expect("a second handle");
    let mut reader = BufReader::new(stream);
    loop {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let id = headers.get("webhook-id").cloned().unwrap_or_default();
        std::thread::sleep(Duration::from_millis(delay.load(Ordering::SeqCst) as u64));
        seen.lock().unwrap().push(id.clone());
        let failing = fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let status = if failing {
            "500 Internal Server Error"
        } else {
            let keys: Vec<Vec<u8>> = secrets
                .lock()
                .unwrap()
                .iter()
                .map(|s| Verify::Standard.key(s).expect("a whsec_ secret"))
                .collect();
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            let checked = verify(
                Verify::Standard,
                &keys,
                |name| headers.get(name).map(String::as_str),
                &body,
                now,
            );
            if checked.is_err() {
                bad.fetch_add(1, Ordering::SeqCst);
                "401 Unauthorized"
            } else {
                let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                got.lock().unwrap().push(Got { id, body: value });
                "200 OK"
            }
        };
        let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Wait until `check` holds (at most `within`).
fn wait_for(within: Duration, what: &str, check: impl Fn() -> bool) {
    eventually(within, what, String::new, check);
}

/// A daemon serving `orders` (draft, then review on `submitted`, then END on an
/// approving `reviewed`, else draft again) with short notification timings.
fn orders(args: &[&str]) -> Daemon {
    Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "100ms", "--notify-timeout", "2s"])
        .args(args)
        .start()
}

/// Add a subscription; its secret, which the receiver then trusts.
fn subscribe(daemon: &Daemon, receiver: &Receiver, body: Value) -> String {
    let mut body = body;
    body["url"] = json!(receiver.url);
    let added = daemon.post("/notify", &body).expect(201);
    let secret = added["secret"].as_str().expect("a secret").to_string();
    assert!(secret.starts_with("whsec_"), "{added}");
    receiver.trust(&secret);
    secret
}

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"title": token}}),
        )
        .expect(201);
}

fn fire(daemon: &Daemon, token: &str, event: &str, payload: Value) {
    daemon
        .post(
            &format!("/tokens/{token}/events/{event}"),
            &json!({"payload": payload}),
        )
        .expect(200);
}

/// Submit and approve: the token completes.
fn complete(daemon: &Daemon, token: &str) {
    fire(daemon, token, "submitted", json!({}));
    fire(daemon, token, "reviewed", json!({"approved": true}));
}

fn a_failing_receiver_gets_the_entry_later_with_the_same_webhook_id() {
    let receiver = Receiver::start(3);
    let daemon = orders(&[]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "done", "kinds": ["completed"]}),
    );
    start(&daemon, "o-1");
    complete(&daemon, "o-1");
    wait_for(
        Duration::from_secs(20),
        "the fourth attempt delivers",
        || !receiver.got().is_empty(),
    );
    let seen = receiver.seen();
    assert_eq!(seen.len(), 4, "three failures, then the delivery: {seen:?}");
    assert!(
        seen.iter().all(|id| id == &seen[0]),
        "one webhook-id: {seen:?}"
    );
    let got = receiver.got();
    assert_eq!(got[0].body["type"], "completed");
    assert_eq!(got[0].body["token"]["token"], "o-1");
    assert_eq!(got[0].body["token"]["status"], "completed");
    assert_eq!(got[0].body["entry"]["kind"], "completed");
    assert_eq!(receiver.bad_signatures.load(Ordering::SeqCst), 0);
    // Each attempt with its status, newest first (recorded after it was sent).
    wait_for(Duration::from_secs(10), "the delivery is recorded", || {
        daemon.get("/notify/done").expect(200)["subscription"]["counts"]["delivered"] == 1
    });
    let shown = daemon.get("/notify/done").expect(200);
    let statuses: Vec<i64> = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(statuses, [200, 500, 500, 500], "{shown}");
    assert_eq!(shown["subscription"]["counts"]["delivered"], 1, "{shown}");
    // Never a secret in a listing or /metrics.
    let listing = daemon.get("/notify").expect(200).to_string();
    let metrics = String::from_utf8_lossy(&daemon.get("/metrics").body).into_owned();
    assert!(!listing.contains("whsec_") && !metrics.contains("whsec_"));
    let journal = daemon
        .get("/journal?subject=subscription&name=done")
        .expect(200)
        .to_string();
    assert!(
        journal.contains("\"added\"") && !journal.contains("whsec_"),
        "{journal}"
    );
    assert!(!daemon.stderr().contains("whsec_"));
    // Nor what a URL holds for its receiver: its password and its query.
    let keyed = json!({"name": "keyed", "url": "http://bot:hunter2@127.0.0.1:9/in?key=abc123"});
    let added = daemon.post("/notify", &keyed).expect(201);
    assert_eq!(
        added["subscription"]["url"], "http://bot:***@127.0.0.1:9/in?***",
        "{added}"
    );
    let journal = daemon
        .get("/journal?subject=subscription&name=keyed")
        .expect(200)
        .to_string();
    for shown in [daemon.get("/notify").expect(200).to_string(), journal] {
        assert!(
            !shown.contains("hunter2") && !shown.contains("abc123"),
            "{shown}"
        );
    }
    assert!(
        metrics.contains("stateous_notifications{subscription=\"done\",status=\"delivered\"} 1"),
        "{metrics}"
    );
}

/// `each` of `tokens`, from four threads (a quarter of the tokens each, in order).
fn in_four(tokens: &[String], each: impl Fn(&str) + Sync) {
    std::thread::scope(|scope| {
        for quarter in tokens.chunks(tokens.len().div_ceil(4)) {
            let each = &each;
            scope.spawn(move || quarter.iter().for_each(|token| each(token)));
        }
    });
}

fn every_matching_entry_arrives_through_two_sigkills() {
    let receiver = Receiver::start(0);
    // A slow receiver: notifications wait in the outbox when the daemon is killed.
    receiver.delay.store(10, Ordering::SeqCst);
    let mut daemon = orders(&[]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "all", "kinds": ["entered", "completed"]}),
    );
    let tokens: Vec<String> = (0..1000).map(|i| format!("k-{i:04}")).collect();
    in_four(&tokens, |token| start(&daemon, token));
    // Pending rows, or batches not yet made rows (Postgres's write path).
    let waiting = daemon.count(
        "SELECT (SELECT count(*) FROM notifications WHERE status = 'pending')
              + (SELECT count(*) FROM notification_batches)",
    );
    assert!(waiting > 0, "a backlog when the daemon is killed");
    daemon.crash_and_restart();
    in_four(&tokens, |token| {
        fire(&daemon, token, "submitted", json!({}))
    });
    daemon.crash_and_restart();
    // The kills are past: the rest may go as fast as the sender sends.
    receiver.delay.store(0, Ordering::SeqCst);
    in_four(&tokens, |token| {
        fire(&daemon, token, "reviewed", json!({"approved": true}))
    });
    let wanted: BTreeSet<i64> = daemon
        .rows("SELECT id FROM ledger WHERE kind IN ('entered', 'completed')")
        .iter()
        .map(|row| row[0].as_deref().unwrap_or("0").parse().unwrap())
        .collect();
    // Each token: draft, review, completed.
    assert_eq!(wanted.len(), tokens.len() * 3);
    wait_for(Duration::from_secs(120), "every entry arrives", || {
        let arrived: BTreeSet<i64> = receiver
            .got()
            .iter()
            .filter_map(|g| g.body["entry"]["id"].as_i64())
            .collect();
        wanted.is_subset(&arrived)
    });
    // Each token's entries first arrived in ledger order.
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    let mut firsts = BTreeSet::new();
    for got in receiver.got() {
        if !firsts.insert(got.id.clone()) {
            continue;
        }
        let token = got.body["entry"]["token"].as_str().unwrap().to_string();
        let seq = got.body["entry"]["seq"].as_i64().unwrap();
        let before = last.insert(token.clone(), seq).unwrap_or(0);
        assert!(seq > before, "{token}: seq {seq} after {before}");
    }
    assert_eq!(receiver.bad_signatures.load(Ordering::SeqCst), 0);
}

fn no_move_fires_once_per_visit() {
    let receiver = Receiver::start(0);
    let daemon = orders(&[]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "stuck", "states": ["review"], "no_move_for": "2s"}),
    );
    start(&daemon, "r-1");
    fire(&daemon, "r-1", "submitted", json!({}));
    wait_for(Duration::from_secs(10), "the first visit's", || {
        receiver.got().len() == 1
    });
    // Sent back to draft, then in review again: a second visit.
    fire(&daemon, "r-1", "reviewed", json!({"approved": false}));
    fire(&daemon, "r-1", "submitted", json!({}));
    wait_for(Duration::from_secs(10), "the second visit's", || {
        receiver.got().len() == 2
    });
    std::thread::sleep(Duration::from_millis(2500));
    let got = receiver.got();
    assert_eq!(got.len(), 2, "once per visit: {got:?}");
    let visits: Vec<i64> = got
        .iter()
        .map(|g| g.body["no_move"]["visit"].as_i64().unwrap())
        .collect();
    assert_eq!(visits, [1, 2]);
    assert!(got.iter().all(|g| g.body["type"] == "no_move"
        && g.body["no_move"]["state"] == "review"
        && g.body["token"]["token"] == "r-1"));
}

/// A visit's `no_move` comes after the entry that began the visit, also while
/// that entry's notification still waits in a batch (Postgres): the sender is
/// held by a slow answer while a second token enters `review` and stays.
fn a_visits_no_move_comes_after_its_entered() {
    let receiver = Receiver::start(0);
    receiver.delay.store(4000, Ordering::SeqCst);
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "100ms", "--notify-timeout", "10s"])
        .start();
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "both", "kinds": ["entered", "no_move"], "states": ["review"],
               "no_move_for": "1s"}),
    );
    start(&daemon, "a-1");
    fire(&daemon, "a-1", "submitted", json!({}));
    // The sender is then held by its first request (seen only once answered).
    std::thread::sleep(Duration::from_millis(700));
    start(&daemon, "b-1");
    fire(&daemon, "b-1", "submitted", json!({}));
    // b-1 has stayed in review past its second when the sender is free again.
    std::thread::sleep(Duration::from_millis(2500));
    receiver.delay.store(0, Ordering::SeqCst);
    wait_for(Duration::from_secs(15), "two of each token", || {
        receiver.got().len() >= 4
    });
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for got in receiver.got() {
        let token = got.body["token"]["token"].as_str().unwrap().to_string();
        let what = if got.body["type"] == "no_move" {
            "no_move".to_string()
        } else {
            got.body["entry"]["kind"].as_str().unwrap().to_string()
        };
        order.entry(token).or_default().push(what);
    }
    for token in ["a-1", "b-1"] {
        assert_eq!(order[token], ["entered", "no_move"], "{token}: {order:?}");
    }
}

fn a_dead_notification_is_listed_and_sent_again_by_hand() {
    let receiver = Receiver::start(1000);
    let daemon = orders(&["--notify-dead-after", "1s"]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "late", "kinds": ["entered"], "format": "slack"}),
    );
    start(&daemon, "d-1");
    wait_for(Duration::from_secs(10), "it dies", || {
        daemon.get("/notifications/failed").expect(200)["failed"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    });
    let failed = run(
        daemon.dir.path(),
        &["notify", "--url", &daemon.url, "failed"],
    );
    assert_eq!(failed.code(), 0, "{}", failed.stderr);
    assert!(
        failed.stdout.contains("late") && failed.stdout.contains("answered 500"),
        "{}",
        failed.stdout
    );
    let dead_id = receiver.seen()[0].clone();
    // An id that is no dead notification is refused, and queues nothing.
    let unknown = run(
        daemon.dir.path(),
        &[
            "notify",
            "--url",
            &daemon.url,
            "redeliver",
            "late",
            "--id",
            "999999",
        ],
    );
    assert_eq!(unknown.code(), 1, "{}", unknown.stdout);
    assert!(
        unknown.stderr.contains("(404 not_found)")
            && unknown.stderr.contains("has no notification 999999"),
        "{}",
        unknown.stderr
    );
    receiver.fail_first.store(0, Ordering::SeqCst);
    let again = run(
        daemon.dir.path(),
        &["notify", "--url", &daemon.url, "redeliver", "late"],
    );
    assert_eq!(again.code(), 0, "{}", again.stderr);
    wait_for(Duration::from_secs(10), "it arrives", || {
        !receiver.got().is_empty()
    });
    let got = receiver.got();
    assert_eq!(got[0].id, dead_id, "the same webhook-id");
    assert_eq!(got[0].body, json!({"text": "Token d-1 entered draft."}));
    // Delivered now: sent again by hand, it is refused with what it is.
    let number = dead_id.trim_start_matches("msg_").to_string();
    let delivered = || {
        daemon.get("/notify/late").expect(200)["subscription"]["counts"]["delivered"]
            .as_i64()
            .is_some_and(|n| n >= 1)
    };
    wait_for(Duration::from_secs(10), "its delivery recorded", delivered);
    let refused = run(
        daemon.dir.path(),
        &[
            "notify",
            "--url",
            &daemon.url,
            "redeliver",
            "late",
            "--id",
            &number,
        ],
    );
    assert_eq!(refused.code(), 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "notification {number} of late was delivered: it is not dead"
        )),
        "{}",
        refused.stderr
    );
}

fn a_receiver_that_never_answers_holds_up_only_its_own_subscription() {
    // Accepts connections and never answers: each attempt waits for the timeout.
    let silent = TcpListener::bind("127.0.0.1:0").expect("a port");
    let silent_url = format!("http://{}/never", silent.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    std::thread::spawn(move || {
        for stream in silent.incoming().flatten() {
            holder.lock().unwrap().push(stream);
        }
    });
    let receiver = Receiver::start(0);
    let daemon = orders(&["--notify-timeout", "60s"]);
    daemon
        .post(
            "/notify",
            &json!({"name": "silent", "url": silent_url, "kinds": ["entered"]}),
        )
        .expect(201);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "live", "kinds": ["entered"]}),
    );
    start(&daemon, "h-1");
    wait_for(Duration::from_secs(20), "the silent one is tried", || {
        !held.lock().unwrap().is_empty()
    });
    // The second arrives while the silent one's first attempt still waits (60 s).
    start(&daemon, "h-2");
    wait_for(
        Duration::from_secs(20),
        "the live receiver gets both",
        || receiver.got().len() == 2,
    );
    let silent = daemon.get("/notify/silent").expect(200);
    assert_eq!(silent["subscription"]["counts"]["delivered"], 0, "{silent}");
}

fn bad_subscriptions_are_refused_and_change_nothing() {
    let daemon = orders(&[]);
    let cases = [
        json!({"name": "a", "url": "ftp://example.com/x"}),
        json!({"name": "a", "url": "http://127.0.0.1:99999/x"}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "kinds": []}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "filter": "state =="}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "states": ["reveiw"]}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "kinds": ["finished"]}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "no_move_for": "500ms"}),
        json!({"name": "a", "url": "http://127.0.0.1:9/x", "format": "xml"}),
    ];
    for body in cases {
        let sentence = daemon
            .post("/notify", &body)
            .refused(422, "invalid_subscription");
        assert!(!sentence.contains('\n'), "{sentence}");
    }
    // A refused URL is quoted without what it holds for its receiver.
    let keyed = json!({"name": "a", "url": "http://bot:hunter2@127.0.0.1:99999/in?key=abc123"});
    let sentence = daemon
        .post("/notify", &keyed)
        .refused(422, "invalid_subscription");
    assert!(
        sentence.contains("bot:***@")
            && !sentence.contains("hunter2")
            && !sentence.contains("abc123"),
        "{sentence}"
    );
    // A URL too long says its length, not the URL (it said "not an http://
    // URL with a host and a port", and quoted all of it).
    let path = "a".repeat(3000);
    let sentence = daemon
        .post(
            "/notify",
            &json!({"name": "a", "url": format!("http://127.0.0.1:9/{path}")}),
        )
        .refused(422, "invalid_subscription");
    assert!(
        sentence.contains("3019 bytes long") && sentence.contains("at most 2048"),
        "{sentence}"
    );
    assert!(sentence.len() < 200, "{sentence}");
    // A name outside the rule is a subscription's refusal, not a schedule's.
    let long = json!({"name": "a".repeat(65), "url": "http://127.0.0.1:9/x"});
    let sentence = daemon
        .post("/notify", &long)
        .refused(422, "invalid_subscription");
    assert!(
        sentence.contains("is not a subscription's name"),
        "{sentence}"
    );
    // A duration under the floor says what the floor is.
    let short = json!({"name": "a", "url": "http://127.0.0.1:9/x", "kinds": ["no_move"],
        "no_move_for": "500ms"});
    let sentence = daemon
        .post("/notify", &short)
        .refused(422, "invalid_subscription");
    assert!(sentence.contains("the shortest is 1 second"), "{sentence}");
    daemon
        .post(
            "/notify",
            &json!({"name": "a", "url": "http://127.0.0.1:9/x", "colour": 1}),
        )
        .refused(422, "invalid_body");
    daemon
        .get("/notify/nope")
        .refused(404, "subscription_not_found");
    let cli = run(
        daemon.dir.path(),
        &[
            "notify",
            "--url",
            &daemon.url,
            "add",
            "a",
            "file:///etc/passwd",
        ],
    );
    assert_eq!(cli.code(), 1);
    assert!(cli.stderr.starts_with("error: "), "{}", cli.stderr);
    // No kind on the command line is said as the API says an empty list.
    let cli = run(
        daemon.dir.path(),
        &[
            "notify",
            "--url",
            &daemon.url,
            "add",
            "a",
            "http://127.0.0.1:9/x",
            "--kinds",
            "",
        ],
    );
    assert_eq!(cli.code(), 1);
    assert!(
        cli.stderr.starts_with("error: ") && cli.stderr.contains("'kinds' is empty"),
        "{}",
        cli.stderr
    );
    assert_eq!(
        daemon.get("/notify").expect(200),
        json!({"subscriptions": []})
    );
    assert_eq!(daemon.count("SELECT count(*) FROM subscriptions"), 0);
}

#[test]
fn a_standby_that_takes_over_delivers_what_the_old_control_plane_left() {
    harness::on(harness::Backend::Postgres, || {
        let receiver = Receiver::start(usize::MAX);
        let mut active = Setup::new(asset_graph("orders"))
            .args(&harness::KEEPALIVES)
            .args(&["--notify-backoff", "100ms"])
            .start();
        subscribe(
            &active,
            &receiver,
            json!({"name": "all", "kinds": ["entered"]}),
        );
        for token in ["s-1", "s-2", "s-3"] {
            start(&active, token);
        }
        let standby = Setup::new(asset_graph("orders"))
            .database_of(&active)
            .args(&harness::KEEPALIVES)
            .args(&["--notify-backoff", "100ms"])
            .start_standby();
        wait_for(Duration::from_secs(10), "the first attempts fail", || {
            receiver.seen().len() >= 3
        });
        assert!(receiver.got().is_empty());
        let status = active.stop_with(libc::SIGKILL);
        assert_eq!(status.code(), None);
        standby.wait_for_line("serving on ", Duration::from_secs(30));
        receiver.fail_first.store(0, Ordering::SeqCst);
        wait_for(Duration::from_secs(20), "the standby delivers them", || {
            receiver.got().len() >= 3
        });
        let tokens: BTreeSet<String> = receiver
            .got()
            .iter()
            .map(|g| g.body["entry"]["token"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            tokens,
            BTreeSet::from(["s-1".into(), "s-2".into(), "s-3".into()])
        );
    });
}

/// The subscription `name` as `GET /notify` shows it (`Null`: none).
fn listed(daemon: &Daemon, name: &str) -> Value {
    let list = daemon.get("/notify").expect(200);
    let found = list["subscriptions"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == name).cloned());
    found.unwrap_or(Value::Null)
}

/// The counts of the subscription `name`, as `GET /notify` shows them.
fn counts(daemon: &Daemon, name: &str) -> Value {
    listed(daemon, name)["counts"].clone()
}

fn delivered_notifications_go_after_the_keep_and_dead_ones_stay() {
    let receiver = Receiver::start(0);
    let down = Receiver::start(1000);
    let daemon = orders(&[
        "--notify-keep",
        "2s",
        "--retain-every",
        "300ms",
        "--notify-dead-after",
        "1s",
    ]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "ok", "kinds": ["entered"]}),
    );
    subscribe(
        &daemon,
        &down,
        json!({"name": "down", "kinds": ["entered"]}),
    );
    start(&daemon, "k-1");
    wait_for(Duration::from_secs(10), "one delivered, one dead", || {
        counts(&daemon, "ok")["delivered"] == 1 && counts(&daemon, "down")["dead"] == 1
    });
    wait_for(
        Duration::from_secs(10),
        "the delivered one is deleted",
        || counts(&daemon, "ok")["delivered"] == 0,
    );
    assert_eq!(
        counts(&daemon, "down"),
        json!({"pending": 0, "retrying": 0, "delivered": 0, "dead": 1})
    );
    let failed = daemon.get("/notifications/failed").expect(200);
    assert_eq!(
        failed["failed"].as_array().map(Vec::len),
        Some(1),
        "{failed}"
    );
    let shown = daemon.get("/notify/ok").expect(200);
    assert_eq!(shown["attempts"], json!([]), "its attempts went with it");
    wait_for(Duration::from_secs(5), "the pass is logged", || {
        daemon
            .stderr()
            .contains("retention deleted 1 notification(s) delivered more than 2s ago")
    });
}

/// A batch to a slow receiver records its attempts as it goes (at least once
/// a second), not only at its end: the counts move while it runs, and a SIGKILL
/// in the middle sends again only what the last second sent. One bulk pause
/// writes the 20 notifications in one commit, so the queue reads them as one
/// batch of 20, 4 s of sends at 200 ms each.
fn a_long_batch_records_its_attempts_as_it_goes() {
    let receiver = Receiver::start(0);
    let mut daemon = orders(&[]);
    subscribe(
        &daemon,
        &receiver,
        json!({"name": "slow", "kinds": ["paused"]}),
    );
    let tokens: Vec<String> = (0..20).map(|i| format!("l-{i:02}")).collect();
    for token in &tokens {
        start(&daemon, token);
    }
    receiver.delay.store(200, Ordering::SeqCst);
    let bulk = json!({"action": "pause", "tokens": tokens, "reason": "one batch"});
    let paused = daemon.post("/tokens/bulk", &bulk).expect(200);
    assert_eq!(paused["applied"], 20, "{paused}");
    wait_for(Duration::from_secs(20), "half the batch sent", || {
        receiver.seen().len() >= 10
    });
    let recorded = daemon.count("SELECT count(*) FROM notification_attempts");
    assert!(recorded >= 4, "{recorded} attempts recorded after 10 sends");
    daemon.crash_and_restart();
    receiver.delay.store(0, Ordering::SeqCst);
    wait_for(
        Duration::from_secs(30),
        "every notification arrives",
        || receiver.seen().iter().collect::<BTreeSet<_>>().len() == tokens.len(),
    );
    let seen = receiver.seen();
    let again = seen.len() - seen.iter().collect::<BTreeSet<_>>().len();
    assert!(again <= 6, "{again} sent again after the kill: {seen:?}");
}

/// A port on 127.0.0.1 that nothing listens on (bound, then let go).
fn unused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// 20 tokens started, one notification each, to a subscription `away` to
/// `port`; its secret.
fn twenty_to(daemon: &Daemon, port: u16) -> String {
    let body = json!({"name": "away", "url": format!("http://127.0.0.1:{port}/hook"), "kinds": ["started"]});
    let added = daemon.post("/notify", &body).expect(201);
    for i in 0..20 {
        start(daemon, &format!("u-{i:02}"));
    }
    added["secret"].as_str().expect("a secret").to_string()
}

/// A receiver that cannot be reached (nothing listens on its port) is tried
/// once a wait, not once a notification: its queue ends the batch at the
/// refused connection and waits (the backoff, 100 ms here, doubling), and the
/// other notifications stay pending, untried. Before, each of the 20 was tried
/// on its own backoff, about 80 attempts in the 2 s. Once something listens
/// there, all arrive.
fn an_unreachable_receiver_is_tried_once_a_wait_not_once_a_notification() {
    let port = unused_port();
    let daemon = orders(&[]);
    let secret = twenty_to(&daemon, port);
    std::thread::sleep(Duration::from_secs(2));
    let attempts = daemon.count("SELECT count(*) FROM notification_attempts");
    assert!(
        (1..=10).contains(&attempts),
        "{attempts} attempts in 2 s to a refusing address"
    );
    let untried = daemon.count("SELECT count(*) FROM notifications WHERE attempts = 0");
    assert!(untried >= 10, "{untried} of 20 untried");
    let receiver = Receiver::listening(
        TcpListener::bind(("127.0.0.1", port)).expect("the port again"),
        0,
    );
    receiver.trust(&secret);
    wait_for(
        Duration::from_secs(30),
        "all 20 arrive once it listens",
        || receiver.got().len() == 20,
    );
    assert_eq!(receiver.bad_signatures.load(Ordering::SeqCst), 0);
}

/// A queue that waits for a receiver it could not reach (20 s here, the first
/// backoff) tries again at once when an operator asks for a send: `notify test`
/// is the first thing one runs after bringing the receiver back. The daemon
/// logs that the receiver cannot be reached, once, and that it is reached again.
fn an_operators_test_wakes_a_queue_that_waits_for_its_receiver() {
    let port = unused_port();
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "20s"])
        .start();
    let body = json!({"name": "away", "url": format!("http://127.0.0.1:{port}/hook"), "kinds": ["started"]});
    let secret = daemon.post("/notify", &body).expect(201)["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    start(&daemon, "w-1");
    wait_for(Duration::from_secs(10), "the first attempt fails", || {
        daemon.count("SELECT count(*) FROM notification_attempts") == 1
    });
    assert!(
        daemon
            .stderr()
            .contains("notifications of away: the receiver cannot be reached (cannot connect"),
        "{}",
        daemon.stderr()
    );
    let receiver = Receiver::listening(
        TcpListener::bind(("127.0.0.1", port)).expect("the port again"),
        0,
    );
    receiver.trust(&secret);
    let asked = Instant::now();
    daemon.post("/notify/away/test", &json!({})).expect(200);
    wait_for(
        Duration::from_secs(8),
        "the test arrives long before the 20 s wait ends",
        || receiver.got().iter().any(|got| got.body["type"] == "test"),
    );
    assert!(asked.elapsed() < Duration::from_secs(8));
    wait_for(Duration::from_secs(5), "the log says so", || {
        daemon
            .stderr()
            .contains("notifications of away: the receiver is reached again")
    });
}

/// `stateous notify ARGS --url URL`'s standard output (it must succeed).
fn notify(daemon: &Daemon, args: &[&str]) -> String {
    let mut all = vec!["notify", "--url", &daemon.url];
    all.extend_from_slice(args);
    let done = run(daemon.dir.path(), &all);
    assert_eq!(done.code(), 0, "{}", done.stderr);
    done.stdout
}

/// The value of `/metrics`'s `stateous_notify_receiver_unreachable` of `name`.
fn unreachable_gauge(daemon: &Daemon, name: &str) -> Option<String> {
    let metrics = String::from_utf8_lossy(&daemon.get("/metrics").body).to_string();
    let series = format!("stateous_notify_receiver_unreachable{{subscription=\"{name}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series).map(str::to_string))
}

/// A queue that waits for a receiver it could not reach (20 s here, the first
/// backoff) shows it wherever the counts are: `GET /notify` and `GET
/// /notify/{name}` give `unreachable` with the first attempt's moment, its
/// reason and the next try; `notify list` marks it, `notify show` says it in
/// words, `/metrics` has 1, while a subscription whose receiver answers shows
/// none of it. A pause takes the mark away and a resume's first attempt puts
/// it back; once a receiver listens, `notify test` wakes the queue, the test
/// arrives and the mark is gone (`/metrics` 0), and the notifications tried
/// before arrive at once, not at their retry.
fn a_queue_that_waits_for_its_receiver_shows_it_until_it_reaches_it() {
    let port = unused_port();
    let daemon = Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "20s"])
        .start();
    let near = Receiver::start(0);
    subscribe(
        &daemon,
        &near,
        json!({"name": "near", "kinds": ["started"]}),
    );
    let body = json!({"name": "away", "url": format!("http://127.0.0.1:{port}/hook"), "kinds": ["started"]});
    let secret = daemon.post("/notify", &body).expect(201)["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    assert_eq!(unreachable_gauge(&daemon, "away").as_deref(), Some("0"));
    start(&daemon, "m-1");
    start(&daemon, "m-2");
    wait_for(Duration::from_secs(10), "away shows it waits", || {
        listed(&daemon, "away")["unreachable"].is_object()
    });
    wait_for(Duration::from_secs(10), "near's are delivered", || {
        near.got().len() == 2
    });
    let mark = listed(&daemon, "away")["unreachable"].clone();
    let reason = mark["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("cannot connect"), "{mark}");
    let moment = |field: &str| {
        stateous_shared::time::parse_iso(mark[field].as_str().unwrap_or_default())
            .unwrap_or_else(|| panic!("no {field} in {mark}"))
    };
    let (since, next) = (moment("since"), moment("next_try"));
    let wait = (next - since).num_milliseconds();
    assert!((10_000..=31_000).contains(&wait), "{wait} ms in {mark}");
    assert!(
        listed(&daemon, "near").get("unreachable").is_none(),
        "{}",
        listed(&daemon, "near")
    );
    let shown = daemon.get("/notify/away").expect(200);
    assert_eq!(shown["subscription"]["unreachable"], mark);
    assert_eq!(unreachable_gauge(&daemon, "away").as_deref(), Some("1"));
    assert_eq!(unreachable_gauge(&daemon, "near").as_deref(), Some("0"));
    let listing = notify(&daemon, &["list"]);
    let away_line = listing
        .lines()
        .find(|l| l.starts_with("away  "))
        .unwrap_or_default();
    assert!(away_line.ends_with("  receiver unreachable"), "{listing}");
    let near_line = listing
        .lines()
        .find(|l| l.starts_with("near  "))
        .unwrap_or_default();
    assert!(!near_line.contains("unreachable"), "{listing}");
    let words = format!(
        "  the receiver cannot be reached since {}: {reason}; next try at {}",
        mark["since"].as_str().unwrap_or_default(),
        mark["next_try"].as_str().unwrap_or_default()
    );
    let show = notify(&daemon, &["show", "away"]);
    assert!(
        show.lines().any(|line| line == words),
        "{words:?} not in\n{show}"
    );
    let json = notify(&daemon, &["--json", "show", "away"]);
    let json: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["subscription"]["unreachable"], mark);
    // Paused: no mark; resumed: its first attempt finds out again.
    daemon.post("/notify/away/pause", &json!({})).expect(200);
    assert!(listed(&daemon, "away").get("unreachable").is_none());
    assert_eq!(unreachable_gauge(&daemon, "away").as_deref(), Some("0"));
    let resumed = daemon.post("/notify/away/resume", &json!({})).expect(200);
    // The resume wakes the queue: its first attempt may come before the
    // answer is read, so the answer shows no mark or a new one, never the old.
    assert!(
        resumed
            .get("unreachable")
            .is_none_or(|new| new["since"] != mark["since"]),
        "{resumed}"
    );
    wait_for(Duration::from_secs(10), "away shows it waits again", || {
        listed(&daemon, "away")["unreachable"].is_object()
    });
    let again = listed(&daemon, "away")["unreachable"].clone();
    let later = stateous_shared::time::parse_iso(again["since"].as_str().unwrap_or_default());
    assert!(later.is_some_and(|at| at > since), "{again} after {mark}");
    // The resume's word starts the waits again from the first (20 s, moved by
    // up to a fifth); the queue had slept through the pause, and went on
    // doubling: 30 s, the most.
    let wait_again =
        stateous_shared::time::parse_iso(again["next_try"].as_str().unwrap_or_default())
            .zip(later)
            .map(|(next, since)| (next - since).num_milliseconds());
    assert!(
        wait_again.is_some_and(|ms| (10_000..=25_000).contains(&ms)),
        "{wait_again:?} ms in {again}"
    );
    // Something listens there now: the operator's test wakes the queue.
    let receiver = Receiver::listening(
        TcpListener::bind(("127.0.0.1", port)).expect("the port again"),
        0,
    );
    receiver.trust(&secret);
    let asked = Instant::now();
    notify(&daemon, &["test", "away"]);
    wait_for(Duration::from_secs(8), "the test arrives", || {
        receiver.got().iter().any(|got| got.body["type"] == "test")
    });
    assert!(asked.elapsed() < Duration::from_secs(8));
    wait_for(Duration::from_secs(5), "the mark is gone", || {
        listed(&daemon, "away").get("unreachable").is_none()
    });
    assert_eq!(unreachable_gauge(&daemon, "away").as_deref(), Some("0"));
    assert!(!notify(&daemon, &["list"]).contains("unreachable"));
    assert!(!notify(&daemon, &["show", "away"]).contains("cannot be reached"));
    // The two tried before waited for their retry (20 s after their
    // attempt): the receiver reached, they go at once.
    wait_for(
        Duration::from_secs(4),
        "the started ones arrive too, before their retry",
        || receiver.got().len() == 3,
    );
    assert!(listed(&daemon, "away").get("unreachable").is_none());
}

/// A notification that waits for its retry (20 s here) because its receiver
/// could not be reached goes once the receiver is reached after an operator's
/// word, also after a SIGKILL, when no mark of the wait is left (it is kept in
/// memory): a new token's notification alone does not hasten it, `notify
/// test` does.
fn a_retry_from_before_a_sigkill_goes_once_the_receiver_is_reached() {
    let port = unused_port();
    let mut daemon = Setup::new(asset_graph("orders"))
        .args(&["--notify-backoff", "20s"])
        .start();
    let body = json!({"name": "away", "url": format!("http://127.0.0.1:{port}/hook"), "kinds": ["started"]});
    let secret = daemon.post("/notify", &body).expect(201)["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    start(&daemon, "k-1");
    wait_for(Duration::from_secs(10), "k-1's is tried and waits", || {
        counts(&daemon, "away")["retrying"] == 1
    });
    daemon.crash_and_restart();
    let receiver = Receiver::listening(
        TcpListener::bind(("127.0.0.1", port)).expect("the port again"),
        0,
    );
    receiver.trust(&secret);
    start(&daemon, "k-2");
    wait_for(Duration::from_secs(4), "k-2's arrives", || {
        receiver.got().len() == 1
    });
    assert_eq!(counts(&daemon, "away")["retrying"], 1);
    notify(&daemon, &["test", "away"]);
    wait_for(
        Duration::from_secs(4),
        "the test and k-1's arrive, k-1's before its retry",
        || receiver.got().len() == 3,
    );
    let tokens: Vec<Value> = receiver
        .got()
        .iter()
        .map(|got| got.body["token"]["token"].clone())
        .collect();
    assert!(tokens.contains(&json!("k-1")), "{tokens:?}");
}

/// `--states legal/check` is the state `check` of the child workflow `legal`
/// only, as limits name it; `check` alone is that state of any workflow
/// (`legal`'s and `finance`'s, the two children of the desk's `sign`).
fn a_child_workflows_state_is_named_alone_or_with_its_workflow() {
    let daemon = Setup::new(harness::test_graph("desk/build/desk")).start();
    let (legal, any) = (Receiver::start(0), Receiver::start(0));
    let kinds = json!(["entered"]);
    subscribe(
        &daemon,
        &legal,
        json!({"name": "legal", "kinds": kinds, "states": ["legal/check"]}),
    );
    subscribe(
        &daemon,
        &any,
        json!({"name": "any", "kinds": kinds, "states": ["check"]}),
    );
    let refused = daemon
        .post(
            "/notify",
            &json!({"name": "x", "url": "http://127.0.0.1:9/x", "kinds": kinds, "states": ["sales/check"]}),
        )
        .refused(422, "invalid_subscription");
    assert!(refused.contains("no state \"sales/check\""), "{refused}");
    daemon
        .post(
            "/tokens",
            &json!({"token": "C-1", "context": {"customer": "ACME", "score": 5}}),
        )
        .expect(201);
    fire(&daemon, "C-1", "submitted", json!({}));
    fire(&daemon, "C-1", "approve", json!({}));
    wait_for(Duration::from_secs(10), "both children's reach any", || {
        any.got().len() == 2
    });
    wait_for(Duration::from_secs(10), "legal's reaches legal", || {
        !legal.got().is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    let got = legal.got();
    assert_eq!(
        got.len(),
        1,
        "{:?}",
        got.iter().map(|g| &g.body).collect::<Vec<_>>()
    );
    let body = got[0].body.to_string();
    assert!(
        body.contains("legal") && !body.contains("finance"),
        "{body}"
    );
}

/// The notifications a queue left untried while its receiver could not be
/// reached still die at their limit: the first attempt after it finds them
/// past it, and a dead one does not end the batch, so all die together. The
/// subscription still shows its receiver unreachable, with no next try.
fn an_unreachable_receivers_notifications_die_at_their_limit() {
    let daemon = orders(&["--notify-dead-after", "1s"]);
    twenty_to(&daemon, unused_port());
    wait_for(Duration::from_secs(20), "all 20 dead", || {
        counts(&daemon, "away")["dead"] == 20
    });
    assert_eq!(
        counts(&daemon, "away"),
        json!({"pending": 0, "retrying": 0, "delivered": 0, "dead": 20})
    );
    // Still unreachable, but nothing waits: the next one goes when it is due.
    // (The queue records the deaths, then marks it: a moment apart.)
    wait_for(Duration::from_secs(5), "the mark has no next try", || {
        listed(&daemon, "away")["unreachable"]
            .get("next_try")
            .is_none()
    });
    let mark = listed(&daemon, "away")["unreachable"].clone();
    assert!(
        mark["reason"]
            .as_str()
            .is_some_and(|why| why.starts_with("cannot connect"))
            && mark.get("next_try").is_none(),
        "{mark}"
    );
    let show = notify(&daemon, &["show", "away"]);
    assert!(
        show.contains("; the next notification is tried when it is due"),
        "{show}"
    );
}

both!(
    an_unreachable_receiver_is_tried_once_a_wait_not_once_a_notification,
    an_unreachable_receivers_notifications_die_at_their_limit,
    an_operators_test_wakes_a_queue_that_waits_for_its_receiver,
    a_queue_that_waits_for_its_receiver_shows_it_until_it_reaches_it,
    a_retry_from_before_a_sigkill_goes_once_the_receiver_is_reached,
    a_child_workflows_state_is_named_alone_or_with_its_workflow,
    a_long_batch_records_its_attempts_as_it_goes,
    a_failing_receiver_gets_the_entry_later_with_the_same_webhook_id,
    every_matching_entry_arrives_through_two_sigkills,
    no_move_fires_once_per_visit,
    a_visits_no_move_comes_after_its_entered,
    a_dead_notification_is_listed_and_sent_again_by_hand,
    a_receiver_that_never_answers_holds_up_only_its_own_subscription,
    bad_subscriptions_are_refused_and_change_nothing,
    delivered_notifications_go_after_the_keep_and_dead_ones_stay,
);
