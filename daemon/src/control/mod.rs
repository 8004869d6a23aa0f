//! The control plane's handle: every request of the API as one async call, over
//! the store's write path and read path (`store::Store`: SQLite's one writer with
//! group commit, or a Postgres pool with a transaction per request).
//!
//! Shape: `Options`, then `Control::open`, then a cheap cloneable handle. The HTTP
//! layer and `stateous serve` call it; the serve loop calls `tick` about every
//! `Options::tick` and stops (exit 1) once `lost()` is true.

mod access;
pub mod bulk;
pub mod condition;
mod dev_clock;
mod notify;
pub mod notify_retain;
mod owing;
pub mod prune;
mod schedules;
pub mod traces;
mod versions;
mod views;
// Usage and budgets (`docs/concepts/budgets.md`).
mod budgets;
pub mod claim_wait;
// Limits on claims (`docs/limits.md`).
mod claim_limits;

pub use dev_clock::{no_dev_clock, MOST_ADVANCE};
pub use notify::Standing;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stateous_shared::graph::Graph;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::watch::{TokenDetail, WatchEntry};
use stateous_shared::why::Why;
use stateous_shared::wire::{Grant, HistoryEntry, TokenView};

use crate::engine::LOST;
use crate::engine::{self, Rules, Step};
use crate::metrics::Metrics;
use crate::notify::Subscribed;
use crate::store::backend::{holder_name, Database, Inspected, Standby, StoreOptions};
use crate::store::feed::FeedMark;
use crate::store::postgres::PgOptions;
use crate::store::{Store, StoreError, TokenStatus, Tx};
use crate::time_source::{Clock, Stalls};
use crate::validated::{
    ClaimInput, FireInput, HeartbeatInput, HookStart, MemoryInput, NoteInput, ReportInput,
    RetryInput, StartInput,
};

/// How the control plane runs; every timing is configurable
/// (`docs/reference/bounds.md`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The database.
    pub database: Database,
    /// How long a claim's lease lasts. Default 2 minutes.
    pub lease: Duration,
    /// How long SQLite waits for another process's write lock. Default 30 s.
    pub busy_timeout: Duration,
    /// How often the serve loop should call `tick`. Default 1 s.
    pub tick: Duration,
    /// The clock writes the serving record's `since` again when it is older than
    /// this. Default 10 s.
    pub renew_every: Duration,
    /// Postgres: the time limits of each connection and the pool's size.
    pub postgres: PgOptions,
    /// The source of `now`; tests pass `Clock::manual`.
    pub clock: Clock,
    /// How this control plane names itself in the record; default `host:pid:id`.
    pub holder: Option<String>,
    /// `serve --standby`: [`Control::open`] waits for the database's hold instead
    /// of being refused. `None` for a normal start.
    pub standby: Option<Standby>,
    /// How many claims may wait at once (`POST /tasks/claim` with `wait`); one
    /// beyond them answers at once. `serve` makes it half of `--max-connections`.
    pub waiting_claims: usize,
}

impl Options {
    /// The defaults of the reference, on the SQLite file `db_path`.
    pub fn new(db_path: impl Into<PathBuf>) -> Options {
        Options::on(Database::Sqlite(db_path.into()))
    }

    /// The defaults of the reference, on `database`.
    pub fn on(database: Database) -> Options {
        Options {
            database,
            lease: Duration::from_secs(120),
            busy_timeout: Duration::from_secs(30),
            tick: Duration::from_secs(1),
            renew_every: Duration::from_secs(10),
            postgres: PgOptions::default(),
            clock: Clock::system(),
            holder: None,
            standby: None,
            waiting_claims: DEFAULT_WAITING_CLAIMS,
        }
    }
}

/// [`Options::waiting_claims`] by default: half of the server's default cap on
/// connections.
pub const DEFAULT_WAITING_CLAIMS: usize = crate::api::server::DEFAULT_MAX_CONNECTIONS / 2;

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
    store: Store,
    options: Options,
    holder: String,
    lost: AtomicBool,
    /// Told when a request found the database lost, so that the serve loop need
    /// not wait for its next tick to stop.
    lost_seen: tokio::sync::Notify,
    /// The counters of `GET /metrics` that the edges feed.
    metrics: Metrics,
    /// One dev clock advance at a time, so that their steps do not interleave.
    advancing: tokio::sync::Mutex<()>,
    /// Whether the last write found the disk full (for `/health`).
    disk: condition::DiskWatch,
    /// The time in which this control plane did not run, owed to the claimed
    /// leases: every write gives it before it judges a lease.
    stalls: Stalls,
    /// The write path's copy of the active subscriptions (`docs/notifications.md`).
    subscribed: Subscribed,
    /// The claims waiting for a task (`claim_wait.rs`).
    waiters: claim_wait::Waiters,
}

/// What [`Control::check`] found; each sentence is one line's worth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// A takeover would accept the graph (or the database has no tables of this
    /// build yet, which the takeover makes).
    Agrees,
    /// A takeover would refuse the graph (its workflow, its structure, or the kind
    /// of clock):
    /// the refusal's sentence.
    Refused(String),
    /// The database could not be read (not reachable, not there, not ours), so
    /// nothing is known about the graph: why.
    Unread(String),
}

/// A cheap, cloneable handle to the control plane.
#[derive(Clone)]
pub struct Control {
    inner: Arc<Inner>,
    /// The access key whose request this handle serves: the ledger entries its
    /// writes append carry its name (`ledger.key_name`). `None`: no key.
    by: Option<Arc<str>>,
}

impl Control {
    /// Open the database (make or upgrade its tables), take it for this control
    /// plane, and check the structure on record. Each refusal is one sentence.
    /// With `options.standby` it first waits until the database is free: a
    /// standby's takeover is this same call, step for step.
    pub async fn open(graph: Arc<Graph>, options: Options) -> Result<Control, String> {
        let holder = options.holder.clone().unwrap_or_else(holder_name);
        let subscribed = Subscribed::default();
        let store_options = store_options(&options, holder.clone(), &subscribed);
        // Opening connects, locks and migrates: blocking work, off the async threads.
        let store = tokio::task::spawn_blocking(move || Store::open(&store_options))
            .await
            .map_err(|_| "the database could not be opened".to_string())??;
        let rules = Arc::new(Rules::new(graph, options.lease));
        let metrics = Metrics::new(store.mark().safe());
        let stalls = Stalls::watching(options.clock.clone(), options.lease);
        let control = Control {
            inner: Arc::new(Inner {
                rules,
                store,
                options,
                holder,
                lost: AtomicBool::new(false),
                lost_seen: tokio::sync::Notify::new(),
                subscribed,
                metrics,
                advancing: tokio::sync::Mutex::new(()),
                disk: condition::DiskWatch::default(),
                stalls,
                waiters: claim_wait::Waiters::default(),
            }),
            by: None,
        };
        let graph = Arc::clone(&control.inner.rules.graph);
        let kind = control.inner.options.clock.kind();
        let checked = control
            .write(move |_, tx| engine::serving::check_and_record(tx, &graph, kind))
            .await
            .map_err(|refusal| format!("cannot use the database: {}", refusal.error))?;
        if let Err(sentence) = checked {
            // A refused start gives its hold back, so the next try need not wait.
            let _ = control.inner.store.release().await;
            return Err(sentence);
        }
        control
            .keep_graphs()
            .await
            .map_err(|refusal| format!("cannot use the database: {}", refusal.error))?;
        control
            .write(|rules, tx| engine::lease::after_restart(rules, tx))
            .await
            .map_err(|refusal| format!("cannot use the database: {}", refusal.error))?;
        control
            .reload_subscriptions()
            .await
            .map_err(|refusal| format!("cannot use the database: {}", refusal.error))?;
        Ok(control)
    }

    /// The checks of [`Control::open`] that only read (the graph's structure against
    /// the one on record, the kind of clock), made without taking the database: a
    /// standby makes them before it waits, so that a wrong graph file is refused at
    /// once rather than at takeover. A database without this build's tables yet
    /// passes (the holder makes them; the takeover checks again). A database that
    /// cannot be read says nothing about the graph: [`Checked::Unread`], apart
    /// from a refusal. Postgres only.
    pub async fn check(graph: Arc<Graph>, options: &Options) -> Checked {
        let store_options = store_options(options, String::new(), &Default::default());
        let kind = options.clock.kind();
        let inspected = tokio::task::spawn_blocking(move || {
            Store::inspect(&store_options, |tx| {
                engine::serving::check(tx, &graph, kind)
                    .map_err(|fail| StoreError::Database(fail.refusal().error))
            })
        })
        .await;
        match inspected {
            Err(_) => Checked::Unread("the database could not be read".to_string()),
            Ok(Err(sentence)) => Checked::Unread(sentence),
            Ok(Ok(Inspected::Read(Err(sentence)))) => Checked::Refused(sentence),
            Ok(Ok(Inspected::Read(Ok(())) | Inspected::Empty | Inspected::NotYet { .. })) => {
                Checked::Agrees
            }
        }
    }

    /// The served graph.
    pub fn graph(&self) -> &Graph {
        &self.inner.rules.graph
    }

    /// The time in which this control plane did not run, owed to the claimed leases
    /// (found by itself on a system or dev clock; tests on a manual clock declare a
    /// stall with [`Stalls::stalled`]).
    pub fn stalls(&self) -> &Stalls {
        &self.inner.stalls
    }

    /// The options it runs with (the serve loop reads `tick`).
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// How this control plane names itself in the serving record: `host:pid:id`.
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// True once this control plane lost the database (another one took it, or its
    /// hold ended): every request answers 503 `not_serving`, and serve should exit 1.
    pub fn lost(&self) -> bool {
        self.inner.lost.load(Ordering::SeqCst) || self.inner.store.lost()
    }

    /// Ends once a request found the database lost (see [`Control::lost`]); the
    /// serve loop's clock then ticks at once, and stops.
    pub async fn lost_noticed(&self) {
        self.inner.lost_seen.notified().await
    }

    /// Tell the serve loop when this control plane lost the database.
    fn notice_lost(&self) {
        if self.lost() {
            self.inner.lost_seen.notify_one();
            self.inner.waiters.close();
        }
    }

    /// The feed's safe point: the watch stream reads the ledger up to it.
    pub fn mark(&self) -> &FeedMark {
        self.inner.store.mark()
    }

    /// `POST /tokens`.
    pub async fn start(&self, input: StartInput) -> Result<Started, Refusal> {
        let about = input.token.clone();
        let (token, created) = self
            .write_about(Some(&about), move |rules, tx| {
                engine::start::start(rules, tx, &input)
            })
            .await?;
        Ok(Started { token, created })
    }

    /// `POST /tokens/{id}/events/{event}`.
    pub async fn fire(&self, input: FireInput) -> Result<Fired, Refusal> {
        let (token, duplicate) = self
            .write(move |rules, tx| engine::fire::fire(rules, tx, &input))
            .await?;
        Ok(Fired { token, duplicate })
    }

    /// `POST /hooks/{name}`: the hook's event, after starting a missing token
    /// when the hook starts tokens (`engine::fire::fire_or_start`).
    pub async fn hook(&self, start: Option<HookStart>, input: FireInput) -> Result<Fired, Refusal> {
        let (token, duplicate) = self
            .write(move |rules, tx| engine::fire::fire_or_start(rules, tx, start.as_ref(), &input))
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

    /// `POST /tokens/{id}/retry`: a failed token enters a state again.
    pub async fn retry(&self, input: RetryInput) -> Result<TokenView, Refusal> {
        self.write(move |rules, tx| engine::retry::retry(rules, tx, &input))
            .await
    }

    /// `POST /tasks/claim`: `None` when no task is queued (204).
    pub async fn claim(&self, input: ClaimInput) -> Result<Option<Grant>, Refusal> {
        self.write(move |rules, tx| engine::claim::claim(rules, tx, &input))
            .await
    }

    /// `POST /tasks/heartbeat`: the tasks the supervisor no longer holds.
    pub async fn heartbeat(&self, input: HeartbeatInput) -> Result<Vec<i64>, Refusal> {
        self.write(move |rules, tx| engine::heartbeat::heartbeat(rules, tx, &input))
            .await
    }

    /// `POST /tasks/{id}/report`.
    pub async fn report(&self, input: ReportInput) -> Result<TokenView, Refusal> {
        self.write(move |rules, tx| engine::report::report(rules, tx, &input))
            .await
    }

    /// `POST /tasks/{id}/note`; a key already on the token's ledger writes nothing.
    pub async fn note(&self, input: NoteInput) -> Result<(), Refusal> {
        self.write(move |rules, tx| engine::note::note(rules, tx, &input))
            .await
    }

    /// `PUT /tasks/{id}/memory`; a null value deletes the key.
    pub async fn set_memory(&self, input: MemoryInput) -> Result<(), Refusal> {
        self.write(move |rules, tx| engine::memory::set_memory(rules, tx, &input))
            .await
    }

    /// `GET /tokens/{id}`.
    pub async fn token(&self, token: String) -> Result<TokenView, Refusal> {
        self.read(move |tx| engine::read::token(tx, &token)).await
    }

    /// `GET /tokens`: the most recently moved first; `limit` 1 to 1000.
    pub async fn tokens(
        &self,
        status: Option<TokenStatus>,
        parent: Option<String>,
        limit: i64,
    ) -> Result<Vec<TokenView>, Refusal> {
        self.read(move |tx| engine::read::tokens(tx, status, parent.as_deref(), limit))
            .await
    }

    /// `GET /tokens` with the filter language: a page of the tokens the selection
    /// matches, the most recently moved first, and how many match.
    pub async fn list(
        &self,
        selection: engine::select::Selection,
        limit: i64,
        offset: i64,
    ) -> Result<engine::select::Listing, Refusal> {
        let rules = Arc::clone(&self.inner.rules);
        if let Some(refusal) = engine::select::unknown_name(&rules, &selection) {
            return Err(refusal);
        }
        self.read(move |tx| engine::select::list(&rules, tx, &selection, limit, offset))
            .await
    }

    /// `GET /tokens/{id}/detail`: a token with its open tasks, pending timers and
    /// held events (for the TUI).
    pub async fn detail(&self, token: String) -> Result<TokenDetail, Refusal> {
        let rules = Arc::clone(&self.inner.rules);
        self.read(move |tx| engine::detail::detail(&rules, tx, &token))
            .await
    }

    /// `GET /tokens/{id}/why`: the facts of the database (the HTTP layer adds the
    /// supervisors heard from and the sentences).
    pub async fn why(&self, token: String) -> Result<Why, Refusal> {
        let rules = Arc::clone(&self.inner.rules);
        self.read(move |tx| engine::why::why(&rules, tx, &token))
            .await
    }

    /// `GET /tokens/{id}/history`.
    pub async fn history(&self, token: String) -> Result<Vec<HistoryEntry>, Refusal> {
        self.read(move |tx| engine::read::history(tx, &token)).await
    }

    /// One tick of the clock: check and renew the hold on the database, end the
    /// leases that are over, fire the timers that are due (each its own request),
    /// then the schedules' occurrences that are due (`docs/schedules.md`).
    /// After this control plane lost the database it answers `not_serving`.
    pub async fn tick(&self) -> Result<(), Refusal> {
        self.serving()?;
        let inner = &self.inner;
        let kept = inner.store.keep_hold(inner.options.renew_every).await;
        inner.disk.note(&kept);
        let kept = kept.map_err(Refusal::from);
        if matches!(kept, Ok(false)) || self.lost() {
            // The serve loop logs the line and stops; this handle refuses from now on.
            inner.lost.store(true, Ordering::SeqCst);
            return Err(not_serving());
        }
        kept?;
        let expired = self.read_now(|tx| Ok(tx.expired_leases()?)).await?;
        let (ended, failed) = self.each(expired, engine::lease::end_lease).await;
        self.inner.metrics.ticked(ended, 0);
        failed?;
        let due = self.read_now(|tx| Ok(tx.due_timers()?)).await?;
        let (fired, failed) = self.each(due, engine::timers::fire_timer).await;
        self.inner.metrics.ticked(0, fired);
        failed?;
        self.wake_for_time().await?;
        // Schedules last: a token an occurrence starts is not in the tick's reads.
        self.fire_schedules().await?;
        // Tokens that did not move (`docs/notifications.md`, "No move").
        self.scan_no_move().await
    }

    /// Why the database cannot take requests now, if it cannot (`GET /health`):
    /// it does not answer in time, or its disk is full.
    pub fn trouble(&self) -> Option<condition::Trouble> {
        if self.inner.store.not_answering() {
            return Some(condition::Trouble {
                database: condition::NOT_ANSWERING,
                sentence: condition::NOT_ANSWERING_SENTENCE,
            });
        }
        self.inner.disk.full().then_some(condition::Trouble {
            database: condition::DISK_FULL,
            sentence: engine::DISK_FULL,
        })
    }

    /// The counters and gauges of `GET /metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Give up the hold on the database, so that another control plane may take it
    /// at once. The handle answers `not_serving` afterwards.
    pub async fn shutdown(&self) -> Result<(), Refusal> {
        let released = self.inner.store.release().await.map_err(Refusal::from);
        self.inner.lost.store(true, Ordering::SeqCst);
        self.inner.waiters.close();
        released
    }

    /// Run `step` for each id, each as its own request, in the order of `ids`
    /// (`Store::write_in_order`: on SQLite they share group commits). How many
    /// answered true (for the metrics), and the first refusal, if any.
    async fn each(
        &self,
        ids: Vec<i64>,
        step: fn(&Rules, &dyn Tx, i64) -> Step<bool>,
    ) -> (u64, Result<(), Refusal>) {
        if let Err(refusal) = self.serving() {
            return (0, Err(refusal));
        }
        let mut owings = Vec::with_capacity(ids.len());
        let works: Vec<_> = ids
            .into_iter()
            .map(|id| {
                let rules = Arc::clone(&self.inner.rules);
                let owing = owing::Owing::new(&self.inner.stalls);
                let made = claim_wait::Made::new();
                owings.push((Arc::clone(&owing), Arc::clone(&made)));
                move |tx: &dyn Tx| made.run(|| owing.run(tx, || keep(step(&rules, tx, id))))
            })
            .collect();
        let answers = self.inner.store.write_in_order(works).await;
        for (answer, (owing, made)) in answers.iter().zip(owings) {
            self.inner.disk.note(answer);
            owing.answered(answer.is_ok());
            self.after_commit(&made.taken(), answer.is_ok());
        }
        let mut first_error = None;
        let mut done = 0;
        for answer in answers {
            let outcome = answer.map_err(Refusal::from);
            match outcome.and_then(|r| r.map_err(engine::Fail::refusal)) {
                Ok(true) => done += 1,
                Ok(false) => {}
                Err(refusal) => {
                    first_error.get_or_insert(refusal);
                }
            }
        }
        (done, first_error.map_or(Ok(()), Err))
    }

    /// Committed ledger rows with an id above `after` and at most `upto` (the
    /// feed's safe point, read before: [`Control::mark`]), oldest first, of one
    /// token or of all; at most `limit` (for a watch that resumes from
    /// `Last-Event-ID`).
    pub async fn entries_since(
        &self,
        after: i64,
        upto: i64,
        token: Option<String>,
        limit: i64,
    ) -> Result<Vec<WatchEntry>, Refusal> {
        if token
            .as_deref()
            .is_some_and(|t| !crate::validated::token_id_ok(t))
        {
            return Ok(Vec::new()); // no token has such an id
        }
        self.read(move |tx| {
            let rows = tx.entries_since(after, upto, token.as_deref(), limit)?;
            Ok(rows.iter().map(views::watch_entry).collect())
        })
        .await
    }

    /// How many write transactions committed so far (for metrics).
    pub fn commits(&self) -> u64 {
        self.inner.store.commits()
    }

    fn serving(&self) -> Result<(), Refusal> {
        if self.lost() {
            return Err(not_serving());
        }
        Ok(())
    }

    /// This control plane, its writes' ledger entries naming the access key `by`
    /// (the API's handle for a request made with a key).
    pub fn acting_as(&self, by: Option<&str>) -> Control {
        Control {
            inner: Arc::clone(&self.inner),
            by: by.map(Arc::from),
        }
    }

    /// Run `work` as one write request; it may run twice (see `store::backend`).
    async fn write<R, F>(&self, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: Fn(&Rules, &dyn Tx) -> Step<R> + Send + Sync + 'static,
    {
        self.write_about(None, work).await
    }

    /// [`Control::write`] of a request about the token `about` (`Store::write_about`).
    async fn write_about<R, F>(&self, about: Option<&str>, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: Fn(&Rules, &dyn Tx) -> Step<R> + Send + Sync + 'static,
    {
        self.write_deciding(about, move |rules, tx| keep(work(rules, tx)))
            .await
    }

    /// [`Control::write_about`] of a `work` that says itself whether its changes
    /// stay (the first of its pair), also when it succeeds.
    async fn write_deciding<R, F>(&self, about: Option<&str>, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: Fn(&Rules, &dyn Tx) -> (bool, Step<R>) + Send + Sync + 'static,
    {
        self.serving()?;
        let rules = Arc::clone(&self.inner.rules);
        let by = self.by.clone();
        let owing = owing::Owing::new(&self.inner.stalls);
        let during = Arc::clone(&owing);
        let made = claim_wait::Made::new();
        let making = Arc::clone(&made);
        let work = move |tx: &dyn Tx| {
            tx.act_for(by.as_deref());
            let done = making.run(|| during.run(tx, || work(&rules, tx)));
            tx.act_for(None);
            done
        };
        let answer = match about {
            Some(token) => self.inner.store.write_about(token, work).await,
            None => self.inner.store.write(work).await,
        };
        owing.answered(answer.is_ok());
        self.after_commit(&made.taken(), answer.is_ok());
        self.inner.disk.note(&answer);
        if matches!(answer, Err(StoreError::NotServing)) {
            self.inner.lost.store(true, Ordering::SeqCst);
        }
        self.notice_lost();
        answer
            .map_err(Refusal::from)?
            .map_err(engine::Fail::refusal)
    }

    /// Run `work` on a read connection, in one snapshot. Private: the API asks
    /// `Control` for what it needs and never holds a transaction.
    async fn read<R, F>(&self, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> Step<R> + Send + 'static,
    {
        self.serving()?;
        self.read_now(work).await
    }

    async fn read_now<R, F>(&self, work: F) -> Result<R, Refusal>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Tx) -> Step<R> + Send + 'static,
    {
        let now = self.inner.options.clock.now();
        let answer = self.inner.store.read(now, move |tx| Ok(work(tx))).await;
        if answer.is_err() {
            self.notice_lost();
        }
        answer
            .map_err(Refusal::from)?
            .map_err(engine::Fail::refusal)
    }
}

/// The store's options of a control plane's options, naming it `holder`.
fn store_options(options: &Options, holder: String, subscribed: &Subscribed) -> StoreOptions {
    StoreOptions {
        database: options.database.clone(),
        clock: options.clock.clone(),
        holder,
        busy_timeout: options.busy_timeout,
        postgres: options.postgres.clone(),
        standby: options.standby.clone(),
        subscribed: subscribed.clone(),
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
