//! The live stream `GET /watch` (server-sent events), an addition of ours to the
//! API: every ledger entry as it commits, and supervisor
//! changes; `?token=ID` filters; `Last-Event-ID` resumes without loss.
//!
//! The reader here knows the event-stream format, not the event names: an event
//! whose data is a ledger entry (`token`, `seq`, `at`, `kind`, `data`) reads as
//! one through [`WatchEvent::entry`], whatever its `event:` field says.
//!
//! A stream that stays silent longer than the daemon's keep-alive
//! ([`WATCH_KEEP_ALIVE`]) plus the request timeout is taken as dead: a control
//! plane stopped with SIGSTOP (or a peer gone from the network) keeps its
//! connection open and sends nothing, and without this limit its readers would
//! wait on it for ever, even after a standby took the database over.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::capture_connection;
use serde::Deserialize;

use super::error::ClientError;
use super::transport::{Transport, TransportError};
use stateous_shared::wire::{HistoryEntry, Object, WATCH_KEEP_ALIVE};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// The `id:` field: what `Last-Event-ID` names to resume after this event.
    pub id: Option<String>,
    /// The `event:` field; `None` is the default type `message`.
    pub event: Option<String>,
    /// The `data:` lines, joined with newlines (a JSON document from the daemon).
    pub data: String,
}

/// A ledger entry as the stream carries it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WatchEntry {
    /// The token the entry belongs to.
    pub token: String,
    /// The entry itself: `seq`, `at`, `kind`, `data`.
    #[serde(flatten)]
    pub entry: HistoryEntry,
}

impl WatchEvent {
    /// The ledger entry this event carries, or `None` for another kind of event
    /// (a supervisor change, a keep-alive).
    pub fn entry(&self) -> Option<WatchEntry> {
        let value: serde_json::Value = serde_json::from_str(&self.data).ok()?;
        let fields: &Object = value.as_object()?;
        if !(fields.contains_key("seq") && fields.contains_key("kind")) {
            return None;
        }
        serde_json::from_value(value).ok()
    }
}

/// An open stream; it reads events as they arrive. Dropping it closes the
/// connection: a body dropped before its end is never read on, so its
/// connection is not kept.
#[derive(Debug)]
pub struct Watch {
    url: String,
    body: Incoming,
    buffer: BytesMut,
    parser: Parser,
    /// How long the stream may stay silent: a keep-alive is due every
    /// [`WATCH_KEEP_ALIVE`], and one later than a request timeout means no answer.
    silent_for: Duration,
    /// Of several addresses: where the next request starts once this stream died
    /// (the address after this one), as after any request that got no answer.
    moves: Option<(Arc<AtomicUsize>, usize)>,
}

impl Watch {
    /// Open `GET path` with the given headers; the transport's timeout covers the
    /// connection and the answer's head, not the stream. Answers the status and,
    /// for 400 or more, the body read whole (for the refusal).
    pub(super) async fn open(
        url: &str,
        transport: &Transport,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Result<Watch, (u16, Bytes)>, TransportError> {
        let mut with_accept = vec![("accept", "text/event-stream")];
        with_accept.extend_from_slice(headers);
        let mut request = transport.request("GET", path, None, &with_accept)?;
        let connection = capture_connection(&mut request);
        let opening = async {
            let response = transport.head(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body();
            if status >= 400 {
                let bytes = body
                    .collect()
                    .await
                    .map_err(|error| TransportError::Http(error.to_string()))?
                    .to_bytes();
                return Ok(Err((status, bytes)));
            }
            Ok(Ok(Watch {
                url: url.to_string(),
                body,
                buffer: BytesMut::new(),
                parser: Parser::default(),
                silent_for: transport.timeout() + WATCH_KEEP_ALIVE,
                moves: None,
            }))
        };
        transport.within(&connection, opening).await
    }

    /// Once this stream dies, store `to` in `next` (see [`Watch::moves`]).
    pub(super) fn moving(mut self, next: Arc<AtomicUsize>, to: usize) -> Watch {
        self.moves = Some((next, to));
        self
    }

    /// The stream died (broke, or stayed silent too long): the next request of
    /// the client starts at the next address.
    fn died(&self, source: TransportError) -> ClientError {
        if let Some((next, to)) = &self.moves {
            next.store(*to, Ordering::SeqCst);
        }
        ClientError::Unreachable {
            url: self.url.clone(),
            source,
        }
    }

    /// The next event; `None` when the server ended the stream. Waits while the
    /// daemon's keep-alives come, however long nothing happens; a stream silent
    /// for longer than a keep-alive and the request timeout is an error
    /// ([`ClientError::Unreachable`]), like a broken one.
    pub async fn next(&mut self) -> Result<Option<WatchEvent>, ClientError> {
        loop {
            while let Some(at) = self.buffer.iter().position(|byte| *byte == b'\n') {
                let raw = self.buffer.split_to(at + 1);
                let text = String::from_utf8_lossy(&raw);
                if let Some(event) = self.parser.line(text.trim_end_matches(['\n', '\r'])) {
                    return Ok(Some(event));
                }
            }
            let Ok(frame) = tokio::time::timeout(self.silent_for, self.body.frame()).await else {
                return Err(self.died(TransportError::Timeout(self.silent_for)));
            };
            match frame {
                None => return Ok(None),
                Some(Err(error)) => return Err(self.died(TransportError::Http(error.to_string()))),
                Some(Ok(frame)) => {
                    if let Ok(mut data) = frame.into_data() {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            self.buffer.extend_from_slice(chunk);
                            let taken = chunk.len();
                            data.advance(taken);
                        }
                    }
                }
            }
        }
    }
}

/// The event-stream format, line by line (the WHATWG rules that matter here:
/// `field: value`, one optional space after the colon, comments start with `:`,
/// a blank line ends an event, an event without data is not dispatched).
#[derive(Debug, Default)]
pub(crate) struct Parser {
    id: Option<String>,
    event: Option<String>,
    data: Vec<String>,
}

impl Parser {
    /// Feed one line without its line ending; an event comes out at a blank line.
    pub(crate) fn line(&mut self, line: &str) -> Option<WatchEvent> {
        if line.is_empty() {
            let event = self.event.take();
            if self.data.is_empty() {
                return None;
            }
            let data = std::mem::take(&mut self.data).join("\n");
            return Some(WatchEvent {
                id: self.id.clone(),
                event,
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_line_by_line() {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        let text = ": hello\nid: 7\nevent: entry\ndata: {\"a\":\ndata:1}\n\n\
                    event: empty\n\ndata: x\n\n";
        for line in text.split('\n') {
            events.extend(parser.line(line));
        }
        assert_eq!(
            events,
            vec![
                WatchEvent {
                    id: Some("7".into()),
                    event: Some("entry".into()),
                    data: "{\"a\":\n1}".into(),
                },
                WatchEvent {
                    id: Some("7".into()),
                    event: None,
                    data: "x".into(),
                },
            ]
        );
    }

    #[test]
    fn an_entry_is_read_from_its_data() {
        let event = WatchEvent {
            id: Some("12".into()),
            event: Some("entry".into()),
            data: r#"{"id": 12, "token": "T-1", "seq": 3, "at": "2026-10-07T05:43:39Z",
                      "kind": "entered", "data": {"state": "draft", "visit": 1}}"#
                .into(),
        };
        let entry = event.entry().expect("an entry");
        assert_eq!(entry.token, "T-1");
        assert_eq!(entry.entry.seq, 3);
        assert_eq!(entry.entry.data["state"], "draft");
        let other = WatchEvent {
            data: r#"{"supervisor": "box-1"}"#.into(),
            ..event
        };
        assert_eq!(other.entry(), None);
    }
}
