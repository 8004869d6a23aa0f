//! `stateous-tui`: the terminal UI, as model, message, update and view
//! (`docs/design.md`, "The TUI"): `update` does no I/O, `view` is pure, and all HTTP
//! runs in the client task, which sends its answers back as messages.
//!
//! It speaks to the daemon only over the API, through `stateous_client`;
//! it never opens a database.

mod client;
pub mod describe;
mod forms;
mod keys;
mod line_edit;
pub mod marks;
pub mod message;
pub mod model;
pub mod notifications;
pub mod pools;
pub mod schedules;
pub mod states;
mod terminal;
pub mod update;
pub mod view;

#[cfg(test)]
mod tests;

pub use line_edit::LineEdit;

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
    /// A flag that cannot be used (`--where` that is not a filter).
    #[error("{0}")]
    Options(String),
}

/// How the TUI runs: `stateous tui [--url URL] [--read-only]`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How to reach the control plane: its URL, resolved as every client does
    /// (`--url`, `STATEOUS_URL`, the default socket, `http://127.0.0.1:8080`;
    /// the first two may list several addresses separated by commas, tried in
    /// turn), the access key sent with every request (the watch stream's
    /// included), and how an `https://` control plane is trusted.
    pub connection: stateous_client::Connection,
    /// No key changes a token (`--read-only`, `STATEOUS_READ_ONLY=1`): for
    /// watching a production daemon without the risk of a stray key.
    pub read_only: bool,
    /// Draw in colour; false when `NO_COLOR` is set and not empty
    /// (<https://no-color.org>). See [`color_wanted`].
    pub color: bool,
    /// `--where`: start on this filter of the filter language, as if typed after
    /// `/` (parsed by [`Options::check`]; one the daemon answers with a 422 is
    /// refused too, before the screen is taken).
    pub filter: Option<String>,
}

impl Options {
    /// Why the options cannot start the TUI: a `--where` that is not a filter
    /// (the parser's sentence), before the screen is taken.
    pub fn check(&self) -> Result<(), String> {
        match &self.filter {
            Some(text) => stateous_shared::guards::filter::parse_filter(text)
                .map(|_| ())
                .map_err(|error| format!("--where: {}", error.0)),
            None => Ok(()),
        }
    }

    /// Set what the options say on a new model.
    pub fn apply(&self, model: &mut model::Model) {
        model.read_only = self.read_only;
        model.color = self.color;
        model.filter = self.filter.clone();
    }
}

/// Whether the environment allows colour: `NO_COLOR` unset or empty.
pub fn color_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Run the TUI with `options` until `q`.
pub fn run(options: Options) -> Result<(), TuiError> {
    options.check().map_err(TuiError::Options)?;
    let url = stateous_client::resolve_url(options.connection.url.as_deref())
        .map_err(|error| TuiError::Client(error.to_string()))?;
    let runtime =
        stateous_client::runtime::runtime(stateous_client::runtime::Threads::Workers(Some(2)))
            .map_err(TuiError::Runtime)?;
    runtime.block_on(terminal::run(&url, &options))
}
