//! The head of a connection's first request, read and checked before hyper sees it,
//! so that a byte HTTP does not allow in the request line or a header (a raw NUL,
//! another control character) is refused as every other bad request is: 400
//! `bad_request` with the refusal's JSON body and sentence
//! (`docs/reference/http.md`, "Refusals"). Hyper's parser refuses such a request
//! before any of our code runs, with a 400 and an empty body.
//!
//! The head is checked with `httparse`, the parser hyper itself uses, so the two
//! agree on what is allowed; what the check does not answer (a head that is
//! whole and good, too many headers, an unknown version, a head longer than
//! [`MOST_HEAD`]) goes to hyper unchanged, the bytes read so far first
//! ([`Rewind`]). A later request on a kept-alive connection is hyper's alone: one
//! with a bad byte there still gets hyper's empty 400 (our own clients open a
//! connection per request, as `curl` does).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use stateous_shared::refusal::{Code, Refusal};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

/// How much of a first request's head is read and checked at most; a longer head
/// goes to hyper unchecked (hyper refuses heads over its own limit).
pub const MOST_HEAD: usize = 16 * 1024;

/// The most headers checked: more is hyper's to answer (431).
const MOST_HEADERS: usize = 100;

/// The sentence of a request line with a byte HTTP does not allow.
pub const BAD_LINE: &str = "the request line holds a byte that HTTP does not allow (a NUL \
                            or another control character, or a space in the path); \
                            percent-encode it in the path, e.g. %00 for a NUL";

/// The sentence of a header with a byte HTTP does not allow.
pub const BAD_HEADER: &str = "a header of the request holds a byte that HTTP does not allow \
                              in its name or value (a NUL or another control character); \
                              leave it out";

/// What the first head's check found.
pub enum Head {
    /// Hand the connection to hyper, these bytes first.
    Serve(Vec<u8>),
    /// The head breaks HTTP's grammar in a way we answer: this refusal, then close.
    Refuse(Refusal),
    /// The connection ended before a whole head came.
    Gone,
}

/// Read the first request's head from `stream` and check it.
pub async fn first_head<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<Head> {
    let mut read = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(if read.is_empty() {
                Head::Gone
            } else {
                Head::Serve(read)
            });
        }
        read.extend_from_slice(&chunk[..n]);
        match check(&read) {
            Some(verdict) => return Ok(verdict.map_or(Head::Serve(read), Head::Refuse)),
            None if read.len() >= MOST_HEAD => return Ok(Head::Serve(read)),
            None => {}
        }
    }
}

/// The verdict on `head` so far: `None` while it is not whole yet, `Some(None)` to
/// let hyper have it, `Some(Some(refusal))` to refuse it.
fn check(head: &[u8]) -> Option<Option<Refusal>> {
    let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let sentence = match request.parse(head) {
        Ok(httparse::Status::Partial) => return None,
        Ok(httparse::Status::Complete(_)) => return Some(None),
        Err(httparse::Error::Token | httparse::Error::NewLine) => BAD_LINE,
        Err(httparse::Error::HeaderName | httparse::Error::HeaderValue) => BAD_HEADER,
        Err(_) => return Some(None),
    };
    Some(Some(Refusal::new(Code::BadRequest, sentence)))
}

/// Write `refusal` as a whole HTTP/1.1 answer that closes the connection.
pub async fn answer<S: AsyncWrite + Unpin>(stream: &mut S, refusal: &Refusal) -> io::Result<()> {
    let body = serde_json::to_vec(refusal).map_err(io::Error::other)?;
    let head = format!(
        "HTTP/1.1 {} Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        refusal.status(),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.shutdown().await
}

/// A stream that gives back the bytes read before it, then reads on.
pub struct Rewind<S> {
    first: Vec<u8>,
    at: usize,
    stream: S,
}

impl<S> Rewind<S> {
    /// `stream`, with `first` to be read again before it.
    pub fn new(first: Vec<u8>, stream: S) -> Rewind<S> {
        Rewind {
            first,
            at: 0,
            stream,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.first.len() {
            let left = &self.first[self.at..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            self.at += n;
            if self.at == self.first.len() {
                self.first = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
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
    use super::*;

    fn verdict(head: &[u8]) -> Option<Option<String>> {
        check(head).map(|v| v.map(|r| r.error))
    }

    #[test]
    fn bad_bytes_in_the_line_or_a_header_are_refused_and_the_rest_goes_to_hyper() {
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n"),
            Some(None)
        );
        assert_eq!(verdict(b"GET /health HTTP/1.1\r\nhost: x\r\n"), None);
        assert_eq!(verdict(b"GET /tok"), None);
        assert_eq!(
            verdict(b"GET /tokens/a\0b HTTP/1.1\r\n\r\n"),
            Some(Some(BAD_LINE.to_string()))
        );
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nx-a: b\0c\r\n\r\n"),
            Some(Some(BAD_HEADER.to_string()))
        );
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nx\0a: b\r\n\r\n"),
            Some(Some(BAD_HEADER.to_string()))
        );
        // An unknown version is hyper's to answer.
        assert_eq!(verdict(b"GET /health HTTP/9.9\r\n\r\n"), Some(None));
    }

    #[tokio::test]
    async fn what_was_read_is_read_again_first() {
        let mut rewound = Rewind::new(b"abc".to_vec(), &b"def"[..]);
        let mut all = String::new();
        rewound.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "abcdef");
    }
}
