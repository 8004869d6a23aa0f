//! `GET /watch`: every ledger entry as a server-sent event, after its commit
//! (`docs/reference/http.md`). Each event's `id` is the entry's `ledger.id`, global and
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
//!
//! A stream that caught up sleeps until the feed's safe point moves (the feed
//! wakes it when a commit moves it: `FeedMark::subscribe`), the supervisors
//! change, the server stops or the client goes; so an entry reaches a watcher as
//! soon as it is committed, without polling. Only the loss of the database has
//! no wake-up of its own: it is checked every [`RECHECK`].

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::http::request::Parts;
use hyper::Response;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::watch::WatchEntry;
use tokio::sync::mpsc;
use tokio::sync::watch as signal;
use tokio::time::Instant;

use super::server::Stop;
use super::supervisors::SupervisorsSeen;
use super::{refusal, routes, Api, Body};
use crate::control::Control;

/// The most entries one read of the database takes.
const BATCH: i64 = 500;
/// How often a stream that caught up checks that its control plane still holds
/// the database, the one condition that does not wake it.
const RECHECK: Duration = Duration::from_secs(1);
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

fn position(request: &Parts) -> Result<Position, Refusal> {
    let mut after = None;
    let mut token = None;
    for (name, value) in routes::query_pairs(request.uri.query().unwrap_or("")) {
        match name.as_str() {
            "token" => token = Some(value),
            "after" => after = Some(number(&value, "'after'")?),
            _ => {}
        }
    }
    if let Some(header) = request.headers.get("last-event-id") {
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
pub async fn stream(api: &Api, request: &Parts, stop: signal::Receiver<Stop>) -> Response<Body> {
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

/// One server-sent event: its name, its id and its data (one line of JSON), each
/// line only when given. Written here, in one place, because the bytes are what
/// every client reads (the event's fields in this order, one blank line after).
fn sse(name: Option<&str>, id: Option<i64>, data: &str) -> Bytes {
    let mut text = String::with_capacity(data.len() + 32);
    if let Some(name) = name {
        text.push_str(&format!("event: {name}\n"));
    }
    if let Some(id) = id {
        text.push_str(&format!("id: {id}\n"));
    }
    text.push_str(&format!("data: {data}\n\n"));
    Bytes::from(text)
}

/// One entry as an SSE event.
fn event(entry: &WatchEntry) -> Bytes {
    let data = serde_json::to_string(entry).unwrap_or_else(|_| "{}".into());
    sse(None, Some(entry.id), &data)
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
                let change = sse(Some("supervisors"), None, &data);
                if !send(&events, change, after, STALL).await {
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
        for entry in rows {
            if !send(&events, event(&entry), after, STALL).await {
                return;
            }
            after = entry.id;
        }
        if full {
            continue;
        }
        let changes = (seen.as_ref(), told);
        let caught = wait_for_news(
            &control,
            (upto, after),
            changes,
            &events,
            &mut stop,
            RECHECK,
        );
        if !caught.await {
            return;
        }
    }
}

/// Wait until the feed's safe point moves past `upto`, or the supervisors changed
/// after `changes`; false when the stream ends instead (a stop, a client gone, the
/// database lost, looked at every `recheck`). Sends a keep-alive comment every
/// [`KEEP_ALIVE`] meanwhile.
async fn wait_for_news(
    control: &Control,
    (upto, after): (i64, i64),
    (seen, changes): (Option<&SupervisorsSeen>, u64),
    events: &mpsc::Sender<Bytes>,
    stop: &mut signal::Receiver<Stop>,
    recheck: Duration,
) -> bool {
    // Subscribed before the conditions are read, so that a change between the
    // read and the wait still wakes the wait.
    let mut moved = control.mark().subscribe();
    let mut changed = seen.map(SupervisorsSeen::subscribe);
    let mut alive_at = Instant::now() + KEEP_ALIVE;
    loop {
        if control.mark().safe() > upto || seen.is_some_and(|seen| seen.changes() != changes) {
            return true;
        }
        if *stop.borrow_and_update() != Stop::Serving || control.lost() || events.is_closed() {
            return false;
        }
        if Instant::now() >= alive_at {
            alive_at = Instant::now() + KEEP_ALIVE;
            let alive = Bytes::from_static(b": keep-alive\n\n");
            if !send(events, alive, after, STALL).await {
                return false;
            }
            continue;
        }
        let supervisors = async {
            match changed.as_mut() {
                Some(changed) => changed.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        let woken = tokio::select! {
            moved = moved.changed() => moved.is_ok(),
            heard = supervisors => heard,
            stopped = stop.changed() => stopped.is_ok(),
            () = events.closed() => false,
            () = tokio::time::sleep_until(alive_at.min(Instant::now() + recheck)) => true,
        };
        if !woken {
            return false;
        }
    }
}

/// Queue `bytes` for the client; false when it left, or fell behind: its queue
/// stayed full for `stall`. The last place of the queue is kept for the event
/// that tells a reader behind to resume after `after`, the last id queued: an
/// event is queued only when two places are free.
async fn send(events: &mpsc::Sender<Bytes>, bytes: Bytes, after: i64, stall: Duration) -> bool {
    match tokio::time::timeout(stall, events.reserve_many(2)).await {
        Ok(Ok(mut places)) => places.next().map(|place| place.send(bytes)).is_some(),
        Ok(Err(_closed)) => false,
        Err(_stalled) => {
            let behind = sse(
                Some("behind"),
                None,
                &format!("{{\"resume_after\": {after}}}"),
            );
            let _ = events.try_send(behind);
            false
        }
    }
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

    async fn control(dir: &std::path::Path) -> Control {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/tickets.json");
        let text = std::fs::read_to_string(path).unwrap();
        let graph = std::sync::Arc::new(stateous_shared::graph::Graph::load(&text).unwrap());
        Control::open(graph, crate::control::Options::new(dir.join("stateous.db")))
            .await
            .unwrap()
    }

    /// Long enough that a wait that ends did not end by looking again.
    const NEVER: Duration = Duration::from_secs(3600);

    /// A stream's wait for news, caught up at the feed's mark now, told of the
    /// supervisors' changes when `seen` is given; with its stop and its reader.
    struct Waiting {
        ended: tokio::task::JoinHandle<bool>,
        stop: signal::Sender<Stop>,
        reader: mpsc::Receiver<Bytes>,
    }

    fn waiting(control: &Control, seen: Option<&SupervisorsSeen>) -> Waiting {
        let (events, reader) = mpsc::channel(WAITING);
        let (stop, mut stopped) = signal::channel(Stop::Serving);
        let upto = control.mark().safe();
        let (control, seen) = (control.clone(), seen.cloned());
        let told = seen.as_ref().map_or(0, SupervisorsSeen::changes);
        let ended = tokio::spawn(async move {
            let changes = (seen.as_ref(), told);
            let caught = (upto, upto);
            wait_for_news(&control, caught, changes, &events, &mut stopped, NEVER).await
        });
        Waiting {
            ended,
            stop,
            reader,
        }
    }

    /// Whether the wait ended with news; it must end well before [`NEVER`].
    async fn news(waiting: Waiting) -> bool {
        let ended = tokio::time::timeout(Duration::from_secs(10), waiting.ended).await;
        ended.unwrap().unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caught_up_stream_is_woken_by_a_commit_not_by_looking_again() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path()).await;
        let upto = control.mark().safe();
        let wait = waiting(&control, None);
        let context = serde_json::json!({"repo": "acme/api"});
        let context = context.as_object().unwrap().clone();
        let input = crate::validated::StartInput::new("T-1".into(), context).unwrap();
        control.start(input).await.unwrap();
        // The keep-alive would end no wait, and the recheck is an hour away: only
        // the commit's wake-up can end it.
        assert!(news(wait).await);
        assert!(control.mark().safe() > upto);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caught_up_stream_is_woken_by_a_new_supervisor() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path()).await;
        let upto = control.mark().safe();
        let seen = SupervisorsSeen::default();
        let wait = waiting(&control, Some(&seen));
        seen.heard("box", Some(&["coding".to_string()]), None, 0);
        assert!(news(wait).await);
        assert_eq!(control.mark().safe(), upto);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caught_up_stream_ends_at_a_stop_and_when_its_reader_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let control = control(dir.path()).await;
        let stopped = waiting(&control, None);
        stopped.stop.send(Stop::Graceful).unwrap();
        assert!(!news(stopped).await);
        let mut left = waiting(&control, None);
        drop(std::mem::replace(&mut left.reader, mpsc::channel(1).1));
        assert!(!news(left).await);
    }
}
