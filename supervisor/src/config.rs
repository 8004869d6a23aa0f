//! `stateous.yaml`: a supervisor's settings (`docs/reference/files.md`).
//!
//! Keys: `url` (the control plane: one address, or a list of them tried in turn;
//! without it, `supervise` takes `STATEOUS_URL`, then the default socket, then
//! `http://127.0.0.1:8080`, as every client does), `tasks` (1 to 1000, default 4),
//! `name` (1 to 128 characters, default the host name), `access_key_file` (a file,
//! relative to the folder, that holds the supervisor's access key; `--access-key-file`
//! and `STATEOUS_ACCESS_KEY` win), `routines` (state to command line), `cacert`,
//! `client_cert` and `client_key` (PEM files for an `https://` control plane, relative
//! to the folder), and the timing keys `heartbeat`, `idle`, `claim_wait`, `grace`,
//! `cancel_wait`, `request_timeout` and `backoff`. Each timing key may also come from the environment
//! (`STATEOUS_SUPERVISOR_HEARTBEAT`, ...), which wins over the file so that tests can
//! shorten a folder's timings. Every key is checked; a wrong one stops the supervisor
//! with one line naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_norway::Value;
use stateous_shared::durations::{parse_timing, seconds_timing, TimingOf};

/// The settings file's name, in the supervisor's folder.
pub const CONFIG_FILE: &str = "stateous.yaml";
/// Routines at once when `tasks` is not given.
pub const DEFAULT_TASKS: u32 = 4;
/// The most routines at once: a heartbeat names at most 1000 tasks.
pub const MAX_TASKS: u32 = 1000;
/// The longest supervisor name the API takes here (the reference's rule).
pub const MAX_NAME: usize = 128;

/// [`Timings::claim_wait`] when `stateous.yaml` names none.
pub const DEFAULT_CLAIM_WAIT: Duration = Duration::from_secs(30);
/// The longest [`Timings::claim_wait`]: the longest wait a claim may ask for.
pub const MOST_CLAIM_WAIT: Duration = Duration::from_secs(60);

/// How long the supervisor waits between its steps. Defaults are in
/// `docs/reference/bounds.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    /// Between heartbeats while routines run: 30 s.
    pub heartbeat: Duration,
    /// After a claim that got no task: 1 s.
    pub idle: Duration,
    /// How long a claim waits for a task at the control plane (the claim's
    /// `wait`): 30 s, at most 60 s; 0 asks without waiting, and `idle` paces the
    /// claims as the reference's supervisor does.
    pub claim_wait: Duration,
    /// From SIGTERM to SIGKILL of a routine's process group: 10 s.
    pub grace: Duration,
    /// After the second stop signal, how long to wait for killed routines: 5 s.
    pub cancel_wait: Duration,
    /// The longest wait for one HTTP answer: 30 s.
    pub request_timeout: Duration,
    /// Waits before each new try of a call that got no answer; the last repeats.
    pub backoff: Vec<Duration>,
}

impl Default for Timings {
    fn default() -> Timings {
        Timings {
            heartbeat: Duration::from_secs(30),
            idle: Duration::from_secs(1),
            claim_wait: DEFAULT_CLAIM_WAIT,
            grace: Duration::from_secs(10),
            cancel_wait: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            backoff: [1, 2, 4, 8, 16, 30].map(Duration::from_secs).to_vec(),
        }
    }
}

/// `stateous.yaml`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The control plane: `http://HOST:PORT` or `unix:///PATH`, without a final `/`;
    /// with several addresses (`url:` as a list), all of them in order, separated
    /// by commas, as the client takes them.
    pub url: Option<String>,
    /// How many routines run at once: 1 to 1000.
    pub tasks: u32,
    /// The supervisor's name in the token's history; `None`: the host name.
    pub name: Option<String>,
    /// `access_key_file`: the file of its access key, as written (relative to
    /// the folder unless absolute).
    pub access_key_file: Option<std::path::PathBuf>,
    /// Command lines that stand for routines, by state (`W/S` for a child's state).
    pub routines: BTreeMap<String, String>,
    /// The timings.
    pub timings: Timings,
    /// How an `https://` control plane is trusted: `cacert`, and `client_cert` with
    /// `client_key`, as given (relative paths are the folder's once
    /// [`Config::load`] read them).
    pub tls: stateous_client::TlsOptions,
}

/// Why `stateous.yaml` cannot be used: one line, naming each wrong key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot use {file}: {problems}")]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// The problems, `; ` between them.
    pub problems: String,
}

impl Config {
    /// The control plane to use: `flag` (`supervise --url`), else `url`, else as every
    /// client finds it: `STATEOUS_URL`, the default socket when a daemon listens there,
    /// `http://127.0.0.1:8080`.
    ///
    /// Errors: the sentence when `STATEOUS_URL` is the one to use and is set but empty.
    pub fn control_plane(&self, flag: Option<&str>) -> Result<String, String> {
        match flag.or(self.url.as_deref()) {
            Some(url) => Ok(url.trim_end_matches('/').to_string()),
            None => stateous_client::resolve_url(None).map_err(|error| error.to_string()),
        }
    }

    /// The supervisor's name: `name`, else the host name.
    pub fn supervisor_name(&self) -> String {
        self.name.clone().unwrap_or_else(host_name)
    }

    /// Read and check `stateous.yaml` at `path`, then apply the environment's
    /// timing overrides.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let fail = |problems: String| ConfigError {
            file: path.display().to_string(),
            problems,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let mut config = Config::parse(&text).map_err(fail)?;
        if let Some(folder) = path.parent() {
            config.tls = in_folder(folder, config.tls);
        }
        config.timings = apply_env(config.timings).map_err(fail)?;
        Ok(config)
    }

    /// Check the text of a `stateous.yaml`. The error lists every problem on one line.
    pub fn parse(text: &str) -> Result<Config, String> {
        stateous_shared::compiler::keys_once(text)
            .map_err(|e| one_line(&stateous_shared::compiler::twice_words(&e.to_string())))?;
        let value: Value = serde_norway::from_str(text).map_err(|e| one_line(&e.to_string()))?;
        let map = match value {
            Value::Null => serde_norway::Mapping::new(),
            Value::Mapping(map) => map,
            _ => return Err("it is not a mapping of settings".into()),
        };
        let mut problems = Vec::new();
        let mut config = Config {
            url: None,
            tasks: DEFAULT_TASKS,
            name: None,
            access_key_file: None,
            routines: BTreeMap::new(),
            timings: Timings::default(),
            tls: stateous_client::TlsOptions::default(),
        };
        let (mut client_cert, mut client_key) = (None, None);
        for (key, value) in &map {
            let Some(key) = key.as_str() else {
                problems.push(format!("{}: a setting's name is text", plain(key)));
                continue;
            };
            let result = match key {
                "url" => check_url(value).map(|url| config.url = Some(url)),
                "tasks" => check_tasks(value).map(|tasks| config.tasks = tasks),
                "name" => check_name(value).map(|name| config.name = Some(name)),
                "access_key_file" => match value {
                    Value::String(file) if !file.trim().is_empty() => {
                        config.access_key_file = Some(file.into());
                        Ok(())
                    }
                    _ => Err("the access key's file, as text".to_string()),
                },
                "routines" => check_routines(value).map(|r| config.routines = r),
                "backoff" => check_backoff(value).map(|b| config.timings.backoff = b),
                "cacert" => check_file(value).map(|f| config.tls.ca_file = Some(f)),
                "client_cert" => check_file(value).map(|f| client_cert = Some(f)),
                "client_key" => check_file(value).map(|f| client_key = Some(f)),
                "heartbeat" | "idle" | "grace" | "cancel_wait" | "request_timeout" => {
                    check_span(value).map(|span| set_timing(&mut config.timings, key, span))
                }
                "claim_wait" => check_claim_wait(value).map(|w| config.timings.claim_wait = w),
                _ => Err("there is no such setting".to_string()),
            };
            if let Err(problem) = result {
                problems.push(format!("{key}: {problem}"));
            }
        }
        match (client_cert, client_key) {
            (Some(cert_file), Some(key_file)) => {
                config.tls.identity = Some(stateous_client::Identity {
                    cert_file,
                    key_file,
                });
            }
            (None, None) => {}
            (Some(_), None) => problems.push("client_cert: needs client_key, its key".into()),
            (None, Some(_)) => problems.push("client_key: needs client_cert".into()),
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(problems.join("; "))
        }
    }
}

/// A file's path (a PEM file of `cacert`, `client_cert`, `client_key`).
fn check_file(value: &Value) -> Result<PathBuf, String> {
    match value.as_str() {
        Some(text) if !text.trim().is_empty() => Ok(PathBuf::from(text)),
        _ => Err(format!("{} is not a file's path", plain(value))),
    }
}

/// `tls` with its relative paths made the folder's.
fn in_folder(folder: &Path, tls: stateous_client::TlsOptions) -> stateous_client::TlsOptions {
    let anchored = |path: PathBuf| folder.join(path);
    stateous_client::TlsOptions {
        ca_file: tls.ca_file.map(anchored),
        identity: tls.identity.map(|identity| stateous_client::Identity {
            cert_file: anchored(identity.cert_file),
            key_file: anchored(identity.key_file),
        }),
    }
}

fn set_timing(timings: &mut Timings, key: &str, span: Duration) {
    match key {
        "heartbeat" => timings.heartbeat = span,
        "idle" => timings.idle = span,
        "grace" => timings.grace = span,
        "cancel_wait" => timings.cancel_wait = span,
        "claim_wait" => timings.claim_wait = span,
        _ => timings.request_timeout = span,
    }
}

/// The environment's timing overrides: `STATEOUS_SUPERVISOR_<KEY>` for each key;
/// `..._BACKOFF` is a comma-separated list.
fn apply_env(mut timings: Timings) -> Result<Timings, String> {
    for key in [
        "heartbeat",
        "idle",
        "claim_wait",
        "grace",
        "cancel_wait",
        "request_timeout",
    ] {
        let var = format!("STATEOUS_SUPERVISOR_{}", key.to_uppercase());
        if let Ok(text) = std::env::var(&var) {
            if key == "claim_wait" {
                let wait = check_claim_wait(&Value::String(text));
                timings.claim_wait = wait.map_err(|e| format!("{var}: {e}"))?;
                continue;
            }
            let span = parse_span(&text).map_err(|e| format!("{var}: {e}"))?;
            set_timing(&mut timings, key, span);
        }
    }
    if let Ok(text) = std::env::var("STATEOUS_SUPERVISOR_BACKOFF") {
        let spans: Result<Vec<_>, _> = text.split(',').map(|s| parse_span(s.trim())).collect();
        timings.backoff = spans.map_err(|e| format!("STATEOUS_SUPERVISOR_BACKOFF: {e}"))?;
        if timings.backoff.is_empty() {
            return Err("STATEOUS_SUPERVISOR_BACKOFF: give at least one wait".into());
        }
    }
    Ok(timings)
}

/// A timing: a duration as workflows write it (`30s`, `2m`), milliseconds
/// (`250ms`, for tests), or a plain number of seconds.
fn parse_span(text: &str) -> Result<Duration, String> {
    parse_timing(text, TimingOf::Setting)
}

fn check_span(value: &Value) -> Result<Duration, String> {
    match value {
        Value::String(text) => parse_span(text),
        Value::Number(n) => n
            .as_f64()
            .and_then(seconds_timing)
            .ok_or_else(|| format!("{n} is not a positive number of seconds")),
        other => Err(format!("{} is not a duration", plain(other))),
    }
}

/// `claim_wait`: a duration of at most 60 s, or 0 (no waiting claims).
fn check_claim_wait(value: &Value) -> Result<Duration, String> {
    let zero = match value {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(text) => matches!(text.trim(), "0" | "0s" | "0ms"),
        _ => false,
    };
    if zero {
        return Ok(Duration::ZERO);
    }
    let wait = check_span(value)?;
    if wait > MOST_CLAIM_WAIT {
        return Err(format!(
            "{} is longer than a claim may wait (60s)",
            plain(value)
        ));
    }
    Ok(wait)
}

fn check_backoff(value: &Value) -> Result<Vec<Duration>, String> {
    let Value::Sequence(items) = value else {
        return Err("give a list of waits, e.g. [1s, 2s, 4s, 8s, 16s, 30s]".into());
    };
    if items.is_empty() {
        return Err("give at least one wait".into());
    }
    items.iter().map(check_span).collect()
}

/// `url`: one address, or a list of them (a control plane and its standbys), kept as
/// the client takes them: separated by commas, in order.
fn check_url(value: &Value) -> Result<String, String> {
    let items: Vec<&Value> = match value {
        Value::Sequence(items) if items.is_empty() => {
            return Err("[] has no address; give one, or a list of them".into())
        }
        Value::Sequence(items) => items.iter().collect(),
        single => vec![single],
    };
    let mut urls = Vec::new();
    for item in items {
        let Value::String(text) = item else {
            return Err(format!("{} is not an address", plain(item)));
        };
        for part in text.split(',') {
            urls.push(check_address(part.trim(), text)?);
        }
    }
    Ok(urls.join(","))
}

/// One address of `url` (`given` is the text it came from, for the sentence).
fn check_address(url: &str, given: &str) -> Result<String, String> {
    if url.is_empty() {
        return Err(format!(
            "'{given}' has an empty address; separate addresses with one comma, or give a list"
        ));
    }
    let trimmed = url.trim_end_matches('/');
    let endpoint = if url.starts_with("unix://") {
        url
    } else {
        trimmed
    };
    match stateous_client::Endpoint::parse(endpoint) {
        Ok(_) if url.starts_with("unix://") => Ok(url.to_string()),
        Ok(_) => Ok(trimmed.to_string()),
        Err(_) => Err(format!(
            "'{url}' is not an http://, https:// or unix:// address of a control plane"
        )),
    }
}

fn check_tasks(value: &Value) -> Result<u32, String> {
    match value.as_u64() {
        Some(n) if (1..=u64::from(MAX_TASKS)).contains(&n) => Ok(n as u32),
        _ => Err(format!(
            "{} is not a whole number from 1 to {MAX_TASKS}",
            plain(value)
        )),
    }
}

fn check_name(value: &Value) -> Result<String, String> {
    let Value::String(name) = value else {
        return Err(format!("{} is not text", plain(value)));
    };
    let length = name.chars().count();
    if length == 0 || length > MAX_NAME {
        return Err(format!(
            "a name has 1 to {MAX_NAME} characters, not {length}"
        ));
    }
    Ok(name.clone())
}

fn check_routines(value: &Value) -> Result<BTreeMap<String, String>, String> {
    let Value::Mapping(map) = value else {
        return Err("give a mapping of state to command line".into());
    };
    let mut routines = BTreeMap::new();
    for (state, command) in map {
        let (Some(state), Some(command)) = (state.as_str(), command.as_str()) else {
            return Err(format!(
                "{}: give a state and its command line as text",
                plain(state)
            ));
        };
        if command.trim().is_empty() {
            return Err(format!("{state}: the command line is empty"));
        }
        routines.insert(state.to_string(), command.to_string());
    }
    Ok(routines)
}

/// A YAML value as it reads in a problem's sentence.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => format!("'{text}'"),
        other => one_line(&serde_norway::to_string(other).unwrap_or_default()),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// This computer's host name, or `supervisor` when it has none.
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, and gethostname writes at
    // most that many bytes.
    let done = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    match std::str::from_utf8(&buffer[..end]) {
        Ok(name) if done == 0 && !name.is_empty() => name.to_string(),
        _ => "supervisor".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_files_are_the_folders_and_a_client_cert_needs_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE);
        std::fs::write(
            &path,
            "url: https://cp.example:8443\ncacert: ca.pem\nclient_cert: /etc/me.pem\n\
             client_key: me.key\n",
        )
        .unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.url.as_deref(), Some("https://cp.example:8443"));
        assert_eq!(config.tls.ca_file, Some(dir.path().join("ca.pem")));
        let identity = config.tls.identity.unwrap();
        assert_eq!(identity.cert_file, PathBuf::from("/etc/me.pem"));
        assert_eq!(identity.key_file, dir.path().join("me.key"));
        assert_eq!(
            Config::parse("client_cert: me.pem\ncacert: 3\n").unwrap_err(),
            "cacert: 3 is not a file's path; client_cert: needs client_key, its key"
        );
    }

    #[test]
    fn a_setting_written_twice_is_refused() {
        let error = Config::parse("tasks: 2\nurl: http://a:1\ntasks: 8\n").unwrap_err();
        assert!(error.contains("'tasks' is written twice"), "{error}");
    }

    #[test]
    fn url_is_one_address_or_a_list_of_them() {
        let one = Config::parse("url: http://127.0.0.1:8080/\n").unwrap();
        assert_eq!(
            one.control_plane(None).as_deref(),
            Ok("http://127.0.0.1:8080")
        );
        let list = Config::parse("url: [http://10.0.0.1:8080/, 'unix:///run/s.sock']\n").unwrap();
        assert_eq!(
            list.control_plane(None).as_deref(),
            Ok("http://10.0.0.1:8080,unix:///run/s.sock")
        );
        let block = Config::parse("url:\n  - http://a:1\n  - http://b:2\n").unwrap();
        assert_eq!(
            block.control_plane(None).as_deref(),
            Ok("http://a:1,http://b:2")
        );
        let commas = Config::parse("url: http://a:1, http://b:2\n").unwrap();
        assert_eq!(
            commas.control_plane(None).as_deref(),
            Ok("http://a:1,http://b:2")
        );
        assert_eq!(
            block.control_plane(Some("http://c:3")).as_deref(),
            Ok("http://c:3")
        );
        for (text, problem) in [
            (
                "url: []",
                "url: [] has no address; give one, or a list of them",
            ),
            ("url: [http://a:1, 7]", "url: 7 is not an address"),
            (
                "url: [http://a:1, ftp://b]",
                "url: 'ftp://b' is not an http://, https:// or unix:// address of a control plane",
            ),
            (
                "url: 'http://a:1,,http://b:2'",
                "url: 'http://a:1,,http://b:2' has an empty address; separate addresses \
                 with one comma, or give a list",
            ),
        ] {
            assert_eq!(Config::parse(text).unwrap_err(), problem, "{text}");
        }
    }

    #[test]
    fn a_full_file_is_read() {
        let config = Config::parse(
            "url: http://127.0.0.1:8080/\ntasks: 8\nname: box-1\nheartbeat: 500ms\n\
             idle: 1\nbackoff: [100ms, 1s]\nroutines:\n  testing: ./run-tests --fast\n",
        )
        .unwrap();
        assert_eq!(
            config.control_plane(None).as_deref(),
            Ok("http://127.0.0.1:8080")
        );
        assert_eq!(
            config.control_plane(Some("unix:///s")).as_deref(),
            Ok("unix:///s")
        );
        assert_eq!(config.tasks, 8);
        assert_eq!(config.supervisor_name(), "box-1");
        assert_eq!(config.timings.heartbeat, Duration::from_millis(500));
        assert_eq!(config.timings.idle, Duration::from_secs(1));
        assert_eq!(
            config.timings.backoff,
            vec![Duration::from_millis(100), Duration::from_secs(1)]
        );
        assert_eq!(config.routines["testing"], "./run-tests --fast");
    }

    #[test]
    fn claim_wait_is_at_most_60_seconds_and_0_turns_it_off() {
        let default = Config::parse("url: http://x:1").unwrap();
        assert_eq!(default.timings.claim_wait, DEFAULT_CLAIM_WAIT);
        for (text, wait) in [("0", 0), ("0s", 0), ("250ms", 250), ("60", 60_000)] {
            let config = Config::parse(&format!("claim_wait: {text}")).unwrap();
            assert_eq!(
                config.timings.claim_wait,
                Duration::from_millis(wait),
                "{text}"
            );
        }
        let err = Config::parse("claim_wait: 61s").unwrap_err();
        assert_eq!(
            err,
            "claim_wait: '61s' is longer than a claim may wait (60s)"
        );
        assert!(Config::parse("claim_wait: soon").is_err());
    }

    #[test]
    fn defaults_fill_what_is_not_given() {
        let config = Config::parse("url: unix:///run/s.sock").unwrap();
        assert_eq!(config.tasks, DEFAULT_TASKS);
        assert_eq!(config.timings, Timings::default());
        assert!(!config.supervisor_name().is_empty());
    }

    #[test]
    fn each_wrong_key_is_named_on_one_line() {
        let err = Config::parse("url: http://x:1\ntaks: 3\n").unwrap_err();
        assert_eq!(err, "taks: there is no such setting");
        let err = Config::parse("tasks: 0\nname: ''\nidle: soon").unwrap_err();
        assert!(
            err.contains("tasks: 0 is not a whole number from 1 to 1000"),
            "{err}"
        );
        assert!(
            err.contains("name: a name has 1 to 128 characters, not 0"),
            "{err}"
        );
        assert!(err.contains("idle: 'soon' is not a duration"), "{err}");
        let err = Config::parse("heartbeat: 0s\nidle: 0ms\ngrace: 0").unwrap_err();
        for key in ["heartbeat: '0s'", "idle: '0ms'", "grace: 0 "] {
            assert!(err.contains(key), "{key}: {err}");
        }
        assert!(
            err.contains("is zero; a timing must be more than 0"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        let err = Config::parse("url: ftp://x").unwrap_err();
        assert!(err.starts_with("url: 'ftp://x' is not"), "{err}");
        assert!(Config::parse("- a\n- b").is_err());
        assert!(Config::parse("url: [").is_err());
    }
}
