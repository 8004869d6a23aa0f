//! The export of traces (`serve --otlp-endpoint`; `docs/reference/traces.md`): one
//! trace per token, its spans built after the commit from the committed ledger, the
//! feed `GET /watch` reads, and sent to a collector through `stateous-otlp`'s
//! bounded queue.
//!
//! The [`Tracer`] follows the feed from the safe point it finds at its start
//! (`Control::trace_page`, woken by `FeedMark::subscribe`, then letting the commits
//! of `GATHER` gather so that one read takes many). It keeps the open spans
//! of each token in a [`spans::Book`]; a token it meets after its start (open
//! before this control plane started, or forgotten to bound memory) is read back
//! from its history first, quietly, so that a span that began before a restart or a
//! takeover ends with its true start and events. Nothing here is on the write
//! path: a slow reader is further back in the table, and a full queue drops spans
//! and counts them (`stateous_trace_spans_dropped_total`). Spans that ended but
//! were not sent when the process died are not sent again.

pub mod attributes;
pub mod spans;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use stateous_otlp::{Endpoint, Listener, Spans};
use stateous_shared::trace_context::TokenTrace;
use tokio::sync::watch;

use crate::control::traces::Page;
use crate::control::Control;
use crate::metrics::Metrics;
use spans::Book;

/// The most rows one read of the feed takes.
const PAGE: i64 = 1000;
/// The most tokens whose open spans are kept; the least recently met is forgotten
/// (and read back from its history when it moves again).
const MAX_BOOKS: usize = 100_000;
/// The room in the queue (spans) a read waits for, at most half the queue: more
/// than a page's rows end.
const ROOM: usize = 1024;
/// How often the tracer looks whether the queue has room again.
const ROOM_WAIT: Duration = Duration::from_millis(10);
/// How long the tracer lets commits gather after one woke it, before it reads.
const GATHER: Duration = Duration::from_millis(100);
/// How long the tracer sleeps when the database cannot be read, or when nothing
/// wakes it.
const RECHECK: Duration = Duration::from_secs(1);
/// How long a stop waits for the spans still queued to go out.
pub const FLUSH_WITHIN: Duration = Duration::from_secs(2);

/// The collector of `serve --otlp-endpoint` (or of the `OTEL_EXPORTER_OTLP_*`
/// variables); `None`: traces are off. The error is the `error:` line's sentence:
/// a value that is not a URL, or an exporter that cannot be set up.
pub fn endpoint(flag: Option<&str>) -> Result<Option<Endpoint>, String> {
    let endpoint = Endpoint::resolve(flag, "--otlp-endpoint", |name| std::env::var(name).ok())?;
    if let Some(endpoint) = &endpoint {
        stateous_otlp::queue::exporter(&options(endpoint.clone()))?;
    }
    Ok(endpoint)
}

/// The queue's shape for the control plane.
fn options(endpoint: Endpoint) -> stateous_otlp::Options {
    stateous_otlp::Options::new(endpoint, "stateous", attributes::SCOPE)
}

/// Start the queue to `endpoint` on the current runtime, counting into `metrics`.
pub fn queue(
    endpoint: Endpoint,
    metrics: Metrics,
) -> Result<(Spans, tokio::task::JoinHandle<()>), String> {
    stateous_otlp::start(options(endpoint), Arc::new(Counted(metrics)))
}

/// The queue's outcomes, into `GET /metrics` and the log.
struct Counted(Metrics);

impl Listener for Counted {
    fn exported(&self, spans: u64) {
        self.0.trace_spans_exported(spans);
    }

    fn dropped(&self, spans: u64, reason: &'static str) {
        self.0.trace_spans_dropped(spans, reason);
    }

    fn line(&self, text: &str, warning: bool) {
        if warning {
            tracing::warn!(target: "stateous.serve", "{text}");
        } else {
            tracing::info!(target: "stateous.serve", "{text}");
        }
    }
}

/// Follows the committed ledger and sends each span as it ends.
pub struct Tracer {
    /// The control plane whose ledger it reads.
    pub control: Control,
    /// Where ended spans go.
    pub spans: Spans,
    /// The ledger id after which it reads: the feed's safe point when the API
    /// began to serve, so that no row committed since is missed.
    pub from: i64,
}

impl Tracer {
    /// Follow the feed from [`Tracer::from`] until `stop` turns true (or its sender
    /// goes), and then up to the safe point of that moment.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mark = self.control.mark().clone();
        let mut wake = mark.subscribe();
        let mut after = self.from;
        // Unbounded, and bounded by hand in `read`: a cache made with its bound
        // sets aside room for all of it at once, and each look-up then walks a
        // table much larger than the tokens open.
        let books: Books = Arc::new(Mutex::new(lru::LruCache::unbounded()));
        let room = ROOM.min(self.spans.size() / 2);
        loop {
            // A stop still reads what committed before it, then ends.
            let stopping = *stop.borrow() || stop.has_changed().is_err();
            let upto = mark.safe();
            // Room in the queue for a page's spans: the exporter waits for it
            // (falling behind in the ledger, never in a request's way) rather than
            // have a burst of pages dropped while an export is under way.
            while !stopping && self.spans.room() < room {
                tokio::select! {
                    _ = stop.changed() => break,
                    _ = tokio::time::sleep(ROOM_WAIT) => {}
                }
            }
            if upto > after {
                let known = Arc::clone(&books);
                let is_known = move |token: &str| locked(&known).contains(token);
                // A read that fails (the database cannot be read now) is tried
                // again in a while.
                if let Ok(page) = self.control.trace_page(after, upto, PAGE, is_known).await {
                    let full = page.rows.len() >= usize::try_from(PAGE).unwrap_or(usize::MAX);
                    after = page.rows.last().map_or(upto, |row| row.id);
                    self.read(page, &mut locked(&books));
                    if full || stopping {
                        continue;
                    }
                }
            }
            if stopping {
                return;
            }
            tokio::select! {
                changed = wake.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep(RECHECK).await;
                    }
                }
                _ = stop.changed() => continue,
                _ = tokio::time::sleep(RECHECK) => {}
            }
            // Let the commits of a while gather, so that one read takes the rows of
            // many (a read for each commit cost more than the spans themselves).
            tokio::select! {
                _ = stop.changed() => {}
                _ = tokio::time::sleep(GATHER) => {}
            }
        }
    }

    /// Read a page: first the books of the tokens it brings that were not known,
    /// then give each row to its token's book and send the spans it ends.
    fn read(&self, page: Page, books: &mut lru::LruCache<String, Book>) {
        for known in page.unknown {
            let trace = TokenTrace::of(&known.token, known.trace.as_deref());
            let mut book = Book::new(&known.token, trace);
            for row in &known.before {
                book.read(row, true);
            }
            books.put(known.token, book);
            if books.len() > MAX_BOOKS {
                books.pop_lru();
            }
        }
        for row in &page.rows {
            let book = match books.get_mut(&row.token) {
                Some(book) => book,
                // Known when the read began, and forgotten for a token this page
                // brought (more than `MAX_BOOKS` open): read from its own rows on.
                None => books.get_or_insert_mut(row.token.clone(), || {
                    Book::new(&row.token, TokenTrace::of(&row.token, None))
                }),
            };
            for span in book.read(row, false) {
                self.spans.send_encoded(span);
            }
            if book.ended() {
                books.pop(&row.token);
            }
        }
    }
}

/// The open spans of the tokens met, the least recently met first to go; shared
/// with the read, which asks which tokens are known.
type Books = Arc<Mutex<lru::LruCache<String, Book>>>;

/// The books, even after a panic while they were held (they are only read then).
fn locked(
    books: &Mutex<lru::LruCache<String, Book>>,
) -> MutexGuard<'_, lru::LruCache<String, Book>> {
    books.lock().unwrap_or_else(PoisonError::into_inner)
}
