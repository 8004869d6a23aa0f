//! Routines inside a Rust program: an async function per state,
//! with the same `ctx` operations as the `stateous ctx` helper.
//!
//! ```no_run
//! use stateous_supervisor::inprocess::{routine, Ctx};
//! let testing = routine(|ctx: Ctx| async move {
//!     let repo = ctx.get("repo")?;
//!     ctx.note(&format!("testing {repo}"))?;
//!     ctx.emit("passed", Some(serde_json::json!({"passed": 3, "failed": 0})))
//! });
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use stateous_shared::wire::Grant;

use crate::ctx::{Request, RunCtx};
use crate::routines::Program;
use crate::stop::Stop;

/// The future an in-process routine returns: `Err(reason)` fails the attempt.
pub type RoutineFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// An in-process routine: called once per task with its [`Ctx`].
pub type InProcessFn = Arc<dyn Fn(Ctx) -> RoutineFuture + Send + Sync>;

/// The routine of a state: a program, or an async function of this process.
#[derive(Clone)]
pub enum Routine {
    /// A program of the folder, or a command line.
    Program(Program),
    /// An async Rust function.
    InProcess(InProcessFn),
}

/// Wrap an async closure as a [`Routine`].
pub fn routine<F, Fut>(function: F) -> Routine
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Routine::InProcess(Arc::new(move |ctx| Box::pin(function(ctx))))
}

/// What an in-process routine may do: the helper's operations, typed.
#[derive(Clone)]
pub struct Ctx {
    run: Arc<RunCtx>,
}

impl Ctx {
    /// The grant: task, token, state, visit, attempt, context, memory, entered_by.
    pub fn grant(&self) -> &Grant {
        self.run.grant()
    }

    fn ask(&self, request: Request) -> Result<Value, String> {
        self.run.handle(request)
    }

    /// One key of the context (with this routine's writes); an error when absent.
    pub fn get(&self, key: &str) -> Result<Value, String> {
        self.ask(Request::Get {
            key: Some(key.into()),
        })
    }

    /// Write one key of the context; sent with the outcome.
    pub fn set(&self, key: &str, value: Value) -> Result<(), String> {
        self.ask(Request::Set {
            key: key.into(),
            value,
        })
        .map(drop)
    }

    /// A note in the token's history, committed to the outbox before this returns.
    pub fn note(&self, text: &str) -> Result<(), String> {
        self.ask(Request::Note { text: text.into() }).map(drop)
    }

    /// One key of the routine's memory, or `None`.
    pub fn memory_get(&self, key: &str) -> Option<Value> {
        self.ask(Request::MemoryGet {
            key: Some(key.into()),
        })
        .ok()
    }

    /// Save one key of the memory at once (through the outbox).
    pub fn memory_set(&self, key: &str, value: Value) -> Result<(), String> {
        self.ask(Request::MemorySet {
            key: key.into(),
            value,
        })
        .map(drop)
    }

    /// Delete one key of the memory at once.
    pub fn memory_del(&self, key: &str) -> Result<(), String> {
        self.ask(Request::MemoryDel { key: key.into() }).map(drop)
    }

    /// A timer: `event` fires `after` (e.g. `10m`) if the token is still here.
    pub fn schedule(&self, event: &str, payload: Option<Value>, after: &str) -> Result<(), String> {
        self.ask(Request::Schedule {
            event: event.into(),
            payload,
            after: after.into(),
        })
        .map(drop)
    }

    /// The outcome: `event` with its payload, checked against the contract.
    pub fn emit(&self, event: &str, payload: Option<Value>) -> Result<(), String> {
        self.ask(Request::Emit {
            event: event.into(),
            payload,
        })
        .map(drop)
    }

    /// The outcome: the task waits for a report from outside.
    pub fn wait(&self) -> Result<(), String> {
        self.ask(Request::Wait).map(drop)
    }

    /// The events this state may emit, with their payloads, as one JSON Schema.
    pub fn outcome_schema(&self) -> Result<Value, String> {
        self.ask(Request::OutcomeSchema)
    }

    /// What the routine spent, by usage name (`[("cost_usd", 0.12)]`): committed
    /// to the outbox and sent at once, as `stateous ctx usage` does; it counts even
    /// if the attempt then fails (`docs/concepts/budgets.md`).
    pub fn usage(&self, spent: &[(&str, f64)]) -> Result<(), String> {
        let mut usage = stateous_shared::wire::Object::new();
        for (name, amount) in spent {
            if let Some(problem) = stateous_shared::usage::amount_problem(name, *amount) {
                return Err(problem);
            }
            // A whole amount goes as an integer, as the helper sends `1200`.
            usage.insert((*name).to_string(), stateous_shared::usage::number(*amount));
        }
        self.ask(Request::Usage { usage }).map(drop)
    }
}

/// Run an in-process routine until it ends or `kill` is set (then it is dropped
/// at its next await). `Some(reason)` when it failed.
pub(crate) async fn call(function: &InProcessFn, run: Arc<RunCtx>, kill: &Stop) -> Option<String> {
    let future = function(Ctx { run });
    // A panic in the routine must fail its attempt, not the supervisor.
    let joined = tokio::spawn(future);
    let abort = joined.abort_handle();
    tokio::select! {
        result = joined => match result {
            Ok(Ok(())) => None,
            Ok(Err(reason)) => Some(reason),
            Err(e) if e.is_panic() => Some("the routine panicked".into()),
            Err(_) => Some("the routine was cancelled".into()),
        },
        _ = kill.wait() => {
            abort.abort();
            Some("the routine was cancelled".into())
        }
    }
}
