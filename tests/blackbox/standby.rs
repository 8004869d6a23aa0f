//! Black-box, Postgres (skipped unless `STATEOUS_TEST_POSTGRES` names a server): a hot
//! standby (`serve --standby`). While another control plane holds the database, a
//! standby answers `GET /health` 503 `standby` and every other route 503 `not_serving`;
//! it takes over within seconds of the holder's death, with every acknowledged write,
//! each idempotency key and the clock; a holder that is only stopped keeps the
//! database, and once its sessions are ended it commits nothing more and exits 1. On
//! SQLite, `--standby` is refused.

use crate::harness;

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::{
    eventually, exchange, run, test_graph, Backend, Daemon, Reply, Setup, Timed, KEEPALIVES,
};
use serde_json::{json, Value};

fn postgres(test: fn()) {
    harness::on(Backend::Postgres, test);
}

/// The active control plane on a fresh database, with `args` after the defaults.
fn active(args: &[&str]) -> Daemon {
    Setup::new(test_graph("tickets"))
        .args(&KEEPALIVES)
        .args(args)
        .start()
}

/// A standby of `active`'s database.
fn standby_of(active: &Daemon) -> Daemon {
    Setup::new(test_graph("tickets"))
        .database_of(active)
        .args(&KEEPALIVES)
        .start_standby()
}

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"repo": "r"}}),
        )
        .expect(201);
}

/// `POST path` to the daemon at `authority`, which may be gone: no panic.
fn try_post(authority: &str, path: &str, body: &Value) -> io::Result<Reply> {
    let stream = TcpStream::connect(authority)?;
    let headers = [("content-type", "application/json")];
    let bytes = body.to_string();
    exchange(stream.timed(), "POST", path, &headers, bytes.as_bytes())
}

/// Wait until the standby has taken over (its `serving on` line); how long it took.
fn wait_until_it_serves(standby: &Daemon, within: Duration) -> Duration {
    let began = Instant::now();
    standby.wait_for_line("serving on ", within);
    began.elapsed()
}

#[test]
fn a_standby_answers_health_503_standby_and_every_other_route_503_not_serving() {
    postgres(|| {
        let active = active(&[]);
        start(&active, "T-1");
        let mut standby = standby_of(&active);
        let health = standby.get("/health");
        assert!(
            health.refused(503, "standby").contains("standby"),
            "{health}"
        );
        let over_socket = standby.request_unix("GET", "/health", &[], b"");
        over_socket.refused(503, "standby");
        standby.get("/tokens").refused(503, "not_serving");
        standby.get("/tokens/T-1").refused(503, "not_serving");
        standby.get("/metrics").refused(503, "not_serving");
        let body = json!({"token": "T-2", "context": {"repo": "r"}});
        standby.post("/tokens", &body).refused(503, "not_serving");
        assert!(
            standby
                .stderr()
                .contains("standby: waiting for the database's serving lock"),
            "{}",
            standby.report()
        );
        // The active serves on, alone: nothing of the standby's is in the database.
        assert_eq!(active.count("SELECT count(*) FROM tokens"), 1);
        active.get("/health").expect(200);
        // A stop while standing by is at once, and clean.
        let began = Instant::now();
        let status = standby.stop_with(libc::SIGINT);
        assert_eq!(status.code(), Some(0), "{}", standby.report());
        assert!(began.elapsed() < Duration::from_secs(3));
        assert!(
            standby.stderr().ends_with("stopped\n"),
            "{}",
            standby.report()
        );
        active.get("/tokens/T-1").expect(200);
    });
}

#[test]
fn a_standby_checks_the_graph_before_it_waits() {
    postgres(|| {
        let active = active(&[]);
        start(&active, "T-1");
        // Another structure, while a token is active on one the database does not
        // keep (as a database served before workflow versions): refused at once.
        active.database.execute("DELETE FROM graphs");
        let graph = harness::asset_graph("orders").display().to_string();
        let url = active.database.url();
        let socket = active.dir.path().join("other.sock").display().to_string();
        let refused = run(
            active.dir.path(),
            &[
                "serve",
                &graph,
                "--db",
                &url,
                "--listen",
                "127.0.0.1:0",
                "--socket",
                &socket,
                "--standby",
            ],
        );
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
        assert!(
            refused
                .stderr
                .starts_with("error: refusing to serve: 1 token(s) are active or paused"),
            "{refused}"
        );
    });
}

#[test]
fn a_standby_checks_its_graph_again_while_it_waits_and_says_when_a_takeover_would_be_refused() {
    postgres(|| {
        // No token yet: a standby of another workflow's graph passes its first check.
        let active = active(&[]);
        let standby = Setup::new(harness::asset_graph("orders"))
            .database_of(&active)
            .args(&KEEPALIVES)
            .start_standby();
        // A token of the active's workflow, on a graph the database does not keep
        // (as one served before workflow versions), makes that graph one a start
        // refuses.
        start(&active, "T-1");
        active.database.execute("DELETE FROM graphs");
        eventually(
            Duration::from_secs(15),
            "the standby warns that a takeover would be refused",
            || standby.report(),
            || {
                standby.stderr().contains(
                    "standby: a takeover now would be refused (refusing to serve: 1 token(s) are \
                     active",
                )
            },
        );
        // Once no token is active on the other structure, the standby says so.
        active.post_empty("/tokens/T-1/cancel").expect(200);
        eventually(
            Duration::from_secs(15),
            "the standby says the graph agrees again",
            || standby.report(),
            || {
                standby
                    .stderr()
                    .contains("standby: the graph agrees with the database again")
            },
        );
    });
}

/// A standby whose graph is of another workflow than the database's live tokens
/// (the wrong database) is refused at start; one that stood by before the tokens
/// came is refused at takeover. Neither changes the database.
#[test]
fn a_standby_of_another_workflow_is_refused_at_start_and_at_takeover() {
    postgres(|| {
        let mut active = active(&[]);
        // No token yet: a standby of another workflow's graph stands by.
        let mut standby = Setup::new(harness::asset_graph("orders"))
            .database_of(&active)
            .args(&KEEPALIVES)
            .start_standby();
        start(&active, "T-1");
        let sentence = "error: the database holds 1 live token(s) of the workflow 'tickets' and \
                        this graph is the workflow 'orders': serve it on a database of its own \
                        (--db), or end those tokens first";
        let graph = harness::asset_graph("orders").display().to_string();
        let url = active.database.url();
        let socket = active.dir.path().join("other.sock").display().to_string();
        let refused = harness::run_within(
            active.dir.path(),
            &[
                "serve",
                &graph,
                "--db",
                &url,
                "--listen",
                "127.0.0.1:0",
                "--socket",
                &socket,
                "--standby",
            ],
            Duration::from_secs(15),
        );
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(refused.stderr.trim_end(), sentence, "{refused}");
        active.stop_with(libc::SIGTERM);
        let status = standby.wait(Duration::from_secs(30));
        assert_eq!(status.code(), Some(1), "{}", standby.report());
        assert!(standby.stderr().contains(sentence), "{}", standby.report());
        assert_eq!(active.count("SELECT count(*) FROM graphs"), 1);
        let token = active.rows("SELECT status FROM tokens WHERE token = 'T-1'");
        assert_eq!(token, [[Some("active".to_string())]]);
    });
}

#[test]
fn a_standby_whose_database_cannot_be_read_says_so_and_gives_no_advice_about_the_graph() {
    postgres(|| {
        let active = active(&[]);
        start(&active, "T-1");
        // The standby reaches the server through a relay that the test cuts: for
        // it the server is down, while the shared server runs on.
        let mut relay = Relay::to(&active.database.url());
        let standby = Setup::new(test_graph("tickets"))
            .database_of(&active)
            .args(&KEEPALIVES)
            .args(&["--db", &relay.url])
            .start_standby();
        relay.cut();
        eventually(
            Duration::from_secs(20),
            "the standby says that it cannot read the database",
            || standby.report(),
            || {
                standby
                    .stderr()
                    .contains(stateous_daemon::serve::STANDBY_UNREAD_LINE)
            },
        );
        // One more check finds it down too, and says nothing new.
        std::thread::sleep(stateous_daemon::serve::STANDBY_CHECK_EVERY + Duration::from_secs(1));
        let stderr = standby.stderr();
        assert!(
            !stderr.contains("a takeover now would be refused")
                && !stderr.contains("serve the graph"),
            "{}",
            standby.report()
        );
        assert_eq!(
            stderr
                .matches(stateous_daemon::serve::STANDBY_UNREAD_LINE)
                .count(),
            1,
            "said once: {}",
            standby.report()
        );
        standby.get("/health").refused(503, "standby");
    });
}

/// A TCP relay to the Postgres server of a database URL, which [`Relay::cut`]
/// takes down: its connections end and new ones are refused.
struct Relay {
    /// The database's URL through the relay.
    url: String,
    down: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    fn to(url: &str) -> Relay {
        let at = url.find('@').expect("a user in the URL") + 1;
        let end = at + url[at..].find('/').expect("a database in the URL");
        let server = url[at..end].to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.set_nonblocking(true).expect("a listener");
        let port = listener.local_addr().expect("its address").port();
        let relayed = format!("{}127.0.0.1:{port}{}", &url[..at], &url[end..]);
        let down = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (stop, kept) = (Arc::clone(&down), Arc::clone(&streams));
        let accepting = std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                client.set_nonblocking(false).expect("a blocking stream");
                let Ok(upstream) = TcpStream::connect(&server) else {
                    continue;
                };
                let mut kept = kept.lock().unwrap();
                for (from, to) in [(&client, &upstream), (&upstream, &client)] {
                    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                kept.extend([client, upstream]);
            }
        });
        Relay {
            url: relayed,
            down,
            streams,
            accepting: Some(accepting),
        }
    }

    /// Refuse new connections from now on, and end every relayed one.
    fn cut(&mut self) {
        self.down.store(true, Ordering::SeqCst);
        // Its end drops the listener: a connection is refused from then on.
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
        for stream in self.streams.lock().unwrap().iter() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

#[test]
fn standby_is_refused_on_sqlite_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let graph = test_graph("tickets").display().to_string();
    let socket = dir.path().join("s.sock").display().to_string();
    let refused = run(
        dir.path(),
        &[
            "serve",
            &graph,
            "--db",
            "sqlite:///stateous.db",
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
            "--standby",
        ],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    assert!(
        refused
            .stderr
            .starts_with("error: --standby needs a Postgres database"),
        "{refused}"
    );
    assert!(!dir.path().join("stateous.db").exists(), "nothing was made");
}

#[test]
fn a_killed_active_is_replaced_by_the_standby_with_every_acknowledged_write_and_the_clock() {
    postgres(|| {
        let mut active = active(&["--lease", "2s"]);
        start(&active, "C-1");
        start(&active, "K-1");
        let standby = standby_of(&active);
        // A stream of writes; each acknowledged id is kept.
        let stop = Arc::new(AtomicBool::new(false));
        let authority = active.authority.clone();
        let writer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let token = format!("W-{i}");
                    let body = json!({"token": token, "context": {"repo": "r"}});
                    match try_post(&authority, "/tokens", &body) {
                        Ok(reply) if (200..300).contains(&reply.status) => acknowledged.push(token),
                        // Not acknowledged: the kill came first (or meanwhile).
                        _ => break,
                    }
                }
                acknowledged
            })
        };
        eventually(
            Duration::from_secs(20),
            "20 writes acknowledged",
            || active.report(),
            || active.count("SELECT count(*) FROM tokens WHERE token LIKE 'W-%'") >= 20,
        );
        // Just before the kill, so that only the new active's clock can end or fire
        // them: a claimed task (lease 2 s) whose supervisor is gone, and a fire with
        // an idempotency key that moves K-1 to `testing` (timeout 3 s).
        let claim = json!({"supervisor": "box-1", "states": ["coding"]});
        let granted = active.post("/tasks/claim", &claim).expect(200);
        assert_eq!(granted["token"], "C-1");
        let key = [("Idempotency-Key", "deliver-k-1")];
        let fired = active.request("POST", "/tokens/K-1/events/done", &key, b"");
        assert_eq!(fired.expect(200)["state"], "testing");
        let killed = Instant::now();
        active.signal(libc::SIGKILL);
        active.wait(Duration::from_secs(10));
        stop.store(true, Ordering::SeqCst);
        let acknowledged = writer.join().expect("the writer");
        assert!(acknowledged.len() >= 20, "{acknowledged:?}");
        wait_until_it_serves(&standby, Duration::from_secs(10));
        let took = killed.elapsed();
        assert!(took < Duration::from_secs(10), "took over after {took:?}");
        assert!(
            standby.stderr().contains(
                "standby: the database's serving lock was free; this control plane took the database"
            ),
            "{}",
            standby.report()
        );
        standby.get("/health").expect(200);
        for token in &acknowledged {
            standby.get(&format!("/tokens/{token}")).expect(200);
        }
        // The same fire sent again to the new active: a duplicate, applied once.
        let again = standby.request("POST", "/tokens/K-1/events/done", &key, b"");
        assert_eq!(again.expect(200)["duplicate"], true, "{again}");
        assert_eq!(
            standby
                .count("SELECT count(*) FROM ledger WHERE token = 'K-1' AND key = 'deliver-k-1'"),
            1
        );
        // The clock runs: the lease of box-1 ends, and K-1's timeout fires.
        eventually(
            Duration::from_secs(15),
            "the lease of box-1 ended",
            || standby.report(),
            || {
                standby.count(
                    "SELECT count(*) FROM ledger WHERE token = 'C-1' \
                     AND data LIKE '%box-1 stopped answering%'",
                ) == 1
            },
        );
        eventually(
            Duration::from_secs(15),
            "K-1's timeout fired",
            || standby.report(),
            || standby.get("/tokens/K-1").expect(200)["state"] == "coding",
        );
        start(&standby, "after-takeover");
    });
}

#[test]
fn a_stopped_active_keeps_the_database_and_once_its_sessions_end_commits_nothing_and_exits_1() {
    postgres(|| {
        // A long tick: after SIGCONT only its requests can find the loss.
        let mut active = active(&["--tick", "30s"]);
        start(&active, "S-1");
        let standby = standby_of(&active);
        active.signal(libc::SIGSTOP);
        // Its lock's session is alive: the standby must not take over.
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            standby.get("/health").refused(503, "standby");
            std::thread::sleep(Duration::from_millis(250));
        }
        assert!(
            !standby.stderr().contains("serving on "),
            "{}",
            standby.report()
        );
        // An operator ends the stopped one's sessions, found by their name.
        assert!(
            active.end_sessions() > 0,
            "the stopped control plane had sessions"
        );
        wait_until_it_serves(&standby, Duration::from_secs(10));
        standby.get("/tokens/S-1").expect(200);
        let entries = standby.count("SELECT count(*) FROM ledger");
        // The stopped one goes on: it commits nothing, answers not_serving, exits 1.
        active.signal(libc::SIGCONT);
        let body = json!({"token": "S-2", "context": {"repo": "r"}});
        active.post("/tokens", &body).refused(503, "not_serving");
        let status = active.wait(Duration::from_secs(10));
        assert_eq!(status.code(), Some(1), "{}", active.report());
        assert!(
            active.stderr().ends_with(&format!(
                "error: {}\n",
                stateous_daemon::serve::LOST_SENTENCE
            )),
            "{}",
            active.report()
        );
        assert_eq!(standby.count("SELECT count(*) FROM ledger"), entries);
        assert!(standby
            .rows("SELECT 1 FROM tokens WHERE token = 'S-2'")
            .is_empty());
        start(&standby, "S-3");
    });
}

#[test]
fn a_stopped_active_that_lost_the_database_exits_1_even_with_a_sigterm_pending() {
    postgres(|| {
        // A long tick: the clock does not tick after SIGCONT, so only the stop
        // path can find the loss; the SIGTERM is what wakes it.
        let mut active = active(&["--tick", "30s"]);
        start(&active, "S-1");
        let standby = standby_of(&active);
        active.signal(libc::SIGSTOP);
        assert!(
            active.end_sessions() > 0,
            "the stopped control plane had sessions"
        );
        wait_until_it_serves(&standby, Duration::from_secs(10));
        // A deploy's stop reaches it while it is still stopped.
        active.signal(libc::SIGTERM);
        std::thread::sleep(Duration::from_millis(200));
        active.signal(libc::SIGCONT);
        let status = active.wait(Duration::from_secs(20));
        let stderr = active.stderr();
        assert_eq!(status.code(), Some(1), "{}", active.report());
        assert!(
            stderr.ends_with(&format!(
                "error: {}\n",
                stateous_daemon::serve::LOST_SENTENCE
            )),
            "{}",
            active.report()
        );
        assert!(!stderr.contains("\nstopped\n"), "{}", active.report());
        start(&standby, "S-2");
    });
}

#[test]
fn a_standby_whose_connection_breaks_connects_again_and_still_takes_over() {
    postgres(|| {
        let mut active = active(&[]);
        let standby = standby_of(&active);
        // Its health answers before its waiting session has surely opened (on a
        // loaded machine, a moment later): end it once it is there.
        let ended = std::cell::Cell::new(0);
        eventually(
            Duration::from_secs(10),
            "the standby's waiting session",
            || standby.report(),
            || {
                ended.set(standby.end_sessions());
                ended.get() > 0
            },
        );
        assert_eq!(ended.get(), 1, "a standby waits on one session");
        eventually(
            Duration::from_secs(10),
            "the standby connected again",
            || standby.report(),
            || {
                standby
                    .stderr()
                    .contains("standby: reached the database again")
            },
        );
        assert!(
            standby
                .stderr()
                .contains("standby: lost the connection to the database"),
            "{}",
            standby.report()
        );
        standby.get("/health").refused(503, "standby");
        active.signal(libc::SIGKILL);
        active.wait(Duration::from_secs(10));
        wait_until_it_serves(&standby, Duration::from_secs(10));
        start(&standby, "T-1");
    });
}

#[test]
fn standby_is_refused_with_supervise_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let graph = test_graph("tickets").display().to_string();
    let folder = dir.path().display().to_string();
    let refused = run(
        dir.path(),
        &[
            "serve",
            &graph,
            "--db",
            "postgresql://u@127.0.0.1:1/none",
            "--standby",
            "--supervise",
            &folder,
        ],
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert_eq!(
        refused.stderr,
        format!("error: {}\n", stateous_daemon::serve::STANDBY_NO_COMPANION),
        "{refused}"
    );
}
