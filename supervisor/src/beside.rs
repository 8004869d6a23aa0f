//! `stateous serve GRAPH --supervise FOLDER`: a supervisor in the control plane's
//! process, for development (reference `docs/how-to/run-supervisors.md`).
//!
//! The supervisor runs on a thread of its own and speaks HTTP to the server's
//! address (its socket), so it behaves as any other supervisor. Both hear the
//! same SIGINT and SIGTERM. The server stops as it always does, so the reports of
//! routines that end after it stay in the outbox for the next start; that is why
//! `--supervise` is not for production, as in the reference.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::command::{load_folder, supervise_with, Signals};
use crate::log_line;

/// How long the supervisor waits for its server to answer before it gives up.
const SERVER_WITHIN: Duration = Duration::from_secs(60);

/// A supervisor running beside the server.
pub struct Beside {
    signals: Signals,
    thread: JoinHandle<i32>,
}

/// Check `folder` now (a wrong folder refuses the start, one line), then start its
/// supervisor on a thread; it waits until `url` answers, then runs.
pub fn supervise_beside(folder: &Path, url: String) -> Result<Beside, String> {
    load_folder(folder).map_err(|e| e.to_string())?;
    let signals = Signals::new();
    let folder: PathBuf = folder.to_path_buf();
    let theirs = signals.clone();
    let thread = std::thread::Builder::new()
        .name("stateous-supervisor".into())
        .spawn(move || run(&folder, &url, &theirs))
        .map_err(|e| format!("cannot start the supervisor: {e}"))?;
    Ok(Beside { signals, thread })
}

fn run(folder: &Path, url: &str, signals: &Signals) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the supervisor: {e}");
            return 1;
        }
    };
    let code = runtime.block_on(async {
        if !server_answers(url, signals).await {
            return 1;
        }
        if let Err(e) = signals.listen() {
            log_line!("the supervisor did not start: {e}");
            return 1;
        }
        match supervise_with(folder, Some(url), signals).await {
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

impl Beside {
    /// The server ended with `server_code`. After a signal (0) the supervisor
    /// heard it too: wait for its routines. After a failure, stop it now. The
    /// exit code: the server's, or else the supervisor's.
    pub fn finish(self, server_code: i32) -> i32 {
        if server_code != 0 {
            self.signals.stop_now();
        }
        let supervisor_code = self.thread.join().unwrap_or(1);
        if server_code != 0 {
            server_code
        } else {
            supervisor_code
        }
    }
}
