//! `stateous-tui`: the terminal UI (SPEC section 3.4), as model, message, update
//! and view (STYLE point 10): `update` does no I/O, `view` is pure, and all HTTP
//! runs in the client task, which sends its answers back as messages.
//!
//! It speaks to the daemon only over the API, through `stateous_shared::client`;
//! it never opens a database.

mod client;
mod forms;
mod input;
mod keys;
pub mod message;
pub mod model;
mod terminal;
pub mod update;
pub mod view;

#[cfg(test)]
mod tests;

pub use input::LineEdit;

/// Why the TUI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The URL cannot name a control plane.
    #[error("{0}")]
    Client(String),
    /// The terminal could not be set up or drawn on.
    #[error("stateous tui needs a terminal: {0}")]
    Terminal(std::io::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// `stateous tui [--url URL]`: run the TUI against the control plane at `url`
/// (resolved as every client does: `--url`, `STATEOUS_URL`, the default socket,
/// `http://127.0.0.1:8080`) until `q`.
pub fn run(url: Option<&str>) -> Result<(), TuiError> {
    let url = stateous_shared::client::resolve_url(url);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(TuiError::Runtime)?;
    runtime.block_on(terminal::run(&url))
}
