//! The spawner's own process: it starts the routines it is asked to, and tells
//! when each ends, until the supervisor is gone; then it sends SIGTERM to each
//! running routine's process group, SIGKILL to each group still there after that
//! routine's grace period, and ends.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::wire::{decode_request, encode_answer, receive_with_fds, Answer, Request, MAX_REQUEST};

/// The routines started and not yet collected, by pid, with each one's grace
/// period (from SIGTERM to SIGKILL). A pid is also the id of the routine's process
/// group (`process_group(0)`), and stays so until the spawner collects it (a
/// zombie keeps its pid), so a signal to it reaches no other group.
type Routines = HashMap<libc::pid_t, Duration>;

/// How often `stop_routines` looks whether the groups it stops are gone.
const STOP_POLL: Duration = Duration::from_millis(20);

/// The spawner's process: serve, stop the routines still running, then end
/// without running the supervisor's exit handlers (they belong to the process it
/// was forked from).
pub(super) fn spawner_main(socket: OwnedFd, supervisor: libc::pid_t) -> ! {
    // Its own process group (the supervisor sets it too, `spawner::start`).
    // SAFETY: setpgid(0, 0) on this process; no memory effects.
    unsafe { libc::setpgid(0, 0) };
    let mut routines = Routines::new();
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        serve(&socket, supervisor, &mut routines)
    }));
    // However serving ended (the supervisor died or closed the socket, or an
    // error), no routine runs on without its supervisor: its whole group gets
    // SIGTERM, its own children too, and SIGKILL after its grace. The routine's
    // own PR_SET_PDEATHSIG on the spawner stays as a second line, for a spawner
    // killed outright.
    stop_routines(routines);
    let code = match served {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("stateous: the routines' spawner failed: {e}");
            1
        }
        Err(_) => 101,
    };
    // SAFETY: _exit ends the process at once; nothing of it is used after.
    unsafe { libc::_exit(code) }
}

/// Start routines as asked and tell when each ends, until the supervisor is gone:
/// its socket ends, or the spawner gets its death signal (SIGTERM, read from the
/// signal descriptor, so that `spawner_main` can stop the routines first).
fn serve(socket: &OwnedFd, supervisor: libc::pid_t, routines: &mut Routines) -> io::Result<()> {
    // The signals first: SIGTERM is blocked before it is asked for at the
    // supervisor's death, so it waits on the descriptor and never goes unseen.
    let (signals, mask) = spawner_signals()?;
    match crate::runner::die_with_parent(supervisor, libc::SIGTERM) {
        Ok(()) => {}
        // The supervisor died before the request took effect.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
        Err(e) => return Err(e),
    }
    // SAFETY: getpid has no preconditions.
    let spawner = unsafe { libc::getpid() };
    let mut buffer = vec![0u8; MAX_REQUEST];
    loop {
        let mut polled = [
            libc::pollfd {
                fd: socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: signals.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll reads and writes the two entries of the array.
        if unsafe { libc::poll(polled.as_mut_ptr(), 2, -1) } < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if polled[1].revents != 0 {
            drain(&signals);
            if supervisor_gone(supervisor) {
                return Ok(());
            }
            reap(socket, routines)?;
        }
        if polled[0].revents != 0 {
            match receive_with_fds(socket, &mut buffer) {
                Ok(None) => return Ok(()),
                Ok(Some((length, fds))) => {
                    let request = decode_request(&buffer[..length]);
                    let grace = request.as_ref().map(|r| r.grace);
                    if let Some(answer) = start_routine(request, fds, spawner, &mask) {
                        if let (Answer::Started { pid, .. }, Some(grace)) = (&answer, grace) {
                            routines.insert(*pid, grace);
                        }
                        send_answer(socket, &answer)?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Ignore SIGINT and SIGTERM, which the supervisor handles (a Ctrl-C reaches the
/// whole foreground group); block SIGCHLD and SIGTERM and read them from a
/// descriptor: a blocked signal waits there even while it is ignored, and a
/// SIGTERM ends the spawner only when the supervisor is gone (`supervisor_gone`).
/// Also the signal mask before: each routine starts with it (`Command` keeps the
/// mask).
fn spawner_signals() -> io::Result<(OwnedFd, libc::sigset_t)> {
    // SAFETY: the sigsets are initialised (zeroed, then sigemptyset or written by
    // sigprocmask) before use; signal, sigprocmask and signalfd only read them, or
    // write the old mask. SIG_IGN runs no code of ours.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, &mut before) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fd), before))
    }
}

/// Read the pending signal notices. Which children ended, `waitpid` tells; whether
/// the supervisor is gone, `supervisor_gone`: a SIGTERM may come from elsewhere
/// (a `kill` of the whole group, or of every process of a service).
fn drain(signals: &OwnedFd) {
    let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>() * 8];
    // SAFETY: read writes at most info.len() bytes into the buffer.
    while unsafe { libc::read(signals.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Whether the supervisor has died: the spawner has another parent now. The kernel
/// gives the orphan its new parent before it sends the death signal, so after
/// that signal this holds.
fn supervisor_gone(supervisor: libc::pid_t) -> bool {
    // SAFETY: getppid has no preconditions.
    unsafe { libc::getppid() != supervisor }
}

/// Send SIGTERM to the process group of each routine not yet collected; then,
/// until each of those groups is gone, collect ended routines (their answers have
/// no one to go to) and send SIGKILL to each group still there when its routine's
/// grace period has passed. Returns once every group is gone or has been sent
/// SIGKILL (which none can ignore: its processes' reaping by another parent is not
/// waited for).
fn stop_routines(routines: Routines) {
    let now = Instant::now();
    let mut groups: Vec<(libc::pid_t, Instant)> = routines
        .into_iter()
        .map(|(pid, grace)| {
            signal_group(pid, libc::SIGTERM);
            (pid, now + grace)
        })
        .collect();
    loop {
        // A collected leader's group lives on while a member does, and its id is
        // not given to a new process before the group is gone: signal 0 then
        // tells whether anything of it is left.
        while collect_one().is_some() {}
        groups.retain(|&(pid, kill_at)| {
            if !signal_group(pid, 0) {
                return false;
            }
            if Instant::now() >= kill_at {
                signal_group(pid, libc::SIGKILL);
                return false;
            }
            true
        });
        if groups.is_empty() {
            return;
        }
        std::thread::sleep(STOP_POLL);
    }
}

/// Send `signal` to the process group `group`; whether it has a process left (a
/// group that is gone gives ESRCH). Signal 0 only asks.
fn signal_group(group: libc::pid_t, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) with a negative pid signals that process group; it has no
    // memory effects.
    unsafe { libc::kill(-group, signal) == 0 }
}

/// Collect one ended child without waiting: its pid and wait status.
fn collect_one() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into the integer it is given.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    (pid > 0).then_some((pid, status))
}

/// Collect every ended routine and tell the supervisor its wait status.
fn reap(socket: &OwnedFd, routines: &mut Routines) -> io::Result<()> {
    while let Some((pid, status)) = collect_one() {
        routines.remove(&pid);
        send_answer(socket, &Answer::Exited { pid, status })?;
    }
    Ok(())
}

fn send_answer(socket: &OwnedFd, answer: &Answer) -> io::Result<()> {
    let bytes = encode_answer(answer);
    loop {
        // SAFETY: send reads bytes.len() bytes of the buffer.
        let sent = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Start the routine a request names, with `fds` as its stdin, stdout and stderr.
/// `None` for a message that is no request (it gets no answer).
fn start_routine(
    request: Option<Request>,
    fds: Vec<OwnedFd>,
    spawner: libc::pid_t,
    mask: &libc::sigset_t,
) -> Option<Answer> {
    let request = request?;
    let id = request.id;
    let Ok([stdin, stdout, stderr]) = <[OwnedFd; 3]>::try_from(fds) else {
        let error =
            io::Error::other("the spawner did not get the routine's stdin, stdout and stderr");
        return Some(Answer::Failed { id, error });
    };
    let mut command = std::process::Command::new(&request.program);
    command
        .args(&request.args)
        .env_clear()
        .envs(request.env)
        .current_dir(&request.folder)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mask = *mask;
    // SAFETY: the closure runs in the child between fork and exec (after it has
    // its own process group), and calls only async-signal-safe functions (prctl,
    // getppid, signal, pthread_sigmask); it touches no shared state.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            // A SIGTERM sent to the spawner's group between the fork and the
            // child's own group waits here, blocked: it was not meant for the
            // routine. Setting SIG_IGN discards it (POSIX),
            // before the death signal is asked for, which must not be lost.
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            crate::runner::die_with_parent(spawner, libc::SIGTERM)?;
            // The spawner ignores these, and blocks SIGCHLD and SIGTERM; the
            // routine starts with the defaults and the supervisor's mask.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            // It answers the error number itself; no allocation after a fork.
            match libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut()) {
                0 => Ok(()),
                error => Err(io::Error::from_raw_os_error(error)),
            }
        });
    }
    Some(match command.spawn() {
        // The child is collected by `reap`, not through `Child`.
        Ok(child) => Answer::Started {
            id,
            pid: child.id() as i32,
        },
        Err(error) => Answer::Failed { id, error },
    })
}
