//! The supervisor's retry layer over the client's calls: each request is a
//! `stateous_client::Call` (its path and typed body written once, in the client),
//! sent here with the reference's retry rule and read into what the loops need.
//!
//! A call that gets no answer is tried again after the backoff waits (1, 2, 4, 8,
//! 16, then every 30 s), each moved by up to 20% either way at random so that the
//! supervisors that lost one control plane do not all come back at the same
//! moment, one log line per failure, until an answer comes. An answer 502, 503 or
//! 504 counts as no answer: a proxy, a restarting control plane, one that is
//! `not_serving` (another may take over at the same URL), or one whose database is
//! busy; the log line says what it answered. With several addresses, a call
//! first goes once around them by the client's rule (`stateous_client::Endpoints`:
//! on no connection, or an answer 503 `not_serving` or `standby`), and the wait
//! comes only when none served; a move to another address is logged once (`the
//! control plane at A does not serve (...); trying B`, then `connected to the
//! control plane at B`). Any other answer of 400 or more is a
//! [`CallError::Refused`], never tried again. When the stop flag is set, a call
//! that would wait to try again gives up instead ([`CallError::GaveUp`]); a
//! request in flight is never cut.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use stateous_client::{
    Answer, Backoff, Call, ClaimRequest, Claimed, Client, HeartbeatRequest, Passed, TlsOptions,
};
use stateous_shared::wire::{Health, Lost};

use crate::log::seconds;
use crate::log_line;
use crate::stop::Stop;

/// Why a call ended without success.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The control plane answered with an error.
    #[error("{message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The refusal's code (`attempt_over`, ...), when the answer has one.
        code: Option<String>,
        /// The sentence, for people.
        message: String,
    },
    /// The call got no answer, and the stop came before the next try.
    #[error("the control plane cannot be reached, and the supervisor is stopping")]
    GaveUp,
}

impl CallError {
    fn refused(status: u16, message: impl Into<String>) -> CallError {
        CallError::Refused {
            status,
            code: None,
            message: message.into(),
        }
    }
}

/// The most a backoff wait moves either way, as a share of it.
const JITTER: f64 = 0.2;

/// The control plane, reached over HTTP or a Unix socket at one of its addresses.
#[derive(Debug, Clone)]
pub struct Api {
    /// The addresses and which one serves; its endpoints send the raw requests.
    client: Client,
    backoff: Backoff,
    /// The address the log last named as serving, shared by the clones, so that
    /// a move to another address is logged once.
    announced: Arc<Mutex<String>>,
}

impl Api {
    /// The API at `url` (`http://HOST:PORT` or `unix:///PATH`, or several of them
    /// separated by commas, tried in turn); each request waits at most `timeout`;
    /// `backoff` are the waits between tries (the last repeats).
    pub fn new(url: &str, timeout: Duration, backoff: Vec<Duration>) -> Result<Api, String> {
        Api::with_tls(url, timeout, backoff, &TlsOptions::default())
    }

    /// As [`Api::new`], an `https://` address trusted as `tls` says (a CA file,
    /// a client certificate).
    ///
    /// Errors: also a file of `tls` that cannot be used, in one sentence.
    pub fn with_tls(
        url: &str,
        timeout: Duration,
        backoff: Vec<Duration>,
        tls: &TlsOptions,
    ) -> Result<Api, String> {
        let backoff = Backoff::new(backoff).with_jitter(JITTER);
        let client = Client::with_tls(url, timeout, false, tls).map_err(|e| e.to_string())?;
        let announced = Arc::new(Mutex::new(client.url().to_string()));
        Ok(Api {
            client,
            backoff,
            announced,
        })
    }

    /// This API sending `key` as `Authorization: Bearer SECRET` with every
    /// request (the watch stream's and every address's too).
    pub fn with_access_key(mut self, key: Option<&stateous_client::AccessKey>) -> Api {
        self.client = self.client.with_access_key(key);
        self
    }

    /// Every address, in the order given.
    pub fn urls(&self) -> Vec<&str> {
        self.client.urls()
    }

    /// The backoff waits, as configured, and the jitter added per wait.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// The client underneath, for what has no retry here (the watch stream,
    /// which [`stateous_client::Follower`] follows).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The URL of the address that served last, as log lines name it.
    pub fn url(&self) -> &str {
        self.client.url()
    }

    /// `GET /health`: the served workflow and its checksum.
    pub async fn health(&self, stop: Option<&Stop>) -> Result<Health, CallError> {
        let answer = self.call(&Call::health(), stop).await?;
        serde_json::from_slice(&answer.body)
            .map_err(|_| CallError::refused(answer.status, "its /health answer is not Stateous's"))
    }

    /// `GET /workflow`: the served graph document.
    pub async fn workflow(&self) -> Result<Value, CallError> {
        let answer = self.call(&Call::workflow(), None).await?;
        serde_json::from_slice(&answer.body)
            .map_err(|_| CallError::refused(answer.status, "its /workflow answer is not JSON"))
    }

    /// `POST /tasks/claim`: a task of `states`, or `None` (204). Every try sends the
    /// same `request` id, so a lost answer gets the same task again. `outbox` as in
    /// [`Api::heartbeat`]. `wait` (our addition): with no free task, the control
    /// plane answers once one is queued or the wait ends (none: at once).
    pub async fn claim(
        &self,
        supervisor: &str,
        states: &[String],
        request: &str,
        outbox: Option<u64>,
        wait: Option<Duration>,
        stop: &Stop,
    ) -> Result<Option<Claimed>, CallError> {
        let claim = ClaimRequest {
            supervisor: supervisor.to_string(),
            states: states.to_vec(),
            request: Some(request.to_string()),
            outbox,
            wait,
        };
        let answer = self.call(&Call::claim(&claim), Some(stop)).await?;
        if answer.status == 204 {
            return Ok(None);
        }
        Claimed::from_answer(&answer.body).map(Some).map_err(|e| {
            CallError::refused(answer.status, format!("the claimed task is not valid: {e}"))
        })
    }

    /// `POST /tasks/heartbeat`: the ids among `tasks` no longer held. Each task is
    /// named with the attempt this supervisor runs (`attempts`, our addition: a
    /// task whose attempt is over is answered lost even when another process of
    /// the same name holds its next attempt; the reference ignores the field).
    /// `outbox`, the outbox's depth, is an addition the reference ignores too.
    pub async fn heartbeat(
        &self,
        supervisor: &str,
        tasks: &BTreeMap<i64, i64>,
        outbox: Option<u64>,
        stop: Option<&Stop>,
    ) -> Result<Vec<i64>, CallError> {
        let beat = HeartbeatRequest::of_attempts(supervisor, tasks, outbox);
        let answer = self.call(&Call::heartbeat(&beat), stop).await?;
        let lost: Result<Lost, _> = serde_json::from_slice(&answer.body);
        lost.map(|l| l.lost).map_err(|_| {
            CallError::refused(
                answer.status,
                "the heartbeat answer has no list of lost tasks",
            )
        })
    }

    /// Send `call` (a report, note or memory write of the outbox), answered or
    /// given up at the stop.
    pub async fn deliver(&self, call: &Call, stop: &Stop) -> Result<(), CallError> {
        self.call(call, Some(stop)).await.map(|_| ())
    }

    /// `POST /supervisors/{name}/stop` (ours): tell the control plane this
    /// supervisor stopped, once, waiting at most `within`. Best effort: no answer,
    /// a refusal, or the reference's 404 (it has no such route) are all let go,
    /// as a stop must not wait for the control plane; one that is not told marks
    /// the supervisor stale once its heartbeat is overdue.
    pub async fn say_stopped(&self, name: &str, within: Duration) {
        let call = Call::supervisor_stopped(name);
        if let Ok(sent) = tokio::time::timeout(within, self.client.attempt(&call)).await {
            if let Ok(answer) = sent.result {
                if answer.status >= 400 && answer.status != 404 {
                    let (message, _) = error_of(&answer);
                    log_line!("the control plane was not told of the stop: {message}");
                }
            }
        }
    }

    /// The `failures`-th wait before a new try (from 0), moved by up to
    /// [`JITTER`] either way.
    pub fn wait_before_try(&self, failures: usize) -> Duration {
        self.backoff.wait(failures)
    }

    /// Send `call` until it is answered, by the rule at the top of this file.
    async fn call(&self, call: &Call, stop: Option<&Stop>) -> Result<Answer, CallError> {
        let mut failures = 0usize;
        loop {
            let sent = self.client.attempt(call).await;
            let problem = match sent.result {
                Err(e) => format!("cannot reach the control plane at {} ({e})", sent.url),
                Ok(answer) if matches!(answer.status, 502..=504) => unavailable(&sent.url, &answer),
                Ok(answer) if answer.status >= 400 => {
                    self.served(&sent.url, &sent.passed);
                    let (message, code) = error_of(&answer);
                    return Err(CallError::Refused {
                        status: answer.status,
                        code,
                        message,
                    });
                }
                Ok(answer) => {
                    self.served(&sent.url, &sent.passed);
                    return Ok(answer);
                }
            };
            // The line names each address passed over on the way, and why.
            let problem = sent
                .passed
                .iter()
                .map(|p| {
                    format!(
                        "the control plane at {} does not serve ({}); ",
                        p.url, p.reason
                    )
                })
                .chain([problem])
                .collect::<String>();
            if stop.is_some_and(Stop::is_set) {
                return Err(CallError::GaveUp);
            }
            let delay = self.wait_before_try(failures);
            failures += 1;
            log_line!("{problem}; trying again in {}s", seconds(delay));
            match stop {
                None => tokio::time::sleep(delay).await,
                Some(stop) => {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = stop.wait() => return Err(CallError::GaveUp),
                    }
                }
            }
        }
    }

    /// Log a move to the address at `url`, once among the clones: each address
    /// passed over on the way, with why, then the one that answered.
    fn served(&self, url: &str, passed: &[Passed]) {
        let Ok(mut announced) = self.announced.lock() else {
            return;
        };
        if *announced == url {
            return;
        }
        for (at, skipped) in passed.iter().enumerate() {
            let next = passed.get(at + 1).map_or(url, |p| p.url.as_str());
            log_line!(
                "the control plane at {} does not serve ({}); trying {next}",
                skipped.url,
                skipped.reason
            );
        }
        log_line!("connected to the control plane at {url}");
        url.clone_into(&mut announced);
    }
}

/// The start of the log line of an answer that counts as "not reached". An
/// answer with a refusal code came from the control plane itself, so the line
/// says what it answered; one without came from something between.
fn unavailable(url: &str, answer: &Answer) -> String {
    let (message, code) = error_of(answer);
    match code.as_deref() {
        Some("not_serving") => format!(
            "the control plane at {url} does not serve its database now (not_serving): {message}"
        ),
        Some(code) => format!(
            "the control plane at {url} answered {} {code}: {message}",
            answer.status
        ),
        None => format!(
            "cannot reach the control plane at {url} (it answered {})",
            answer.status
        ),
    }
}

/// The `error` sentence of an error answer (else its text, on one line, at most
/// 200 characters) and its `code`.
fn error_of(answer: &Answer) -> (String, Option<String>) {
    let data: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let code = data.get("code").and_then(Value::as_str).map(str::to_string);
    if let Some(error) = data.get("error").and_then(Value::as_str) {
        if !error.is_empty() {
            return (error.to_string(), code);
        }
    }
    let text = String::from_utf8_lossy(&answer.body);
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text: String = text.chars().take(200).collect();
    if text.is_empty() {
        (
            format!("the control plane answered {}", answer.status),
            code,
        )
    } else {
        (text, code)
    }
}
