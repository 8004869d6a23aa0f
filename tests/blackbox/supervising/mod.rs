//! Helpers for the black-box tests of `stateous supervise`: a supervisor process
//! whose log can be waited on, and folders made by `stateous init supervisor`.

// Each test file uses a different part of the helpers.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{asset_graph, binary, run, Daemon, Setup};

/// Short timings for the supervisor, in its `stateous.yaml`.
pub const TIMINGS: &str =
    "name: box-1\nheartbeat: 200ms\nidle: 50ms\ngrace: 1s\nbackoff: [100ms]\n";

/// A supervisor under test: `stateous supervise FOLDER`, its stderr in a file.
pub struct Supervise {
    /// The process.
    pub child: Child,
    folder: PathBuf,
    log: PathBuf,
}

impl Supervise {
    pub fn start(folder: &Path) -> Supervise {
        Supervise::start_with(folder, &[])
    }

    pub fn start_with(folder: &Path, args: &[&str]) -> Supervise {
        Supervise::launch(folder, args, false)
    }

    /// In a process group of its own, as a shell starts a foreground job: a
    /// signal to the group is a Ctrl-C in its terminal.
    pub fn start_in_own_group(folder: &Path) -> Supervise {
        Supervise::launch(folder, &[], true)
    }

    fn launch(folder: &Path, args: &[&str], own_group: bool) -> Supervise {
        use std::os::unix::process::CommandExt;
        let log = folder.with_extension("log");
        let stderr = std::fs::File::create(&log).expect("a log file");
        let mut command = Command::new(binary());
        command
            .arg("supervise")
            .arg(folder)
            .args(args)
            .env_remove("STATEOUS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if own_group {
            command.process_group(0);
        }
        let child = command.spawn().expect("the stateous binary starts");
        Supervise {
            child,
            folder: folder.to_path_buf(),
            log,
        }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn wait_for_line(&self, part: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.stderr().contains(part) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the supervisor never logged {part:?}\n{}", self.report());
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// Signal the supervisor's whole process group (see `start_in_own_group`).
    pub fn signal_group(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's group has no memory effects.
        unsafe { libc::kill(-(self.child.id() as i32), signal) };
    }

    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("a status") {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit\n{}", self.report());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn report(&self) -> String {
        format!(
            "command: stateous supervise {}\n--- stderr ---\n{}",
            self.folder.display(),
            self.stderr()
        )
    }
}

impl Drop for Supervise {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("=== the supervisor under test ===\n{}", self.report());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `stateous init supervisor URL FOLDER`, the stubs removed, `routines` written
/// (file name, script), and the short timings added.
pub fn folder_for(daemon: &Daemon, routines: &[(&str, &str)]) -> PathBuf {
    folder_named(daemon, "sup", "box-1", routines)
}

/// As [`folder_for`], in the folder `dir` of the daemon's folder, for the
/// supervisor named `name`.
pub fn folder_named(daemon: &Daemon, dir: &str, name: &str, routines: &[(&str, &str)]) -> PathBuf {
    let folder = daemon.dir.path().join(dir);
    let made = run(daemon.dir.path(), &["init", "supervisor", &daemon.url, dir]);
    assert_eq!(made.code(), 0, "{made}");
    for stub in ["coding.sh", "testing.sh"] {
        let _ = std::fs::remove_file(folder.join(stub));
    }
    for (name, script) in routines {
        write_script(&folder.join(name), script);
    }
    let config = folder.join("stateous.yaml");
    let timings = TIMINGS.replace("name: box-1", &format!("name: {name}"));
    let text = std::fs::read_to_string(&config).unwrap() + &timings;
    std::fs::write(config, text).unwrap();
    folder
}

/// Point the folder's `stateous.yaml` at `urls`, as a YAML list.
pub fn set_urls(folder: &std::path::Path, urls: &[&str]) {
    let path = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&path).expect("stateous.yaml");
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("url:")).collect();
    let list = urls
        .iter()
        .map(|u| format!("\n  - {u}"))
        .collect::<String>();
    std::fs::write(&path, format!("url:{list}\n{}\n", kept.join("\n"))).expect("written");
}

/// The messages waiting in a supervisor's outbox, oldest first: (kind, body).
pub fn outbox(folder: &Path) -> Vec<(String, Value)> {
    let path = folder.join(".stateous/outbox.db");
    let Ok(db) = rusqlite::Connection::open(&path) else {
        return Vec::new();
    };
    db.busy_timeout(Duration::from_secs(10))
        .expect("the outbox");
    let mut query = db
        .prepare("SELECT kind, body FROM messages ORDER BY id")
        .expect("the outbox");
    query
        .query_map([], |row| {
            let body: String = row.get(1)?;
            Ok((
                row.get(0)?,
                serde_json::from_str(&body).expect("the outbox"),
            ))
        })
        .expect("the outbox")
        .map(|row| row.expect("a message"))
        .collect()
}

pub fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc")).start()
}

pub fn start_token(daemon: &Daemon, id: &str) {
    daemon
        .post(
            "/tokens",
            &json!({"token": id, "context": {"repo": "acme"}}),
        )
        .expect(201);
}

pub fn wait_for_status(daemon: &Daemon, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let token = daemon.get(&format!("/tokens/{id}")).expect(200);
        if token["status"] == status {
            return token;
        }
        assert!(Instant::now() < deadline, "{id} is {token}, never {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn history(daemon: &Daemon, id: &str) -> Vec<Value> {
    let answer = daemon.get(&format!("/tokens/{id}/history")).expect(200);
    let entries = answer.get("history").cloned().unwrap_or(answer);
    entries.as_array().cloned().unwrap_or_default()
}

pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// A copy of an example supervisor of `assets/`, pointed at `daemon`.
pub fn example_folder(daemon: &Daemon, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(name);
    let to = daemon.dir.path().join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    let config = to.join("stateous.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("http://127.0.0.1:8080", &daemon.url);
    std::fs::write(&config, text + TIMINGS).unwrap();
    to
}

/// Whether `pid` runs: it exists and is not a zombie waiting for its reaper.
pub fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The pid a routine wrote to `name` in `folder`, once it is there.
pub fn pid_in(folder: &Path, name: &str) -> i32 {
    let pid_file = folder.join(name);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The file exists before the shell has written the pid into it.
    std::thread::sleep(Duration::from_millis(100));
    std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` stops running within a few seconds.
pub fn ends_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    !running(pid)
}

/// The lines of `stateous token show ID`, without their time and number columns.
pub fn show_lines(daemon: &Daemon, id: &str) -> Vec<String> {
    let shown = run(
        daemon.dir.path(),
        &["token", "show", id, "--url", &daemon.url],
    );
    assert_eq!(shown.code(), 0, "{shown}");
    shown
        .stdout
        .lines()
        .skip(1)
        .map(|line| {
            let text = line.splitn(3, "  ").nth(2).unwrap_or(line);
            text.trim().to_string()
        })
        .collect()
}
