//! The companion: the supervisor that `stateous serve GRAPH --supervise FOLDER`
//! runs in the control plane's process, for development (`docs/reference/cli.md`).
//!
//! The supervisor runs on a thread of its own and speaks HTTP to the server's
//! address (its socket), so it behaves as any other supervisor. It listens for no
//! signal itself: the server hands it each SIGINT and SIGTERM through
//! [`Steering::on_signal`] and serves on while the supervisor waits for its routines,
//! so that they can still report; the server stops when [`Steering::done`] fires
//! (reference `cli/running.py`, `SupervisedServer`).

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use stateous_client::runtime::Threads;
use tokio::runtime::Runtime;

use crate::command::{load_folder, supervise_with, Signals};
use crate::log_line;

/// How long the supervisor waits for its server to answer before it gives up.
const SERVER_WITHIN: Duration = Duration::from_secs(60);

/// The companion running beside the server: its thread, and how to stop it.
pub struct Companion {
    signals: Signals,
    thread: JoinHandle<i32>,
}

/// What the server needs to steer its companion: callbacks for the stop signals
/// it receives, and the companion's exit code once it has ended.
pub struct Steering {
    /// One stop signal: the first stops the supervisor gracefully (no new tasks,
    /// wait for the routines), a second one at once.
    pub on_signal: Box<dyn Fn() + Send + Sync>,
    /// Stop the supervisor at once (its control plane does no more work).
    pub stop_now: Box<dyn Fn() + Send + Sync>,
    /// Gets the supervisor's exit code when it has ended (0 after a graceful stop,
    /// 1 after a forced one or a failed start); dropped if its thread panicked.
    pub done: tokio::sync::oneshot::Receiver<i32>,
}

/// Check `folder` now (a wrong folder refuses the start, one line), then start its
/// supervisor on a thread; it waits until `url` answers, then runs.
pub fn start(folder: &Path, url: String) -> Result<(Companion, Steering), String> {
    load_folder(folder).map_err(|e| e.to_string())?;
    // Before the supervisor's thread: the spawner is a fork of this process.
    crate::command::start_spawner();
    let runtime = stateous_client::runtime::runtime(Threads::Workers(None))
        .map_err(|e| format!("cannot start the supervisor: {e}"))?;
    let signals = Signals::new();
    let folder: PathBuf = folder.to_path_buf();
    let theirs = signals.clone();
    let (tell, done) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("stateous-supervisor".into())
        .spawn(move || {
            let code = run(runtime, &folder, &url, &theirs);
            theirs.forget();
            // The server may have ended already; then nobody waits for the code.
            let _ = tell.send(code);
            code
        })
        .map_err(|e| format!("cannot start the supervisor: {e}"))?;
    let (on_signal, on_stop_now) = (signals.clone(), signals.clone());
    let steering = Steering {
        on_signal: Box::new(move || on_signal.stop()),
        stop_now: Box::new(move || on_stop_now.stop_now()),
        done,
    };
    Ok((Companion { signals, thread }, steering))
}

fn run(runtime: Runtime, folder: &Path, url: &str, signals: &Signals) -> i32 {
    let code = runtime.block_on(async {
        if !server_answers(url, signals).await {
            return 1;
        }
        match supervise_with(folder, Some(url), None, &Default::default(), signals, None).await {
            Ok(code) => code,
            Err(e) => {
                log_line!("the supervisor did not start: {e}");
                1
            }
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Wait until something accepts connections at `url` (the server has bound
/// before it serves); `false` when a stop came first or it never did.
async fn server_answers(url: &str, signals: &Signals) -> bool {
    let start = Instant::now();
    while start.elapsed() < SERVER_WITHIN && !signals.early.is_set() {
        let reached = match url.strip_prefix("unix://") {
            Some(path) => tokio::net::UnixStream::connect(path).await.is_ok(),
            None => {
                let authority = url.trim_start_matches("http://").trim_end_matches('/');
                tokio::net::TcpStream::connect(authority).await.is_ok()
            }
        };
        if reached {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

impl Companion {
    /// The server ended with `server_code`, which already accounts for the
    /// supervisor's own end: stop the supervisor now if it still runs (the server
    /// refused to start, or lost its database), wait for its thread, and give
    /// `server_code` back.
    pub fn finish(self, server_code: i32) -> i32 {
        self.signals.stop_now();
        let _ = self.thread.join();
        server_code
    }
}
