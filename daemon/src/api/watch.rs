//! `GET /watch`: every ledger entry as a server-sent event, after its commit (SPEC
//! section 3.3). Each event's `id` is the entry's `ledger.id`, global and
//! increasing; its data is `{"id", "token", "seq", "at", "kind", "data"}`. A stream
//! reads only up to the feed's safe point (`store::feed`), so a row that commits
//! late with a lower id (Postgres commits side by side) is never skipped.
//!
//! Where a stream starts: after the `Last-Event-ID` header's id (a reconnecting
//! client), else after `?after=ID`, else after the newest entry (only what comes).
//! `?token=ID` keeps one token's entries. A stream of all tokens also tells of
//! supervisor changes (a new one, new states, a new outbox depth) as an event
//! named `supervisors` without an id, whose data is `GET /supervisors`'s answer.
//!
//! Each stream reads the committed ledger from the database at its own pace, so a
//! slow reader holds no memory and never slows the write path: it is simply
//! further back in the table. A reader that falls behind (its queue of
//! [`WAITING`] events stays full for [`STALL`]) is told so in a last event,
//! `event: behind` with `{"resume_after": ID}`, and closed; it resumes from that
//! id with `Last-Event-ID` and misses nothing.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use stateous_shared::live::WatchEntry;
use stateous_shared::refusal::{Code, Refusal};
use tokio::sync::mpsc;
use tokio::sync::watch as signal;

use super::added::{Body, SupervisorsSeen};
use super::server::Stop;
use super::{refusal, routes, Api};
use crate::control::Committed;
use crate::control::Control;

/// The most entries one read of the database takes.
const BATCH: i64 = 500;
/// How often a stream that caught up looks for new commits.
const POLL: Duration = Duration::from_millis(50);
/// A comment line this often keeps proxies and dead-peer detection awake (the
/// client's reader counts on it to tell a quiet stream from a dead one).
const KEEP_ALIVE: Duration = stateous_shared::wire::WATCH_KEEP_ALIVE;
/// A reader that takes nothing for this long is closed (it resumes by its id).
pub const STALL: Duration = Duration::from_secs(30);
/// Events waiting for a reader, at most.
const WAITING: usize = 64;

/// Where the stream starts and what it keeps.
struct Position {
    after: Option<i64>,
    token: Option<String>,
}

fn position(request: &Request<Incoming>) -> Result<Position, Refusal> {
    let mut after = None;
    let mut token = None;
    for (name, value) in routes::query_pairs(request.uri().query().unwrap_or("")) {
        match name.as_str() {
            "token" => token = Some(value),
            "after" => after = Some(number(&value, "'after'")?),
            _ => {}
        }
    }
    if let Some(header) = request.headers().get("last-event-id") {
        let text = header.to_str().unwrap_or("?").trim().to_string();
        after = Some(number(&text, "Last-Event-ID")?);
    }
    Ok(Position { after, token })
}

fn number(text: &str, name: &str) -> Result<i64, Refusal> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id >= 0)
        .ok_or_else(|| {
            Refusal::new(
                Code::InvalidArgument,
                format!("{name} is the id of an event: a whole number from 0"),
            )
        })
}

/// The answer to `GET /watch`: a stream that ends when the client goes, the
/// server stops, or the control plane loses its database.
pub async fn stream(
    api: &Api,
    request: &Request<Incoming>,
    stop: signal::Receiver<Stop>,
) -> Response<Body> {
    let position = match position(request) {
        Ok(position) => position,
        Err(refused) => return refusal(&refused).map(BodyExt::boxed),
    };
    let control = api.control.clone();
    let after = position.after.unwrap_or_else(|| control.mark().safe());
    let (events, waiting) = mpsc::channel(WAITING);
    let seen = position.token.is_none().then(|| api.seen.clone());
    // The supervisors' change count is read now, before the answer goes out, as
    // `after` is: a change that lands once the client holds the stream is told,
    // however late the pump task starts.
    let told = seen.as_ref().map_or(0, SupervisorsSeen::changes);
    tokio::spawn(pump(
        control,
        seen,
        told,
        position.token,
        after,
        events,
        stop,
    ));
    let mut answer = Response::new(EventBody { waiting }.boxed());
    let headers = answer.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    answer
}

/// One entry as an SSE event.
fn event(row: Committed) -> Bytes {
    let entry = WatchEntry {
        id: row.id,
        token: row.token,
        seq: row.seq,
        at: row.at,
        kind: row.kind,
        data: row.data,
    };
    let data = serde_json::to_string(&entry).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("id: {}\ndata: {data}\n\n", entry.id))
}

/// Send the entries after `after`, then each new one as it commits.
async fn pump(
    control: Control,
    seen: Option<SupervisorsSeen>,
    mut told: u64,
    token: Option<String>,
    mut after: i64,
    events: mpsc::Sender<Bytes>,
    mut stop: signal::Receiver<Stop>,
) {
    let hello = format!("retry: 1000\n: watching after {after}\n\n");
    if !send(&events, Bytes::from(hello), after, STALL).await {
        return;
    }
    loop {
        if let Some(seen) = seen.as_ref().filter(|seen| seen.changes() != told) {
            told = seen.changes();
            if let Ok(list) = seen.listed(&control).await {
                let data = serde_json::to_string(&list).unwrap_or_else(|_| "{}".into());
                let change = format!("event: supervisors\ndata: {data}\n\n");
                if !send(&events, Bytes::from(change), after, STALL).await {
                    return;
                }
            }
        }
        let upto = control.mark().safe();
        let wanted = token.clone();
        let read = control.entries_since(after, upto, wanted, BATCH).await;
        let Ok(rows) = read else {
            return;
        };
        let full = rows.len() as i64 == BATCH;
        for row in rows {
            let id = row.id;
            if !send(&events, event(row), after, STALL).await {
                return;
            }
            after = id;
        }
        if full {
            continue;
        }
        let changes = (seen.as_ref(), told);
        if !caught_up(&control, (upto, after), changes, &events, &mut stop).await {
            return;
        }
    }
}

/// Wait until the feed's safe point moves past `upto`, or the supervisors changed
/// after `changes`; false when the stream ends instead (a stop, a client gone).
async fn caught_up(
    control: &Control,
    (upto, after): (i64, i64),
    (seen, changes): (Option<&SupervisorsSeen>, u64),
    events: &mpsc::Sender<Bytes>,
    stop: &mut signal::Receiver<Stop>,
) -> bool {
    let mut quiet = Duration::ZERO;
    while control.mark().safe() <= upto && seen.is_none_or(|seen| seen.changes() == changes) {
        if *stop.borrow_and_update() != Stop::Serving || control.lost() || events.is_closed() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => {}
        }
        quiet += POLL;
        if quiet >= KEEP_ALIVE {
            quiet = Duration::ZERO;
            let alive = Bytes::from_static(b": keep-alive\n\n");
            if !send(events, alive, after, STALL).await {
                return false;
            }
        }
    }
    true
}

/// Queue `bytes` for the client; false when it left, or fell behind: its queue
/// stayed full for `stall`. The last place of the queue is kept for the event
/// that tells a reader behind to resume after `after`, the last id queued.
async fn send(events: &mpsc::Sender<Bytes>, bytes: Bytes, after: i64, stall: Duration) -> bool {
    let mut waited = Duration::ZERO;
    while events.capacity() <= 1 {
        if events.is_closed() {
            return false;
        }
        if waited >= stall {
            let behind = format!("event: behind\ndata: {{\"resume_after\": {after}}}\n\n");
            let _ = events.try_send(Bytes::from(behind));
            return false;
        }
        tokio::time::sleep(POLL).await;
        waited += POLL;
    }
    events.try_send(bytes).is_ok()
}

/// The body of a stream: the events as the pump queues them.
struct EventBody {
    waiting: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.waiting
            .poll_recv(cx)
            .map(|next| next.map(|bytes| Ok(Frame::data(bytes))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_told_where_to_resume() {
        let (events, mut waiting) = mpsc::channel(3);
        let stall = Duration::from_millis(200);
        assert!(send(&events, Bytes::from("a"), 1, stall).await);
        assert!(send(&events, Bytes::from("b"), 2, stall).await);
        // The queue keeps its last place: the third event waits, then the reader
        // is told to resume after 2, the last id it will have read.
        assert!(!send(&events, Bytes::from("c"), 2, stall).await);
        let got: Vec<Bytes> = std::iter::from_fn(|| waiting.try_recv().ok()).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[2],
            Bytes::from("event: behind\ndata: {\"resume_after\": 2}\n\n")
        );
        drop(waiting);
        assert!(!send(&events, Bytes::from("d"), 2, stall).await);
    }
}
