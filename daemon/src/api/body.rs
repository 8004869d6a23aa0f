//! Reading a request's body: at most 1 MiB, strict JSON, at most 64 levels deep.
//!
//! The limits are the reference's (`docs/reference/bounds.md`): a body larger than
//! 1 MiB is `bad_request` with status 413, whether its length is declared or it
//! arrives in chunks; JSON that is not strict (NaN, trailing data, bad UTF-8) or
//! that nests deeper than 64 levels is `bad_request` with 400; an empty body reads
//! as `{}`; a body that is JSON but not an object is `invalid_body` (422).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::HeaderMap;
use serde_json::Value;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

/// The largest request body the API reads, in bytes: 1 MiB.
pub const MAX_BODY: usize = 1024 * 1024;

/// The deepest a request's JSON may nest (objects and lists).
pub const MAX_DEPTH: usize = 64;

/// After a body is found too large, how much more of it is read and dropped before
/// the answer, so that the client, still sending, reads the 413 instead of a reset
/// connection. Past this, the connection is closed.
const DRAIN_AT_MOST: usize = 16 * MAX_BODY;

/// How long the drain of a too-large body may take.
const DRAIN_WITHIN: Duration = Duration::from_secs(2);

/// Why a body could not be read at all.
pub enum BodyError {
    /// The body is larger than [`MAX_BODY`]: answer 413 `bad_request`.
    TooLarge,
    /// The connection failed while the body arrived; there is no one to answer.
    Broken,
}

/// The refusal of a body larger than the limit: `bad_request` with status 413.
pub fn too_large() -> Refusal {
    Refusal::new(
        Code::BadRequest,
        "the request body is larger than 1 MiB, the most this API reads",
    )
}

/// Read the whole body, refusing it once it passes [`MAX_BODY`] bytes. A declared
/// `Content-Length` over the limit is refused before any byte is read (a
/// `Transfer-Encoding` makes hyper ignore the length, as RFC 9112 section 6.3 says).
pub async fn read_limited(headers: &HeaderMap, mut body: Incoming) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    let chunked = headers.contains_key(hyper::header::TRANSFER_ENCODING);
    if !chunked && declared.is_some_and(|length| length > MAX_BODY as u64) {
        // A client that waits for `100 Continue` has sent nothing yet: answer at
        // once, and it never sends the body.
        let waits = headers
            .get(hyper::header::EXPECT)
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !waits {
            drain(&mut body, 0).await;
        }
        return Err(BodyError::TooLarge);
    }
    let mut collected = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        if let Ok(data) = frame.into_data() {
            if collected.len() + data.len() > MAX_BODY {
                drain(&mut body, collected.len() + data.len()).await;
                return Err(BodyError::TooLarge);
            }
            collected.extend_from_slice(&data);
        }
    }
    Ok(collected.freeze())
}

/// Read and drop what is left of a refused body, within bounds, so that the
/// client reads the refusal rather than a reset connection.
async fn drain(body: &mut Incoming, mut seen: usize) {
    let reading = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                seen += data.len();
                if seen > DRAIN_AT_MOST {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_WITHIN, reading).await;
}

/// The body as a JSON object: `{}` when it is empty or only white space.
///
/// Errors: `bad_request` (400) when it is not strict JSON or nests deeper than
/// [`MAX_DEPTH`]; `invalid_body` (422) when it is JSON but not an object.
pub fn json_object(raw: &[u8]) -> Result<Object, Refusal> {
    // Blank is judged before the mark is read past: a mark and nothing after it
    // is text that is not JSON (`bad_request`), as the reference reads it.
    if blank(raw) {
        return Ok(Object::new());
    }
    let raw = without_mark(raw);
    if nests_deeper_than(raw, MAX_DEPTH) {
        return Err(Refusal::new(
            Code::BadRequest,
            format!("the body is not JSON that this API reads: it nests more than {MAX_DEPTH} levels deep"),
        ));
    }
    let value: Value = serde_json::from_slice(raw).map_err(|error| {
        Refusal::new(Code::BadRequest, format!("the body is not JSON: {error}"))
    })?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(Refusal::new(
            Code::InvalidBody,
            "the body must be a JSON object",
        )),
    }
}

/// The body past a UTF-8 byte order mark, which is read past, as the reference
/// reads it.
fn without_mark(raw: &[u8]) -> &[u8] {
    raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw)
}

/// Whether the body is empty or only white space (it reads as `{}`).
fn blank(raw: &[u8]) -> bool {
    raw.iter().all(|b| b.is_ascii_whitespace() || *b == 0x0b)
}

/// The JSON text of a body that is neither blank nor nested too deep, past its
/// byte order mark: what a reader other than [`json_object`] may parse.
pub fn readable(raw: &[u8]) -> Option<&[u8]> {
    if blank(raw) {
        return None;
    }
    let raw = without_mark(raw);
    (!nests_deeper_than(raw, MAX_DEPTH)).then_some(raw)
}

/// Whether the JSON text opens more than `limit` objects or lists inside each
/// other. It scans the bytes once, skipping strings, so that a hostile body
/// cannot make the parser recurse deeply. Text that is not JSON is left to the
/// parser to refuse.
fn nests_deeper_than(raw: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in raw {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn an_empty_or_blank_body_reads_as_an_empty_object() {
        assert_eq!(json_object(b"").unwrap(), Object::new());
        assert_eq!(json_object(b" \r\n\t").unwrap(), Object::new());
        assert_eq!(json_object(b"\xef\xbb\xbf{}").unwrap(), Object::new());
    }

    #[test]
    fn a_byte_order_mark_with_nothing_after_it_is_bad_request() {
        for raw in [&b"\xef\xbb\xbf"[..], b"\xef\xbb\xbf  \n"] {
            assert_eq!(json_object(raw).unwrap_err().code, Code::BadRequest);
        }
    }

    #[test]
    fn json_that_is_not_an_object_is_invalid_body() {
        for raw in ["[1, 2]", "\"x\"", "null", "7"] {
            assert_eq!(
                json_object(raw.as_bytes()).unwrap_err().code,
                Code::InvalidBody
            );
        }
    }

    #[test]
    fn text_that_is_not_strict_json_is_bad_request() {
        for raw in [
            "{not json",
            "{\"token\": NaN}",
            "{\"a\": 1} x",
            "{\"a\": Infinity}",
        ] {
            assert_eq!(
                json_object(raw.as_bytes()).unwrap_err().code,
                Code::BadRequest
            );
        }
        assert_eq!(json_object(b"\xff").unwrap_err().code, Code::BadRequest);
    }

    #[test]
    fn nesting_is_refused_past_64_levels_and_taken_up_to_them() {
        let deep = format!("{{\"a\": {}}}", nested(64));
        assert_eq!(
            json_object(deep.as_bytes()).unwrap_err().code,
            Code::BadRequest
        );
        let fine = format!("{{\"a\": {}}}", nested(63));
        assert!(json_object(fine.as_bytes()).is_ok());
        let many = format!("{{\"a\": \"{}\"}}", "[".repeat(500));
        assert!(
            json_object(many.as_bytes()).is_ok(),
            "brackets inside a string"
        );
        let escaped = "{\"a\": \"\\\"[[[\"}";
        assert!(json_object(escaped.as_bytes()).is_ok());
        assert!(nests_deeper_than(nested(100_000).as_bytes(), MAX_DEPTH));
    }
}
