//! `stateous supervise FOLDER`: load the folder, check it against the control
//! plane, and run until stopped (`docs/design.md`, "The supervisor").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::api::{Api, CallError};
use crate::config::{Config, CONFIG_FILE};
use crate::contract::{Contract, CONTRACT_FILE};
use crate::inprocess::Routine;
use crate::log_line;
use crate::outbox::{outbox_path, Outbox, OutboxError};
use crate::routines;
use crate::stop::Stop;
use crate::supervisor::{Handle, Parts, Supervisor};
use stateous_client::{AccessKey, Connection, TlsOptions};

/// Why a supervisor does not start: one sentence for `error: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// A folder read from disk, not yet checked against the control plane.
pub struct LoadedFolder {
    /// The folder, as given.
    pub path: PathBuf,
    /// `stateous.yaml`.
    pub config: Config,
    /// `contract.json`.
    pub contract: Contract,
    /// The routine of each served state.
    pub routines: BTreeMap<String, Routine>,
}

/// Read `stateous.yaml`, `contract.json` and the routines of `folder`.
pub fn load_folder(folder: &Path) -> Result<LoadedFolder, StartError> {
    if !folder.is_dir() {
        return Err(StartError(format!("{} is not a folder", folder.display())));
    }
    for needed in [CONTRACT_FILE, CONFIG_FILE] {
        if !folder.join(needed).is_file() {
            return Err(StartError(format!(
                "{} has no {needed}: run `stateous init supervisor URL {}`",
                folder.display(),
                folder.display()
            )));
        }
    }
    // Routines run with the folder as their working folder, so their paths must
    // not be relative to ours.
    let folder = &std::fs::canonicalize(folder)
        .map_err(|e| StartError(format!("cannot use {}: {e}", folder.display())))?;
    let config = Config::load(&folder.join(CONFIG_FILE)).map_err(|e| StartError(e.to_string()))?;
    let contract =
        Contract::load(&folder.join(CONTRACT_FILE)).map_err(|e| StartError(e.to_string()))?;
    let found = routines::discover(folder, &contract, &config.routines)
        .map_err(|e| StartError(e.to_string()))?;
    for warning in &found.warnings {
        log_line!("{warning}");
    }
    let routines = found
        .by_state
        .into_iter()
        .map(|(state, program)| (state, Routine::Program(program)))
        .collect();
    Ok(LoadedFolder {
        path: folder.to_path_buf(),
        config,
        contract,
        routines,
    })
}

/// Open the outbox of `folder`; another supervisor on it refuses the start.
pub fn open_outbox(folder: &Path) -> Result<Outbox, StartError> {
    Outbox::open(&outbox_path(folder)).map_err(|e| match e {
        OutboxError::Busy(_) => StartError(format!(
            "another supervisor runs on {} now: stop it, or use another folder",
            folder.display()
        )),
        other => StartError(other.to_string()),
    })
}

/// Ask `GET /health` (with retries until `stop`) and compare the checksum.
/// `Ok(false)`: the stop came first.
pub async fn check_health(
    api: &Api,
    loaded: &LoadedFolder,
    stop: &Stop,
) -> Result<bool, StartError> {
    let health = match api.health(Some(stop)).await {
        Ok(health) => health,
        Err(CallError::GaveUp) => return Ok(false),
        Err(CallError::Refused { message, .. }) => {
            return Err(StartError(format!(
                "{} did not answer as a Stateous control plane: {message}",
                api.url()
            )))
        }
    };
    let contract = loaded.path.join(CONTRACT_FILE);
    if health.workflow != loaded.contract.workflow {
        // Writing this folder's contract anew would make it the supervisor of the
        // other workflow with routines written for its own: say what differs and
        // leave the folder as it is.
        return Err(StartError(format!(
            "{} is the supervisor of workflow '{}', and {} serves workflow '{}': give \
             it the control plane of '{}' (--url, or url: in stateous.yaml), or make a \
             folder of its own for '{}' with `stateous init supervisor {} NEW_FOLDER`",
            loaded.path.display(),
            loaded.contract.workflow,
            api.url(),
            health.workflow,
            loaded.contract.workflow,
            health.workflow,
            api.url(),
        )));
    }
    if health.checksum != loaded.contract.checksum {
        return Err(StartError(format!(
            "{} is for another version of the workflow '{}' ({}; the control plane serves \
             {}): `stateous init supervisor` writes contract.json anew and keeps the \
             routines and stateous.yaml, so run `stateous init supervisor {} {}` again",
            contract.display(),
            loaded.contract.workflow,
            loaded.contract.checksum,
            health.checksum,
            api.url(),
            loaded.path.display()
        )));
    }
    Ok(true)
}

/// The body of `stateous supervise FOLDER`: the exit code (0 after a graceful
/// stop, 1 after a forced one). Errors: why it did not start, one sentence,
/// which the binary prints after `error: ` (exit code 1).
/// `connection`: `--url`, the access key, and the TLS flags (`--cacert`,
/// `--client-cert`, `--client-key`), which win, file by file, over
/// `stateous.yaml`'s `cacert`, `client_cert` and `client_key`.
pub fn supervise_command(
    folder: &Path,
    connection: Connection,
    otlp_endpoint: Option<&str>,
) -> Result<i32, String> {
    let endpoint = crate::traces::endpoint(otlp_endpoint)?;
    start_spawner();
    let runtime =
        stateous_client::runtime::runtime(stateous_client::runtime::Threads::Workers(None))
            .map_err(|e| format!("cannot start the supervisor: {e}"))?;
    let code = runtime.block_on(async {
        let Connection { url, key, tls } = connection;
        let (spans, queue) = match endpoint.map(crate::traces::queue).transpose()? {
            Some((spans, queue)) => (Some(spans), Some(queue)),
            None => (None, None),
        };
        let code = supervise(folder, url.as_deref(), key, &tls, spans)
            .await
            .map_err(|e| e.to_string());
        // The spans still queued get a short while to go out.
        crate::traces::stop_sending();
        if let Some(queue) = queue {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), queue).await;
        }
        code
    });
    // A routine's stdin writer or a helper connection may still hang on; do not wait.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    crate::spawner::finish();
    code
}

/// Start the routines' spawner (`spawner/`) while the process has one thread.
/// Without it the supervisor forks each routine itself: slower, the same result.
pub(crate) fn start_spawner() {
    if let Err(e) = crate::spawner::start() {
        log_line!("the supervisor starts routines itself: no spawner ({e})");
    }
}

/// Load, check and run the supervisor of `folder` until a stop signal. `url`
/// (`--url`, or `serve --supervise`'s own address) wins over `stateous.yaml`'s.
pub async fn supervise(
    folder: &Path,
    url: Option<&str>,
    key: Option<AccessKey>,
    tls: &TlsOptions,
    spans: Option<stateous_otlp::Spans>,
) -> Result<i32, StartError> {
    let signals = Signals::new();
    signals.listen()?;
    supervise_with(folder, url, key, tls, &signals, spans).await
}

/// [`supervise`], stopped by `signals` (which something else may feed).
pub(crate) async fn supervise_with(
    folder: &Path,
    url: Option<&str>,
    key: Option<AccessKey>,
    tls: &TlsOptions,
    signals: &Signals,
    spans: Option<stateous_otlp::Spans>,
) -> Result<i32, StartError> {
    let loaded = load_folder(folder)?;
    let outbox = open_outbox(&loaded.path)?;
    let url = loaded.config.control_plane(url).map_err(StartError)?;
    let timings = loaded.config.timings.clone();
    // The command line's key (or STATEOUS_ACCESS_KEY) wins over the folder's file.
    let key = match (key, &loaded.config.access_key_file) {
        (Some(key), _) => Some(key),
        (None, Some(file)) => {
            Some(AccessKey::from_file(&loaded.path.join(file)).map_err(StartError)?)
        }
        (None, None) => None,
    };
    let tls = TlsOptions {
        ca_file: tls.ca_file.clone().or(loaded.config.tls.ca_file.clone()),
        identity: tls.identity.clone().or(loaded.config.tls.identity.clone()),
    };
    let (timeout, backoff) = (timings.request_timeout, timings.backoff.clone());
    let api = Api::with_tls(&url, timeout, backoff, &tls)
        .map_err(StartError)?
        .with_access_key(key.as_ref());
    if !check_health(&api, &loaded, &signals.early).await? {
        return Ok(1);
    }
    let name = loaded.config.supervisor_name();
    let served: Vec<&str> = loaded.routines.keys().map(String::as_str).collect();
    let urls = api.urls();
    let plane = if urls.len() > 1 {
        format!("{} (of {})", api.url(), urls.join(", "))
    } else {
        api.url().to_string()
    };
    log_line!(
        "{name} serves {}; the control plane is {plane}",
        served.join(", ")
    );
    // Under systemd (Type=notify): the outbox is open and locked, and the control
    // plane serves this contract, so the claims can start. Without NOTIFY_SOCKET
    // this does nothing; should it fail, systemd's start timeout tells.
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
    let supervisor = Supervisor::new(Parts {
        api,
        name,
        outbox,
        contract: loaded.contract,
        routines: loaded.routines,
        folder: loaded.path,
        tasks: loaded.config.tasks as usize,
        timings,
    })
    .map_err(|e| StartError(format!("cannot make the ctx sockets' folder: {e}")))?;
    if let Some(spans) = spans {
        crate::traces::send_to(spans);
    }
    signals.forward(supervisor.handle());
    Ok(supervisor.run().await)
}

/// Stop requests for a supervisor: before its run they stop the start (`early`);
/// during it, each goes to its [`Handle::signal`]. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Signals {
    pub(crate) early: Stop,
    handle: std::sync::Arc<std::sync::Mutex<Option<Handle>>>,
}

impl Signals {
    pub(crate) fn new() -> Signals {
        Signals::default()
    }

    /// One stop request.
    pub(crate) fn stop(&self) {
        let current = self.handle.lock().ok().and_then(|h| h.clone());
        match current {
            Some(handle) => handle.signal(),
            None => self.early.set(),
        }
    }

    /// Stop at once, before or during the run.
    pub(crate) fn stop_now(&self) {
        self.early.set();
        if let Some(handle) = self.handle.lock().ok().and_then(|h| h.clone()) {
            handle.stop_now();
        }
    }

    /// Turn each SIGINT and SIGTERM into [`Signals::stop`].
    pub(crate) fn listen(&self) -> Result<(), StartError> {
        use tokio::signal::unix::{signal, SignalKind};
        let cannot = |e: std::io::Error| StartError(format!("cannot listen for signals: {e}"));
        let mut interrupt = signal(SignalKind::interrupt()).map_err(cannot)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(cannot)?;
        let signals = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                signals.stop();
            }
        });
        Ok(())
    }

    /// The run has ended: later stop requests have nothing to stop.
    pub(crate) fn forget(&self) {
        if let Ok(mut slot) = self.handle.lock() {
            *slot = None;
        }
    }

    fn forward(&self, handle: Handle) {
        if let Ok(mut slot) = self.handle.lock() {
            *slot = Some(handle.clone());
        }
        if self.early.is_set() {
            handle.signal();
        }
    }
}
