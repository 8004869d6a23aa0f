//! The supervisor's loops (`docs/design.md`, "The supervisor"): its start, the
//! claims, and reporting outcomes.
//!
//! The claim loop first sends what the outbox holds, then claims with a request
//! id (the same id again after a lost answer, a new one after any answer), at
//! most `tasks` routines at once, 1 s after an empty answer. The heartbeat loop
//! (`beating.rs`) names every running task with its attempt, at most a third of
//! the shortest granted lease apart, and stops the routines of lost ones; the
//! watch loop asks it to beat at once when the control plane's `/watch` stream
//! tells that a held task ended. A lost attempt's routine is stopped and every
//! message of that attempt leaves the outbox unsent, but its usage reports, which
//! count for an attempt that is over (`docs/concepts/budgets.md`). Each routine's notes and
//! memory writes go through the outbox in order, before its report. The first
//! stop signal ends the claims and waits for the routines; the second kills them,
//! and each killed routine's attempt is reported failed ("the supervisor was
//! stopped") through the outbox, so that its task is tried again at once rather
//! than when its lease ends; the run then returns 1. A report that gets no answer
//! within a short wait stays in the outbox for the next start. Either way the
//! supervisor then tells the control plane it stopped, best effort
//! (`Api::say_stopped`).
//!
//! A Rust program can run a supervisor of in-process routines:
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::collections::BTreeMap;
//! use stateous_supervisor::{api::Api, config::Timings, contract::Contract};
//! use stateous_supervisor::inprocess::{routine, Ctx};
//! use stateous_supervisor::outbox::{outbox_path, Outbox};
//! use stateous_supervisor::supervisor::{Parts, Supervisor};
//!
//! let folder = std::path::PathBuf::from("my-supervisor");
//! let timings = Timings::default();
//! let api = Api::new("http://127.0.0.1:8080", timings.request_timeout, timings.backoff.clone())?;
//! let coding = routine(|ctx: Ctx| async move {
//!     ctx.note("coding")?;
//!     ctx.emit("done", None)
//! });
//! let supervisor = Supervisor::new(Parts {
//!     api,
//!     name: "rust-box".into(),
//!     outbox: Outbox::open(&outbox_path(&folder))?,
//!     contract: Contract::load(&folder.join("contract.json"))?,
//!     routines: BTreeMap::from([("coding".to_string(), coding)]),
//!     folder,
//!     timings,
//!     tasks: 4,
//! })?;
//! let stop = supervisor.handle(); // stop.signal() from elsewhere ends the run
//! let code = supervisor.run().await;
//! # let _ = (stop, code);
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use stateous_shared::wire::Grant;
use tokio::sync::{mpsc, Notify};

use crate::api::{Api, CallError};
use crate::config::Timings;
use crate::contract::Contract;
use crate::ctx::{RunCtx, Sink};
use crate::ctx_dir::make_ctx_dir;
use crate::inprocess::{self, Routine};
use crate::log_line;
use crate::outbox::{Kind, Message, Outbox, OutboxError};
use crate::runner::{self, RunSpec};
use crate::sending::Delivery;
use crate::stop::Stop;
use stateous_client::Claimed;

/// One running routine. The control plane can grant a task again while an old
/// routine of it still ends, so two may share a task id.
pub(crate) struct Running {
    pub(crate) grant: Grant,
    /// The lease the control plane granted, when it said (ours does).
    pub(crate) lease: Option<Duration>,
    /// The control plane took the task back.
    pub(crate) lost: AtomicBool,
    /// The routine ended and its report is on its way: too late to lose it.
    pub(crate) reporting: AtomicBool,
    /// Set to stop the routine.
    pub(crate) kill: Stop,
    /// A forced stop killed the routine: its attempt is reported failed.
    stopped: AtomicBool,
}

/// The error of the failed report of an attempt that a forced stop ended.
pub const STOPPED: &str = "the supervisor was stopped";

/// How long a forced stop waits for the control plane to answer the report of
/// each routine it killed; a report without an answer stays in the outbox.
const STOPPED_REPORT_WAIT: Duration = Duration::from_secs(3);

/// How long the supervisor waits, at its end, for the control plane to answer
/// that it stopped.
const SAY_STOPPED_WAIT: Duration = Duration::from_secs(2);

/// What every loop shares.
pub struct Core {
    pub(crate) api: Api,
    pub(crate) name: String,
    /// The watch stream saw a held task end: beat now to learn which are lost.
    pub(crate) beat_now: Notify,
    /// A grant came: the heartbeat's period may be shorter now.
    pub(crate) repace: Notify,
    /// Shared with blocking threads: a commit waits for an fsync, which must not
    /// hold up the runtime's few worker threads.
    outbox: Arc<Mutex<Outbox>>,
    contract: Arc<Contract>,
    routines: BTreeMap<String, Routine>,
    folder: PathBuf,
    pub(crate) timings: Timings,
    tasks: usize,
    ctx_dir: PathBuf,
    /// The first stop signal: no new claims.
    pub(crate) stopping: Stop,
    /// The second: kill the routines.
    forced: Stop,
    /// A routine ended, or a stop came: the claim loop may go on.
    freed: Notify,
    running: Mutex<Vec<Arc<Running>>>,
    next_run: std::sync::atomic::AtomicU64,
    /// Stop signals so far, from every handle.
    signals: std::sync::atomic::AtomicUsize,
    /// The control plane refused this supervisor's key for good (401, or 403 on a
    /// claim): it stopped by itself, and `run` returns 1.
    shut_out: AtomicBool,
}

/// What a supervisor runs with, checked by `supervise` (or a Rust caller).
pub struct Parts {
    /// The control plane.
    pub api: Api,
    /// The supervisor's name.
    pub name: String,
    /// The open, locked outbox.
    pub outbox: Outbox,
    /// The contract.
    pub contract: Contract,
    /// The routine of each served state.
    pub routines: BTreeMap<String, Routine>,
    /// The folder routines run in (and whose `.stateous/logs/` gets their output).
    pub folder: PathBuf,
    /// The timings.
    pub timings: Timings,
    /// At most this many routines at once.
    pub tasks: usize,
}

/// A supervisor, ready to run: [`Supervisor::run`], and [`Handle`] to stop it.
pub struct Supervisor {
    core: Arc<Core>,
}

/// Stops a running supervisor; cheap to clone.
#[derive(Clone)]
pub struct Handle {
    core: Arc<Core>,
}

impl Supervisor {
    /// A supervisor of `parts`. Fails when the temporary folder of the helper's
    /// sockets cannot be made.
    pub fn new(parts: Parts) -> std::io::Result<Supervisor> {
        let ctx_dir = make_ctx_dir()?;
        let core = Core {
            api: parts.api,
            name: parts.name,
            beat_now: Notify::new(),
            repace: Notify::new(),
            outbox: Arc::new(Mutex::new(parts.outbox)),
            contract: Arc::new(parts.contract),
            routines: parts.routines,
            folder: parts.folder,
            timings: parts.timings,
            tasks: parts.tasks.max(1),
            ctx_dir,
            stopping: Stop::new(),
            forced: Stop::new(),
            freed: Notify::new(),
            running: Mutex::new(Vec::new()),
            next_run: std::sync::atomic::AtomicU64::new(1),
            signals: std::sync::atomic::AtomicUsize::new(0),
            shut_out: AtomicBool::new(false),
        };
        Ok(Supervisor {
            core: Arc::new(core),
        })
    }

    /// A handle that stops this supervisor.
    pub fn handle(&self) -> Handle {
        Handle {
            core: self.core.clone(),
        }
    }

    /// Claim and run until a stop. 0 after a graceful stop; 1 after a forced one, or
    /// after a claim refused 401 `unauthenticated` or 403 `forbidden` (a key that is
    /// unknown, revoked, or bound to another supervisor's name: no retry can help).
    pub async fn run(self) -> i32 {
        let core = self.core;
        let beating = tokio::spawn(core.clone().beat_forever());
        let watching = tokio::spawn(core.clone().watch_forever());
        let claiming = tokio::spawn(core.clone().claim_forever());
        core.stopping.wait().await;
        // A claim in flight is not cut: its task runs too, unless the stop is forced.
        let claiming_abort = claiming.abort_handle();
        tokio::select! {
            _ = claiming => {}
            _ = core.forced.wait() => claiming_abort.abort(),
        }
        core.wait_for_routines().await;
        beating.abort();
        watching.abort();
        core.api.say_stopped(&core.name, SAY_STOPPED_WAIT).await;
        let _ = std::fs::remove_dir_all(&core.ctx_dir);
        if core.forced.is_set() || core.shut_out.load(Ordering::SeqCst) {
            1
        } else {
            0
        }
    }
}

impl Handle {
    /// A stop signal: the first stops the claims and waits; the second stops now.
    pub fn signal(&self) {
        let count = self.core.signals.fetch_add(1, Ordering::SeqCst) + 1;
        if count == 1 && !self.core.stopping.is_set() {
            log_line!(
                "stopping: no new tasks; waiting for {} routine(s) (signal again to stop now)",
                self.core.running_count()
            );
            self.core.stopping.set();
            self.core.freed.notify_one();
        } else if count >= 2 {
            self.stop_now();
        }
    }

    /// Stop at once: kill the routines; `run` returns 1.
    pub fn stop_now(&self) {
        let core = &self.core;
        if core.forced.is_set() {
            return;
        }
        log_line!(
            "stopping now: cancelling {} routine(s)",
            core.running_count()
        );
        core.forced.set();
        core.stopping.set();
        core.freed.notify_one();
        // A routine stopped now fails its attempt, so that the task is tried again
        // without waiting for its lease to end. One whose report is on its way
        // keeps it.
        for running in core.running_list() {
            if !running.reporting.load(Ordering::SeqCst) {
                running.stopped.store(true, Ordering::SeqCst);
            }
            running.kill.set();
        }
    }
}

impl Core {
    pub(crate) fn with_outbox<T>(
        &self,
        work: impl FnOnce(&Outbox) -> Result<T, OutboxError>,
    ) -> Result<T, OutboxError> {
        let outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        work(&outbox)
    }

    /// [`Core::with_outbox`] on a blocking thread, for async code.
    pub(crate) async fn outbox_do<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Outbox) -> Result<T, OutboxError> + Send + 'static,
    ) -> Result<T, OutboxError> {
        let outbox = self.outbox.clone();
        let done = tokio::task::spawn_blocking(move || {
            let outbox = outbox.lock().unwrap_or_else(|e| e.into_inner());
            work(&outbox)
        })
        .await;
        done.unwrap_or_else(|e| {
            Err(OutboxError::Open {
                path: PathBuf::from(".stateous/outbox.db"),
                why: format!("the outbox's thread failed: {e}"),
            })
        })
    }

    pub(crate) fn running_list(&self) -> Vec<Arc<Running>> {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn running_count(&self) -> usize {
        self.running.lock().map(|r| r.len()).unwrap_or(0)
    }

    pub(crate) fn depth(&self) -> Option<u64> {
        self.with_outbox(|o| o.depth())
            .ok()
            .and_then(|depth| u64::try_from(depth).ok())
    }

    async fn claim_forever(self: Arc<Core>) {
        self.send_left().await;
        let served: Vec<String> = self.routines.keys().cloned().collect();
        let mut request = new_request_id();
        while !self.stopping.is_set() {
            if self.running_count() >= self.tasks {
                self.rest(None).await;
                continue;
            }
            let asked = std::time::Instant::now();
            let claimed = self.waiting_claim(&served, &request).await;
            match claimed {
                Ok(Some(claimed)) => {
                    request = new_request_id();
                    self.clone().start(claimed);
                    self.repace.notify_one();
                }
                Ok(None) => {
                    request = new_request_id();
                    // A claim that waited its whole wait asks again at once; one
                    // answered sooner (a control plane that does not wait, one
                    // that stops) rests first, as a claim without `wait` does.
                    let wait = self.claim_wait();
                    if wait.is_zero() || asked.elapsed() < wait {
                        self.rest(Some(self.timings.idle)).await;
                    }
                }
                Err(CallError::Refused {
                    status: status @ (401 | 403),
                    message,
                    ..
                }) => {
                    log_line!(
                        "the control plane refused a claim ({status}): {message}; \
                         stopping, since this key cannot claim as {}",
                        self.name
                    );
                    self.shut_out.store(true, Ordering::SeqCst);
                    self.stopping.set();
                    self.freed.notify_one();
                }
                Err(CallError::Refused { message, .. }) => {
                    log_line!("the control plane refused a claim: {message}");
                    request = new_request_id();
                    self.rest(Some(self.timings.idle)).await;
                }
                Err(CallError::GaveUp) => {}
            }
        }
    }

    /// How long a claim waits at the control plane: `claim_wait`, at most
    /// `request_timeout`, so that a control plane that froze (SIGSTOP, a frozen
    /// VM) while the claim waited is given up after twice `request_timeout` at
    /// most, and the next address tried.
    fn claim_wait(&self) -> std::time::Duration {
        self.timings.claim_wait.min(self.timings.request_timeout)
    }

    /// One claim for all the free slots (`docs/reference/files.md`, `claim_wait`):
    /// with no free task the control plane holds it until one is queued or
    /// `claim_wait` ends. A stop ends the wait: the request is dropped, so the
    /// control plane stops waiting for it too.
    async fn waiting_claim(
        &self,
        served: &[String],
        request: &str,
    ) -> Result<Option<Claimed>, CallError> {
        let wait = Some(self.claim_wait()).filter(|wait| !wait.is_zero());
        let claim = self.api.claim(
            &self.name,
            served,
            request,
            self.depth(),
            wait,
            &self.stopping,
        );
        if wait.is_none() {
            return claim.await;
        }
        tokio::select! {
            claimed = claim => claimed,
            _ = self.stopping.wait() => Err(CallError::GaveUp),
        }
    }

    /// Wait `span` (`None`: no limit), or less when a routine ends or a stop comes.
    async fn rest(&self, span: Option<std::time::Duration>) {
        if self.stopping.is_set() {
            return;
        }
        let freed = self.freed.notified();
        let stopped = self.stopping.wait();
        match span {
            Some(span) => {
                tokio::select! {
                    _ = freed => {}
                    _ = stopped => {}
                    _ = tokio::time::sleep(span) => {}
                }
            }
            None => {
                tokio::select! {
                    _ = freed => {}
                    _ = stopped => {}
                }
            }
        }
    }

    fn start(self: Arc<Core>, claimed: Claimed) {
        let Claimed { grant, lease } = claimed;
        if self.forced.is_set() {
            log_line!(
                "task {} of {}: stopping now, so its routine does not run",
                grant.task,
                grant.token
            );
            return;
        }
        for old in self.running_list() {
            if old.grant.task == grant.task {
                self.lose(&old);
            }
        }
        let running = Arc::new(Running {
            grant,
            lease,
            lost: AtomicBool::new(false),
            reporting: AtomicBool::new(false),
            kill: Stop::new(),
            stopped: AtomicBool::new(false),
        });
        // Counted before it is told: a stop signal between the two said "waiting
        // for 0 routine(s)" of a routine it then waited for.
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(running.clone());
        let grant = &running.grant;
        crate::log::task_began(grant.task, &grant.token, grant.traceparent.as_deref());
        log_line!(
            "task {}: {} of {}, attempt {}",
            grant.task,
            grant.state,
            grant.token,
            grant.attempt
        );
        tokio::spawn(async move {
            self.work(&running).await;
            if running.lost.load(Ordering::SeqCst) {
                let (task, attempt) = (running.grant.task, running.grant.attempt);
                self.drop_messages(task, attempt).await;
            }
            self.running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|r| !Arc::ptr_eq(r, &running));
            crate::log::task_ended(running.grant.task);
            self.freed.notify_one();
        });
    }

    /// Run the routine of one grant, then report what it said.
    async fn work(self: &Arc<Core>, running: &Arc<Running>) {
        let grant = running.grant.clone();
        let (queue, deliveries) = mpsc::unbounded_channel();
        let sends = Arc::new(Sends {
            core: self.clone(),
            running: running.clone(),
            queue: Mutex::new(Some(queue)),
        });
        let delivering = tokio::spawn(self.clone().deliver(running.clone(), deliveries));
        let ctx = Arc::new(RunCtx::new(
            grant.clone(),
            self.contract.clone(),
            sends.clone(),
        ));
        let failure = match self.routines.get(&grant.state) {
            None => Some(format!(
                "this supervisor has no routine for '{}'",
                grant.state
            )),
            Some(routine) => self.call(routine, &ctx, running).await,
        };
        let stopped = running.stopped.load(Ordering::SeqCst);
        let outcome = ctx.outcome(if stopped {
            Some(STOPPED.into())
        } else {
            failure
        });
        sends.close();
        let held = delivering.await.unwrap_or(true);
        if running.lost.load(Ordering::SeqCst) {
            return;
        }
        running.reporting.store(true, Ordering::SeqCst);
        let body = serde_json::to_value(&outcome).unwrap_or(Value::Null);
        let (task, attempt, token) = (grant.task, grant.attempt, grant.token.clone());
        let written = self
            .outbox_do(move |o| o.append(task, attempt, &token, Kind::Report, &body))
            .await;
        match written {
            Ok(message) if !held && self.forced.is_set() => {
                let sent = tokio::time::timeout(STOPPED_REPORT_WAIT, self.send(&message)).await;
                match sent {
                    Ok(Delivery::Over) => self.drop_messages(task, attempt).await,
                    Ok(_) => {}
                    Err(_) => self.stays(&message),
                }
            }
            Ok(message) if !held => {
                if self.send(&message).await == Delivery::Over {
                    self.drop_messages(task, attempt).await;
                }
            }
            Ok(message) => self.send_later(&message),
            Err(e) => log_line!(
                "task {} of {}: cannot write the report to the outbox: {e}",
                grant.task,
                grant.token
            ),
        }
    }

    fn send_later(&self, message: &Message) {
        log_line!(
            "task {} of {}: an earlier message did not go; the report stays in the outbox \
             for the next start",
            message.task,
            message.token
        );
    }

    /// Run the routine; `Some(reason)` when it failed.
    async fn call(
        &self,
        routine: &Routine,
        ctx: &Arc<RunCtx>,
        running: &Running,
    ) -> Option<String> {
        match routine {
            Routine::Program(program) => {
                let run = self.next_run.fetch_add(1, Ordering::SeqCst);
                let socket = self.ctx_dir.join(format!("{run}.sock"));
                let listener = match tokio::net::UnixListener::bind(&socket) {
                    Ok(listener) => listener,
                    Err(e) => return Some(format!("cannot open the ctx socket: {e}")),
                };
                let server = tokio::spawn(crate::ctx_socket::serve(listener, ctx.clone()));
                let grant = ctx.grant();
                let spec = RunSpec {
                    folder: self.folder.clone(),
                    log_file: self
                        .folder
                        .join(".stateous")
                        .join("logs")
                        .join(format!("task-{}-attempt-{}.log", grant.task, grant.attempt)),
                    ctx_socket: socket.clone(),
                    grace: self.timings.grace,
                };
                let started = std::time::SystemTime::now();
                let exit = runner::run(program, grant, &spec, &running.kill).await;
                crate::traces::ran(grant, program, started, &exit);
                server.abort();
                let _ = std::fs::remove_file(&socket);
                exit.failure()
                    .or_else(|| (!ctx.has_outcome()).then(|| exit.without_outcome()))
            }
            Routine::InProcess(function) => {
                inprocess::call(function, ctx.clone(), &running.kill).await
            }
        }
    }

    /// Send one routine's notes and memory writes in order; `true` when one got no
    /// answer before the stop (the later ones then stay in the outbox too). Once
    /// the attempt is lost nothing more is sent: its messages are dropped, and a
    /// refusal that says the attempt is over loses the task then and there.
    async fn deliver(
        self: Arc<Core>,
        running: Arc<Running>,
        mut deliveries: mpsc::UnboundedReceiver<Message>,
    ) -> bool {
        let mut held = false;
        while let Some(message) = deliveries.recv().await {
            // A usage report is sent after the attempt is lost too: spent is spent.
            let lost = running.lost.load(Ordering::SeqCst) && message.kind != Kind::Usage;
            if held || lost {
                continue;
            }
            match self.send(&message).await {
                Delivery::Done => {}
                Delivery::Stays => held = true,
                Delivery::Over => self.lose(&running),
            }
        }
        held
    }

    async fn wait_for_routines(&self) {
        let ended = async {
            while self.running_count() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::pin!(ended);
        tokio::select! {
            _ = &mut ended => return,
            _ = self.forced.wait() => {}
        }
        let wait = self.timings.grace + self.timings.cancel_wait;
        if tokio::time::timeout(wait, ended).await.is_err() {
            log_line!(
                "{} routine(s) did not stop; exiting without them",
                self.running_count()
            );
        }
    }
}

/// One grant's notes and memory writes: committed to the outbox, then queued.
struct Sends {
    core: Arc<Core>,
    running: Arc<Running>,
    queue: Mutex<Option<mpsc::UnboundedSender<Message>>>,
}

impl Sends {
    /// No more sends: the routine ended. The queue drains, then delivery ends.
    fn close(&self) {
        self.queue.lock().map(|mut q| q.take()).ok();
    }
}

impl Sink for Sends {
    fn put(&self, kind: Kind, body: Value) -> Result<(), String> {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let Some(queue) = queue.as_ref() else {
            return Err("the routine's task is over".into());
        };
        if self.running.lost.load(Ordering::SeqCst) && kind != Kind::Usage {
            return Err(format!(
                "the control plane took this task back: attempt {} is over",
                self.running.grant.attempt
            ));
        }
        let grant = &self.running.grant;
        let message = self
            .core
            .with_outbox(|o| o.append(grant.task, grant.attempt, &grant.token, kind, &body))
            .map_err(|e| {
                let problem = format!("cannot write the {} to the outbox: {e}", kind.as_str());
                log_line!("task {} of {}: {problem}", grant.task, grant.token);
                problem
            })?;
        // The receiver lives until the queue closes, so this send cannot fail.
        let _ = queue.send(message);
        Ok(())
    }
}

/// A fresh claim request id: 32 hex digits.
fn new_request_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
