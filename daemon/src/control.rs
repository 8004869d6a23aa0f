//! The control plane's handle: every request of the API as one async call, over
//! the write path (one writer thread, group commit) and a pool of read connections.
//!
//! Shape (STYLE point 9): `Options`, then `Control::open`, then a cheap cloneable
//! handle. The HTTP layer and `stateous serve` call it; the serve loop calls
//! `tick` about every `Options::tick` and stops (exit 1) once `lost()` is true.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stateous_shared::graph::Graph;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use stateous_shared::wire::{Grant, HistoryEntry, Object, Outcome, TokenView};
use tokio::sync::broadcast;

use crate::clock::{micros, Clock};
use crate::engine::claim::ClaimInput;
use crate::engine::fire::FireInput;
use crate::engine::report::ReportInput;
use crate::engine::start::StartInput;
use crate::engine::{self, Rules, Step};
use crate::store::reader::Reader;
use crate::store::schema::migrate;
use crate::store::sqlite::{open as open_sqlite, SqliteTx};
use crate::store::writer::Writer;
use crate::store::{Ledger, LedgerRow};

/// The answer (503 `not_serving`) to each request after another control plane took
/// the database, and the log line of that moment.
pub const LOST: &str = "another control plane took this database; this control plane does \
                        no more work; trying again does not help: stop this server";

/// How the control plane runs; every timing is configurable (SPEC section 2).
#[derive(Debug, Clone)]
pub struct Options {
    /// The SQLite file.
    pub db_path: PathBuf,
    /// How long a claim's lease lasts. Default 2 minutes.
    pub lease: Duration,
    /// How long SQLite waits for another process's write lock. Default 30 s.
    pub busy_timeout: Duration,
    /// How often the serve loop should call `tick`. Default 1 s.
    pub tick: Duration,
    /// A serving record older than this may be taken by another control plane.
    /// Default 30 s.
    pub hold_lapses: Duration,
    /// The clock writes `since` again when it is older than this. Default 10 s.
    pub renew_every: Duration,
    /// The source of `now`; tests pass `Clock::manual`.
    pub clock: Clock,
    /// How this control plane names itself in the record; default `host:pid:id`.
    pub holder: Option<String>,
}

impl Options {
    /// The defaults of the reference, on the file `db_path`.
    pub fn new(db_path: impl Into<PathBuf>) -> Options {
        Options {
            db_path: db_path.into(),
            lease: Duration::from_secs(120),
            busy_timeout: Duration::from_secs(30),
            tick: Duration::from_secs(1),
            hold_lapses: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            clock: Clock::system(),
            holder: None,
        }
    }
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

struct Inner {
    rules: Arc<Rules>,
    writer: Writer,
    reader: Reader,
    options: Options,
    holder: String,
    lost: AtomicBool,
}

/// A ledger row as the watch stream sends it (SPEC section 3.3, `GET /watch`):
/// `id` is global and increasing, so `Last-Event-ID` resumes without loss.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Committed {
    /// Global and increasing over all tokens.
    pub id: i64,
    /// The token.
    pub token: String,
    /// The entry's number in the token's ledger.
    pub seq: i64,
    /// When it was written: ISO 8601 in UTC with `Z`.
    pub at: String,
    /// What happened.
    pub kind: String,
    /// The facts of that kind.
    pub data: Object,
}

impl From<&LedgerRow> for Committed {
    fn from(row: &LedgerRow) -> Committed {
        Committed {
            id: row.id,
            token: row.token.clone(),
            seq: row.seq,
            at: iso(from_micros(row.at)),
            kind: row.kind.clone(),
            data: row.data.clone(),
        }
    }
}

/// A cheap, cloneable handle to the control plane.
#[derive(Clone)]
pub struct Control {
    inner: Arc<Inner>,
}

impl Control {
    /// Open the database (make or upgrade its tables), take it for this control
    /// plane, and check the structure on record. Each refusal is one sentence.
    pub fn open(graph: Arc<Graph>, options: Options) -> Result<Control, String> {
        let shown = options.db_path.display().to_string();
        let conn = open_sqlite(&options.db_path, options.busy_timeout, false)
            .map_err(|e| format!("cannot open the database {shown}: {e}"))?;
        migrate(&conn).map_err(|e| match e {
            crate::store::schema::MigrateError::Foreign(why) => {
                format!("cannot use the database {shown}: {why}")
            }
            other => format!("cannot open the database {shown}: {other}"),
        })?;
        let holder = options.holder.clone().unwrap_or_else(default_holder);
        let now = options.clock.now();
        once(&conn, now, |tx| {
            engine::serving::take_hold(tx, &holder, micros(options.hold_lapses), &holder_is_gone)
        })?;
        if let Err(sentence) = once(&conn, now, |tx| {
            engine::serving::check_structure(tx, &graph)
        }) {
            // A refused start gives its hold back, so the next try need not wait.
            let _ = once(&conn, now, |tx| {
                engine::serving::release(tx, &holder).map(Ok)
            });
            return Err(sentence);
        }
        let rules = Arc::new(Rules::new(graph, options.lease));
        once(&conn, now, |tx| {
            engine::lease::grace_after_restart(&rules, tx).map(|_| Ok(()))
        })?;
        let (writer, _thread) = Writer::spawn(conn, options.clock.clone())
            .map_err(|e| format!("cannot start the writer thread: {e}"))?;
        let reader = Reader::new(options.db_path.clone(), options.busy_timeout);
        Ok(Control {
            inner: Arc::new(Inner {
                rules,
                writer,
                reader,
                options,
                holder,
                lost: AtomicBool::new(false),
            }),
        })
    }

    /// The served graph.
    pub fn graph(&self) -> &Graph {
        &self.inner.rules.graph
    }

    /// The options it runs with (the serve loop reads `tick`).
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// How this control plane names itself in the serving record: `host:pid:id`.
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// True once another control plane took the database: every request answers
    /// 503 `not_serving`, and serve should exit 1.
    pub fn lost(&self) -> bool {
        self.inner.lost.load(Ordering::SeqCst)
    }

    /// `POST /tokens`.
    pub async fn start(&self, token: String, context: Object) -> Result<Started, Refusal> {
        let input = StartInput::new(token, context).map_err(engine::Fail::refusal)?;
        let (token, created) = self
            .write(move |rules, tx| engine::start::start(rules, tx, input))
            .await?;
        Ok(Started { token, created })
    }

    /// `POST /tokens/{id}/events/{event}`.
    pub async fn fire(
        &self,
        token: String,
        event: String,
        payload: Option<Object>,
        key: Option<String>,
    ) -> Result<Fired, Refusal> {
        let input = FireInput::new(token, event, payload, key).map_err(engine::Fail::refusal)?;
        let (token, duplicate) = self
            .write(move |rules, tx| engine::fire::fire(rules, tx, input))
            .await?;
        Ok(Fired { token, duplicate })
    }

    /// `POST /tokens/{id}/pause`.
    pub async fn pause(&self, token: String) -> Result<TokenView, Refusal> {
        self.write(move |rules, tx| engine::pause::pause(rules, tx, &token))
            .await
    }

    /// `POST /tokens/{id}/resume`.
    pub async fn resume(&self, token: String) -> Result<TokenView, Refusal> {
        self.write(move |rules, tx| engine::pause::resume(rules, tx, &token))
            .await
    }

    /// `POST /tokens/{id}/cancel`.
    pub async fn cancel(&self, token: String) -> Result<TokenView, Refusal> {
        self.write(move |rules, tx| engine::cancel::cancel(rules, tx, &token))
            .await
    }

    /// `POST /tasks/claim`: `None` when no task is queued (204).
    pub async fn claim(
        &self,
        supervisor: String,
        states: Vec<String>,
        request: Option<String>,
    ) -> Result<Option<Grant>, Refusal> {
        let input = ClaimInput::new(supervisor, states, request).map_err(engine::Fail::refusal)?;
        self.write(move |rules, tx| engine::claim::claim(rules, tx, input))
            .await
    }

    /// `POST /tasks/heartbeat`: the tasks the supervisor no longer holds.
    /// `attempts` (task id to attempt) as `engine::heartbeat::heartbeat` reads it.
    pub async fn heartbeat(
        &self,
        supervisor: String,
        tasks: Vec<i64>,
        attempts: std::collections::BTreeMap<i64, i64>,
    ) -> Result<Vec<i64>, Refusal> {
        self.write(move |rules, tx| {
            engine::heartbeat::heartbeat(rules, tx, &supervisor, &tasks, &attempts)
        })
        .await
    }

    /// `POST /tasks/{id}/report`. `outcome.supervisor` names the supervisor that
    /// claimed the task; `None` is a report from outside.
    pub async fn report(&self, task: i64, outcome: Outcome) -> Result<TokenView, Refusal> {
        let input = ReportInput::new(task, outcome).map_err(engine::Fail::refusal)?;
        self.write(move |rules, tx| engine::report::report(rules, tx, input))
            .await
    }

    /// `POST /tasks/{id}/note`.
    pub async fn note(&self, task: i64, text: String, attempt: Option<i64>) -> Result<(), Refusal> {
        self.write(move |_, tx| engine::note::note(tx, task, &text, attempt))
            .await
    }

    /// `PUT /tasks/{id}/memory`; a null value deletes the key.
    pub async fn set_memory(
        &self,
        task: i64,
        key: String,
        value: Value,
        attempt: Option<i64>,
    ) -> Result<(), Refusal> {
        self.write(move |_, tx| engine::memory::set_memory(tx, task, &key, &value, attempt))
            .await
    }

    /// `GET /tokens/{id}`.
    pub async fn token(&self, token: String) -> Result<TokenView, Refusal> {
        self.read(move |tx| engine::read::token(tx, &token)).await
    }

    /// `GET /tokens`: the most recently moved first; `limit` 1 to 1000.
    pub async fn tokens(
        &self,
        status: Option<String>,
        parent: Option<String>,
        limit: i64,
    ) -> Result<Vec<TokenView>, Refusal> {
        self.read(move |tx| engine::read::tokens(tx, status.as_deref(), parent.as_deref(), limit))
            .await
    }

    /// A token with its tasks, pending timers and held events (for the TUI).
    pub async fn detail(&self, token: String) -> Result<engine::detail::TokenDetail, Refusal> {
        self.read(move |tx| engine::detail::detail(tx, &token))
            .await
    }

    /// `GET /tokens/{id}/history`.
    pub async fn history(&self, token: String) -> Result<Vec<HistoryEntry>, Refusal> {
        self.read(move |tx| engine::read::history(tx, &token)).await
    }

    /// One tick of the clock: renew the hold on the database, end the leases that
    /// are over, fire the timers that are due (each in its own savepoint). After
    /// another control plane took the database it answers `not_serving`.
    pub async fn tick(&self) -> Result<(), Refusal> {
        self.serving()?;
        let inner = &self.inner;
        let holder = inner.holder.clone();
        let (renew, lapses) = (
            micros(inner.options.renew_every),
            micros(inner.options.hold_lapses),
        );
        let kept = self
            .write(move |_, tx| engine::serving::keep_hold(tx, &holder, renew, lapses))
            .await?;
        if !kept {
            // The serve loop logs the line and stops; this handle refuses from now on.
            inner.lost.store(true, Ordering::SeqCst);
            return Err(not_serving());
        }
        let expired = self.write(|_, tx| engine::lease::expired(tx)).await?;
        self.each(expired, |rules, tx, id| {
            engine::lease::end_lease(rules, tx, id)
        })
        .await?;
        let due = self.write(|_, tx| engine::timers::due(tx)).await?;
        self.each(due, |rules, tx, id| {
            engine::timers::fire_timer(rules, tx, id)
        })
        .await
    }

    /// Give up the hold on the database, so that another control plane may take it
    /// at once. The handle answers `not_serving` afterwards.
    pub async fn shutdown(&self) -> Result<(), Refusal> {
        let holder = self.inner.holder.clone();
        let released = self
            .write(move |_, tx| engine::serving::release(tx, &holder))
            .await;
        self.inner.lost.store(true, Ordering::SeqCst);
        released
    }

    /// Run `step` for each id, each as its own request (its own savepoint), all
    /// queued at once so that they share group commits.
    async fn each(
        &self,
        ids: Vec<i64>,
        step: fn(&Rules, &SqliteTx<'_>, i64) -> Step<bool>,
    ) -> Result<(), Refusal> {
        self.serving()?;
        let answers: Vec<_> = ids
            .into_iter()
            .map(|id| {
                let rules = Arc::clone(&self.inner.rules);
                self.inner
                    .writer
                    .submit(move |tx| keep(step(&rules, tx, id)))
            })
            .collect();
        let mut first_error = None;
        for answer in answers {
            let outcome = answer.await.map_err(Refusal::from);
            if let Err(refusal) = outcome.and_then(|r| r.map_err(engine::Fail::refusal)) {
                first_error.get_or_insert(refusal);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Every ledger row from now on, each sent only after its transaction
    /// committed. A receiver that falls behind gets `Lagged` and reads the rest
    /// with `entries_since`.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LedgerRow>> {
        self.inner.writer.subscribe()
    }

    /// Committed ledger rows with an id above `after`, oldest first, of one token
    /// or of all; at most `limit` (for a watch that resumes from `Last-Event-ID`).
    pub async fn entries_since(
        &self,
        after: i64,
        token: Option<String>,
        limit: i64,
    ) -> Result<Vec<Committed>, Refusal> {
        self.read(move |tx| {
            let rows = tx.entries_since(after, token.as_deref(), limit)?;
            Ok(rows.iter().map(Committed::from).collect())
        })
        .await
    }

    /// How many transactions the writer committed so far (for metrics).
    pub fn commits(&self) -> u64 {
        self.inner.writer.commits()
    }

    fn serving(&self) -> Result<(), Refusal> {
        if self.lost() {
            return Err(not_serving());
        }
        Ok(())
    }

    async fn write<R, F>(&self, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: FnOnce(&Rules, &SqliteTx<'_>) -> Step<R> + Send + 'static,
    {
        self.serving()?;
        let rules = Arc::clone(&self.inner.rules);
        let answer = self
            .inner
            .writer
            .run(move |tx| keep(work(&rules, tx)))
            .await
            .map_err(Refusal::from)?;
        answer.map_err(engine::Fail::refusal)
    }

    /// Run `work` on a read connection, in one snapshot (the added routes of
    /// `api::added` read through it).
    pub async fn read<R, F>(&self, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: FnOnce(&SqliteTx<'_>) -> Step<R> + Send + 'static,
    {
        self.serving()?;
        let now = self.inner.options.clock.now();
        let answer = self
            .inner
            .reader
            .read(now, move |tx| Ok(work(tx)))
            .await
            .map_err(Refusal::from)?;
        answer.map_err(engine::Fail::refusal)
    }
}

/// Whether a step's changes stay: on success, and on a recorded refusal.
fn keep<R>(result: Step<R>) -> (bool, Step<R>) {
    let kept = match &result {
        Ok(_) => true,
        Err(fail) => fail.keeps(),
    };
    (kept, result)
}

fn not_serving() -> Refusal {
    Refusal::new(Code::NotServing, LOST)
}

/// Run one step on the write connection before the writer thread owns it, in its
/// own transaction; its refusal sentence (or a failure) becomes the error.
fn once(
    conn: &rusqlite::Connection,
    now: i64,
    step: impl FnOnce(&SqliteTx<'_>) -> Step<Result<(), String>>,
) -> Result<(), String> {
    let failed = |e: rusqlite::Error| format!("cannot use the database: {e}");
    conn.execute_batch("BEGIN IMMEDIATE").map_err(failed)?;
    let result = step(&SqliteTx::new(conn, now));
    match result {
        Ok(Ok(())) => conn.execute_batch("COMMIT").map_err(failed),
        Ok(Err(sentence)) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(sentence)
        }
        Err(fail) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(format!("cannot use the database: {}", fail.refusal().error))
        }
    }
}

/// `host:pid:id`, as the reference names a control plane in its record.
/// Whether the control plane named `host:pid:id` in a serving record is known to
/// be dead: it ran on this host and no process has its pid now.
fn holder_is_gone(who: &str) -> bool {
    let mut parts = who.rsplitn(3, ':');
    let (Some(_id), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<libc::pid_t>() else {
        return false;
    };
    if host != host_name() || pid <= 0 || pid == std::process::id() as libc::pid_t {
        return false;
    }
    // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    !alive
}

fn host_name() -> String {
    let mut name = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most
    // that many bytes and the result is read only up to the first NUL.
    let got = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    let host = if got == 0 {
        let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    host
}

fn default_holder() -> String {
    let host = host_name();
    let id: u32 = rand::random();
    format!("{host}:{}:{id:08x}", std::process::id())
}
