//! The one black-box harness: it starts the real `stateous` binary in a temp folder
//! on a free port and a temp socket, waits until it serves, and speaks raw HTTP/1.1
//! to it. When a test fails, the daemon's command line, stdout and stderr are
//! printed, and every failed expectation names the request, the status and the body.

// Each test file uses a different part of the harness.
#![allow(dead_code)]

#[macro_use]
mod backend;
pub mod tmux;

#[allow(unused_imports)]
pub use backend::{alone_on_postgres, backend, block_on, on, Backend, TestDatabase};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a daemon may take to start serving.
const START_WITHIN: Duration = Duration::from_secs(30);
/// How long one request may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Short TCP keepalives for `serve`, so that the server drops a dead peer within
/// seconds (the tests of a standby's takeover).
pub const KEEPALIVES: [&str; 6] = [
    "--keepalive-idle",
    "1s",
    "--keepalive-interval",
    "1s",
    "--keepalive-count",
    "2",
];

/// Poll `check` every 100 ms until it is true; panic with `what` and `report()`
/// after `within`.
pub fn eventually(
    within: Duration,
    what: &str,
    report: impl Fn() -> String,
    check: impl Fn() -> bool,
) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within {within:?}\n{}", report());
}

/// The path of a graph file among the project's assets, e.g. `orders`.
pub fn asset_graph(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(name)
        .join("build")
        .join(format!("{name}.json"))
}

/// The path of a graph file of the tests, e.g. `tickets`: `coding` (retries 1,
/// emits `done` or `stuck`), then `testing` (timeout 3 s, emits `passed` with a
/// `Tests` payload; its timeout goes back to `coding`); the context needs `repo`.
pub fn test_graph(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(format!("{name}.json"))
}

/// The `stateous` binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_stateous")
}

/// A finished run of the binary: exit status and output.
#[derive(Debug)]
pub struct Finished {
    /// The command line, for messages.
    pub command: String,
    /// The exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Finished {
    /// The exit code; panics (with the output) when a signal ended the process.
    pub fn code(&self) -> i32 {
        match self.status.code() {
            Some(code) => code,
            None => panic!("{self}\nended by a signal"),
        }
    }
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "command: {}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.status, self.stdout, self.stderr
        )
    }
}

/// `text` percent-encoded for a query string: every byte but letters, digits,
/// `-`, `.` and `_` as `%XX`.
pub fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {
                char::from(b).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Run `stateous ARGS` in `dir` to its end (for commands that refuse at start).
pub fn run(dir: &Path, args: &[&str]) -> Finished {
    let output = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("STATEOUS_URL")
        .output()
        .expect("the stateous binary runs");
    Finished {
        command: format!("stateous {}", args.join(" ")),
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// [`run`], but a command still running after `within` is killed (its status says
/// so): a start that should be refused and serves instead fails its test rather
/// than hanging it.
pub fn run_within(dir: &Path, args: &[&str], within: Duration) -> Finished {
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("STATEOUS_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the stateous binary runs");
    let deadline = Instant::now() + within;
    while child.try_wait().expect("its status").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let output = child.wait_with_output().expect("the stateous binary ends");
    Finished {
        command: format!("stateous {}", args.join(" ")),
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Run `stateous ARGS` in `dir` with `input` on its standard input, to its end.
pub fn run_with_input(dir: &Path, args: &[&str], input: &str) -> Finished {
    use std::io::Write as _;
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("STATEOUS_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the stateous binary runs");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .expect("writing its input");
    }
    let output = child.wait_with_output().expect("the stateous binary ends");
    Finished {
        command: format!("stateous {} < ({} bytes)", args.join(" "), input.len()),
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// How to start a daemon.
pub struct Setup {
    graph: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    dir: Option<tempfile::TempDir>,
    db: Option<PathBuf>,
    database: Option<TestDatabase>,
    /// Postgres: the `HOST:PORT` that `--db` names instead of the server's (a
    /// relay in front of it); the database's name stays.
    db_authority: Option<String>,
}

/// A daemon under test: `stateous serve` in its own temp folder.
pub struct Daemon {
    child: Option<Child>,
    /// The temp folder (the daemon's working folder): the database lives here.
    pub dir: tempfile::TempDir,
    /// The SQLite file (on Postgres: where it would be).
    pub db: PathBuf,
    /// The database, on this test's backend.
    pub database: TestDatabase,
    /// The socket.
    pub socket: PathBuf,
    /// `http://127.0.0.1:PORT` (`https://` with `--tls-cert`).
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    graph: PathBuf,
    /// The start of the stderr line that says the daemon is up, `serving on `, or
    /// for a standby `standby on `; the line holds the URL to use.
    up_line: &'static str,
}

impl Setup {
    /// Serve the graph file at `graph`, with short timings (lease 2 s, tick 200 ms).
    pub fn new(graph: impl Into<PathBuf>) -> Setup {
        Setup {
            graph: graph.into(),
            args: vec![
                "--lease".into(),
                "2s".into(),
                "--tick".into(),
                "200ms".into(),
            ],
            env: Vec::new(),
            dir: None,
            db: None,
            database: None,
            db_authority: None,
        }
    }

    /// On Postgres, reach the server through `authority` (`HOST:PORT`, e.g. a relay
    /// that a test can stop) instead of at its own address; the test's own sessions
    /// (`Daemon::rows`) still go straight to the server.
    pub fn db_authority(mut self, authority: &str) -> Setup {
        self.db_authority = Some(authority.to_string());
        self
    }

    /// Add flags (later flags win over the defaults above).
    pub fn args(mut self, args: &[&str]) -> Setup {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Set an environment variable for the daemon.
    pub fn env(mut self, name: &str, value: &str) -> Setup {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Use this folder (and its database) instead of a new one: a restart.
    pub fn in_dir(mut self, dir: tempfile::TempDir, db: PathBuf) -> Setup {
        self.dir = Some(dir);
        self.db = Some(db);
        self
    }

    /// Serve the same database as `daemon` (on Postgres, the same database).
    pub fn database_of(mut self, daemon: &Daemon) -> Setup {
        self.db = Some(daemon.db.clone());
        self.database = Some(daemon.database.clone());
        self
    }

    /// Start the daemon and wait until it serves; panics with its output if it
    /// does not.
    pub fn start(self) -> Daemon {
        self.start_until("serving on ")
    }

    /// Start the daemon with `--standby` and wait until it stands by (`standby on
    /// URL`); panics with its output if it does not.
    pub fn start_standby(self) -> Daemon {
        self.args(&["--standby"]).start_until("standby on ")
    }

    fn start_until(self, up_line: &'static str) -> Daemon {
        let dir = self
            .dir
            .unwrap_or_else(|| tempfile::tempdir().expect("a temp folder"));
        let db = self.db.unwrap_or_else(|| dir.path().join("stateous.db"));
        let database = self
            .database
            .unwrap_or_else(|| TestDatabase::new(db.clone()));
        let socket = dir.path().join("d.sock");
        let db_url = match &self.db_authority {
            Some(authority) => with_authority(&database.url(), authority),
            None => database.url(),
        };
        let mut args: Vec<String> = vec![
            "serve".into(),
            self.graph.display().to_string(),
            "--db".into(),
            db_url,
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--socket".into(),
            socket.display().to_string(),
        ];
        if database.backend() == Backend::Postgres {
            // Tests run side by side on one server: small pools (a test's own
            // `--pool-size` comes later and wins).
            args.extend(["--pool-size".to_string(), "4".to_string()]);
        }
        args.extend(self.args.iter().cloned());
        let mut daemon = Daemon {
            child: None,
            command: format!("stateous {}", args.join(" ")),
            dir,
            db,
            database,
            socket,
            url: String::new(),
            authority: String::new(),
            args,
            env: self.env,
            graph: self.graph,
            up_line,
        };
        daemon.spawn();
        daemon
    }
}

/// `url` with the `HOST:PORT` after its `@` (or after `://`) replaced by `authority`.
fn with_authority(url: &str, authority: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let (before, after) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let user = before.rsplit_once('@').map(|(user, _)| format!("{user}@"));
    format!("{scheme}://{}{authority}{after}", user.unwrap_or_default())
}

impl Daemon {
    /// A daemon serving the project's `orders` starter (`assets/orders`).
    pub fn orders() -> Daemon {
        Setup::new(asset_graph("orders")).start()
    }

    /// A daemon serving the test graph `tickets` (see [`test_graph`]).
    pub fn tickets() -> Daemon {
        Setup::new(test_graph("tickets")).start()
    }

    fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn spawn(&mut self) {
        let stdout = std::fs::File::create(self.log_path("stdout.log")).expect("a log file");
        let stderr = std::fs::File::create(self.log_path("stderr.log")).expect("a log file");
        let mut command = Command::new(binary());
        command
            .args(&self.args)
            .current_dir(self.dir.path())
            .env_remove("STATEOUS_URL")
            .env_remove("STATEOUS_BUSY_TIMEOUT")
            .env_remove("STATEOUS_STALE_AFTER")
            .env_remove("STATEOUS_DB")
            .env_remove("STATEOUS_LOCK_TIMEOUT")
            .env_remove("STATEOUS_STATEMENT_TIMEOUT")
            .env_remove("STATEOUS_POOL_SIZE")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        for (name, value) in &self.env {
            command.env(name, value);
        }
        self.child = Some(command.spawn().expect("the stateous binary starts"));
        self.wait_until_serving();
    }

    fn wait_until_serving(&mut self) {
        let deadline = Instant::now() + START_WITHIN;
        while Instant::now() < deadline {
            if let Some(url) = self
                .stderr()
                .lines()
                .find_map(|line| line.strip_prefix(self.up_line))
                .and_then(|rest| {
                    // `URL (Ctrl-C stops)`, or on every interface `0.0.0.0:PORT,
                    // ...; from this computer: URL (Ctrl-C stops)`.
                    rest.split_whitespace()
                        .find(|word| word.starts_with("http://") || word.starts_with("https://"))
                })
            {
                self.url = url.to_string();
                self.authority = url
                    .trim_start_matches("http://")
                    .trim_start_matches("https://")
                    .to_string();
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "the daemon exited with {status} before serving\n{}",
                    self.report()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the daemon did not serve within {START_WITHIN:?}\n{}",
            self.report()
        );
    }

    /// Wait until the daemon's stderr has a line that starts with `prefix` (at
    /// most `within`); panics with its output if it does not.
    pub fn wait_for_line(&self, prefix: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.stderr().lines().any(|line| line.starts_with(prefix)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the daemon printed no line '{prefix}...' within {within:?}\n{}",
            self.report()
        );
    }

    /// Every row of `sql` in the daemon's database, as text.
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        self.database.rows(sql)
    }

    /// The number in the first column of the first row of `sql` (a count).
    pub fn count(&self, sql: &str) -> i64 {
        self.rows(sql)[0][0]
            .as_deref()
            .unwrap_or("0")
            .parse()
            .unwrap_or_else(|e| panic!("{sql}: not a count ({e})"))
    }

    /// Postgres: end this daemon's sessions from another one, as an operator
    /// would (`pg_terminate_backend` of those named `stateous PID`); how many.
    pub fn end_sessions(&self) -> usize {
        let url = self.database.url();
        let mut session = postgres::Client::connect(&url, postgres::NoTls).expect("a session");
        let name = format!("stateous {}", self.pid());
        session
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = $1",
                &[&name],
            )
            .expect("the sessions ended")
            .len()
    }

    /// `stateous token ARGS --url URL` in the daemon's folder, without a terminal,
    /// to its end.
    pub fn token(&self, args: &[&str]) -> Finished {
        let mut all = vec!["token"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &self.url]);
        run(self.dir.path(), &all)
    }

    /// The daemon's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.log_path("stderr.log")).unwrap_or_default()
    }

    /// The daemon's stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.log_path("stdout.log")).unwrap_or_default()
    }

    /// The command line, stdout and stderr, for a failure message.
    pub fn report(&self) -> String {
        format!(
            "command: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.stdout(),
            self.stderr()
        )
    }

    /// The daemon's process id.
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    /// Send `signal` (e.g. `libc::SIGINT`) to the daemon.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(self.pid(), signal) };
        if signal == libc::SIGSTOP {
            // kill(2) returns before every thread has stopped: a loaded machine
            // could let the daemon answer one more request after it.
            stopped(self.pid());
        }
    }

    /// Whether the daemon's process still runs.
    pub fn is_running(&mut self) -> bool {
        let child = self.child.as_mut().expect("a started daemon");
        matches!(child.try_wait(), Ok(None))
    }

    /// Wait for the daemon to exit (at most `within`); its exit status.
    pub fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut().expect("a running daemon");
        loop {
            if let Some(status) = child.try_wait().expect("the daemon's status") {
                return status;
            }
            if Instant::now() > deadline {
                panic!(
                    "the daemon did not exit within {within:?}\n{}",
                    self.report()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop the daemon with `signal` and wait for it; the status.
    pub fn stop_with(&mut self, signal: i32) -> ExitStatus {
        self.signal(signal);
        self.wait(Duration::from_secs(30))
    }

    /// Kill the daemon with SIGKILL and start it again on the same folder, database,
    /// socket and flags.
    pub fn crash_and_restart(&mut self) {
        self.crash_and_restart_after(Duration::ZERO);
    }

    /// Kill the daemon with SIGKILL, leave it down for `down`, then start it again
    /// as [`Daemon::crash_and_restart`] does.
    pub fn crash_and_restart_after(&mut self, down: Duration) {
        let status = self.stop_with(libc::SIGKILL);
        std::thread::sleep(down);
        assert_eq!(
            status.code(),
            None,
            "SIGKILL ends the daemon\n{}",
            self.report()
        );
        self.start_again();
    }

    /// Start the daemon again after it ended (a kill, or its own exit), on the same
    /// folder, database, socket, port and flags; its old stderr is kept in
    /// `stderr.before-restart.log`.
    pub fn start_again(&mut self) {
        let old = self.stderr();
        std::fs::write(self.log_path("stderr.before-restart.log"), old).expect("a log file");
        // The same port again (also on a second restart, when `--listen` names it).
        let at = self
            .args
            .iter()
            .position(|a| a == "--listen")
            .expect("--listen");
        self.args[at + 1] = self.authority.clone();
        self.spawn();
    }

    /// Give the next start `flag` with `value` (in place of the value it had, or
    /// added): a restart with another `--dev-clock-at`, say.
    pub fn set_arg(&mut self, flag: &str, value: &str) {
        match self.args.iter().position(|a| a == flag) {
            Some(at) => self.args[at + 1] = value.to_string(),
            None => self.args.extend([flag.to_string(), value.to_string()]),
        }
    }

    /// A request over TCP (over the Unix socket when the daemon serves https:
    /// the harness speaks plain HTTP only). `body` is sent as is, with its length.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        if self.url.starts_with("https://") {
            return self.request_unix(method, path, headers, body);
        }
        let stream = TcpStream::connect(&self.authority)
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}\n{}", self.url, self.report()));
        exchange(stream.timed(), method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", self.report()))
    }

    /// The same request over the Unix socket.
    pub fn request_unix(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let stream = UnixStream::connect(&self.socket)
            .unwrap_or_else(|e| panic!("cannot connect to the socket: {e}\n{}", self.report()));
        exchange(stream.timed(), method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path} (unix): {e}\n{}", self.report()))
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], b"")
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.request(
            "POST",
            path,
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
    }

    /// `POST path` with no body.
    pub fn post_empty(&self, path: &str) -> Reply {
        self.request("POST", path, &[], b"")
    }

    /// `PUT path` with a JSON body.
    pub fn put(&self, path: &str, body: &Value) -> Reply {
        self.request(
            "PUT",
            path,
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("=== the daemon under test ===\n{}", self.report());
        }
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The request line, for messages.
    pub request: String,
    /// The status.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON; panics with the reply when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {self}"))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Expect `status`; the reply's JSON body (`Null` for an empty body).
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "unexpected status: {self}");
        if self.body.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }

    /// Expect a refusal with `status` and `code`: exactly `{"error", "code"}`, a
    /// sentence that is not empty. Returns the sentence.
    pub fn refused(&self, status: u16, code: &str) -> String {
        let body = self.expect(status);
        let keys: Vec<&String> = body
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["error", "code"],
            "a refusal has exactly error and code: {self}"
        );
        assert_eq!(body["code"], code, "unexpected code: {self}");
        let sentence = body["error"].as_str().unwrap_or_default().to_string();
        assert!(!sentence.is_empty(), "a refusal has a sentence: {self}");
        sentence
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -> {} {}",
            self.request,
            self.status,
            String::from_utf8_lossy(&self.body)
        )
    }
}

/// Send one request on a fresh connection (`Connection: close`) and read the whole
/// answer.
pub fn exchange<S: Read + Write>(
    mut stream: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: stateous\r\nconnection: close\r\n");
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
    {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes)?;
    read_reply(stream, format!("{method} {path}"))
}

/// Read an answer to its end (the server closes the connection).
pub fn read_reply<S: Read>(mut stream: S, request: String) -> std::io::Result<Reply> {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "no HTTP answer: {:?}",
                String::from_utf8_lossy(&raw)
            ))
        })?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line: {head}")))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Reply {
        request,
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// Set a read timeout on both kinds of streams before use.
pub trait Timed {
    /// Apply [`ANSWER_WITHIN`] as the read timeout.
    fn timed(self) -> Self;
}

impl Timed for TcpStream {
    fn timed(self) -> Self {
        let _ = self.set_read_timeout(Some(ANSWER_WITHIN));
        self
    }
}

impl Timed for UnixStream {
    fn timed(self) -> Self {
        let _ = self.set_read_timeout(Some(ANSWER_WITHIN));
        self
    }
}

/// One HTTP/1.1 message (a request or an answer) read from `from`: its head and
/// its `content-length` bytes of body (none without the header: a 204, or the
/// head of a chunked stream); `None` at the end of the stream.
fn message(from: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if from.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        raw.extend_from_slice(line.as_bytes());
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    from.read_exact(&mut body).ok()?;
    raw.extend(body);
    Some(raw)
}

/// A relay in front of the control plane at `upstream` (`http://HOST:PORT`): it
/// passes each request on and brings its answer back, except for a request that
/// `cut(index, request)` picks (`index` counts every request from 1): the control
/// plane gets it and answers, and the relay drops the client's connection instead
/// of answering, as a network that fails at the wrong moment does. Its URL.
pub fn relay_cutting(
    upstream: &str,
    cut: impl Fn(usize, &str) -> bool + Send + Sync + 'static,
) -> String {
    let upstream = upstream.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let seen = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(cut);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (upstream, seen, cut) = (upstream.clone(), Arc::clone(&seen), Arc::clone(&cut));
            std::thread::spawn(move || {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let (Ok(mut to_server), Ok(mut to_client)) =
                    (server.try_clone(), client.try_clone())
                else {
                    return;
                };
                let mut from_server = BufReader::new(server);
                let mut from_client = BufReader::new(client);
                while let Some(request) = message(&mut from_client) {
                    if to_server.write_all(&request).is_err() {
                        return;
                    }
                    let Some(answer) = message(&mut from_server) else {
                        return;
                    };
                    let head = String::from_utf8_lossy(&answer).to_ascii_lowercase();
                    if head.contains("transfer-encoding: chunked") {
                        // A stream (`GET /watch`): passed on as it comes, to its end.
                        if to_client.write_all(&answer).is_ok() {
                            let _ = std::io::copy(&mut from_server, &mut to_client);
                        }
                        return;
                    }
                    let index = seen.fetch_add(1, Ordering::SeqCst) + 1;
                    if cut(index, &String::from_utf8_lossy(&request)) {
                        let _ = to_client.shutdown(std::net::Shutdown::Both);
                        return;
                    }
                    if to_client.write_all(&answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// Wait (at most 5 s) until every thread of process `pid` is stopped, as
/// `/proc/PID/task/*/stat` shows (state `T`).
fn stopped(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        let all = tasks.map(|tasks| {
            tasks.flatten().all(|task| {
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                // The state follows the command's closing parenthesis.
                stat.rsplit_once(") ")
                    .is_none_or(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
            })
        });
        if all.unwrap_or(true) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
