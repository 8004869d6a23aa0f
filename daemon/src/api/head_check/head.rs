//! The check of one request head, as hyper's parser would read it: whether it is
//! whole, refused (with the status and sentence of its answer), or good, and then
//! how its body is framed, so that the stream (`mod.rs`) knows where the next head
//! starts. The rules are hyper's own (`httparse` for the head, the `http` crate's
//! for the path, RFC 9112's for the framing, as hyper applies them), so that a
//! head let through is one hyper reads.

use stateous_shared::refusal::{Code, Refusal};

/// The longest request head (request line and headers) read: a longer one is
/// refused 431. Below [`HYPER_BUFFER`], so that hyper never refuses a head this
/// check let through.
pub const MOST_HEAD: usize = 400 * 1024;

/// The most headers a request may have: more is refused 431 (hyper's own limit).
pub const MOST_HEADERS: usize = 100;

/// The longest path (with its query) a request line may have: a longer one is
/// refused 414 (hyper's own limit).
pub const MOST_PATH: usize = u16::MAX as usize - 1;

/// The largest buffer hyper reads a connection into (hyper's default, named here
/// and set on the connection so that it stays above [`MOST_HEAD`]).
pub const HYPER_BUFFER: usize = 8192 + 4096 * 100;

const _: () = assert!(MOST_HEAD < HYPER_BUFFER);

/// The sentence of a request line with a byte HTTP does not allow.
pub const BAD_LINE: &str = "the request line holds a byte that HTTP does not allow (a NUL \
                            or another control character, a space in the path, or bytes \
                            that are not UTF-8); percent-encode it in the path, e.g. %00 \
                            for a NUL";

/// The sentence of a header with a byte HTTP does not allow.
pub const BAD_HEADER: &str = "a header of the request holds a byte that HTTP does not allow \
                              in its name or value (a NUL or another control character); \
                              leave it out";

/// The sentence of a request line whose path is not a URI.
pub const BAD_PATH: &str = "the request line's path is not a URI: it must start with /, \
                            with characters such as <, > and ` percent-encoded (e.g. %3C \
                            for <)";

/// The sentence of a request line with an HTTP version other than 1.0 and 1.1.
pub const BAD_VERSION: &str = "the request line names an HTTP version this control plane \
                               does not speak; send HTTP/1.1";

/// The sentence of a body's framing that cannot be read.
pub const BAD_FRAMING: &str = "the request's body length cannot be read: content-length must \
                               be one number (repeated only with the same value), and \
                               transfer-encoding must end with chunked, on HTTP/1.1 only";

/// The sentence of a head over [`MOST_HEAD`] bytes or [`MOST_HEADERS`] headers.
pub const TOO_LARGE: &str = "the request's head is too large: at most 100 headers and 400 KiB \
                             of request line and headers are read; send fewer or shorter \
                             headers";

/// The sentence of a path over [`MOST_PATH`] bytes.
pub const TOO_LONG: &str = "the request's path is too long: at most 65,534 bytes with its \
                            query are read; send a shorter one";

/// The start of the HTTP/2 preface (`PRI * HTTP/2.0`), hyper's to answer.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0";
/// A refused head: the status of its answer (the code's own, or 414 or 431) and
/// the refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The answer's status.
    pub status: u16,
    /// The refusal.
    pub refusal: Refusal,
}
/// What the bytes after those hyper may have are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// A request head (empty lines before it are allowed).
    Head,
    /// This many bytes of a body.
    Body(u64),
    /// A chunked body's size line.
    ChunkSize,
    /// This many bytes of a chunk: its data and its CRLF.
    Chunk(u64),
    /// A chunked body's trailers, to their empty line.
    Trailers,
    /// Not followed: hyper has every byte as it comes.
    Unchecked,
    /// A refused head: hyper reads the end of the stream there.
    Refused,
}
/// The verdict on a head read so far.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// Not whole yet.
    Partial,
    /// Whole and good: its length, what follows it, and whether the connection
    /// is kept alive after it.
    Good(usize, Next, bool),
    /// Refused.
    Refused(Refused),
    /// Hyper's to answer, and not followed after it.
    Hyper,
}
/// The verdict on `head`, the bytes where a request head starts.
pub(super) fn judge(head: &[u8]) -> Verdict {
    let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let sentence = match request.parse(head) {
        Ok(httparse::Status::Partial) if head.len() > MOST_HEAD => return too_large(),
        Ok(httparse::Status::Partial) => return Verdict::Partial,
        Ok(httparse::Status::Complete(length)) if length > MOST_HEAD => return too_large(),
        Ok(httparse::Status::Complete(length)) => return judge_whole(&request, length),
        Err(httparse::Error::Token | httparse::Error::NewLine) => BAD_LINE,
        Err(httparse::Error::HeaderName | httparse::Error::HeaderValue) => BAD_HEADER,
        Err(httparse::Error::TooManyHeaders) => return too_large(),
        Err(httparse::Error::Version) if !head.starts_with(HTTP2_PREFACE) => BAD_VERSION,
        Err(_) => return Verdict::Hyper,
    };
    bad(sentence)
}

/// The verdict on a whole head that `httparse` read: its path as hyper reads it,
/// and its body's framing as hyper follows it.
fn judge_whole(request: &httparse::Request<'_, '_>, length: usize) -> Verdict {
    let path = request.path.unwrap_or_default();
    if path.len() > MOST_PATH {
        return refused(414, TOO_LONG);
    }
    if !plain_path(path) && hyper::Uri::try_from(path).is_err() {
        return bad(BAD_PATH);
    }
    let http11 = request.version == Some(1);
    // Hyper's rules (RFC 9112, 6.3): transfer-encoding wins over content-length,
    // which is read only before it; chunked must be the last encoding. A
    // connection is kept alive on HTTP/1.1 unless a `connection` header says
    // close; on HTTP/1.0 only if one says keep-alive.
    let mut chunked = None;
    let mut content_length: Option<u64> = None;
    let (mut kept_alive, mut close, mut any_length) = (http11, false, false);
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("connection") {
            if close || has_token(header.value, "close") {
                (close, kept_alive) = (true, false);
            } else if !kept_alive {
                kept_alive = has_token(header.value, "keep-alive");
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if !http11 {
                return bad(BAD_FRAMING);
            }
            chunked = Some(ends_chunked(header.value));
        } else if header.name.eq_ignore_ascii_case("content-length") {
            any_length = true;
            if chunked.is_some() {
                continue;
            }
            match (digits(header.value), content_length) {
                (Some(n), None) => content_length = Some(n),
                (Some(n), Some(before)) if n == before => {}
                _ => return bad(BAD_FRAMING),
            }
        }
    }
    let next = match (chunked, content_length) {
        (Some(true), _) => Next::ChunkSize,
        (Some(false), _) => return bad(BAD_FRAMING),
        (None, None | Some(0)) => Next::Head,
        // Hyper's largest length; beyond it, it answers 431.
        (None, Some(n)) if n > u64::MAX - 2 => return too_large(),
        (None, Some(n)) => Next::Body(n),
    };
    Verdict::Good(
        length,
        next,
        kept_alive && !(chunked.is_some() && any_length),
    )
}

fn refused(status: u16, sentence: &str) -> Verdict {
    Verdict::Refused(Refused {
        status,
        refusal: Refusal::new(Code::BadRequest, sentence),
    })
}

fn bad(sentence: &str) -> Verdict {
    refused(400, sentence)
}

fn too_large() -> Verdict {
    refused(431, TOO_LARGE)
}

/// A path any URI parser reads: `/` and the characters of RFC 3986's `pchar` and
/// query. Anything else is left to the `http` crate's parser, as hyper does.
fn plain_path(path: &str) -> bool {
    path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:@?".contains(&b))
}

/// Whether a `transfer-encoding` value ends with `chunked`, as hyper reads it.
fn ends_chunked(value: &[u8]) -> bool {
    std::str::from_utf8(value).is_ok_and(|text| {
        text.rsplit(',')
            .next()
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
    })
}

/// Whether a comma-separated header value holds `token`, as hyper reads it.
fn has_token(value: &[u8], token: &str) -> bool {
    std::str::from_utf8(value).is_ok_and(|text| {
        text.split(',')
            .any(|each| each.trim().eq_ignore_ascii_case(token))
    })
}

/// A `content-length` value as hyper reads it: decimal digits only.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(head: &[u8]) -> Result<Option<Next>, (u16, String)> {
        match judge(head) {
            Verdict::Partial => Ok(None),
            Verdict::Good(_, next, _) => Ok(Some(next)),
            Verdict::Refused(Refused { status, refusal }) => Err((status, refusal.error)),
            Verdict::Hyper => Ok(Some(Next::Unchecked)),
        }
    }

    fn refused(sentence: &str) -> Result<Option<Next>, (u16, String)> {
        Err((400, sentence.to_string()))
    }

    #[test]
    fn bad_bytes_in_the_line_or_a_header_are_refused_and_the_rest_goes_to_hyper() {
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n"),
            Ok(Some(Next::Head))
        );
        assert_eq!(verdict(b"GET /health HTTP/1.1\r\nhost: x\r\n"), Ok(None));
        assert_eq!(verdict(b"GET /tok"), Ok(None));
        assert_eq!(
            verdict(b"GET /tokens/a\0b HTTP/1.1\r\n\r\n"),
            refused(BAD_LINE)
        );
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nx-a: b\0c\r\n\r\n"),
            refused(BAD_HEADER)
        );
        assert_eq!(
            verdict(b"GET /health HTTP/1.1\r\nx\0a: b\r\n\r\n"),
            refused(BAD_HEADER)
        );
        assert_eq!(
            verdict(b"GET /health HTTP/9.9\r\n\r\n"),
            refused(BAD_VERSION)
        );
        assert_eq!(verdict(b"GET /a\xffb HTTP/1.1\r\n\r\n"), refused(BAD_LINE));
        assert_eq!(verdict(b"GET /a<b HTTP/1.1\r\n\r\n"), refused(BAD_PATH));
        assert_eq!(verdict(b"GET a/b HTTP/1.1\r\n\r\n"), refused(BAD_PATH));
        assert_eq!(
            verdict(b"GET /t?q=%C3%A9&x='1' HTTP/1.1\r\n\r\n"),
            Ok(Some(Next::Head))
        );
        // The HTTP/2 preface is hyper's: it closes the connection.
        assert_eq!(
            verdict(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            Ok(Some(Next::Unchecked))
        );
    }

    #[test]
    fn a_head_too_large_is_431_and_a_path_too_long_414() {
        let many: String = (0..=MOST_HEADERS)
            .map(|n| format!("x-{n}: y\r\n"))
            .collect();
        let head = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(verdict(head.as_bytes()), Err((431, TOO_LARGE.into())));
        let long = format!("GET / HTTP/1.1\r\nx: {}", "y".repeat(MOST_HEAD));
        assert_eq!(verdict(long.as_bytes()), Err((431, TOO_LARGE.into())));
        let path = format!("GET /{} HTTP/1.1\r\n\r\n", "p".repeat(MOST_PATH));
        assert_eq!(verdict(path.as_bytes()), Err((414, TOO_LONG.into())));
    }

    #[test]
    fn a_body_is_framed_as_hyper_frames_it() {
        let framed =
            |headers: &str| verdict(format!("POST /t HTTP/1.1\r\n{headers}\r\n").as_bytes());
        assert_eq!(framed("content-length: 12\r\n"), Ok(Some(Next::Body(12))));
        assert_eq!(framed("content-length: 0\r\n"), Ok(Some(Next::Head)));
        assert_eq!(
            framed("content-length: 3\r\ncontent-length: 3\r\n"),
            Ok(Some(Next::Body(3)))
        );
        assert_eq!(
            framed("content-length: 3\r\ncontent-length: 4\r\n"),
            refused(BAD_FRAMING)
        );
        assert_eq!(framed("content-length: +3\r\n"), refused(BAD_FRAMING));
        assert_eq!(
            framed("transfer-encoding: gzip, chunked\r\ncontent-length: x\r\n"),
            Ok(Some(Next::ChunkSize))
        );
        assert_eq!(framed("transfer-encoding: gzip\r\n"), refused(BAD_FRAMING));
        let old = verdict(b"POST /t HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(old, refused(BAD_FRAMING));
    }
}
