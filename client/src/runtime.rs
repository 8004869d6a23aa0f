//! The tokio runtime that each command of the binary runs its calls on, built in
//! this one place: the token commands, the benches, the TUI, the supervisor and
//! the companion of `serve --supervise` all start theirs here.

use tokio::runtime::{Builder, Runtime};

/// How many threads a runtime runs its tasks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The calling thread alone: a command that waits on one call at a time.
    One,
    /// A pool of worker threads: as many as the machine has cores when `None`.
    Workers(Option<usize>),
}

/// A runtime with its I/O and time drivers enabled.
///
/// Errors: what the operating system said when it could not give the runtime
/// its threads or its I/O driver.
pub fn runtime(threads: Threads) -> std::io::Result<Runtime> {
    let mut builder = match threads {
        Threads::One => Builder::new_current_thread(),
        Threads::Workers(count) => {
            let mut builder = Builder::new_multi_thread();
            if let Some(count) = count {
                builder.worker_threads(count);
            }
            builder
        }
    };
    builder.enable_all().build()
}
