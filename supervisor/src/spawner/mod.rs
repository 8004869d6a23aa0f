//! The spawner: a small process that starts program routines, so that the
//! supervisor, a large multi-threaded process, does not fork for each one.
//!
//! A routine must get SIGTERM when its supervisor dies, even by SIGKILL
//! (`PR_SET_PDEATHSIG`), and only the child itself can ask for that, between fork and
//! exec. Rust's `Command` then forks instead of using posix_spawn (vfork), and a fork
//! of the supervisor copied its page tables and made its next writes to its own memory
//! copy-on-write faults: about half of the supervisor's CPU time per short routine
//! (measured with `bench-routines`). The spawner is forked once, before the process
//! starts any thread, while it is small; its forks are cheap.
//!
//! The guarantee holds for the routine's whole process group, its own children
//! too: the spawner gets SIGTERM when the thread that started it (the main thread)
//! ends, reads it from its signal descriptor, sends SIGTERM to the group of each
//! routine it has not collected, SIGKILL to each group still there when that
//! routine's grace period has passed, and ends (`process.rs` `stop_routines`): a
//! routine that ignores SIGTERM must not run on beside the task's next attempt. It
//! does the same when the supervisor closes the socket (`finish`). Each routine also
//! gets SIGTERM itself when the spawner ends, a second line for a spawner killed
//! outright. The spawner lives in a process group of its own, so that a signal to
//! the supervisor's whole group (`kill -9 %1` in a shell, or a Ctrl-C) does not
//! reach it; it also ignores SIGINT and SIGTERM from elsewhere, which the
//! supervisor handles (a Ctrl-C must not end the routines at once): a SIGTERM
//! ends it only when its parent is no longer the supervisor. A routine starts
//! with both at their defaults, as the supervisor's own children did.
//!
//! The two speak over a socket pair (`SOCK_SEQPACKET`, one message each): a
//! request names the program, its arguments, folder and whole environment, and
//! carries the routine's stdin, stdout and stderr (`SCM_RIGHTS`); the spawner
//! answers with the pid or the error, and later with the wait status. The spawner
//! starts each routine with Rust's `Command`, so the routine's start is what the
//! supervisor's own `Command` did: its own process group, SIGPIPE at its default,
//! and the signal mask the supervisor started with. Without a spawner (none started, as in a process that
//! already runs threads, or one that is gone) the supervisor forks routines itself.

mod process;
mod wire;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::log_line;
use wire::{decode_answer, encode_request, send_with_fds, Answer, MAX_ANSWER, MAX_REQUEST};

/// The spawner of this process, once started.
static SPAWNER: OnceLock<Spawner> = OnceLock::new();

/// Start this process's spawner. Call it before the process starts any thread:
/// the spawner is a fork of the process as it is then. It fails, and the
/// supervisor then forks its routines itself, when the process runs threads
/// already, or the fork fails. Starting it twice does nothing.
pub fn start() -> io::Result<()> {
    if SPAWNER.get().is_some() {
        return Ok(());
    }
    if threads()? != 1 {
        return Err(io::Error::other(
            "the process runs threads already: a fork of it could deadlock",
        ));
    }
    let (ours, theirs) = socket_pair()?;
    // SAFETY: getpid has no preconditions.
    let supervisor = unsafe { libc::getpid() };
    // SAFETY: the process has one thread (checked above), so the child may run any
    // code: no lock can be held by a thread that the fork left behind.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(ours);
            process::spawner_main(theirs, supervisor)
        }
        pid => {
            drop(theirs);
            // A group of its own, so that a signal to the supervisor's whole group
            // (`kill -9 %1` in a shell) does not end the spawner along with it: it
            // must outlive the supervisor to stop the routines. The child sets it
            // too; whichever runs first, it holds before `start` returns.
            // SAFETY: setpgid on our own child; no memory effects. It fails only
            // when the child has exec'd or is gone, which the spawner never does
            // here; its own call then stands.
            unsafe { libc::setpgid(pid, pid) };
            let shared = Arc::new(Shared {
                alive: AtomicBool::new(true),
                waiting: Mutex::new(Waiting::default()),
            });
            let reader = ours.try_clone()?;
            let answers = shared.clone();
            std::thread::Builder::new()
                .name("stateous-spawner".into())
                .spawn(move || read_answers(&reader, &answers))?;
            let _ = SPAWNER.set(Spawner {
                pid,
                socket: ours,
                send: Mutex::new(()),
                next: AtomicU64::new(1),
                shared,
            });
            Ok(())
        }
    }
}

/// End this process's spawner and collect it, so that its time and its routines'
/// count in this process's own (`time stateous supervise`). A routine still
/// running gets SIGTERM to its process group, as when the supervisor dies. Call
/// it last.
pub fn finish() {
    let Some(spawner) = SPAWNER.get() else {
        return;
    };
    spawner.shared.alive.store(false, Ordering::SeqCst);
    // SAFETY: shutdown and waitpid act on our own socket and our own child;
    // waitpid writes the status into the integer it is given.
    unsafe {
        libc::shutdown(spawner.socket.as_raw_fd(), libc::SHUT_RDWR);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut status = 0;
        while libc::waitpid(spawner.pid, &mut status, libc::WNOHANG) == 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// This process's spawner, while it runs.
pub(crate) fn spawner() -> Option<&'static Spawner> {
    SPAWNER
        .get()
        .filter(|s| s.shared.alive.load(Ordering::SeqCst))
}

/// How many threads this process runs.
fn threads() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [RawFd; 2] = [-1; 2];
    // SAFETY: socketpair writes two descriptors into the array it is given.
    let done = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// What a routine is started with.
pub(crate) struct Launch<'a> {
    /// The program: a path, or a name looked up in the environment's `PATH`.
    pub program: &'a OsStr,
    /// Its arguments, after the program.
    pub args: &'a [OsString],
    /// Its working folder.
    pub folder: &'a Path,
    /// Its whole environment.
    pub env: &'a [(OsString, OsString)],
    /// From SIGTERM to SIGKILL of its process group, should the supervisor die
    /// while it runs (the `grace` of the supervisor's settings).
    pub grace: Duration,
}

/// A routine the spawner started.
pub(crate) struct Started {
    /// Its process id, also its process group's.
    pub pid: i32,
    /// Its stdin.
    pub stdin: pipe::Sender,
    /// Its stdout.
    pub stdout: pipe::Receiver,
    /// Its stderr.
    pub stderr: pipe::Receiver,
    /// Its wait status when it has ended; an error if the spawner went first.
    pub exit: oneshot::Receiver<i32>,
}

/// Why a start through the spawner failed.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The program could not start (as `Command::spawn` says).
    Program(io::Error),
    /// The spawner could not be asked, or is gone: start the routine another way.
    Spawner(io::Error),
}

/// The supervisor's side of the spawner.
pub(crate) struct Spawner {
    pid: libc::pid_t,
    socket: OwnedFd,
    /// One request at a time on the socket.
    send: Mutex<()>,
    next: AtomicU64,
    shared: Arc<Shared>,
}

/// What the answer reader shares with the requests.
struct Shared {
    alive: AtomicBool,
    waiting: Mutex<Waiting>,
}

type StartAnswer = io::Result<(i32, oneshot::Receiver<i32>)>;

/// The starts waiting for an answer, by request id; the routines running, by pid.
#[derive(Default)]
struct Waiting {
    starts: HashMap<u64, oneshot::Sender<StartAnswer>>,
    exits: HashMap<i32, oneshot::Sender<i32>>,
}

impl Spawner {
    /// Start `launch` through the spawner.
    pub(crate) async fn spawn(&self, launch: &Launch<'_>) -> Result<Started, SpawnError> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let request = encode_request(id, launch).map_err(SpawnError::Program)?;
        if request.len() > MAX_REQUEST {
            return Err(SpawnError::Spawner(io::Error::other(
                "the request is too long",
            )));
        }
        let gone = SpawnError::Spawner;
        let (stdin_theirs, stdin) = std::io::pipe().map_err(gone)?;
        let (stdout, stdout_theirs) = std::io::pipe().map_err(gone)?;
        let (stderr, stderr_theirs) = std::io::pipe().map_err(gone)?;
        let stdin = pipe::Sender::from_owned_fd(stdin.into()).map_err(gone)?;
        let stdout = pipe::Receiver::from_owned_fd(stdout.into()).map_err(gone)?;
        let stderr = pipe::Receiver::from_owned_fd(stderr.into()).map_err(gone)?;
        let (tell, answer) = oneshot::channel();
        {
            let mut waiting = self.lock();
            if !self.shared.alive.load(Ordering::SeqCst) {
                return Err(gone(io::Error::other("the spawner is gone")));
            }
            waiting.starts.insert(id, tell);
        }
        let fds = [
            OwnedFd::from(stdin_theirs),
            OwnedFd::from(stdout_theirs),
            OwnedFd::from(stderr_theirs),
        ];
        let sent = {
            let _one = self.send.lock().unwrap_or_else(|e| e.into_inner());
            send_with_fds(&self.socket, &request, &fds)
        };
        // The spawner holds its own copies now; the routine's ends must not stay
        // open here, or its stdout would never end.
        drop(fds);
        if let Err(e) = sent {
            self.lock().starts.remove(&id);
            return Err(gone(e));
        }
        let (pid, exit) = match answer.await {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => return Err(SpawnError::Program(e)),
            Err(_) => return Err(gone(io::Error::other("the spawner is gone"))),
        };
        Ok(Started {
            pid,
            stdin,
            stdout,
            stderr,
            exit,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.shared
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Read the spawner's answers until it is gone, handing each to its waiter.
fn read_answers(socket: &OwnedFd, shared: &Shared) {
    let mut buffer = vec![0u8; MAX_ANSWER];
    loop {
        // SAFETY: recv writes at most buffer.len() bytes into the buffer.
        let read = unsafe {
            libc::recv(
                socket.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                0,
            )
        };
        if read < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        let Ok(length @ 1..) = usize::try_from(read) else {
            break;
        };
        let mut waiting = shared.waiting.lock().unwrap_or_else(|e| e.into_inner());
        match decode_answer(&buffer[..length]) {
            Some(Answer::Started { id, pid }) => {
                let (tell, exit) = oneshot::channel();
                waiting.exits.insert(pid, tell);
                if let Some(start) = waiting.starts.remove(&id) {
                    let _ = start.send(Ok((pid, exit)));
                }
            }
            Some(Answer::Failed { id, error }) => {
                if let Some(start) = waiting.starts.remove(&id) {
                    let _ = start.send(Err(error));
                }
            }
            Some(Answer::Exited { pid, status }) => {
                if let Some(exit) = waiting.exits.remove(&pid) {
                    let _ = exit.send(status);
                }
            }
            None => {}
        }
    }
    let finished = !shared.alive.swap(false, Ordering::SeqCst);
    let mut waiting = shared.waiting.lock().unwrap_or_else(|e| e.into_inner());
    let (starts, running) = (waiting.starts.len(), waiting.exits.len());
    waiting.starts.clear();
    waiting.exits.clear();
    if finished {
        return;
    }
    log_line!(
        "the routines' spawner ended ({starts} start(s) and {running} routine(s) lost with it); \
         the supervisor starts routines itself from now on"
    );
}
