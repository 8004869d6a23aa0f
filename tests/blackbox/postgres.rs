//! Black-box, Postgres only (skipped unless `STATEOUS_TEST_POSTGRES` names a server):
//! the time limits and the hold on the database that `docs/how-to/use-postgres.md`
//! describes: a token held by another session answers 503 `database_busy` after the
//! lock limit while other tokens move; a control plane whose lock connection ends
//! answers `not_serving`, commits nothing more, and exits 1; an unreachable server at
//! start ends `serve` within about the connect timeout.

use crate::harness;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use harness::{run, test_graph, Backend, Daemon, Setup, Timed};
use serde_json::json;

fn start(daemon: &Daemon, token: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": token, "context": {"repo": "acme/api"}}),
        )
        .expect(201);
}

/// A session of its own on the daemon's database.
fn session(daemon: &Daemon) -> postgres::Client {
    let url = daemon.database.url();
    postgres::Client::connect(&url, postgres::NoTls).expect("a session")
}

fn postgres(test: fn()) {
    harness::on(Backend::Postgres, test);
}

#[test]
fn a_token_held_by_another_session_answers_database_busy_while_other_tokens_move() {
    postgres(|| {
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--lock-timeout", "1s"])
            .start();
        start(&daemon, "T-1");
        start(&daemon, "T-2");
        let mut other = session(&daemon);
        let mut held = other.transaction().expect("a transaction");
        held.query("SELECT 1 FROM tokens WHERE token = 'T-1' FOR UPDATE", &[])
            .expect("the row locked");
        let began = Instant::now();
        let key = [("Idempotency-Key", "delivery-1")];
        let refused = daemon.request("POST", "/tokens/T-1/events/stuck", &key, b"");
        let waited = began.elapsed();
        assert_eq!(refused.status, 503, "{refused}");
        assert_eq!(refused.json()["code"], "database_busy");
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(6),
            "answered after {waited:?}"
        );
        // Other tokens move meanwhile.
        daemon.post_empty("/tokens/T-2/pause").expect(200);
        held.rollback().expect("the lock given back");
        // The refused request changed nothing and burned no key: sent again, it applies.
        let history = daemon.get("/tokens/T-1/history").expect(200);
        assert!(!history.to_string().contains("delivery-1"), "{history}");
        let applied = daemon.request("POST", "/tokens/T-1/events/stuck", &key, b"");
        assert_eq!(applied.status, 200, "{applied}");
        assert_eq!(applied.json()["status"], "completed");
        assert!(applied.json().get("duplicate").is_none(), "{applied}");
    });
}

/// The writer runs the requests that wait in one transaction: a request whose
/// token another session holds must not hold up the requests batched with it or
/// after it. While one waits out the lock limit, starts and fires of other tokens,
/// sent side by side, are each answered at once; each is in the database.
#[test]
fn while_a_held_token_waits_out_the_lock_limit_requests_sent_beside_it_are_answered_at_once() {
    postgres(|| {
        let daemon = Setup::new(test_graph("tickets"))
            .args(&["--lock-timeout", "2s"])
            .start();
        start(&daemon, "T-1");
        let mut other = session(&daemon);
        let mut held = other.transaction().expect("a transaction");
        held.query("SELECT 1 FROM tokens WHERE token = 'T-1' FOR UPDATE", &[])
            .expect("the row locked");
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| {
                let began = Instant::now();
                let reply = daemon.post_empty("/tokens/T-1/events/stuck");
                (reply, began.elapsed())
            });
            // The held request is in the writer's hands first.
            std::thread::sleep(Duration::from_millis(100));
            let beside: Vec<_> = (0..16)
                .map(|n| {
                    let daemon = &daemon;
                    scope.spawn(move || {
                        let token = format!("B-{n}");
                        let began = Instant::now();
                        start(daemon, &token);
                        daemon
                            .post_empty(&format!("/tokens/{token}/pause"))
                            .expect(200);
                        began.elapsed()
                    })
                })
                .collect();
            for request in beside {
                let took = request.join().expect("a request beside");
                assert!(
                    took < Duration::from_millis(1500),
                    "answered after {took:?}"
                );
            }
            let (reply, waited) = waiting.join().expect("the held request");
            assert_eq!(reply.status, 503, "{reply}");
            assert_eq!(reply.json()["code"], "database_busy");
            assert!(
                waited >= Duration::from_millis(1900),
                "answered after {waited:?}"
            );
        });
        held.rollback().expect("the lock given back");
        assert_eq!(
            daemon.count("SELECT count(*) FROM tokens WHERE status = 'paused'"),
            16
        );
        // The held token was never changed and moves on now.
        daemon.post_empty("/tokens/T-1/events/stuck").expect(200);
    });
}

/// The rows of `pg_locks` that are the serving lock of this test's database: the
/// one session-level exclusive advisory lock granted there.
const SERVING_LOCK: &str = "locktype = 'advisory' AND mode = 'ExclusiveLock' AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";

#[test]
fn a_control_plane_whose_lock_connection_ends_commits_nothing_more_and_exits_1() {
    postgres(|| {
        let mut daemon = Daemon::tickets();
        start(&daemon, "T-1");
        // The serving lock is the one session-level exclusive advisory lock.
        let mut other = session(&daemon);
        let ended = other
            .query(
                &format!("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE {SERVING_LOCK}"),
                &[],
            )
            .expect("the lock's session ended");
        assert_eq!(ended.len(), 1, "one session held the lock");
        // `pg_terminate_backend` only signals the session: the lock is lost once the
        // session has ended (a commit before that still held it).
        let lock_gone = Instant::now() + Duration::from_secs(10);
        while !other
            .query(&format!("SELECT 1 FROM pg_locks WHERE {SERVING_LOCK}"), &[])
            .expect("pg_locks reads")
            .is_empty()
        {
            assert!(Instant::now() < lock_gone, "the lock's session did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Right after the loss: nothing commits. A start is refused 503, or finds
        // the daemon gone already (its own check of the lock may come first when
        // this thread is slow: a busy machine).
        let body = json!({"token": "T-2", "context": {"repo": "r"}});
        let answer = TcpStream::connect(&daemon.authority).and_then(|stream| {
            harness::exchange(
                stream.timed(),
                "POST",
                "/tokens",
                &[("content-type", "application/json")],
                body.to_string().as_bytes(),
            )
        });
        if let Ok(refused) = answer {
            assert_eq!(refused.status, 503, "{refused}");
        }
        let status = daemon.wait(Duration::from_secs(20));
        assert_eq!(status.code(), Some(1), "{}", daemon.report());
        assert!(daemon
            .rows("SELECT 1 FROM tokens WHERE token = 'T-2'")
            .is_empty());
        assert!(
            daemon.stderr().contains("hold on it ended"),
            "{}",
            daemon.report()
        );
    });
}

#[test]
fn a_second_control_plane_starts_at_once_after_the_first_is_killed() {
    postgres(|| {
        let mut daemon = Daemon::tickets();
        start(&daemon, "T-1");
        let url = daemon.database.url();
        let socket = daemon.dir.path().join("second.sock").display().to_string();
        let graph = test_graph("tickets").display().to_string();
        let args = [
            "serve",
            &graph,
            "--db",
            &url,
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
        ];
        let refused = run(daemon.dir.path(), &args);
        assert_eq!(refused.code(), 1, "{refused}");
        assert!(
            refused
                .stderr
                .contains("another control plane serves this database ("),
            "{refused}"
        );
        let began = Instant::now();
        daemon.crash_and_restart();
        assert!(began.elapsed() < Duration::from_secs(10));
        assert_eq!(daemon.get("/tokens/T-1").expect(200)["state"], "coding");
    });
}

#[test]
fn an_unreachable_server_at_start_ends_serve_within_the_connect_timeout() {
    postgres(|| {
        let dir = tempfile::tempdir().unwrap();
        let graph = test_graph("tickets").display().to_string();
        let socket = dir.path().join("s.sock").display().to_string();
        // A documentation address (TEST-NET-1): nothing answers, the connect waits.
        let db = "postgresql://u:secret@192.0.2.1:5432/none";
        let began = Instant::now();
        let refused = run(
            dir.path(),
            &[
                "serve",
                &graph,
                "--db",
                db,
                "--listen",
                "127.0.0.1:0",
                "--socket",
                &socket,
                "--connect-timeout",
                "2s",
            ],
        );
        let took = began.elapsed();
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
        assert!(
            refused
                .stderr
                .starts_with("error: cannot reach the database postgresql://u:***@"),
            "{refused}"
        );
        assert!(took < Duration::from_secs(8), "took {took:?}");
    });
}

/// A server that answers that the database does not exist was reported as "cannot
/// reach the database", which sends the operator looking for an outage: the
/// server's answer is the sentence, in one `error:` line with exit 1.
#[test]
fn a_database_the_server_says_does_not_exist_is_named_as_such() {
    postgres(|| {
        let server = std::env::var("STATEOUS_TEST_POSTGRES").expect("a Postgres server");
        let base = server
            .rsplit_once('/')
            .map_or(server.as_str(), |(base, _)| base);
        let db = format!("{base}/does_not_exist_db");
        let dir = tempfile::tempdir().unwrap();
        let graph = test_graph("tickets").display().to_string();
        let socket = dir.path().join("s.sock").display().to_string();
        let refused = run(
            dir.path(),
            &[
                "serve",
                &graph,
                "--db",
                &db,
                "--listen",
                "127.0.0.1:0",
                "--socket",
                &socket,
            ],
        );
        assert_eq!(refused.code(), 1, "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
        assert!(
            refused
                .stderr
                .starts_with("error: the server of postgresql://")
                && refused.stderr.contains(
                    "/does_not_exist_db answered that the database does not exist \
                     (database \"does_not_exist_db\" does not exist); create it first"
                ),
            "{refused}"
        );
        assert!(!refused.stderr.contains("cannot reach"), "{refused}");
    });
}

/// A Postgres whose settings could lose an acknowledged change on a power loss
/// (`synchronous_commit = off` here; `fsync` and `full_page_writes` are the
/// server's own, which a test may not change) is served with a warning naming the
/// setting; with the default settings there is none.
#[test]
fn serve_warns_of_postgres_settings_that_could_lose_acknowledged_changes() {
    postgres(|| {
        let mut daemon = Daemon::tickets();
        assert!(!daemon.stderr().contains("is off"), "{}", daemon.report());
        daemon.database.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', \
             current_database()); END $$",
        );
        daemon.crash_and_restart();
        daemon.get("/health").expect(200);
        let said = daemon.stderr();
        assert!(
            said.contains("the Postgres setting synchronous_commit is off")
                && said.contains("docs/how-to/use-postgres.md"),
            "{}",
            daemon.report()
        );
        start(&daemon, "T-1");
    });
}
