//! The control plane's HTTP API as the supervisor calls it (reference
//! `docs/reference/http.md`), with the reference's retry rule.
//!
//! A call that gets no answer is tried again after the backoff waits (1, 2, 4, 8,
//! 16, then every 30 s), one log line per failure, until an answer comes. An answer
//! 502, 503 or 504 counts as no answer: a proxy, a restarting control plane, or
//! one that is `not_serving` (another may take over at the same URL). Any other
//! answer of 400 or more is a [`CallError::Refused`], never tried again. When the
//! stop flag is set, a call that would wait to try again gives up instead
//! ([`CallError::GaveUp`]); a request in flight is never cut.

use std::time::Duration;

use serde_json::{json, Value};
use stateous_shared::client::{Answer, Endpoint, Transport};
use stateous_shared::wire::{Grant, Health};

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

/// The control plane, reached over HTTP or a Unix socket.
#[derive(Debug, Clone)]
pub struct Api {
    url: String,
    transport: Transport,
    backoff: Vec<Duration>,
}

impl Api {
    /// The API at `url` (`http://HOST:PORT` or `unix:///PATH`); each request waits at
    /// most `timeout`; `backoff` are the waits between tries (the last repeats).
    pub fn new(url: &str, timeout: Duration, backoff: Vec<Duration>) -> Result<Api, String> {
        let endpoint = Endpoint::parse(url).map_err(|e| e.to_string())?;
        let backoff = if backoff.is_empty() {
            vec![Duration::from_secs(1)]
        } else {
            backoff
        };
        Ok(Api {
            url: url.to_string(),
            transport: Transport::new(endpoint, timeout),
            backoff,
        })
    }

    /// The URL, as log lines name it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET /health`: the served workflow and its checksum.
    pub async fn health(&self, stop: Option<&Stop>) -> Result<Health, CallError> {
        let answer = self.call("GET", "/health", None, stop).await?;
        serde_json::from_slice(&answer.body)
            .map_err(|_| CallError::refused(answer.status, "its /health answer is not Stateous's"))
    }

    /// `GET /workflow`: the served graph document.
    pub async fn workflow(&self) -> Result<Value, CallError> {
        let answer = self.call("GET", "/workflow", None, None).await?;
        serde_json::from_slice(&answer.body)
            .map_err(|_| CallError::refused(answer.status, "its /workflow answer is not JSON"))
    }

    /// `POST /tasks/claim`: a task of `states`, or `None` (204). Every try sends the
    /// same `request` id, so a lost answer gets the same task again. `outbox` as in
    /// [`Api::heartbeat`].
    pub async fn claim(
        &self,
        supervisor: &str,
        states: &[String],
        request: &str,
        outbox: Option<i64>,
        stop: &Stop,
    ) -> Result<Option<Grant>, CallError> {
        let mut body = json!({"supervisor": supervisor, "states": states, "request": request});
        if let Some(depth) = outbox {
            body["outbox"] = json!(depth);
        }
        let answer = self
            .call("POST", "/tasks/claim", Some(&body), Some(stop))
            .await?;
        if answer.status == 204 {
            return Ok(None);
        }
        serde_json::from_slice(&answer.body).map(Some).map_err(|e| {
            CallError::refused(answer.status, format!("the claimed task is not valid: {e}"))
        })
    }

    /// `POST /tasks/heartbeat`: the ids among `tasks` no longer held. `outbox`,
    /// the outbox's depth, is an addition the reference's control plane ignores.
    pub async fn heartbeat(
        &self,
        supervisor: &str,
        tasks: &[i64],
        outbox: Option<i64>,
        stop: Option<&Stop>,
    ) -> Result<Vec<i64>, CallError> {
        let mut body = json!({"supervisor": supervisor, "tasks": tasks});
        if let Some(depth) = outbox {
            body["outbox"] = json!(depth);
        }
        let answer = self
            .call("POST", "/tasks/heartbeat", Some(&body), stop)
            .await?;
        let lost: Result<stateous_shared::wire::Lost, _> = serde_json::from_slice(&answer.body);
        lost.map(|l| l.lost).map_err(|_| {
            CallError::refused(
                answer.status,
                "the heartbeat answer has no list of lost tasks",
            )
        })
    }

    /// `POST /tasks/{id}/report` with the outcome `body` (it names its attempt).
    pub async fn report(&self, task: i64, body: &Value, stop: &Stop) -> Result<(), CallError> {
        let path = format!("/tasks/{task}/report");
        self.call("POST", &path, Some(body), Some(stop))
            .await
            .map(|_| ())
    }

    /// `POST /tasks/{id}/note`.
    pub async fn note(&self, task: i64, body: &Value, stop: &Stop) -> Result<(), CallError> {
        let path = format!("/tasks/{task}/note");
        self.call("POST", &path, Some(body), Some(stop))
            .await
            .map(|_| ())
    }

    /// `PUT /tasks/{id}/memory`.
    pub async fn memory(&self, task: i64, body: &Value, stop: &Stop) -> Result<(), CallError> {
        let path = format!("/tasks/{task}/memory");
        self.call("PUT", &path, Some(body), Some(stop))
            .await
            .map(|_| ())
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        stop: Option<&Stop>,
    ) -> Result<Answer, CallError> {
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
        let mut failures = 0usize;
        loop {
            let problem = match self.transport.send(method, path, bytes.clone(), &[]).await {
                Err(e) => format!("cannot reach the control plane at {} ({e})", self.url),
                Ok(answer) if matches!(answer.status, 502..=504) => self.unavailable(&answer),
                Ok(answer) if answer.status >= 400 => {
                    let (message, code) = error_of(&answer);
                    return Err(CallError::Refused {
                        status: answer.status,
                        code,
                        message,
                    });
                }
                Ok(answer) => return Ok(answer),
            };
            if stop.is_some_and(Stop::is_set) {
                return Err(CallError::GaveUp);
            }
            let delay = self.backoff[failures.min(self.backoff.len() - 1)];
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

    /// The start of the log line of an answer that counts as "not reached".
    fn unavailable(&self, answer: &Answer) -> String {
        let (message, code) = error_of(answer);
        match code.as_deref() {
            Some("not_serving") => format!(
                "the control plane at {} does not serve its database now (not_serving): {message}",
                self.url
            ),
            Some(code) => format!(
                "cannot reach the control plane at {} (it answered {}, {code}: {message})",
                self.url, answer.status
            ),
            None => format!(
                "cannot reach the control plane at {} (it answered {})",
                self.url, answer.status
            ),
        }
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
