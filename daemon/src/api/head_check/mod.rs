//! Every request head of a connection, read and checked before hyper sees it, so
//! that a head hyper's parser would refuse with an empty answer is refused as every
//! other bad request is, with the refusal's JSON body and sentence
//! (`docs/reference/http.md`, "Refusals"): a byte HTTP does not allow in the
//! request line or a header (a raw NUL, another control character), a path that
//! is not a URI, an unknown version, a framing header that cannot be read (400
//! `bad_request`), a path over [`head::MOST_PATH`] bytes (414) and a head over
//! [`head::MOST_HEAD`] bytes or [`head::MOST_HEADERS`] headers (431); each then
//! closes the connection. The rules and sentences are in `head.rs`.
//!
//! [`Checked`] wraps the connection's stream. It gives hyper the bytes of a head
//! only once the whole head was checked, then the body's bytes as they come, and
//! follows each body's framing (`content-length`, or chunked to its trailers, as
//! hyper reads them) to find where the next head starts, so that the second
//! request of a kept-alive connection is checked as the first is. In the place of
//! a refused head hyper reads a plain one that asks to close ([`STAND_IN`]), and
//! nothing after it; the server answers that request with the refusal
//! ([`Checked::refused`]). So the refusal comes in its turn, after the answers to
//! the requests before it, and hyper closes the connection after it. (Giving hyper
//! the end of the stream instead would not do: hyper reads ahead while it answers
//! a request, takes an end there for a client gone, and drops that answer.)
//!
//! The checks are `httparse`'s, the parser hyper itself uses, and the `http`
//! crate's for the path, so the two agree on what is allowed. What this does not
//! follow goes to hyper unchecked: the HTTP/2 preface (hyper closes such a
//! connection), and, once a body's framing cannot be read here (a chunk size line
//! `httparse` refuses), the rest of the connection (hyper refuses that body itself
//! and closes).

mod head;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use head::{judge, Next, Verdict, MOST_HEAD, MOST_HEADERS};
pub use head::{Refused, HYPER_BUFFER};

/// How much is read from the stream at a time.
const READ_CHUNK: usize = 8 * 1024;

/// The request hyper reads in the place of a refused head: its answer is the
/// refusal, and the connection closes after it.
pub const STAND_IN: &[u8] = b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n";

/// A connection's stream, as hyper reads it: each request head checked first.
pub struct Checked<S> {
    stream: S,
    /// Bytes read from the stream that hyper has not had yet.
    held: BytesMut,
    /// Where the stream is read into, zeroed once for the connection (growing
    /// `held` by a chunk on each read zeroed the chunk every time, a read that
    /// found nothing included), and then copied to `held` as far as it was filled.
    scratch: Box<[u8]>,
    /// How many of `held`'s first bytes hyper may have (checked heads, bodies).
    free: usize,
    /// What the bytes after those are.
    next: Next,
    /// How many bytes of a head, chunk size line or trailers were seen whole
    /// so far without it ending there.
    seen: usize,
    /// The request being read asked to close the connection (or is HTTP/1.0
    /// without keep-alive): hyper reads no head after it, and neither does this.
    closing: bool,
    /// A refused head's status and refusal, until hyper reads [`STAND_IN`].
    refusing: Option<Refused>,
    /// Set once hyper read [`STAND_IN`]: the answer to that request.
    refused: Arc<OnceLock<Refused>>,
    /// After [`STAND_IN`], when hyper is given the end of the stream, in case it
    /// does not answer it (`wait` after it was read).
    ending: Option<Pin<Box<Sleep>>>,
    wait: Duration,
}

impl<S> Checked<S> {
    /// `stream`, whose request heads are checked before hyper reads them. Should
    /// hyper not answer [`STAND_IN`] within `wait` (it never waits for it: it only
    /// could if it read the body before differently), it reads the end of the
    /// stream then.
    pub fn new(stream: S, wait: Duration) -> Checked<S> {
        Checked {
            stream,
            held: BytesMut::new(),
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            free: 0,
            next: Next::Head,
            seen: 0,
            closing: false,
            refusing: None,
            refused: Arc::default(),
            ending: None,
            wait,
        }
    }

    /// Where the refusal of a refused head is, once hyper read [`STAND_IN`] in its
    /// place: the request read after it is set is that one.
    pub fn refused(&self) -> Arc<OnceLock<Refused>> {
        Arc::clone(&self.refused)
    }

    /// What follows a whole request: the next head, unless it asked to close.
    fn after_request(&self) -> Next {
        if self.closing {
            Next::Unchecked
        } else {
            Next::Head
        }
    }

    /// Move `free` on over the held bytes as far as the framing allows.
    fn scan(&mut self) {
        loop {
            let rest = &self.held[self.free..];
            if rest.is_empty() && self.next != Next::Unchecked {
                return;
            }
            // What was seen unfinished is read again only once a byte came that
            // may end it, as hyper does: a head sent a byte at a time is not
            // parsed once per byte.
            let lines = matches!(self.next, Next::Head | Next::ChunkSize | Next::Trailers);
            if lines
                && self.seen > 0
                && rest.len() <= MOST_HEAD
                && !may_end(rest, self.seen, self.next != Next::ChunkSize)
            {
                self.seen = rest.len();
                return;
            }
            match self.next {
                Next::Head => match judge(rest) {
                    Verdict::Partial => {
                        self.seen = rest.len();
                        return;
                    }
                    Verdict::Good(length, next, kept_alive) => {
                        self.free += length;
                        self.closing = !kept_alive;
                        self.next = if next == Next::Head {
                            self.after_request()
                        } else {
                            next
                        };
                    }
                    Verdict::Refused(refused) => {
                        // What follows the refused head is never read.
                        self.held.truncate(self.free);
                        self.held.extend_from_slice(STAND_IN);
                        self.refusing = Some(refused);
                        self.next = Next::Refused;
                        return;
                    }
                    Verdict::Hyper => self.next = Next::Unchecked,
                },
                Next::Body(left) | Next::Chunk(left) => {
                    let taken = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    self.free += taken;
                    let left = left - taken as u64;
                    self.next = match (self.next, left) {
                        (Next::Body(_), 0) => self.after_request(),
                        (Next::Body(_), left) => Next::Body(left),
                        (_, 0) => Next::ChunkSize,
                        (_, left) => Next::Chunk(left),
                    };
                    if left > 0 {
                        return;
                    }
                }
                Next::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((length, 0))) => {
                        self.free += length;
                        self.next = Next::Trailers;
                    }
                    Ok(httparse::Status::Complete((length, size))) => {
                        self.free += length;
                        self.next = Next::Chunk(size.saturating_add(2));
                    }
                    Ok(httparse::Status::Partial) if rest.len() < MOST_HEAD => {
                        self.seen = rest.len();
                        return;
                    }
                    _ => self.next = Next::Unchecked,
                },
                Next::Trailers => {
                    let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
                    match httparse::parse_headers(rest, &mut headers) {
                        Ok(httparse::Status::Complete((length, _))) => {
                            self.free += length;
                            self.next = self.after_request();
                        }
                        Ok(httparse::Status::Partial) if rest.len() < MOST_HEAD => {
                            self.seen = rest.len();
                            return;
                        }
                        _ => self.next = Next::Unchecked,
                    }
                }
                Next::Unchecked => {
                    self.free = self.held.len();
                    return;
                }
                Next::Refused => return,
            }
            self.seen = 0;
        }
    }
}

/// Whether the bytes of `rest` after its first `seen` may end what they belong
/// to: an empty line (`empty_line`: a head, trailers), or any line (a chunk size).
fn may_end(rest: &[u8], seen: usize, empty_line: bool) -> bool {
    let new = &rest[seen.saturating_sub(3).min(rest.len())..];
    if !empty_line {
        return new.contains(&b'\n');
    }
    new.windows(2).any(|pair| pair == b"\n\n") || new.windows(4).any(|four| four == b"\r\n\r\n")
}

impl<S: AsyncRead + Unpin> AsyncRead for Checked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.free > 0 {
                let n = this.free.min(buf.remaining());
                buf.put_slice(&this.held[..n]);
                this.held.advance(n);
                this.free -= n;
                return Poll::Ready(Ok(()));
            }
            if this.next == Next::Refused {
                if let Some(refused) = this.refusing.take() {
                    // Every byte before the refused head is hyper's, and each
                    // request in them was handed to the server (hyper reads only
                    // with no whole head left unread): the next request hyper
                    // reads is the stand-in.
                    let _ = this.refused.set(refused);
                    this.free = this.held.len();
                    this.ending = Some(Box::pin(tokio::time::sleep(this.wait)));
                    continue;
                }
                if let Some(ending) = &mut this.ending {
                    ready!(ending.as_mut().poll(cx));
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.stream).poll_read(cx, &mut read))?;
            let filled = read.filled().len();
            this.held.extend_from_slice(&this.scratch[..filled]);
            if filled == 0 {
                // The stream ended: hyper has what is left (a head cut short is
                // its to answer, as an unanswered connection) and the end.
                this.next = Next::Unchecked;
                this.free = this.held.len();
                if this.free == 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            this.scan();
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Checked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::head::BAD_LINE;

    use super::*;

    /// What hyper reads through [`Checked`] from `sent`, and the sentence of the
    /// refusal it answers the stand-in with, if any.
    async fn through(sent: &[u8]) -> (Vec<u8>, Option<String>) {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        client.write_all(sent).await.unwrap();
        client.shutdown().await.unwrap();
        let mut checked = Checked::new(server, Duration::ZERO);
        let refused = checked.refused();
        let mut read = Vec::new();
        checked.read_to_end(&mut read).await.unwrap();
        let sentence = refused.get().map(|refused| refused.refusal.error.clone());
        (read, sentence)
    }

    #[tokio::test]
    async fn a_later_head_is_checked_after_each_kind_of_body() {
        let first = b"POST /a HTTP/1.1\r\ncontent-length: 5\r\n\r\nab\0de".as_slice();
        let chunked = b"POST /b HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n\
                        3;x=y\r\n\0\0\0\r\n0\r\nx-t: 1\r\n\r\n"
            .as_slice();
        let good = b"GET /c HTTP/1.1\r\n\r\n".as_slice();
        let bad = b"GET /d\0 HTTP/1.1\r\n\r\nGET /e HTTP/1.1\r\n\r\n".as_slice();
        let sent = [first, chunked, good, bad].concat();
        let (read, sentence) = through(&sent).await;
        assert_eq!(read, [first, chunked, good, STAND_IN].concat());
        assert_eq!(sentence.as_deref(), Some(BAD_LINE));
    }

    #[tokio::test]
    async fn nothing_after_a_request_that_closes_is_checked() {
        let sent =
            b"GET /a HTTP/1.1\r\nconnection: keep-alive, close\r\n\r\nGET /b\0 HTTP/1.1\r\n\r\n";
        assert_eq!(through(sent).await, (sent.to_vec(), None));
        let old = b"GET /a HTTP/1.0\r\n\r\nGET /b\0 HTTP/1.1\r\n\r\n";
        assert_eq!(through(old).await, (old.to_vec(), None));
        let kept = b"GET /a HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET /b\0 HTTP/1.1\r\n\r\n";
        assert_eq!(through(kept).await.1.as_deref(), Some(BAD_LINE));
    }

    #[test]
    fn a_head_sent_a_byte_at_a_time_is_parsed_once_it_may_be_whole() {
        let head = b"GET /a HTTP/1.1\r\nx-a: 1\r\n\r\n";
        let mut checked = Checked::new(tokio::io::empty(), Duration::ZERO);
        for (n, byte) in head.iter().enumerate() {
            checked.held.extend_from_slice(&[*byte]);
            checked.scan();
            let whole = n + 1 == head.len();
            assert_eq!(checked.free, if whole { head.len() } else { 0 }, "{n}");
        }
        assert_eq!((checked.next, checked.seen), (Next::Head, 0));
        // A bad byte after the first read is found once the head may be whole.
        let mut checked = Checked::new(tokio::io::empty(), Duration::ZERO);
        checked.held.extend_from_slice(b"GET /a HTTP/1.1\r\n");
        checked.scan();
        checked.held.extend_from_slice(b"x-a: \0\r\n");
        checked.scan();
        assert_eq!(checked.next, Next::Head);
        checked.held.extend_from_slice(b"\r\n");
        checked.scan();
        assert_eq!(checked.next, Next::Refused);
        assert!(may_end(b"ab\n\ncd", 1, true));
        assert!(!may_end(b"ab\r\ncd", 1, true));
        assert!(may_end(b"a\r\n", 1, false));
    }

    #[tokio::test]
    async fn a_stream_of_good_requests_reads_through_unchanged() {
        let sent =
            b"GET /a HTTP/1.1\r\n\r\n\r\nGET /b HTTP/1.1\r\ncontent-length: 2\r\n\r\nokGET /c";
        assert_eq!(through(sent).await, (sent.to_vec(), None));
    }
}
