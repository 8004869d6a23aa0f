//! Running a program routine (`docs/reference/files.md`, "A supervisor's folder").
//!
//! The program starts in the supervisor's folder, in a process group of its own
//! (so a signal to the supervisor's terminal does not reach it, and a stop can
//! reach all of its children), with the grant as one JSON object on stdin and
//! `STATEOUS_TOKEN`, `_TASK`, `_STATE`, `_VISIT`, `_ATTEMPT` and `_CTX` in its
//! environment, and `TRACEPARENT` when the grant has the attempt's. The folder of the running `stateous` binary comes first on its
//! `PATH`, so `stateous ctx ...` is the same binary. Each line it writes goes to
//! the supervisor's log, prefixed with the task, and to a file under
//! `.stateous/logs/`, within the caps of `output.rs`. A kill sends SIGTERM to the
//! group, then SIGKILL after the grace period; so does the routine's end to what
//! it left running in its group. The spawner (`spawner/`) starts it
//! when the process has one; else the supervisor forks it itself.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use stateous_shared::wire::Grant;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;

use crate::output::Sinks;
use crate::routines::Program;
use crate::stop::Stop;
/// After the program exits, how long its output may still drain: a child it left
/// behind can hold the pipes open for ever.
const DRAIN: Duration = Duration::from_millis(500);

/// What one run needs to know besides the program.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The supervisor's folder: the program's working folder.
    pub folder: PathBuf,
    /// The file the program's output is appended to.
    pub log_file: PathBuf,
    /// The socket of the `stateous ctx` helper.
    pub ctx_socket: PathBuf,
    /// From SIGTERM to SIGKILL.
    pub grace: Duration,
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It could not start; the sentence says why.
    NotStarted(String),
}

/// How a program ended, and the last lines of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// How it ended.
    pub ended: Ended,
    /// The last lines of its stderr, oldest first.
    pub stderr_tail: Vec<String>,
}

impl Exit {
    /// Why the attempt failed, or `None` for exit status 0.
    pub fn failure(&self) -> Option<String> {
        let what = match &self.ended {
            Ended::Exited(0) => return None,
            Ended::Exited(code) => format!("the routine exited with status {code}"),
            Ended::Signalled(signal) => format!("the routine was killed by signal {signal}"),
            Ended::NotStarted(why) => return Some(why.clone()),
        };
        if self.stderr_tail.is_empty() {
            Some(what)
        } else {
            Some(format!("{what}; stderr: {}", self.stderr_tail.join(" / ")))
        }
    }
}

impl Exit {
    /// Why an attempt whose routine exited 0 without an outcome failed.
    pub fn without_outcome(&self) -> String {
        let what = "the routine exited with status 0 without an outcome: call \
                    `stateous ctx emit EVENT` or `stateous ctx wait` before it exits";
        if self.stderr_tail.is_empty() {
            what.to_string()
        } else {
            format!("{what}; stderr: {}", self.stderr_tail.join(" / "))
        }
    }
}

/// Run `program` for `grant` until it ends, or until `kill` is set (then SIGTERM,
/// and SIGKILL after the grace period).
pub async fn run(program: &Program, grant: &Grant, spec: &RunSpec, kill: &Stop) -> Exit {
    let (path, args) = match program {
        Program::File(path) => (path.as_os_str(), Vec::new()),
        Program::Command(line) => (
            std::ffi::OsStr::new("/bin/sh"),
            vec![OsString::from("-c"), OsString::from(line)],
        ),
    };
    let mut env = vec![
        ("STATEOUS_TOKEN", OsString::from(&grant.token)),
        ("STATEOUS_TASK", grant.task.to_string().into()),
        ("STATEOUS_STATE", OsString::from(&grant.state)),
        ("STATEOUS_VISIT", grant.visit.to_string().into()),
        ("STATEOUS_ATTEMPT", grant.attempt.to_string().into()),
        (crate::ctx_socket::CTX_ENV, spec.ctx_socket.clone().into()),
        ("PATH", path_with_own_folder().to_os_string()),
    ];
    // The attempt's span, which the routine's own spans join (W3C Trace Context's
    // name for the variable; `docs/reference/traces.md`).
    if let Some(traceparent) = &grant.traceparent {
        env.push(("TRACEPARENT", OsString::from(traceparent)));
    }
    let mut child = match start(path, &args, &spec.folder, &env, spec.grace).await {
        Ok(child) => child,
        Err(e) => {
            return Exit {
                ended: Ended::NotStarted(format!(
                    "the routine {} could not start: {e}",
                    program.describe()
                )),
                stderr_tail: Vec::new(),
            }
        }
    };
    let pid = Some(child.pid);
    if let Some(mut stdin) = child.stdin.take() {
        let mut text = serde_json::to_vec(grant).unwrap_or_default();
        text.push(b'\n');
        // A program that does not read its stdin must not block the supervisor.
        tokio::spawn(async move {
            let _ = stdin.write_all(&text).await;
        });
    }
    let sinks = Sinks::open(grant.task, &spec.log_file);
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(sinks.clone().copy(out, false)));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(sinks.clone().copy(err, true)));
    }
    let status = tokio::select! {
        status = child.wait() => status,
        _ = kill.wait() => {
            signal_group(pid, libc::SIGTERM);
            tokio::select! {
                status = child.wait() => status,
                _ = tokio::time::sleep(spec.grace) => {
                    signal_group(pid, libc::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    if status.is_err() {
        stop_group(pid, spec.grace).await;
    } else {
        // What the routine left running in its group ends with its attempt:
        // asked now, killed after the grace, without holding back the report.
        tokio::spawn(stop_group(pid, spec.grace));
    }
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN, reader).await.is_err() {
            abort.abort();
        }
    }
    let stderr_tail = sinks.tail();
    let ended = match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Ended::Exited(code),
                (None, Some(signal)) => Ended::Signalled(signal),
                (None, None) => Ended::Exited(-1),
            }
        }
        Err(e) => Ended::NotStarted(format!("the routine could not be waited for: {e}")),
    };
    Exit { ended, stderr_tail }
}

/// A running routine's ends: its pid, its pipes, and how to wait for its end.
struct Child {
    pid: i32,
    stdin: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    stdout: Option<Box<dyn AsyncRead + Send + Unpin>>,
    stderr: Option<Box<dyn AsyncRead + Send + Unpin>>,
    end: End,
}

/// How a routine's end is learnt.
enum End {
    /// It is the supervisor's own child.
    Own(tokio::process::Child),
    /// The spawner's child: the spawner sends its wait status.
    Spawned(tokio::sync::oneshot::Receiver<i32>),
    /// It ended: the status, kept for a second wait.
    Ended(std::process::ExitStatus),
}

impl Child {
    /// Wait for the routine's end; cancel-safe.
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        let status = match &mut self.end {
            End::Own(child) => child.wait().await?,
            End::Spawned(exit) => match exit.await {
                Ok(status) => std::process::ExitStatus::from_raw(status),
                Err(_) => {
                    return Err(std::io::Error::other(
                        "the routines' spawner ended before the routine",
                    ))
                }
            },
            End::Ended(status) => *status,
        };
        self.end = End::Ended(status);
        Ok(status)
    }
}

/// Start the program through the spawner when there is one (`spawner/`: a fork of
/// the supervisor itself was about half of its CPU time per short routine),
/// else as the supervisor's own child. `env` is added to the supervisor's own.
async fn start(
    program: &std::ffi::OsStr,
    args: &[OsString],
    folder: &Path,
    env: &[(&str, OsString)],
    grace: Duration,
) -> std::io::Result<Child> {
    if let Some(spawner) = crate::spawner::spawner() {
        let mut whole: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(key, _)| !env.iter().any(|(k, _)| key == k))
            .collect();
        whole.extend(env.iter().map(|(k, v)| (OsString::from(k), v.clone())));
        let launch = crate::spawner::Launch {
            program,
            args,
            folder,
            env: &whole,
            grace,
        };
        match spawner.spawn(&launch).await {
            Ok(started) => {
                return Ok(Child {
                    pid: started.pid,
                    stdin: Some(Box::new(started.stdin)),
                    stdout: Some(Box::new(started.stdout)),
                    stderr: Some(Box::new(started.stderr)),
                    end: End::Spawned(started.exit),
                })
            }
            Err(crate::spawner::SpawnError::Program(e)) => return Err(e),
            // The spawner is gone, or could not be asked: start it here.
            Err(crate::spawner::SpawnError::Spawner(e)) => crate::log_line!(
                "the routines' spawner could not start a routine ({e}); the supervisor \
                 starts it itself"
            ),
        }
    }
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(folder)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(env.iter().map(|(k, v)| (k, v)));
    stop_with_the_supervisor(&mut command);
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .unwrap_or(0);
    Ok(Child {
        pid,
        stdin: child
            .stdin
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncWrite + Send + Unpin>),
        stdout: child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        stderr: child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        end: End::Own(child),
    })
}

/// On Linux, the program gets SIGTERM when the supervisor dies (even by SIGKILL),
/// so a crashed supervisor leaves no routine running whose task will run again.
/// The program only, not its own children: a dead supervisor signals no group.
/// The spawner, which outlives the supervisor long enough, signals the whole
/// group (`spawner/process.rs` `stop_routines`); this is the start without it.
#[cfg(target_os = "linux")]
fn stop_with_the_supervisor(command: &mut Command) {
    // SAFETY: getpid is async-signal-safe.
    let supervisor = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, and calls only
    // async-signal-safe functions (prctl, getppid); it touches no shared state.
    unsafe {
        command.pre_exec(move || die_with_parent(supervisor, libc::SIGTERM));
    }
}

/// Ask for `signal` when the parent `parent` dies (`PR_SET_PDEATHSIG`), and fail
/// with ESRCH when it died already (before the request took effect). Runs
/// between fork and exec (or in a fork of a single thread): it calls only
/// async-signal-safe functions and allocates nothing, since a fork of a process
/// with threads may hold the allocator's lock.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(parent: libc::pid_t, signal: libc::c_int) -> std::io::Result<()> {
    // SAFETY: prctl and getppid have no memory effects.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn stop_with_the_supervisor(_command: &mut Command) {}

/// Stop what is left of a routine's process group once its attempt is over:
/// SIGTERM, then SIGKILL once `grace` has passed, so that nothing of the attempt
/// runs on beside the next one. Either the routine exited and left children in
/// its group (`sleep 60 &`), or its end cannot be learnt (its spawner died under
/// it) and it may run on, no one's child, having ignored the SIGTERM of its death
/// signal. Returns when the group is gone, or has been sent SIGKILL. The group's
/// id is not given to a new process while the group has one; an empty group
/// answers ESRCH, which ends the wait.
async fn stop_group(pid: Option<i32>, grace: Duration) {
    let Some(group) = pid.filter(|p| *p > 0) else {
        return;
    };
    signal_group(pid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    // SAFETY: kill(2) with signal 0 only asks whether the group has a process.
    while unsafe { libc::kill(-group, 0) } == 0 {
        if tokio::time::Instant::now() >= deadline {
            signal_group(pid, libc::SIGKILL);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Send `signal` to the process group led by `pid`.
fn signal_group(pid: Option<i32>, signal: i32) {
    if let Some(pid) = pid.filter(|p| *p > 0) {
        // SAFETY: kill(2) with a negative pid signals that process group; it has
        // no memory effects, and a group that is gone gives ESRCH, which is fine.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// `PATH` with the folder of the running binary first, so that a routine's
/// `stateous ctx` is this very binary. Found once: `current_exe` reads a link.
fn path_with_own_folder() -> &'static std::ffi::OsStr {
    static PATH: std::sync::OnceLock<std::ffi::OsString> = std::sync::OnceLock::new();
    PATH.get_or_init(find_path_with_own_folder)
}

fn find_path_with_own_folder() -> std::ffi::OsString {
    let old = std::env::var_os("PATH").unwrap_or_default();
    let own = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let Some(own) = own else {
        return old;
    };
    let mut parts = vec![own];
    parts.extend(std::env::split_paths(&old));
    std::env::join_paths(parts).unwrap_or(old)
}
