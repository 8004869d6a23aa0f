//! A token's trace: the W3C trace context (`traceparent`) a token keeps, and the
//! ids of its spans (`docs/reference/traces.md`).
//!
//! Each token has one trace, fixed when it starts: a new random trace id, or the
//! trace of the caller's `traceparent`, whose span then parents the token's own.
//! The ids of the token's spans (the token, each visit of a state, each attempt of
//! a task) are derived from the trace id and what names the span, so that any part
//! (the control plane's claim, its exporter after a restart, a supervisor) finds
//! the same id without being told: a hash, never a stored counter.

use sha2::{Digest, Sha256};

/// A trace id: 16 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span id: 8 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// Lowercase hex, 32 digits.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl SpanId {
    /// Lowercase hex, 16 digits.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// A W3C `traceparent` header's fields: the trace, the caller's span, and whether
/// the caller records the trace (the `sampled` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace.
    pub trace: TraceId,
    /// The caller's span: the parent of the spans made under this header.
    pub parent: SpanId,
    /// Whether the trace is recorded (flag `01`); spans of a trace that is not are
    /// not exported.
    pub sampled: bool,
}

impl TraceParent {
    /// Read a `traceparent` header as the W3C Trace Context says: `VERSION-TRACE-
    /// PARENT-FLAGS` in lowercase hex, version `ff` refused, version `00` exactly 55
    /// characters, a later version at least that (what follows a `-` is left to
    /// it), ids not all zero. The error is what is wrong, for a warning line.
    pub fn parse(header: &str) -> Result<TraceParent, &'static str> {
        let text = header.trim_matches([' ', '\t']);
        let bytes = text.as_bytes();
        if bytes.len() < 55 {
            return Err("it is shorter than 55 characters");
        }
        let lower_hex = |part: &str| part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let version = &text[..2];
        if !lower_hex(version) || version == "ff" {
            return Err("its version is not two lowercase hex digits other than ff");
        }
        if version == "00" && bytes.len() != 55 {
            return Err("a version 00 header has exactly 55 characters");
        }
        if bytes.len() > 55 && bytes[55] != b'-' {
            return Err("it does not have the form VERSION-TRACE-PARENT-FLAGS");
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return Err("it does not have the form VERSION-TRACE-PARENT-FLAGS");
        }
        let (trace, parent, flags) = (&text[3..35], &text[36..52], &text[53..55]);
        if !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags) {
            return Err("its ids and flags are not lowercase hex digits");
        }
        let trace = TraceId(decode(trace).ok_or("its trace id is not hex")?);
        let parent = SpanId(decode(parent).ok_or("its parent id is not hex")?);
        if trace.0 == [0; 16] || parent.0 == [0; 8] {
            return Err("its trace id or parent id is all zeros");
        }
        let flags: [u8; 1] = decode(flags).ok_or("its flags are not hex")?;
        Ok(TraceParent {
            trace,
            parent,
            sampled: flags[0] & 1 == 1,
        })
    }

    /// The header: `00-TRACE-PARENT-01` (or `-00` when not sampled).
    pub fn header(&self) -> String {
        let flags = if self.sampled { "01" } else { "00" };
        format!("00-{}-{}-{flags}", self.trace.hex(), self.parent.hex())
    }
}

/// Hex digits into bytes, when they are exactly `N` bytes' worth.
fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// A token's trace as the control plane keeps it (`tokens.trace`): the trace id,
/// the span that parents the token's own span (the caller's, or for a child token
/// its parent's visit of the parallel state), and the sampled flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTrace {
    /// The trace.
    pub trace: TraceId,
    /// The parent of the token's span; `None`: the token's span is the trace's root.
    pub parent: Option<SpanId>,
    /// Whether the trace is recorded.
    pub sampled: bool,
}

impl TokenTrace {
    /// A new trace with this random id (the caller draws the bytes): a root,
    /// recorded. An all-zero draw is made valid.
    pub fn new(mut random: [u8; 16]) -> TokenTrace {
        if random == [0; 16] {
            random[15] = 1;
        }
        TokenTrace {
            trace: TraceId(random),
            parent: None,
            sampled: true,
        }
    }

    /// The trace of a token that started without a caller's: a root whose id is
    /// derived from the token's id and the moment it started (microseconds), so
    /// that a start the write path runs again makes the same one, and a token id
    /// started again after a prune gets another.
    pub fn started(token: &str, at: i64) -> TokenTrace {
        let digest = Sha256::new()
            .chain_update(b"stateous trace\0")
            .chain_update(token.as_bytes())
            .chain_update([0])
            .chain_update(at.to_be_bytes())
            .finalize();
        let mut id = [0u8; 16];
        id.copy_from_slice(&digest[..16]);
        TokenTrace::new(id)
    }

    /// The trace a caller's `traceparent` continues.
    pub fn continuing(header: &TraceParent) -> TokenTrace {
        TokenTrace {
            trace: header.trace,
            parent: Some(header.parent),
            sampled: header.sampled,
        }
    }

    /// The trace of a token kept without one (started before traces were kept): a
    /// trace id derived from its id, so that every reader finds the same one.
    pub fn of_older_token(token: &str) -> TokenTrace {
        let digest = Sha256::new()
            .chain_update(b"stateous token\0")
            .chain_update(token.as_bytes())
            .finalize();
        let mut id = [0u8; 16];
        id.copy_from_slice(&digest[..16]);
        TokenTrace::new(id)
    }

    /// As `tokens.trace` keeps it: the trace id alone (32 hex digits) for a recorded
    /// root, else a `traceparent` header whose parent is the token span's parent.
    pub fn stored(&self) -> String {
        match self.parent {
            None if self.sampled => self.trace.hex(),
            None => format!("00-{}-{}-00", self.trace.hex(), "0".repeat(16)),
            Some(parent) => TraceParent {
                trace: self.trace,
                parent,
                sampled: self.sampled,
            }
            .header(),
        }
    }

    /// Read `tokens.trace` back (see [`TokenTrace::stored`]); `None` for text this
    /// build did not write.
    pub fn read(text: &str) -> Option<TokenTrace> {
        if text.len() == 32 {
            let id = TraceId(decode(text)?);
            return (id.0 != [0; 16]).then_some(TokenTrace {
                trace: id,
                parent: None,
                sampled: true,
            });
        }
        let root_not_sampled = text.len() == 55 && text.get(36..52) == Some("0000000000000000");
        if root_not_sampled {
            let id = TraceId(decode(text.get(3..35)?)?);
            return Some(TokenTrace {
                trace: id,
                parent: None,
                sampled: false,
            });
        }
        TraceParent::parse(text)
            .ok()
            .map(|header| TokenTrace::continuing(&header))
    }

    /// The trace of a token kept as `stored` (`tokens.trace`), or derived for one
    /// kept without (see [`TokenTrace::of_older_token`]).
    pub fn of(token: &str, stored: Option<&str>) -> TokenTrace {
        stored
            .and_then(TokenTrace::read)
            .unwrap_or_else(|| TokenTrace::of_older_token(token))
    }

    /// The id of the token's span: from its start to its end.
    pub fn token_span(&self, token: &str) -> SpanId {
        derive(self.trace, &[b"token", token.as_bytes()])
    }

    /// The id of the span of one visit of a state: from entering it to leaving it.
    pub fn visit_span(&self, token: &str, state: &str, visit: i64) -> SpanId {
        let visit = visit.to_string();
        derive(
            self.trace,
            &[
                b"visit",
                token.as_bytes(),
                state.as_bytes(),
                visit.as_bytes(),
            ],
        )
    }

    /// The id of the span of one attempt of a task: from its claim to its end.
    pub fn attempt_span(&self, token: &str, task: i64, attempt: i64) -> SpanId {
        let (task, attempt) = (task.to_string(), attempt.to_string());
        derive(
            self.trace,
            &[
                b"attempt",
                token.as_bytes(),
                task.as_bytes(),
                attempt.as_bytes(),
            ],
        )
    }

    /// The `traceparent` a routine gets for one attempt: its spans are children of
    /// the attempt's span.
    pub fn attempt_header(&self, token: &str, task: i64, attempt: i64) -> String {
        TraceParent {
            trace: self.trace,
            parent: self.attempt_span(token, task, attempt),
            sampled: self.sampled,
        }
        .header()
    }

    /// The trace of a child token that `parent_token`'s visit of a parallel state
    /// starts: the same trace, its span a child of that visit's span.
    pub fn child(&self, parent_token: &str, state: &str, visit: i64) -> TokenTrace {
        TokenTrace {
            trace: self.trace,
            parent: Some(self.visit_span(parent_token, state, visit)),
            sampled: self.sampled,
        }
    }
}

/// A span id from the trace and the parts that name the span: the first 8 bytes of
/// a SHA-256 over them, each part ended by a NUL (names hold no NUL).
fn derive(trace: TraceId, parts: &[&[u8]]) -> SpanId {
    let mut hash = Sha256::new().chain_update(trace.0);
    for part in parts {
        hash.update(part);
        hash.update([0]);
    }
    let digest = hash.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    SpanId(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_header_reads_and_writes_back_the_same() {
        let header = TraceParent::parse(GOOD).unwrap();
        assert_eq!(header.trace.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(header.sampled);
        assert_eq!(header.header(), GOOD);
        let later = format!("01-{}-09-more", &GOOD[3..52]);
        assert!(TraceParent::parse(&later).is_ok());
    }

    #[test]
    fn headers_the_w3c_refuses_are_refused() {
        for bad in [
            "",
            "garbage",
            &GOOD.to_uppercase(),
            &GOOD.replace("00-4bf", "ff-4bf"),
            &format!("{GOOD}-x"),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_kept_trace_reads_back_as_written() {
        let root = TokenTrace::new([7; 16]);
        let caller = TokenTrace::continuing(&TraceParent::parse(GOOD).unwrap());
        let quiet = TokenTrace {
            sampled: false,
            ..root
        };
        for trace in [root, caller, quiet, caller.child("T-1", "reviews", 2)] {
            assert_eq!(TokenTrace::read(&trace.stored()), Some(trace));
        }
        assert_eq!(
            TokenTrace::of("T-1", None),
            TokenTrace::of("T-1", Some("?"))
        );
    }

    #[test]
    fn span_ids_depend_on_what_names_them_only() {
        let trace = TokenTrace::new([9; 16]);
        let again = TokenTrace::read(&trace.stored()).unwrap();
        assert_eq!(trace.attempt_span("T", 3, 2), again.attempt_span("T", 3, 2));
        assert_ne!(trace.attempt_span("T", 3, 2), trace.attempt_span("T", 3, 1));
        assert_ne!(trace.visit_span("T", "a", 1), trace.visit_span("T", "a", 2));
        assert_ne!(trace.token_span("T"), trace.token_span("U"));
        let header = TraceParent::parse(&trace.attempt_header("T", 3, 2)).unwrap();
        assert_eq!(header.parent, trace.attempt_span("T", 3, 2));
    }
}
