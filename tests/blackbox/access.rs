//! Access keys and roles (`docs/reference/http.md`, "Access"; `docs/guarantees.md`,
//! "Access"): the first key made over the Unix socket, TCP closed from then on but
//! for `GET /health`, each role allowed and refused on a sample of routes, a
//! revoke that holds from the next request, supervise keys bound to their
//! supervisor's name and tasks, secrets absent from the database, and a supervisor
//! that runs a token end to end on its own key.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness;
use crate::supervising::{folder_named, Supervise};
use harness::{asset_graph, run, Backend, Daemon, Reply, Setup};

/// `stateous access ARGS --url unix://SOCKET`: the secret for `add`.
pub(crate) fn access(daemon: &Daemon, args: &[&str]) -> String {
    let url = format!("unix://{}", daemon.socket.display());
    let mut all: Vec<&str> = vec!["access"];
    all.extend(args);
    all.extend(["--url", &url]);
    let done = run(daemon.dir.path(), &all);
    assert_eq!(done.code(), 0, "{done}");
    done.stdout
}

/// Make a key over the socket; its secret. `--yes`: a first key is made even
/// though the test's own requests came over TCP without one (the question is
/// `approvals.rs`'s).
pub(crate) fn add_key(daemon: &Daemon, name: &str, role: &str, supervisor: Option<&str>) -> String {
    let mut args = vec!["add", name, "--role", role, "--yes"];
    if let Some(supervisor) = supervisor {
        args.extend(["--supervisor", supervisor]);
    }
    let out = access(daemon, &args);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "the secret alone on stdout: {out:?}");
    assert!(lines[0].starts_with("stateous_key_"), "{out}");
    assert_eq!(lines[0].len(), "stateous_key_".len() + 64, "{out}");
    lines[0].to_string()
}

/// A request over TCP with `secret` as its bearer key.
fn with_key(daemon: &Daemon, secret: &str, method: &str, path: &str, body: &Value) -> Reply {
    let bearer = format!("Bearer {secret}");
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    daemon.request(
        method,
        path,
        &[
            ("authorization", &bearer),
            ("content-type", "application/json"),
        ],
        text.as_bytes(),
    )
}

/// A request over the Unix socket, as its own user: admin.
fn local(daemon: &Daemon, method: &str, path: &str, body: &Value) -> Reply {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    daemon.request_unix(
        method,
        path,
        &[("content-type", "application/json")],
        text.as_bytes(),
    )
}

fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc")).start()
}

fn start(daemon: &Daemon, id: &str) {
    let body = json!({"token": id, "context": {"repo": "acme"}});
    local(daemon, "POST", "/tokens", &body).expect(201);
}

fn tcp_is_open_until_the_first_key_and_then_needs_one_but_for_health() {
    let daemon = sdlc();
    daemon.get("/tokens").expect(200);
    let admin = add_key(&daemon, "root-key", "admin", None);
    let sentence = daemon.get("/tokens").refused(401, "unauthenticated");
    assert!(sentence.contains("Authorization: Bearer"), "{sentence}");
    daemon.get("/health").expect(200);
    daemon.get("/nothing").refused(401, "unauthenticated");
    let unknown = format!("stateous_key_{}", "ab".repeat(32));
    with_key(&daemon, &unknown, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    with_key(&daemon, "not-a-key", "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    with_key(&daemon, &admin, "GET", "/tokens", &Value::Null).expect(200);
    with_key(&daemon, &admin, "GET", "/nothing", &Value::Null).refused(404, "not_found");
}

/// An `Authorization` header of another scheme (`Basic`, or a secret without a
/// scheme) is not taken for an unknown key: the sentence says the header must be
/// `Authorization: Bearer <key>`.
fn a_key_sent_with_another_scheme_is_told_to_send_it_as_bearer() {
    let daemon = sdlc();
    let admin = add_key(&daemon, "root-key", "admin", None);
    for value in [
        "Basic dXNlcjpwYXNzd29yZA==".to_string(),
        format!("Token {admin}"),
        admin.clone(),
    ] {
        let sentence = daemon
            .request("GET", "/tokens", &[("authorization", &value)], b"")
            .refused(401, "unauthenticated");
        assert!(
            sentence.starts_with("the Authorization header must be Authorization: Bearer <key>"),
            "{value}: {sentence}"
        );
    }
    let unknown = format!("stateous_key_{}", "ab".repeat(32));
    let sentence =
        with_key(&daemon, &unknown, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    assert!(sentence.contains("unknown or revoked"), "{sentence}");
    let lower = format!("bearer {admin}");
    daemon
        .request("GET", "/tokens", &[("authorization", &lower)], b"")
        .expect(200);
}

fn each_role_is_allowed_its_routes_and_refused_the_others() {
    let daemon = sdlc();
    let read = add_key(&daemon, "reader", "read", None);
    let operate = add_key(&daemon, "ops", "operate", None);
    let supervise = add_key(&daemon, "box-1-key", "supervise", Some("box-1"));
    let admin = add_key(&daemon, "root-key", "admin", None);
    let none = Value::Null;
    let token = json!({"token": "T-1", "context": {"repo": "acme"}});
    let claim = json!({"supervisor": "box-1", "states": ["coding"]});
    // Each: key, method, path, body, the status.
    let cases: Vec<(&str, &str, &str, Value, u16)> = vec![
        (&read, "GET", "/tokens", none.clone(), 200),
        (&read, "GET", "/metrics", none.clone(), 200),
        (&read, "GET", "/workflow", none.clone(), 200),
        (&read, "POST", "/tokens", token.clone(), 403),
        (&read, "POST", "/tasks/claim", claim.clone(), 403),
        (&read, "GET", "/access", none.clone(), 403),
        (&operate, "POST", "/tokens", token.clone(), 201),
        (&operate, "GET", "/tokens/T-1/history", none.clone(), 200),
        (&operate, "POST", "/tokens/T-1/pause", none.clone(), 200),
        (&operate, "POST", "/tokens/T-1/resume", none.clone(), 200),
        (&operate, "POST", "/tasks/claim", claim.clone(), 403),
        (&operate, "POST", "/clock/advance", json!({"by": "1m"}), 403),
        (&operate, "DELETE", "/access/reader", none.clone(), 403),
        (&supervise, "GET", "/workflow", none.clone(), 200),
        (&supervise, "GET", "/tokens", none.clone(), 403),
        (&supervise, "POST", "/tokens", token.clone(), 403),
        (&supervise, "POST", "/tasks/claim", claim.clone(), 200),
        (&admin, "GET", "/access", none.clone(), 200),
        (&admin, "POST", "/tokens/T-1/cancel", none.clone(), 200),
    ];
    for (key, method, path, body, status) in cases {
        let reply = with_key(&daemon, key, method, path, &body);
        if status == 403 {
            let sentence = reply.refused(403, "forbidden");
            assert!(sentence.contains("needs a key with the role"), "{sentence}");
        } else {
            assert_eq!(reply.status, status, "{reply}");
        }
    }
    let sentence = with_key(&daemon, &read, "POST", "/tokens", &token).refused(403, "forbidden");
    assert!(sentence.contains("operate or admin"), "{sentence}");
    // A prune's archive has the control plane write files: an admin's to ask.
    let folder = daemon.dir.path().display().to_string();
    let prune = json!({"action": "prune", "where": "true", "archive": folder, "dry_run": true});
    let sentence =
        with_key(&daemon, &operate, "POST", "/tokens/bulk", &prune).refused(403, "forbidden");
    assert!(sentence.contains("role admin"), "{sentence}");
    with_key(&daemon, &admin, "POST", "/tokens/bulk", &prune).expect(200);
    let listed = with_key(&daemon, &admin, "GET", "/access", &none).expect(200);
    let text = listed.to_string();
    for secret in [&read, &operate, &supervise, &admin] {
        assert!(!text.contains(&secret["stateous_key_".len()..]), "{text}");
    }
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["box-1-key", "ops", "reader", "root-key"]);
}

fn a_revoked_key_is_refused_from_the_next_request_and_after_a_restart() {
    let mut daemon = sdlc();
    let ops = add_key(&daemon, "ops", "operate", None);
    with_key(&daemon, &ops, "GET", "/tokens", &Value::Null).expect(200);
    access(&daemon, &["revoke", "ops"]);
    let sentence =
        with_key(&daemon, &ops, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    assert!(sentence.contains("unknown or revoked"), "{sentence}");
    let listed = access(&daemon, &["list", "--json"]);
    let keys: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(keys[0]["name"], "ops");
    assert!(keys[0]["revoked"].is_string(), "{keys}");
    assert!(keys[0]["last_used"].is_string(), "{keys}");
    let url = format!("unix://{}", daemon.socket.display());
    let again = run(
        daemon.dir.path(),
        &["access", "revoke", "ops", "--url", &url],
    );
    assert_eq!(again.code(), 1, "{again}");
    assert!(again.stderr.contains("key_not_found"), "{again}");
    let twice = run(
        daemon.dir.path(),
        &["access", "add", "ops", "--role", "read", "--url", &url],
    );
    assert_eq!(twice.code(), 1, "{twice}");
    assert!(twice.stderr.contains("key_exists"), "{twice}");
    let admin = add_key(&daemon, "root-key", "admin", None);
    daemon.crash_and_restart();
    with_key(&daemon, &ops, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    with_key(&daemon, &admin, "GET", "/tokens", &Value::Null).expect(200);
    daemon.get("/tokens").refused(401, "unauthenticated");
}

fn a_supervise_key_acts_only_for_its_supervisor_and_the_tasks_it_holds() {
    let daemon = sdlc();
    let a = add_key(&daemon, "a-key", "supervise", Some("box-a"));
    let b = add_key(&daemon, "b-key", "supervise", Some("box-b"));
    start(&daemon, "T-1");
    let as_b = json!({"supervisor": "box-b", "states": ["coding"]});
    let sentence = with_key(&daemon, &a, "POST", "/tasks/claim", &as_b).refused(403, "forbidden");
    assert!(sentence.contains("box-a only"), "{sentence}");
    let as_a = json!({"supervisor": "box-a", "states": ["coding"]});
    let grant = with_key(&daemon, &a, "POST", "/tasks/claim", &as_a).expect(200);
    let task = grant["task"].as_i64().unwrap();
    let beat = json!({"supervisor": "box-a", "tasks": [task]});
    with_key(&daemon, &b, "POST", "/tasks/heartbeat", &beat).refused(403, "forbidden");
    let report = json!({"attempt": 1, "outcome": "done"});
    let path = |what: &str| format!("/tasks/{task}/{what}");
    with_key(&daemon, &b, "POST", &path("report"), &report).refused(403, "forbidden");
    with_key(&daemon, &b, "POST", &path("note"), &json!({"text": "x"})).refused(403, "forbidden");
    let memory = json!({"key": "k", "value": 1, "attempt": 1});
    with_key(&daemon, &b, "PUT", &path("memory"), &memory).refused(403, "forbidden");
    with_key(&daemon, &b, "POST", "/supervisors/box-a/stop", &Value::Null)
        .refused(403, "forbidden");
    let history = local(&daemon, "GET", "/tokens/T-1/history", &Value::Null).expect(200);
    let kinds: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"task_reported"), "{kinds:?}");
    with_key(&daemon, &a, "POST", "/tasks/heartbeat", &beat).expect(200);
    with_key(&daemon, &a, "PUT", &path("memory"), &memory).expect(204);
}

fn the_socket_is_private_and_its_own_user_acts_as_admin() {
    let daemon = sdlc();
    let mode = std::fs::metadata(&daemon.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    add_key(&daemon, "ops", "operate", None);
    local(&daemon, "GET", "/access", &Value::Null).expect(200);
    local(&daemon, "POST", "/clock/advance", &json!({"by": "1m"})).refused(404, "not_found");
    start(&daemon, "T-1");
    let made = local(
        &daemon,
        "POST",
        "/access",
        &json!({"name": "box-key", "role": "supervise", "supervisor": "box"}),
    )
    .expect(201);
    assert!(made["secret"]
        .as_str()
        .unwrap()
        .starts_with("stateous_key_"));
    local(
        &daemon,
        "POST",
        "/access",
        &json!({"name": "x", "role": "supervise"}),
    )
    .refused(422, "invalid_argument");
    local(
        &daemon,
        "POST",
        "/access",
        &json!({"name": "bad name", "role": "read"}),
    )
    .refused(422, "invalid_argument");
    local(&daemon, "DELETE", "/access/nobody", &Value::Null).refused(404, "key_not_found");
}

fn secrets_are_absent_from_the_database() {
    let daemon = sdlc();
    let secrets: Vec<String> = ["one", "two"]
        .iter()
        .map(|name| add_key(&daemon, name, "operate", None))
        .collect();
    let mut stored: Vec<u8> = Vec::new();
    match daemon.database.backend() {
        Backend::Sqlite => {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let path = format!("{}{suffix}", daemon.db.display());
                stored.extend(std::fs::read(path).unwrap_or_default());
            }
        }
        Backend::Postgres => {
            // Every row of every table of ours, as text.
            let tables = daemon.rows(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = current_schema()",
            );
            assert!(tables.len() >= 8, "{tables:?}");
            for table in tables.iter().filter_map(|row| row[0].clone()) {
                let rows = daemon.rows(&format!("SELECT t::text FROM {table} t"));
                stored.extend(format!("{rows:?}").into_bytes());
            }
            let keys = daemon.rows("SELECT hash FROM access_keys");
            assert_eq!(keys.len(), 2, "{keys:?}");
        }
    }
    assert!(!stored.is_empty());
    for secret in &secrets {
        let hex = &secret["stateous_key_".len()..];
        let found = stored.windows(hex.len()).any(|w| w == hex.as_bytes());
        assert!(!found, "a secret is in the database");
    }
}

/// `stateous token ARGS --url URL`, with `--access-key-file FILE` when given.
fn token(daemon: &Daemon, args: &[&str], file: Option<&str>) -> crate::harness::Finished {
    let mut all: Vec<&str> = vec!["token"];
    all.extend(args);
    all.extend(["--url", &daemon.url]);
    if let Some(file) = file {
        all.extend(["--access-key-file", file]);
    }
    run(daemon.dir.path(), &all)
}

fn the_client_commands_send_the_key_from_a_file_or_the_environment() {
    let daemon = sdlc();
    let read = add_key(&daemon, "reader", "read", None);
    let file = daemon.dir.path().join("reader.key");
    std::fs::write(&file, format!("{read}\n")).unwrap();
    let file = file.display().to_string();
    let listed = token(&daemon, &["list"], Some(&file));
    assert_eq!(listed.code(), 0, "{listed}");
    let refused = token(&daemon, &["start", "T-9"], Some(&file));
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(refused.stderr.contains("403"), "{refused}");
    let without = token(&daemon, &["list"], None);
    assert_eq!(without.code(), 1, "{without}");
    assert!(without.stderr.contains("401"), "{without}");
    let output = std::process::Command::new(crate::harness::binary())
        .args(["token", "list", "--url", &daemon.url])
        .env("STATEOUS_ACCESS_KEY", &read)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let wrong = token(&daemon, &["list"], Some("/nonexistent"));
    assert_eq!(wrong.code(), 1, "{wrong}");
    let line = "error: cannot read the access key file";
    assert!(wrong.stderr.starts_with(line), "{wrong}");
}

/// The token's status, read over the socket.
fn wait_for_status(daemon: &Daemon, id: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let token = local(daemon, "GET", &format!("/tokens/{id}"), &Value::Null).expect(200);
        if token["status"] == status {
            return;
        }
        assert!(Instant::now() < deadline, "{id} is {token}, never {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn a_supervisor_on_its_supervise_key_runs_a_token_end_to_end() {
    let daemon = sdlc();
    // The folder is made while TCP is open (init reads the workflow).
    let routines = [
        (
            "coding.sh",
            "stateous ctx note coding\nstateous ctx emit done",
        ),
        (
            "testing.sh",
            r#"stateous ctx emit passed '{"passed": 1, "failed": 0}'"#,
        ),
    ];
    let folder = folder_named(&daemon, "sup", "box-1", &routines);
    let secret = add_key(&daemon, "box-1-key", "supervise", Some("box-1"));
    write_key(&folder, &secret);
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line("box-1 serves");
    start(&daemon, "T-1");
    wait_for_status(&daemon, "T-1", "completed");
    sup.signal(libc::SIGTERM);
    sup.wait();
    let listed = access(&daemon, &["list"]);
    assert!(listed.contains("box-1-key  supervise  box-1"), "{listed}");
    assert!(!listed.contains("last used never"), "{listed}");
}

fn the_ledger_names_the_key_of_each_change_and_token_show_prints_it() {
    let daemon = sdlc();
    let ops = add_key(&daemon, "ops", "operate", None);
    let token = json!({"token": "T-1", "context": {"repo": "acme"}});
    with_key(&daemon, &ops, "POST", "/tokens", &token).expect(201);
    local(&daemon, "POST", "/tokens/T-1/pause", &Value::Null).expect(200);
    let history = with_key(&daemon, &ops, "GET", "/tokens/T-1/history", &Value::Null).expect(200);
    let entries = history.as_array().unwrap();
    let started = entries.iter().find(|e| e["kind"] == "started").unwrap();
    assert_eq!(started["by"], "ops", "{history}");
    let paused = entries.iter().find(|e| e["kind"] == "paused").unwrap();
    assert!(
        paused.get("by").is_none(),
        "over the socket, no key: {history}"
    );
    let url = format!("unix://{}", daemon.socket.display());
    let shown = run(daemon.dir.path(), &["token", "show", "T-1", "--url", &url]);
    assert_eq!(shown.code(), 0, "{shown}");
    assert!(shown.stdout.contains("(by key ops)"), "{shown}");
}

/// A supervisor whose key the control plane refuses for good (bound to another
/// name, revoked) stops with exit 1 and the reason, rather than claiming forever.
fn a_supervisor_whose_claims_its_key_cannot_make_stops_with_the_reason() {
    let daemon = sdlc();
    let folder = folder_named(
        &daemon,
        "sup",
        "box-9",
        &[("coding.sh", "stateous ctx emit done")],
    );
    let secret = add_key(&daemon, "box-1-key", "supervise", Some("box-1"));
    write_key(&folder, &secret);
    let mut sup = Supervise::start(&folder);
    let status = sup.wait();
    assert_eq!(status.code(), Some(1), "{}", sup.report());
    let log = sup.stderr();
    assert!(
        log.contains("acts for the supervisor box-1 only"),
        "the refusal is logged: {log}"
    );
    assert_eq!(
        log.matches("refused a claim").count(),
        1,
        "one claim, not a loop: {log}"
    );
}

/// Every loopback address (127.0.0.0/8) is this computer's own: served without a
/// key or TLS, as 127.0.0.1 is.
fn a_loopback_address_other_than_127_0_0_1_needs_no_key_or_tls() {
    let daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--listen", "127.0.0.2:0"])
        .start();
    assert!(daemon.url.contains("127.0.0.2"), "{}", daemon.url);
    daemon.get("/health").expect(200);
}

/// A wide address with keys but no TLS: the refusal asks for TLS only (a key is
/// there), and `--insecure` warns that the keys travel in clear.
fn a_wide_address_with_keys_but_no_tls_asks_for_tls_and_warns_of_keys_in_clear() {
    let mut daemon = sdlc();
    add_key(&daemon, "ops", "admin", None);
    daemon.stop_with(libc::SIGTERM);
    let graph = asset_graph("sdlc").display().to_string();
    let socket = daemon.dir.path().join("wide.sock").display().to_string();
    let db = daemon.database.url();
    let wide = [
        "serve",
        &graph,
        "--db",
        &db,
        "--socket",
        &socket,
        "--listen",
        "0.0.0.0:0",
    ];
    let refused = run(daemon.dir.path(), &wide);
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("has no TLS: serve TLS with --tls-cert"),
        "{refused}"
    );
    assert!(
        !refused.stderr.contains("access add"),
        "a key is there: {refused}"
    );
    let open = Setup::new(asset_graph("sdlc"))
        .database_of(&daemon)
        .args(&["--listen", "0.0.0.0:0", "--insecure"])
        .start();
    let stderr = open.stderr();
    assert!(
        stderr.contains("the API is plain HTTP (--insecure): access keys travel in clear"),
        "{stderr}"
    );
}

/// Postgres: a standby that takes over reads the keys then, with those made and
/// revoked while it waited.
#[test]
fn a_standby_that_takes_over_serves_the_keys_on_record() {
    harness::on(Backend::Postgres, || {
        let mut active = sdlc();
        let standby = Setup::new(asset_graph("sdlc"))
            .database_of(&active)
            .start_standby();
        let kept = add_key(&active, "kept", "read", None);
        let gone = add_key(&active, "gone", "read", None);
        access(&active, &["revoke", "gone"]);
        active.stop_with(libc::SIGKILL);
        standby.wait_for_line("serving on ", Duration::from_secs(30));
        standby.get("/tokens").refused(401, "unauthenticated");
        with_key(&standby, &kept, "GET", "/tokens", &Value::Null).expect(200);
        with_key(&standby, &gone, "GET", "/tokens", &Value::Null).refused(401, "unauthenticated");
    });
}

/// Put `secret` in the folder's `box.key` and name it in `stateous.yaml`.
pub(crate) fn write_key(folder: &Path, secret: &str) {
    std::fs::write(folder.join("box.key"), secret).unwrap();
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).unwrap() + "access_key_file: box.key\n";
    std::fs::write(config, text).unwrap();
}

/// `access` reads `STATEOUS_URL` as every client does, before the default socket.
fn access_reads_stateous_url_before_the_default_socket() {
    let daemon = sdlc();
    let url = format!("unix://{}", daemon.socket.display());
    let output = std::process::Command::new(crate::harness::binary())
        .args(["access", "add", "ops", "--role", "admin"])
        .current_dir(daemon.dir.path())
        .env("STATEOUS_URL", &url)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("stateous_key_"), "{stdout}");
}

/// `access list` says how to make a key when there is none, and prints each
/// key's times to the minute in UTC.
fn access_list_prints_times_to_the_minute_and_says_when_there_is_no_key() {
    let daemon = sdlc();
    let url = format!("unix://{}", daemon.socket.display());
    let none = run(daemon.dir.path(), &["access", "list", "--url", &url]);
    assert_eq!((none.code(), none.stdout.as_str()), (0, ""), "{none}");
    let said = "no access key: make one with stateous access add NAME --role ROLE\n";
    assert_eq!(none.stderr, said, "{none}");
    add_key(&daemon, "ops", "read", None);
    let listed = access(&daemon, &["list"]);
    let time = |at: &str| at.len() == 17 && at.as_bytes()[10] == b' ' && at.ends_with('Z');
    let created = listed
        .trim_end()
        .strip_prefix("ops  read  -  created ")
        .unwrap_or("");
    let (made, used) = created.split_once("  last used ").unwrap_or(("", ""));
    assert!(time(made) && used == "never", "{listed}");
}

both!(
    access_list_prints_times_to_the_minute_and_says_when_there_is_no_key,
    access_reads_stateous_url_before_the_default_socket,
    tcp_is_open_until_the_first_key_and_then_needs_one_but_for_health,
    a_key_sent_with_another_scheme_is_told_to_send_it_as_bearer,
    each_role_is_allowed_its_routes_and_refused_the_others,
    a_revoked_key_is_refused_from_the_next_request_and_after_a_restart,
    a_supervise_key_acts_only_for_its_supervisor_and_the_tasks_it_holds,
    the_socket_is_private_and_its_own_user_acts_as_admin,
    secrets_are_absent_from_the_database,
    the_client_commands_send_the_key_from_a_file_or_the_environment,
    a_supervisor_on_its_supervise_key_runs_a_token_end_to_end,
    the_ledger_names_the_key_of_each_change_and_token_show_prints_it,
    a_supervisor_whose_claims_its_key_cannot_make_stops_with_the_reason,
    a_loopback_address_other_than_127_0_0_1_needs_no_key_or_tls,
    a_wide_address_with_keys_but_no_tls_asks_for_tls_and_warns_of_keys_in_clear,
);

/// `access` with no daemon on the default socket says that keys are made over a
/// serving daemon's socket, and how to start one.
#[test]
fn access_without_a_daemon_on_the_socket_says_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(harness::binary())
        .args(["access", "list"])
        .current_dir(dir.path())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("STATEOUS_URL")
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: cannot reach"), "{stderr}");
    assert!(stderr.contains("start it with stateous serve"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
