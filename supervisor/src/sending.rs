//! Sending the outbox's messages, and what each answer means
//! (`docs/inside/workflows.md`, "Report"; `docs/design.md`, "The supervisor").
//!
//! A message leaves the outbox when the control plane accepts or refuses it. A
//! refusal of an event or of waiting for a task still held (the event is not
//! allowed, the context change is not valid) becomes a failed report, so the task
//! fails now rather than when its lease ends. `attempt_over` and 404 mean the
//! attempt is gone: that message and every other message of its attempt are
//! dropped, with one log line. Another 409 (`task_not_held`) is checked with a
//! heartbeat first for a report; a note or memory write names its attempt, so the
//! refusal says that attempt is over. A message that gets no answer before the
//! stop stays, with the later messages of its task behind it. A usage report
//! (ours) is sent for an attempt that is over too: the control plane takes it, and
//! any refusal drops it alone (`docs/concepts/budgets.md`).

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};
use stateous_client::Call;

use crate::api::CallError;
use crate::log_line;
use crate::outbox::{Kind, Message};
use crate::supervisor::Core;

/// The start of the error of a failed report that a refused report caused.
pub const REFUSAL: &str = "the control plane refused the report: ";

/// What became of one message of the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Accepted, or refused for itself alone: it left the outbox.
    Done,
    /// No answer before the stop: it stays for the next start.
    Stays,
    /// Refused because its attempt is over: it left the outbox, and the other
    /// messages of its attempt are to go unsent.
    Over,
}

/// The idempotency key of a note of the outbox: its task, attempt and place in
/// the outbox, which no other note of that attempt shares (one supervisor holds an
/// attempt). Sent again after a lost answer or a crash, the note is written once.
pub(crate) fn note_key(message: &Message) -> String {
    format!(
        "stateous-note/{}/{}/{}",
        message.task, message.attempt, message.id
    )
}

/// The idempotency key of a usage report of the outbox (ours), made as a note's
/// is: sent again after a lost answer or a crash, it is counted once.
pub(crate) fn usage_key(message: &Message) -> String {
    format!(
        "stateous-usage/{}/{}/{}",
        message.task, message.attempt, message.id
    )
}

/// Whether a refusal of a note or memory write says its attempt is over.
fn attempt_is_over(status: u16, code: Option<&str>) -> bool {
    status == 404
        || matches!(
            code,
            Some("attempt_over" | "task_not_found" | "task_not_held")
        )
}

impl Core {
    /// Send the messages an earlier run left, in order, before the first claim. A
    /// message that does not go holds back the later messages of its task.
    pub(crate) async fn send_left(&self) {
        let left = match self.outbox_do(|o| o.pending()).await {
            Ok(left) => left,
            Err(e) => {
                log_line!("cannot read the outbox: {e}");
                return;
            }
        };
        if left.is_empty() {
            return;
        }
        log_line!("sending {} message(s) left in the outbox", left.len());
        let mut held = HashSet::new();
        let mut over = HashSet::new();
        for message in left {
            // What an attempt spent counts after its attempt is over.
            let spent = message.kind == Kind::Usage;
            let skipped = !spent && over.contains(&(message.task, message.attempt));
            if held.contains(&message.task) || skipped {
                continue;
            }
            match self.send(&message).await {
                Delivery::Done => {}
                Delivery::Over => {
                    over.insert((message.task, message.attempt));
                    self.drop_messages(message.task, message.attempt).await;
                }
                Delivery::Stays => {
                    held.insert(message.task);
                    if self.stopping.is_set() {
                        return;
                    }
                }
            }
        }
    }

    /// Send one message of the outbox; remove it once answered.
    pub(crate) async fn send(&self, message: &Message) -> Delivery {
        let result = match message.kind {
            Kind::Report => return self.send_report(message).await,
            Kind::Memory => {
                let (key, value) = (&message.body["key"], &message.body["value"]);
                let key = key.as_str().unwrap_or_default();
                let call = Call::set_memory(message.task, key, value, Some(message.attempt));
                self.api.deliver(&call, &self.stopping).await
            }
            Kind::Usage => {
                let usage = message.body["usage"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let report = stateous_shared::usage::UsageReport {
                    usage,
                    attempt: Some(message.attempt),
                    supervisor: Some(self.name.clone()),
                };
                let call = Call::usage(message.task, &report).with_key(Some(&usage_key(message)));
                self.api.deliver(&call, &self.stopping).await
            }
            Kind::Note => {
                let text = message.body["text"].as_str().unwrap_or_default();
                // Ours: a control plane of ours writes a note sent again after a
                // lost answer once; the reference's ignores the header.
                let call = Call::note(message.task, text, Some(message.attempt))
                    .with_key(Some(&note_key(message)));
                self.api.deliver(&call, &self.stopping).await
            }
        };
        let delivery = match result {
            Err(CallError::GaveUp) => {
                self.stays(message);
                return Delivery::Stays;
            }
            Err(CallError::Refused {
                status,
                code,
                message: said,
            }) if message.kind != Kind::Usage && attempt_is_over(status, code.as_deref()) => {
                log_line!(
                    "task {} of {}: the control plane refused a {} as attempt {} is over \
                     ({said}); the attempt's other messages are dropped unsent",
                    message.task,
                    message.token,
                    message.kind.as_str(),
                    message.attempt
                );
                Delivery::Over
            }
            Err(CallError::Refused { message: said, .. }) => {
                log_line!(
                    "task {}: the control plane refused a {}: {said}",
                    message.task,
                    message.kind.as_str()
                );
                Delivery::Done
            }
            Ok(()) => Delivery::Done,
        };
        self.forget(message.id).await;
        delivery
    }

    pub(crate) fn stays(&self, message: &Message) {
        log_line!(
            "task {} of {}: the control plane cannot be reached; the {} stays in the \
             outbox for the next start",
            message.task,
            message.token,
            message.kind.as_str()
        );
    }

    async fn forget(&self, id: i64) {
        if let Err(e) = self.outbox_do(move |o| o.remove(id)).await {
            log_line!("cannot remove message {id} from the outbox: {e}");
        }
    }

    async fn send_report(&self, message: &Message) -> Delivery {
        let (task, token) = (message.task, &message.token);
        let mut body = message.body.clone();
        body["attempt"] = json!(message.attempt);
        body["supervisor"] = json!(self.name);
        let kind = body["kind"].as_str().unwrap_or("").to_string();
        let call = Call::report(task, &body);
        match self.api.deliver(&call, &self.stopping).await {
            Ok(()) => {
                let said = if kind == "event" {
                    body["event"].as_str().unwrap_or("").to_string()
                } else {
                    kind
                };
                log_line!("task {task} of {token}: reported {said}");
            }
            Err(CallError::GaveUp) => {
                self.stays(message);
                return Delivery::Stays;
            }
            Err(CallError::Refused {
                status,
                code,
                message: said,
            }) => {
                let again = kind == "failed"
                    && body["error"]
                        .as_str()
                        .is_some_and(|e| e.starts_with(REFUSAL));
                let what = if again {
                    "the failure report too"
                } else {
                    "the report"
                };
                log_line!("task {task} of {token}: the control plane refused {what}: {said}");
                let held = if kind == "failed" {
                    Ok(!attempt_is_over(status, code.as_deref()))
                } else {
                    self.still_held(message, status, code.as_deref()).await
                };
                match held {
                    Err(()) => {
                        self.stays(message);
                        return Delivery::Stays;
                    }
                    Ok(true) if kind != "failed" => {
                        return Box::pin(self.report_refusal(message, &said)).await
                    }
                    Ok(true) => {}
                    Ok(false) => {
                        self.forget(message.id).await;
                        return Delivery::Over;
                    }
                }
            }
        }
        self.forget(message.id).await;
        Delivery::Done
    }

    /// After a refused report: is the task still ours, on this attempt? The code
    /// tells, never the sentence; a 409 other than `attempt_over` is checked with a
    /// heartbeat. `Err` when that heartbeat got no answer before the stop.
    async fn still_held(
        &self,
        message: &Message,
        status: u16,
        code: Option<&str>,
    ) -> Result<bool, ()> {
        let (task, token) = (message.task, &message.token);
        if matches!(code, Some("task_not_found" | "attempt_over")) || status == 404 {
            return Ok(false);
        }
        if status != 409 {
            return Ok(true);
        }
        let named = BTreeMap::from([(task, message.attempt)]);
        match self
            .api
            .heartbeat(&self.name, &named, self.depth(), Some(&self.stopping))
            .await
        {
            Ok(lost) => Ok(!lost.contains(&task)),
            Err(CallError::GaveUp) => Err(()),
            Err(CallError::Refused { message, .. }) => {
                log_line!("task {task} of {token}: could not check the task: {message}");
                Ok(false)
            }
        }
    }

    /// Fail the task with the refusal, once: the failed report goes into the
    /// outbox before the refused one leaves it.
    async fn report_refusal(&self, refused: &Message, said: &str) -> Delivery {
        let failed: Value = json!({
            "kind": "failed",
            "error": format!("{REFUSAL}{said}"),
            "context": {},
            "schedules": [],
        });
        let (task, attempt, token) = (refused.task, refused.attempt, refused.token.clone());
        let written = self
            .outbox_do(move |o| o.append(task, attempt, &token, Kind::Report, &failed))
            .await;
        self.forget(refused.id).await;
        match written {
            Ok(message) => self.send(&message).await,
            Err(e) => {
                log_line!(
                    "task {} of {}: cannot write the report to the outbox: {e}",
                    refused.task,
                    refused.token
                );
                Delivery::Done
            }
        }
    }
}
