//! Black-box: a Postgres that accepts the connection and then says nothing (a
//! half-dead server, a relay that stopped passing bytes on). Every wait on it has a
//! deadline on the control plane's side (`docs/guarantees.md`, "Time limits on each
//! database"): `serve` and `serve --standby` at start end with one `error:` line and
//! exit code 1 within about the connect timeout; while serving, a request answers
//! 503 `database_busy` within about the statement timeout, `/health` says that the
//! database does not answer, and once the bytes flow again service comes back by
//! itself, with nothing lost and nothing applied twice.
//!
//! The first two need no Postgres server (the silent one is a listener of the
//! test); the third runs a relay of the test in front of the real server.

use crate::harness;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::{binary, eventually, test_graph, Backend, Daemon, Setup};
use serde_json::{json, Value};

/// A server that accepts every connection and never sends a byte; its
/// `HOST:PORT`. The connections stay open as long as the test runs.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let authority = listener.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    authority
}

/// What a bounded run of the binary gave: its exit code, stderr, and how long it took.
struct Ended {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

/// Run `stateous ARGS` in `dir`; kill it and fail when it runs longer than `within`.
fn run_within(dir: &std::path::Path, args: &[&str], within: Duration) -> Ended {
    let stderr_path = dir.join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path).expect("a log file");
    let began = Instant::now();
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("STATEOUS_URL")
        .env_remove("STATEOUS_DB")
        .env_remove("STATEOUS_STATEMENT_TIMEOUT")
        .env_remove("STATEOUS_LOCK_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("the stateous binary starts");
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return Ended {
                code: status.code(),
                stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
                took: began.elapsed(),
            };
        }
        if began.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "stateous {} still ran after {within:?}; stderr:\n{}",
                args.join(" "),
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `serve` (with `extra` flags) against a server that never answers: one
/// `error:` line naming the silence, exit 1, within a few seconds of the 2 s
/// connect timeout.
fn serve_against_silence(extra: &[&str]) {
    let silent = silent_server();
    let dir = tempfile::tempdir().unwrap();
    let graph = test_graph("tickets").display().to_string();
    let socket = dir.path().join("s.sock").display().to_string();
    let db = format!("postgresql://postgres:secret@{silent}/x");
    let mut args = vec![
        "serve",
        &graph,
        "--db",
        &db,
        "--listen",
        "127.0.0.1:0",
        "--socket",
        &socket,
        "--connect-timeout",
        "2s",
    ];
    args.extend_from_slice(extra);
    let ended = run_within(dir.path(), &args, Duration::from_secs(30));
    assert_eq!(ended.code, Some(1), "{}", ended.stderr);
    let lines: Vec<&str> = ended.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", ended.stderr);
    assert!(
        lines[0].starts_with("error: ")
            && lines[0].contains("did not answer within 2s")
            && lines[0].contains("postgresql://postgres:***@"),
        "{}",
        ended.stderr
    );
    assert!(ended.took < Duration::from_secs(8), "took {:?}", ended.took);
}

#[test]
fn serve_against_a_server_that_never_answers_exits_1_within_the_connect_timeout() {
    serve_against_silence(&[]);
}

#[test]
fn a_standby_against_a_server_that_never_answers_exits_1_within_the_connect_timeout() {
    serve_against_silence(&["--standby"]);
}

/// A relay of TCP bytes in front of a server that the test can stop and start
/// again: stopped, it still accepts and reads, and passes nothing on either way.
/// It can also hold back the next commit of a write transaction (the bytes that
/// carry `stateous_fence`) on its one connection, while the others flow.
struct Relay {
    authority: String,
    flow: Arc<Flow>,
}

/// What the relay's threads read: whether to pass bytes on.
#[derive(Default)]
struct Flow {
    /// Nothing passes.
    stopped: AtomicBool,
    /// The next commit met is held.
    hold_commit: AtomicBool,
    /// A commit is held (until `resume`).
    holding: AtomicBool,
    /// While a commit is held: the held commit goes on first when another
    /// connection sends bytes that hold this text, and they wait until it has had
    /// time to land.
    land_before: Mutex<Option<&'static str>>,
}

impl Relay {
    fn to(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let authority = listener.local_addr().expect("its address").to_string();
        let flow = Arc::new(Flow::default());
        let (upstream, shared) = (upstream.to_string(), Arc::clone(&flow));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                for (from, to, outward) in [
                    (client.try_clone(), server.try_clone(), true),
                    (server.try_clone(), client.try_clone(), false),
                ] {
                    let (Ok(from), Ok(to)) = (from, to) else {
                        continue;
                    };
                    let flow = Arc::clone(&shared);
                    std::thread::spawn(move || pass_on(from, to, &flow, outward));
                }
            }
        });
        Relay { authority, flow }
    }

    fn stop(&self) {
        self.flow.stopped.store(true, Ordering::SeqCst);
    }

    fn hold_next_commit(&self) {
        self.flow.hold_commit.store(true, Ordering::SeqCst);
    }

    /// Let the held commit go just before a statement whose text holds `marker`
    /// (its first use on a connection, when its text is sent): it reaches the
    /// server between two statements of a request sent after it, as a commit that
    /// got no answer may.
    fn land_held_commit_before(&self, marker: &'static str) {
        *self.flow.land_before.lock().unwrap() = Some(marker);
    }

    fn resume(&self) {
        self.flow.holding.store(false, Ordering::SeqCst);
        self.flow.stopped.store(false, Ordering::SeqCst);
    }
}

/// Copy `from` to `to`, holding each chunk while the relay is stopped, and
/// (`outward`: towards the server) a chunk that carries a held commit.
fn pass_on(mut from: TcpStream, mut to: TcpStream, flow: &Flow, outward: bool) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = from.read(&mut buffer).unwrap_or(0);
        let commit = outward
            && buffer[..read]
                .windows(b"stateous_fence".len())
                .any(|w| w == b"stateous_fence");
        let held = commit && flow.hold_commit.swap(false, Ordering::SeqCst);
        if held {
            flow.holding.store(true, Ordering::SeqCst);
        } else if outward && flow.holding.load(Ordering::SeqCst) {
            let mut marker = flow.land_before.lock().unwrap();
            let met = marker.is_some_and(|text| {
                buffer[..read]
                    .windows(text.len())
                    .any(|w| w == text.as_bytes())
            });
            if met {
                *marker = None;
                flow.holding.store(false, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        while flow.stopped.load(Ordering::SeqCst) || (held && flow.holding.load(Ordering::SeqCst)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if read == 0 || to.write_all(&buffer[..read]).is_err() {
            let _ = to.shutdown(Shutdown::Write);
            return;
        }
    }
}

/// The server's `HOST:PORT`, from `STATEOUS_TEST_POSTGRES`.
fn server_authority() -> String {
    let url = std::env::var("STATEOUS_TEST_POSTGRES").expect("a Postgres server");
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:5432")
    }
}

fn fire(daemon: &Daemon, token: &str, key: &str) -> harness::Reply {
    daemon.request(
        "POST",
        &format!("/tokens/{token}/events/stuck"),
        &[("Idempotency-Key", key)],
        b"",
    )
}

fn start(daemon: &Daemon, token: &str) -> harness::Reply {
    daemon.post(
        "/tokens",
        &json!({"token": token, "context": {"repo": "acme/api"}}),
    )
}

/// The token's status in a fire's answer: the token itself, or a duplicate's
/// `token`.
fn status_of(reply: &harness::Reply) -> Value {
    let body = reply.json();
    match body.get("duplicate") {
        Some(_) => body["token"]["status"].clone(),
        None => body["status"].clone(),
    }
}

/// A refusal of the silence: 503 `database_busy` with the sentence that says so.
fn refused_as_silent(reply: &harness::Reply, took: Duration) {
    assert_eq!(reply.status, 503, "{reply}");
    assert_eq!(reply.json()["code"], "database_busy", "{reply}");
    let error = reply.json()["error"].as_str().unwrap_or("").to_string();
    assert!(error.contains("did not answer"), "{reply}");
    // The statement timeout is 2 s: the answer comes within about that.
    assert!(took < Duration::from_secs(6), "answered after {took:?}");
}

#[test]
fn a_database_that_stops_answering_is_refused_503_in_time_and_service_comes_back_by_itself() {
    harness::on(Backend::Postgres, || {
        let relay = Relay::to(&server_authority());
        let mut daemon = Setup::new(test_graph("tickets"))
            .args(&[
                "--statement-timeout",
                "2s",
                "--lock-timeout",
                "1s",
                "--connect-timeout",
                "2s",
            ])
            .db_authority(&relay.authority)
            .start();
        start(&daemon, "T-1").expect(201);
        start(&daemon, "T-2").expect(201);
        let healthy = daemon.get("/health").expect(200);
        relay.stop();
        let stopped_at = Instant::now();

        let began = Instant::now();
        let refused = fire(&daemon, "T-1", "delivery-1");
        refused_as_silent(&refused, began.elapsed());
        let began = Instant::now();
        let refused = start(&daemon, "T-3");
        refused_as_silent(&refused, began.elapsed());
        let last = Mutex::new(Value::Null);
        eventually(
            Duration::from_secs(8),
            "/health says that the database does not answer",
            || format!("{}\n{}", last.lock().unwrap(), daemon.report()),
            || {
                let health = daemon.get("/health");
                let said = health.status == 503 && health.json()["database"] == "not_answering";
                *last.lock().unwrap() = health.json();
                said
            },
        );
        let health = daemon.get("/health");
        assert_eq!(health.json()["code"], "database_busy", "{health}");
        assert!(
            health.json()["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("the database does not answer"),
            "{health}"
        );
        // Stopped for well over the statement timeout.
        while stopped_at.elapsed() < Duration::from_secs(6) {
            std::thread::sleep(Duration::from_millis(100));
        }
        relay.resume();

        eventually(
            Duration::from_secs(20),
            "/health answers 200 again",
            || daemon.report(),
            || daemon.get("/health").status == 200,
        );
        // The healthy answer is the reference's, unchanged.
        assert_eq!(daemon.get("/health").expect(200), healthy);
        assert!(daemon.is_running(), "{}", daemon.report());
        // Sent again, each request applies once: the event once by its key (it may
        // have committed during the silence, then this is its duplicate), the start
        // once by the token's id.
        let again = fire(&daemon, "T-1", "delivery-1");
        assert_eq!(again.status, 200, "{again}");
        assert_eq!(status_of(&again), "completed", "{again}");
        let started = start(&daemon, "T-3");
        assert!(matches!(started.status, 200 | 201), "{started}");
        let accepted = daemon.count(
            "SELECT count(*) FROM ledger WHERE token = 'T-1' AND kind = 'event_accepted' \
             AND data LIKE '%\"stuck\"%'",
        );
        let ledger = daemon.rows("SELECT seq, kind, key FROM ledger WHERE token = 'T-1'");
        assert_eq!(accepted, 1, "{ledger:?}\n{}", daemon.report());
        assert_eq!(daemon.count("SELECT count(*) FROM tokens"), 3);
        // Other tokens move as before.
        daemon.post_empty("/tokens/T-2/pause").expect(200);
    });
}

/// The ledger ids a live reader of `GET /watch` (from the first entry) gets, in
/// the order it gets them, until `stop` is set and the stream has been quiet for a
/// moment (2 s). A quiet stream is opened again after the last id seen, as a
/// client does.
async fn watched(url: String, stop: Arc<AtomicBool>) -> Vec<i64> {
    let client = stateous_client::Client::new(&url).expect("a client");
    let mut seen: Vec<i64> = Vec::new();
    loop {
        let last = seen.last().map_or("0".to_string(), i64::to_string);
        let mut watch = client.watch(None, Some(&last)).await.expect("opens");
        loop {
            let Ok(next) = tokio::time::timeout(Duration::from_secs(2), watch.next()).await else {
                break;
            };
            let event = next.expect("the stream reads").expect("the stream goes on");
            let id = event.id.as_deref().and_then(|id| id.parse::<i64>().ok());
            if let (Some(id), Some(_)) = (id, event.entry()) {
                seen.push(id);
            }
        }
        if stop.load(Ordering::SeqCst) {
            return seen;
        }
    }
}

/// A commit that got no answer may land later: the watch stream's safe point stays
/// below its entries until the server's session of that commit has ended, so a
/// live reader that read entries committed after it still gets its entries, in
/// order. Its request answered 503; sent again with its key, it is a duplicate.
#[test]
fn a_commit_that_got_no_answer_and_landed_later_is_still_on_the_watch_stream() {
    harness::on(Backend::Postgres, || {
        let relay = Relay::to(&server_authority());
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--statement-timeout", "2s", "--lock-timeout", "1s"])
            .db_authority(&relay.authority)
            .start();
        start(&daemon, "T-1").expect(201);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (url, stop) = (daemon.url.clone(), Arc::clone(&stop));
            std::thread::spawn(move || harness::block_on(watched(url, stop)))
        };
        relay.hold_next_commit();
        let began = Instant::now();
        let refused = fire(&daemon, "T-1", "delivery-1");
        refused_as_silent(&refused, began.elapsed());
        // Entries with higher ids commit meanwhile, and the reader is live. A
        // claim is granted meanwhile too: with no limit set, it waits for no lock
        // the unanswered transaction may hold.
        start(&daemon, "T-2").expect(201);
        let claim = json!({"supervisor": "box-1", "states": ["coding"]});
        let granted = daemon.post("/tasks/claim", &claim);
        assert_eq!(granted.status, 200, "{granted}");
        std::thread::sleep(Duration::from_millis(800));
        relay.resume();
        let again = fire(&daemon, "T-1", "delivery-1");
        assert_eq!(again.status, 200, "{again}");
        assert_eq!(status_of(&again), "completed", "{again}");
        start(&daemon, "T-3").expect(201);
        let stored: Vec<i64> = daemon
            .rows("SELECT id FROM ledger ORDER BY id")
            .into_iter()
            .map(|row| row[0].as_deref().unwrap_or("0").parse().unwrap())
            .collect();
        let stuck =
            daemon.count("SELECT count(*) FROM ledger WHERE token = 'T-1' AND key = 'delivery-1'");
        assert_eq!(stuck, 1, "the event applied once");
        stop.store(true, Ordering::SeqCst);
        let seen = reader.join().expect("the reader");
        assert_eq!(seen, stored, "a live reader missed or repeated an entry");
    });
}

/// A commit that got no answer may reach the server between two statements of a
/// request sent after it. That request, sent again with the same key while the
/// commit lands, still answers what the token is: the event applied once, the
/// token completed (never the state read before the commit landed, nor the event
/// applied twice).
#[test]
fn a_request_sent_again_while_its_unanswered_commit_lands_sees_what_that_commit_did() {
    harness::on(Backend::Postgres, || {
        let relay = Relay::to(&server_authority());
        // A slow tick: no write of the clock's goes between the test's own.
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--statement-timeout", "2s", "--lock-timeout", "2s"])
            .args(&["--tick", "20s"])
            .db_authority(&relay.authority)
            .start();
        start(&daemon, "T-1").expect(201);
        relay.hold_next_commit();
        let began = Instant::now();
        let refused = fire(&daemon, "T-1", "delivery-1");
        refused_as_silent(&refused, began.elapsed());
        // The held commit lands after the request sent again read the token, just
        // before it looks for its key.
        relay.land_held_commit_before("FROM ledger WHERE token = $1 AND key");
        let again = fire(&daemon, "T-1", "delivery-1");
        relay.resume();
        assert_eq!(again.status, 200, "{again}");
        assert_eq!(
            status_of(&again),
            "completed",
            "{again}\n{}",
            daemon.report()
        );
        let applied = daemon.count(
            "SELECT count(*) FROM ledger WHERE token = 'T-1' AND kind = 'event_accepted' \
             AND key = 'delivery-1'",
        );
        assert_eq!(applied, 1, "{}", daemon.report());
        let shown = daemon.get("/tokens/T-1").expect(200);
        assert_eq!(shown["status"], "completed", "{shown}");
    });
}

/// With the default lock and connect timeouts (10 s each), a request that must
/// wait for a connection while the server says nothing still answers 503 within
/// about the statement timeout: a new connection's connect is not waited for.
#[test]
fn while_the_database_says_nothing_each_request_is_refused_within_the_statement_timeout() {
    harness::on(Backend::Postgres, || {
        let relay = Relay::to(&server_authority());
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--statement-timeout", "2s"])
            .db_authority(&relay.authority)
            .start();
        start(&daemon, "T-1").expect(201);
        relay.stop();
        for id in ["T-2", "T-3", "T-4"] {
            let began = Instant::now();
            let refused = start(&daemon, id);
            refused_as_silent(&refused, began.elapsed());
        }
        relay.resume();
        eventually(
            Duration::from_secs(30),
            "service comes back",
            || daemon.report(),
            || matches!(start(&daemon, "T-5").status, 200 | 201),
        );
    });
}

/// Requests that wait for a pooled connection when the daemon learns that the
/// server is silent: a read asked the pool before then, found no idle connection,
/// and waited for a new one, whose connect hangs for the whole connect timeout
/// (10 s by default). It is refused within about the statement timeout all the
/// same: the wait for the pool looks again at what the daemon knows.
#[test]
fn requests_already_waiting_for_a_connection_are_refused_within_the_statement_timeout() {
    harness::on(Backend::Postgres, || {
        let relay = Relay::to(&server_authority());
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--statement-timeout", "2s"])
            .db_authority(&relay.authority)
            .start();
        start(&daemon, "T-1").expect(201);
        relay.stop();
        // More reads at once than the pool holds idle connections: the last ones
        // wait for new connections, before any statement has timed out.
        let took: Vec<(u16, Duration)> = std::thread::scope(|scope| {
            let reads: Vec<_> = (0..12)
                .map(|_| {
                    scope.spawn(|| {
                        let began = Instant::now();
                        let reply = daemon.get("/tokens/T-1");
                        (reply.status, began.elapsed())
                    })
                })
                .collect();
            reads.into_iter().map(|read| read.join().unwrap()).collect()
        });
        for (status, took) in &took {
            assert_eq!(*status, 503, "{took:?}");
            assert!(*took < Duration::from_secs(6), "answered after {took:?}");
        }
        relay.resume();
        eventually(
            Duration::from_secs(30),
            "service comes back",
            || daemon.report(),
            || matches!(start(&daemon, "T-5").status, 200 | 201),
        );
    });
}
