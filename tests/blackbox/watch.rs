//! Black-box: the daemon's additions for watching: `GET /watch` (resume without a
//! gap or a duplicate, order across a long absence, the token filter),
//! `GET /supervisors`, `GET /tokens/{id}/detail` and `GET /metrics`.

use crate::harness;

use harness::Daemon;
use serde_json::{json, Value};
use stateous_client::{Client, Watch, WatchEntry};

fn start(daemon: &Daemon, token: &str) {
    let body = json!({"token": token, "context": {"title": "pen"}});
    daemon.post("/tokens", &body).expect(201);
}

/// The next `count` ledger entries of `watch`, with their event ids.
async fn take(watch: &mut Watch, count: usize) -> Vec<(i64, WatchEntry)> {
    let mut got = Vec::new();
    while got.len() < count {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
            .await
            .expect("an event within 10 s")
            .expect("the stream reads")
            .expect("the stream goes on");
        let id = event.id.as_deref().and_then(|id| id.parse().ok());
        if let (Some(id), Some(entry)) = (id, event.entry()) {
            got.push((id, entry));
        }
    }
    got
}

/// Every entry so far, from the first, as a fresh reader sees them.
async fn everything(client: &Client, count: usize) -> Vec<(i64, WatchEntry)> {
    let mut watch = client
        .watch(None, Some("0"))
        .await
        .expect("the stream opens");
    take(&mut watch, count).await
}

fn resuming_with_last_event_id_after_a_disconnect_loses_and_repeats_nothing() {
    harness::block_on(async {
        let daemon = Daemon::orders();
        let client = Client::new(&daemon.url).expect("a client");
        let mut watch = client.watch(None, None).await.expect("the stream opens");
        start(&daemon, "A-1");
        let before = take(&mut watch, 4).await;
        drop(watch);
        let last = before.last().map(|(id, _)| id.to_string());
        start(&daemon, "B-1");
        daemon
            .post_empty("/tokens/A-1/events/submitted")
            .expect(200);
        daemon.post_empty("/tokens/B-1/pause").expect(200);
        let mut again = client
            .watch(None, last.as_deref())
            .await
            .expect("the stream opens again");
        let after = take(&mut again, 4 + 4 + 1).await;
        let seen: Vec<_> = before.into_iter().chain(after).collect();
        assert_eq!(seen, everything(&client, seen.len()).await);
        let ids: Vec<i64> = seen.iter().map(|(id, _)| *id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let kinds: Vec<&str> = seen.iter().map(|(_, e)| e.entry.kind.as_str()).collect();
        assert_eq!(kinds.last(), Some(&"paused"));
    });
}

fn a_thousand_entries_written_while_a_client_is_away_all_arrive_in_order() {
    harness::block_on(async {
        let daemon = Daemon::orders();
        let client = Client::new(&daemon.url).expect("a client");
        let mut watch = client.watch(None, None).await.expect("the stream opens");
        start(&daemon, "FIRST");
        let first = take(&mut watch, 4).await;
        drop(watch);
        // Each start writes 4 entries: 250 starts are 1000 entries.
        for n in 0..250 {
            start(&daemon, &format!("T-{n}"));
        }
        let last = first.last().map(|(id, _)| id.to_string());
        let mut back = client.watch(None, last.as_deref()).await.expect("reopens");
        let missed = take(&mut back, 1000).await;
        let ids: Vec<i64> = missed.iter().map(|(id, _)| *id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
        assert!(ids[0] > first[3].0);
        for n in 0..250 {
            let token = format!("T-{n}");
            let seqs: Vec<i64> = missed
                .iter()
                .filter(|(_, e)| e.token == token)
                .map(|(_, e)| e.entry.seq)
                .collect();
            assert_eq!(seqs, vec![1, 2, 3, 4], "{token}");
        }
        let all = everything(&client, 1004).await;
        assert_eq!(all[4..], missed[..]);
    });
}

fn the_token_filter_keeps_one_tokens_entries() {
    harness::block_on(async {
        let daemon = Daemon::orders();
        let client = Client::new(&daemon.url).expect("a client");
        start(&daemon, "A-1");
        start(&daemon, "B-1");
        daemon
            .post_empty("/tokens/B-1/events/submitted")
            .expect(200);
        let mut watch = client.watch(Some("B-1"), Some("0")).await.expect("opens");
        let got = take(&mut watch, 8).await;
        assert!(got.iter().all(|(_, e)| e.token == "B-1"));
        let seqs: Vec<i64> = got.iter().map(|(_, e)| e.entry.seq).collect();
        assert_eq!(seqs, (1..=8).collect::<Vec<_>>());
        let refused = daemon
            .get("/watch?after=x")
            .refused(422, "invalid_argument");
        assert!(refused.contains("'after'"), "{refused}");
    });
}

fn supervisors_detail_and_metrics_show_claims_leases_held_events_and_counts() {
    let daemon = Daemon::orders();
    start(&daemon, "A-1");
    let claim = json!({"supervisor": "box-1", "states": ["draft"], "outbox": 3});
    let grant = daemon.post("/tasks/claim", &claim).expect(200);
    assert_eq!(grant["token"], "A-1");
    let list = daemon.get("/supervisors").expect(200);
    let one = &list["supervisors"][0];
    assert_eq!(one["name"], "box-1");
    assert_eq!(one["states"], json!(["draft"]));
    assert_eq!(
        (one["running"].clone(), one["outbox"].clone()),
        (json!(1), json!(3))
    );
    assert!(one["last_seen"]
        .as_str()
        .is_some_and(|at| at.ends_with('Z')));
    daemon
        .post(
            "/tasks/heartbeat",
            &json!({"supervisor": "box-1", "tasks": [grant["task"]], "outbox": 0}),
        )
        .expect(200);
    assert_eq!(
        daemon.get("/supervisors").expect(200)["supervisors"][0]["outbox"],
        0
    );

    daemon.post_empty("/tokens/A-1/pause").expect(200);
    daemon
        .post_empty("/tokens/A-1/events/submitted")
        .expect(200);
    let detail = daemon.get("/tokens/A-1/detail").expect(200);
    assert_eq!(detail["token"]["status"], "paused");
    let task = &detail["tasks"][0];
    assert_eq!(
        (task["status"].clone(), task["holder"].clone()),
        (json!("claimed"), json!("box-1"))
    );
    assert_eq!(task["attempt"], 1);
    let left = task["lease_left"].as_f64().expect("a lease left");
    assert!(
        left > 0.0 && left <= 2.0,
        "the test daemon's lease is 2 s: {left}"
    );
    assert_eq!(detail["held"][0]["event"], "submitted");
    assert_eq!(detail["timers"], json!([]));
    daemon
        .get("/tokens/NOPE/detail")
        .refused(404, "token_not_found");

    let metrics = daemon.get("/metrics");
    let text = String::from_utf8_lossy(&metrics.body).to_string();
    assert!(
        text.contains("stateous_tokens{state=\"draft\",status=\"paused\",workflow=\"orders\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("stateous_tasks{state=\"draft\",status=\"claimed\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE stateous_commits_total counter"),
        "{text}"
    );
    let _: Value = daemon.get("/health").expect(200);
}

fn a_watcher_of_all_tokens_is_told_of_supervisor_changes() {
    harness::block_on(async {
        let daemon = Daemon::orders();
        let client = Client::new(&daemon.url).expect("a client");
        let mut watch = client.watch(None, None).await.expect("the stream opens");
        let claim = json!({"supervisor": "box-9", "states": ["draft"], "outbox": 2});
        daemon.post("/tasks/claim", &claim).expect(204);
        let change = loop {
            let event = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
                .await
                .expect("an event within 10 s")
                .expect("the stream reads")
                .expect("the stream goes on");
            if event.event.as_deref() == Some("supervisors") {
                break event;
            }
        };
        assert_eq!(
            change.id, None,
            "a change is not a ledger entry to resume from"
        );
        let list: Value = serde_json::from_str(&change.data).expect("JSON");
        assert_eq!(list["supervisors"][0]["name"], "box-9");
        assert_eq!(list["supervisors"][0]["outbox"], 2);
    });
}

fn token_show_follow_prints_each_line_once_through_a_restart_until_the_token_ends() {
    let mut daemon = Daemon::orders();
    start(&daemon, "F-1");
    let url = format!("unix://{}", daemon.socket.display());
    let out = daemon.dir.path().join("follow.out");
    let mut follow = std::process::Command::new(harness::binary())
        .args(["token", "show", "F-1", "--follow", "--url", &url])
        .stdout(std::fs::File::create(&out).expect("an output file"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("follow starts");
    let printed = |line: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.contains(line) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no '{line}' in:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    printed("#4  task 1 queued for draft");
    daemon
        .post_empty("/tokens/F-1/events/submitted")
        .expect(200);
    printed("#7  entered review");
    daemon.crash_and_restart();
    let verdict = json!({"payload": {"approved": true}});
    daemon
        .post("/tokens/F-1/events/reviewed", &verdict)
        .expect(200);
    let text = printed("#11  completed");
    let status = follow.wait().expect("follow ends");
    assert!(status.success(), "{status}: {text}");
    for seq in 1..=11 {
        let mark = format!("  #{seq}  ");
        assert_eq!(text.matches(&mark).count(), 1, "#{seq} once:\n{text}");
    }
}

/// Read every ledger entry there is (`total`), dropping the stream and resuming
/// with `Last-Event-ID` after a random number of events each time; the ids read,
/// in order.
async fn read_with_reconnects(url: String, total: usize, seed: u64) -> Vec<i64> {
    let client = Client::new(&url).expect("a client");
    let mut seen: Vec<i64> = Vec::new();
    let mut rng = seed;
    while seen.len() < total {
        let last = seen.last().map_or("0".to_string(), |id| id.to_string());
        let mut watch = client.watch(None, Some(&last)).await.expect("opens");
        // A small linear congruential generator: random enough, and repeatable.
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let before_drop = 1 + (rng >> 33) as usize % 200;
        for _ in 0..before_drop {
            let Ok(next) =
                tokio::time::timeout(std::time::Duration::from_secs(20), watch.next()).await
            else {
                panic!("no entry within 20 s after {} of {total}", seen.len());
            };
            let event = next.expect("the stream reads").expect("the stream goes on");
            if let Some(id) = event.id.as_deref().and_then(|id| id.parse::<i64>().ok()) {
                seen.push(id);
            }
            if seen.len() >= total {
                break;
            }
        }
    }
    seen
}

fn the_watch_stream_skips_nothing_under_32_concurrent_writers() {
    let daemon = Daemon::orders();
    let writers = 32;
    let per_writer = 15;
    // Each token: start (4 entries), then submitted (event, done, entered, queued).
    let total = writers * per_writer * 8;
    let url = daemon.url.clone();
    let readers: Vec<_> = (0..3)
        .map(|n| {
            let url = url.clone();
            std::thread::spawn(move || {
                harness::block_on(read_with_reconnects(url, total, 7 + n as u64))
            })
        })
        .collect();
    std::thread::scope(|scope| {
        for writer in 0..writers {
            let daemon = &daemon;
            scope.spawn(move || {
                for n in 0..per_writer {
                    let token = format!("W{writer}-{n}");
                    start(daemon, &token);
                    daemon
                        .post_empty(&format!("/tokens/{token}/events/submitted"))
                        .expect(200);
                }
            });
        }
    });
    let mut stored: Vec<i64> = daemon
        .rows("SELECT id FROM ledger ORDER BY id")
        .into_iter()
        .map(|row| row[0].as_deref().unwrap_or("0").parse().unwrap())
        .collect();
    stored.sort();
    assert_eq!(stored.len(), total);
    for reader in readers {
        let seen = reader.join().expect("a reader");
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "a reader saw an id twice or out of order"
        );
        assert_eq!(seen, stored, "a reader missed an entry");
    }
}

both!(
    the_watch_stream_skips_nothing_under_32_concurrent_writers,
    resuming_with_last_event_id_after_a_disconnect_loses_and_repeats_nothing,
    a_thousand_entries_written_while_a_client_is_away_all_arrive_in_order,
    the_token_filter_keeps_one_tokens_entries,
    a_watcher_of_all_tokens_is_told_of_supervisor_changes,
    supervisors_detail_and_metrics_show_claims_leases_held_events_and_counts,
    token_show_follow_prints_each_line_once_through_a_restart_until_the_token_ends,
);
