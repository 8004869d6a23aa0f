//! Black-box, Postgres (skipped unless `STATEOUS_TEST_POSTGRES` names a server): a hot
//! standby end to end. An active control plane and its standby serve one database; two
//! supervisors, a stream of token starts and fires (sent through the client) and the
//! TUI in tmux (when tmux is there) are all given both addresses. The active is then
//! killed (SIGKILL) under load, or stopped (SIGSTOP) and its sessions ended by an
//! operator; the standby serves, every token completes, nothing acknowledged is lost,
//! no idempotency key applies twice, both supervisors' outboxes drain, and the TUI
//! shows the switch.
//!
//! While the active is stopped, its port still takes connections: a request sent
//! to the list waits there for the client's timeout (2 s) and ends with "no
//! answer", applied nowhere; the standby answers 503 `standby` until the stopped
//! one's sessions end. Once it runs again, the stopped one commits nothing (the
//! requests that waited for it neither) and exits 1.
//!
//! The graph is `sdlc`: both supervisors run `coding` (a note, then `done`); the
//! stream fires `passed` at the tokens in `testing`, half of them with an
//! idempotency key.

use crate::harness;
use crate::supervising;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use harness::tmux::{have_tmux, row, Tmux};
use harness::{asset_graph, eventually, Backend, Daemon, Setup, KEEPALIVES};
use serde_json::{json, Map, Value};
use stateous_client::{Client, ClientError, TokenQuery};
use supervising::{folder_named, outbox, set_urls, Supervise};

/// How many tokens the stream starts in all.
const TOKENS: usize = 40;
/// How long the supervisors have, once the standby serves, to move there (a
/// stopped active's clients too: they must not wait for it).
const MOVES_WITHIN: Duration = Duration::from_secs(15);
/// How long the stream has, once told to finish, to start the rest of its tokens
/// and see each completed (the machine may be shared and slow).
const STREAM_ENDS_WITHIN: Duration = Duration::from_secs(30);
/// How long a client of the stream waits for an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The routine of `coding` of the supervisor named `name`.
fn coding(name: &str) -> String {
    format!("stateous ctx note 'coded by {name}'\nstateous ctx emit done")
}

/// An active control plane of `sdlc` on a fresh database and its standby, with
/// short keepalives, leases and ticks.
fn pair() -> (Daemon, Daemon) {
    let flags = ["--lease", "2s", "--tick", "200ms"];
    let active = Setup::new(asset_graph("sdlc"))
        .args(&KEEPALIVES)
        .args(&flags)
        .start();
    let standby = Setup::new(asset_graph("sdlc"))
        .database_of(&active)
        .args(&KEEPALIVES)
        .args(&flags)
        .start_standby();
    (active, standby)
}

/// Two supervisors, `sup-a` and `sup-b`, each running `coding`, given `url:` the
/// active's address then the standby's, with a request timeout of 1 s.
fn supervisors(active: &Daemon, standby: &Daemon) -> Vec<(Supervise, PathBuf)> {
    ["sup-a", "sup-b"]
        .iter()
        .map(|name| {
            let folder = folder_named(active, name, name, &[("coding", &coding(name))]);
            set_urls(&folder, &[&active.url, &standby.url]);
            let config = folder.join("stateous.yaml");
            let text = std::fs::read_to_string(&config).expect("stateous.yaml");
            std::fs::write(&config, text + "request_timeout: 1s\n").expect("written");
            let sup = Supervise::start(&folder);
            sup.wait_for_line(&format!("the control plane is {}", active.url));
            (sup, folder)
        })
        .collect()
}

/// What the stream did: every answer with a 2xx status, and the errors.
#[derive(Debug, Default)]
struct Acknowledged {
    /// The tokens whose start was answered 2xx.
    started: Vec<String>,
    /// `passed` fires answered 2xx (first time or duplicate): token and key.
    fired: Vec<(String, Option<String>)>,
    /// Each failed request: what it was and the client's error.
    errors: Vec<String>,
}

/// The stream of token starts and fires, on a thread of its own.
struct Stream {
    /// Set: the stream ends once it started all its tokens and each completed.
    finish: Arc<AtomicBool>,
    /// What was acknowledged so far.
    seen: Arc<Mutex<Acknowledged>>,
    thread: Option<JoinHandle<()>>,
}

impl Stream {
    /// Start `TOKENS` tokens (`E-0`, `E-1`, ...) one after the other through a
    /// client of `list`, and fire `passed` at each that is in `testing`: with the
    /// key `pass-E-n` for even `n`, without a key for odd. A start that fails is
    /// sent again (a token that exists comes back unchanged), a fire only while
    /// its token is still in `testing` (so one without a key applies once).
    fn start(list: &str) -> Stream {
        let finish = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Acknowledged::default()));
        let client = Client::with_timeout(list, CLIENT_TIMEOUT).expect("a client");
        let thread = {
            let (finish, seen) = (finish.clone(), seen.clone());
            std::thread::spawn(move || {
                harness::block_on(stream(client, finish, seen));
            })
        };
        Stream {
            finish,
            seen,
            thread: Some(thread),
        }
    }

    fn started(&self) -> usize {
        self.seen.lock().expect("the stream's record").started.len()
    }

    fn fired(&self) -> usize {
        self.seen.lock().expect("the stream's record").fired.len()
    }

    /// Wait (at most `within`) until the stream started all its tokens and each
    /// completed; what was acknowledged.
    fn finish(mut self, within: Duration) -> Acknowledged {
        self.finish.store(true, Ordering::SeqCst);
        let thread = self.thread.take().expect("a running stream");
        let deadline = Instant::now() + within;
        while !thread.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the stream did not end: {:?}",
                self.seen.lock().expect("the stream's record")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        thread.join().expect("the stream");
        std::mem::take(&mut *self.seen.lock().expect("the stream's record"))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.finish.store(true, Ordering::SeqCst);
    }
}

fn context() -> Map<String, Value> {
    let mut context = Map::new();
    context.insert("repo".into(), json!("r"));
    context
}

fn key_of(token: &str) -> Option<String> {
    let n: usize = token.trim_start_matches("E-").parse().ok()?;
    n.is_multiple_of(2).then(|| format!("pass-{token}"))
}

async fn stream(client: Client, finish: Arc<AtomicBool>, seen: Arc<Mutex<Acknowledged>>) {
    let payload = json!({"passed": 1, "failed": 0});
    let payload = payload.as_object().expect("an object").clone();
    let record = |f: &dyn Fn(&mut Acknowledged)| f(&mut seen.lock().expect("the record"));
    let mut next = 0;
    let in_testing = TokenQuery {
        state: Some("testing".into()),
        status: Some("active".into()),
        limit: Some(1000),
        ..TokenQuery::default()
    };
    let active = TokenQuery {
        status: Some("active".into()),
        limit: Some(1000),
        ..TokenQuery::default()
    };
    let note = |what: String, error: ClientError| {
        record(&|a| a.errors.push(format!("{what}: {error}")));
    };
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if next < TOKENS {
            let token = format!("E-{next}");
            match client.start(&token, &context()).await {
                Ok(_) => {
                    record(&|a| a.started.push(token.clone()));
                    next += 1;
                }
                Err(error) => note(format!("start {token}"), error),
            }
        }
        let waiting = match client.tokens(&in_testing).await {
            Ok(tokens) => tokens,
            Err(error) => {
                note("list testing".into(), error);
                continue;
            }
        };
        for token in waiting {
            let key = key_of(&token.token);
            let fired = client
                .fire(&token.token, "passed", Some(&payload), key.as_deref())
                .await;
            match fired {
                Ok(_) => record(&|a| a.fired.push((token.token.clone(), key.clone()))),
                Err(error) => note(format!("fire {}", token.token), error),
            }
        }
        if finish.load(Ordering::SeqCst) && next == TOKENS {
            if let Ok(left) = client.tokens(&active).await {
                if left.is_empty() {
                    return;
                }
            }
        }
    }
}

/// The supervisor named `name` as `serving` last heard of it (`GET /supervisors`).
fn seen(serving: &Daemon, name: &str) -> Value {
    let list = serving.get("/supervisors").expect(200);
    list["supervisors"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The supervisor's outbox drained: `serving` hears it has nothing waiting and
/// nothing running; stopped (SIGTERM, exit 0), its `.stateous/outbox.db` holds
/// no message.
fn drained(serving: &Daemon, name: &str, sup: &mut Supervise, folder: &std::path::Path) {
    eventually(
        Duration::from_secs(10),
        &format!("{name}'s outbox drained, heard by {}", serving.url),
        || format!("{}\n{}", seen(serving, name), sup.report()),
        || {
            let one = seen(serving, name);
            one["outbox"] == 0 && one["running"] == 0
        },
    );
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
    assert_eq!(outbox(folder), [], "{}", sup.report());
}

/// The checks after a takeover, on `serving` (the standby now): every token
/// completed, every acknowledged change there, each key once (sent again now to
/// `list`: a duplicate), both supervisors did work and their outboxes drained.
fn check_after(
    serving: &Daemon,
    list: &str,
    acknowledged: &Acknowledged,
    sups: &mut [(Supervise, PathBuf)],
) {
    let started: BTreeSet<&String> = acknowledged.started.iter().collect();
    assert_eq!(started.len(), TOKENS, "{acknowledged:?}");
    for token in &started {
        let view = serving.get(&format!("/tokens/{token}")).expect(200);
        assert_eq!(view["status"], "completed", "{token}: {view}");
    }
    let not_completed = serving.count("SELECT count(*) FROM tokens WHERE status <> 'completed'");
    assert_eq!(not_completed, 0);
    // Each acknowledged fire is in the ledger; a keyed one once, under its key.
    for (token, key) in &acknowledged.fired {
        let passed = serving.count(&format!(
            "SELECT count(*) FROM ledger WHERE token = '{token}' AND kind = 'event_accepted' \
             AND data LIKE '%\"passed\"%'"
        ));
        assert_eq!(passed, 1, "{token}: passed once");
        if let Some(key) = key {
            let rows = serving.count(&format!(
                "SELECT count(*) FROM ledger WHERE token = '{token}' AND key = '{key}'"
            ));
            assert_eq!(rows, 1, "{token}: the key {key} once");
        }
    }
    // The keys sent again through a client of both addresses (the old active's
    // first: killed, or stopped), each until it is answered, as a caller must
    // after an error that may hide an applied request: duplicates, one row each.
    let client = Client::with_timeout(list, CLIENT_TIMEOUT).expect("a client");
    let payload = json!({"passed": 1, "failed": 0});
    let payload = payload.as_object().expect("an object").clone();
    let keyed: Vec<(String, String)> = started
        .iter()
        .filter_map(|t| key_of(t).map(|k| (t.to_string(), k)))
        .collect();
    assert_eq!(keyed.len(), TOKENS / 2);
    harness::block_on(async {
        for (token, key) in &keyed {
            let mut tries = 0;
            let again = loop {
                tries += 1;
                match client
                    .fire(token, "passed", Some(&payload), Some(key))
                    .await
                {
                    Ok(again) => break again,
                    Err(error) if error.is_retryable() && tries < 5 => continue,
                    Err(error) => panic!("{token} with {key}: {error}"),
                }
            };
            assert!(again.duplicate, "{token} with {key}: {again:?}");
        }
        assert_eq!(client.url(), serving.url);
    });
    for (token, key) in &keyed {
        let rows = serving.count(&format!(
            "SELECT count(*) FROM ledger WHERE token = '{token}' AND key = '{key}'"
        ));
        assert_eq!(
            rows, 1,
            "{token}: the key {key} once after it was sent again"
        );
    }
    for (sup, folder) in sups {
        let name = folder.file_name().and_then(|n| n.to_str()).expect("a name");
        sup.wait_for_line(&format!(
            "connected to the control plane at {}",
            serving.url
        ));
        drained(serving, name, sup, folder);
        let coded = serving.count(&format!(
            "SELECT count(*) FROM ledger WHERE kind = 'note' AND data LIKE '%coded by {name}%'"
        ));
        assert!(coded > 0, "{name} ran no routine\n{}", sup.report());
    }
}

/// `stateous tui --url ACTIVE,STANDBY` in tmux (when tmux is there; `name`
/// makes its tmux server this test's own), once it
/// shows the active's address, `(1 of 2)`, and its live stream.
fn tui(name: &str, active: &Daemon, list: &str) -> Option<Tmux> {
    if !have_tmux() {
        return None;
    }
    let tmux = Tmux::start(name, &format!("{} tui --url {list}", harness::binary()));
    tmux.wait_for("the TUI live at the active", |s| {
        s.contains("connected, live")
            && s.lines()
                .next()
                .is_some_and(|l| l.contains(&format!("{} (1 of 2)", active.url)))
    });
    Some(tmux)
}

/// Wait until the TUI's header names the standby, `(2 of 2)`, and says it is
/// connected there. The header, not the status line, is read: the status line's
/// "connected to URL" is replaced by the next message (a stream that reconnects
/// says "connected again"), so under load it can be gone before the screen is read.
fn switched(tmux: &Tmux, standby: &Daemon) {
    let screen = tmux.wait_for("the header at the standby, (2 of 2), connected", |s| {
        s.lines().next().is_some_and(|l| {
            l.contains(&format!("{} (2 of 2)", standby.url)) && l.contains(" connected")
        })
    });
    eprintln!("the TUI after the switch:\n{screen}");
}

fn a_killed_active_under_load_is_replaced_by_the_standby_and_every_client_goes_on() {
    let (mut active, standby) = pair();
    let list = format!("{},{}", active.url, standby.url);
    let mut sups = supervisors(&active, &standby);
    let tmux = tui("standby-killed", &active, &list);
    let stream = Stream::start(&list);
    eventually(
        Duration::from_secs(20),
        "15 tokens started and 5 fired",
        || active.report(),
        || stream.started() >= 15 && stream.fired() >= 5,
    );
    let killed = Instant::now();
    active.signal(libc::SIGKILL);
    active.wait(Duration::from_secs(10));
    standby.wait_for_line("serving on ", Duration::from_secs(10));
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(10), "took over after {took:?}");
    let at_kill = stream.started();
    eventually(
        Duration::from_secs(20),
        "tokens started after the takeover",
        || standby.report(),
        || stream.started() >= at_kill + 5,
    );
    let acknowledged = stream.finish(STREAM_ENDS_WITHIN);
    eprintln!(
        "the stream: {} started, {} fired, {} errors: {:#?}",
        acknowledged.started.len(),
        acknowledged.fired.len(),
        acknowledged.errors.len(),
        acknowledged.errors
    );
    if let Some(tmux) = tmux {
        switched(&tmux, &standby);
        // Changes after the switch show: a token started at the standby, at
        // the top of the table, coded by a supervisor, then completed.
        standby
            .post(
                "/tokens",
                &json!({"token": "LATE-1", "context": {"repo": "r"}}),
            )
            .expect(201);
        tmux.keys("g");
        tmux.wait_for("LATE-1 in testing", |s| {
            row(s, "LATE-1").is_some_and(|r| r.contains("testing") && r.contains("active"))
        });
        let passed = json!({"payload": {"passed": 1, "failed": 0}});
        standby
            .post("/tokens/LATE-1/events/passed", &passed)
            .expect(200);
        tmux.wait_for("LATE-1 completed", |s| {
            row(s, "LATE-1").is_some_and(|r| r.contains("completed"))
        });
        tmux.keys("q");
    }
    check_after(&standby, &list, &acknowledged, &mut sups);
}

#[test]
fn a_killed_active_under_load_is_replaced_by_the_standby_and_every_client_goes_on_postgres() {
    harness::on(
        Backend::Postgres,
        a_killed_active_under_load_is_replaced_by_the_standby_and_every_client_goes_on,
    );
}

/// During the stop, what the test expects of a client of both addresses: the
/// stopped active still accepts connections (the kernel's backlog), so a
/// request waits there for its answer until the client's timeout, ends with
/// "no answer" (`TransportError::Timeout`, naming the active), and is not
/// applied. The client does not send that request on (it may have been
/// applied); its next request asks the standby first, which answers 503
/// `standby` while it waits, so that one ends at the stopped active too. Once
/// the standby serves, the next request stays there.
fn a_stopped_active_keeps_the_database_until_its_sessions_end_and_then_commits_nothing() {
    let (mut active, standby) = pair();
    let list = format!("{},{}", active.url, standby.url);
    let mut sups = supervisors(&active, &standby);
    let tmux = tui("standby-stopped", &active, &list);
    let stream = Stream::start(&list);
    eventually(
        Duration::from_secs(20),
        "10 tokens started and 3 fired",
        || active.report(),
        || stream.started() >= 10 && stream.fired() >= 3,
    );
    active.signal(libc::SIGSTOP);
    // Whatever was in flight settles; from here on nothing is applied.
    std::thread::sleep(Duration::from_millis(300));
    let entries = standby.count("SELECT count(*) FROM ledger");
    let probe = Client::with_timeout(&list, CLIENT_TIMEOUT).expect("a client");
    let until = Instant::now() + Duration::from_secs(3);
    let mut probes = Vec::new();
    while Instant::now() < until {
        standby.get("/health").refused(503, "standby");
        let token = format!("P-{}", probes.len());
        let sent = harness::block_on(probe.start(&token, &context()));
        match sent {
            Err(ClientError::Unreachable { url, source }) => {
                assert_eq!(url, active.url, "{source}");
                assert!(
                    matches!(source, stateous_client::TransportError::Timeout(_)),
                    "{source}"
                );
            }
            other => panic!("{token} during the stop: {other:?}"),
        }
        probes.push(token);
    }
    assert!(
        !standby.stderr().contains("serving on "),
        "{}",
        standby.report()
    );
    assert_eq!(standby.count("SELECT count(*) FROM ledger"), entries);
    // An operator ends the stopped one's sessions: the standby takes over.
    assert!(active.end_sessions() > 0, "the stopped active had sessions");
    standby.wait_for_line("serving on ", Duration::from_secs(10));
    for (sup, _) in &sups {
        let connected = format!("connected to the control plane at {}", standby.url);
        eventually(
            MOVES_WITHIN,
            "the supervisor moved to the standby",
            || sup.report(),
            || sup.stderr().contains(&connected),
        );
    }
    let acknowledged = stream.finish(STREAM_ENDS_WITHIN);
    eprintln!(
        "the stream: {} started, {} fired, {} errors: {:#?}",
        acknowledged.started.len(),
        acknowledged.fired.len(),
        acknowledged.errors.len(),
        acknowledged.errors
    );
    if let Some(tmux) = tmux {
        switched(&tmux, &standby);
        tmux.keys("q");
    }
    check_after(&standby, &list, &acknowledged, &mut sups);
    // The stopped one goes on: it commits nothing of what waited for it, and
    // exits 1.
    let entries = standby.count("SELECT count(*) FROM ledger");
    active.signal(libc::SIGCONT);
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
    assert_eq!(
        standby.count("SELECT count(*) FROM tokens WHERE token LIKE 'P-%'"),
        0,
        "the probes sent during the stop: {probes:?}"
    );
    standby
        .post(
            "/tokens",
            &json!({"token": "AFTER-1", "context": {"repo": "r"}}),
        )
        .expect(201);
}

#[test]
fn a_stopped_active_keeps_the_database_until_its_sessions_end_and_then_commits_nothing_postgres() {
    harness::on(
        Backend::Postgres,
        a_stopped_active_keeps_the_database_until_its_sessions_end_and_then_commits_nothing,
    );
}
