//! The control plane's handle: every request of the API as one async call.
//!
//! INTERFACE STUB: the engine helper replaces the bodies (writer thread, store,
//! engine); the HTTP layer codes against these signatures.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stateous_shared::graph::Graph;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Grant, HistoryEntry, Object, Outcome, TokenView};

/// How the control plane runs; every timing is configurable (SPEC section 2).
#[derive(Debug, Clone)]
pub struct Options {
    /// The SQLite file.
    pub db_path: PathBuf,
    /// How long a claim's lease lasts. Default 2 minutes.
    pub lease: Duration,
    /// How long SQLite waits for another process's write lock. Default 30 s.
    pub busy_timeout: Duration,
}

/// The answer of a start: the token, and whether this request made it (201) or
/// found it (200).
#[derive(Debug, Clone)]
pub struct Started {
    /// The token.
    pub token: TokenView,
    /// True when this request started it.
    pub created: bool,
}

/// The answer of a fired event.
#[derive(Debug, Clone)]
pub struct Fired {
    /// The token after the event, or as it is now for a duplicate.
    pub token: TokenView,
    /// True when the idempotency key was used before.
    pub duplicate: bool,
}

/// A cheap, cloneable handle to the control plane.
#[derive(Clone)]
pub struct Control {
    graph: Arc<Graph>,
}

fn not_built() -> Refusal {
    Refusal::new(Code::Unexpected, "the engine is not built yet")
}

impl Control {
    /// Open the database and take it for this control plane.
    pub fn open(graph: Arc<Graph>, _options: Options) -> Result<Control, String> {
        Ok(Control { graph })
    }

    /// The served graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// `POST /tokens`.
    pub async fn start(&self, _token: String, _context: Object) -> Result<Started, Refusal> {
        Err(not_built())
    }

    /// `POST /tokens/{id}/events/{event}`.
    pub async fn fire(
        &self,
        _token: String,
        _event: String,
        _payload: Option<Object>,
        _key: Option<String>,
    ) -> Result<Fired, Refusal> {
        Err(not_built())
    }

    /// `POST /tokens/{id}/pause`.
    pub async fn pause(&self, _token: String) -> Result<TokenView, Refusal> {
        Err(not_built())
    }

    /// `POST /tokens/{id}/resume`.
    pub async fn resume(&self, _token: String) -> Result<TokenView, Refusal> {
        Err(not_built())
    }

    /// `POST /tokens/{id}/cancel`.
    pub async fn cancel(&self, _token: String) -> Result<TokenView, Refusal> {
        Err(not_built())
    }

    /// `POST /tasks/claim`: `None` when no task is queued (204).
    pub async fn claim(
        &self,
        _supervisor: String,
        _states: Vec<String>,
        _request: Option<String>,
    ) -> Result<Option<Grant>, Refusal> {
        Err(not_built())
    }

    /// `POST /tasks/heartbeat`: the tasks the supervisor no longer holds.
    pub async fn heartbeat(
        &self,
        _supervisor: String,
        _tasks: Vec<i64>,
    ) -> Result<Vec<i64>, Refusal> {
        Err(not_built())
    }

    /// `POST /tasks/{id}/report`.
    pub async fn report(&self, _task: i64, _outcome: Outcome) -> Result<TokenView, Refusal> {
        Err(not_built())
    }

    /// `POST /tasks/{id}/note`.
    pub async fn note(
        &self,
        _task: i64,
        _text: String,
        _attempt: Option<i64>,
    ) -> Result<(), Refusal> {
        Err(not_built())
    }

    /// `PUT /tasks/{id}/memory`.
    pub async fn set_memory(
        &self,
        _task: i64,
        _key: String,
        _value: Value,
        _attempt: Option<i64>,
    ) -> Result<(), Refusal> {
        Err(not_built())
    }

    /// `GET /tokens/{id}`.
    pub async fn token(&self, _token: String) -> Result<TokenView, Refusal> {
        Err(not_built())
    }

    /// `GET /tokens`.
    pub async fn tokens(
        &self,
        _status: Option<String>,
        _parent: Option<String>,
        _limit: i64,
    ) -> Result<Vec<TokenView>, Refusal> {
        Err(not_built())
    }

    /// `GET /tokens/{id}/history`.
    pub async fn history(&self, _token: String) -> Result<Vec<HistoryEntry>, Refusal> {
        Err(not_built())
    }

    /// One tick of the clock: renew the hold on the database, end the leases that
    /// are over, fire the timers that are due.
    pub async fn tick(&self) -> Result<(), Refusal> {
        Err(not_built())
    }
}
