//! Black-box: bad input never takes the daemon down. Garbage bodies, paths, headers and
//! bytes that are not HTTP at all each get a refusal or a closed connection, and the
//! daemon answers as before afterwards.

use crate::harness;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use harness::Daemon;
use serde_json::{json, Value};

/// A small deterministic generator (xorshift), so a failure can be replayed.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn bytes(&mut self, most: usize) -> Vec<u8> {
        let length = (self.next() % (most as u64 + 1)) as usize;
        (0..length).map(|_| self.next() as u8).collect()
    }

    /// JSON-ish text: valid pieces joined at random, often not JSON.
    fn jsonish(&mut self) -> Vec<u8> {
        let pieces = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"token\"",
            "\"T-1\"",
            "\"context\"",
            "null",
            "true",
            "1e400",
            "-0",
            "\"\\ud800\"",
            "\"kind\"",
            "\"event\"",
            "\"states\"",
            "\"tasks\"",
            "123456789012345678901234567890",
            "\"supervisor\"",
            "\"\\u0000\"",
            " ",
            "NaN",
        ];
        let count = self.next() % 40;
        let mut text = String::new();
        for _ in 0..count {
            text.push_str(self.pick(&pieces));
        }
        text.into_bytes()
    }
}

const PATHS: [&str; 16] = [
    "/tokens",
    "/tokens/T-1",
    "/tokens/T-1/history",
    "/tokens/T-1/events/done",
    "/tokens/T-1/events/passed",
    "/tokens/T-1/pause",
    "/tokens/T-1/resume",
    "/tokens/T-1/cancel",
    "/tasks/claim",
    "/tasks/heartbeat",
    "/tasks/1/report",
    "/tasks/1/note",
    "/tasks/1/memory",
    "/tokens?limit=%ff&status=%00",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/tokens/%F0%9F%98%80",
];

#[test]
fn garbage_requests_get_refusals_and_never_take_the_daemon_down() {
    let daemon = Daemon::tickets();
    daemon
        .post(
            "/tokens",
            &serde_json::json!({"token": "T-1", "context": {"repo": "r"}}),
        )
        .expect(201);
    let mut noise = Noise(0x5eed_cafe_f00d_beef);
    for round in 0..400 {
        let method = noise.pick(&["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]);
        let path = noise.pick(&PATHS);
        let body = if round % 3 == 0 {
            noise.bytes(300)
        } else {
            noise.jsonish()
        };
        let key = String::from_utf8_lossy(&noise.bytes(20))
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .collect::<String>();
        let headers = [
            ("content-type", "application/json"),
            ("Idempotency-Key", key.as_str()),
        ];
        let reply = daemon.request(method, path, &headers, &body);
        assert!(reply.status < 500, "round {round}: {reply}");
        if reply.status >= 400 && method != "HEAD" {
            let refusal: Value = reply.json();
            assert!(
                refusal["code"].is_string() && refusal["error"].is_string(),
                "{reply}"
            );
        }
    }
    assert_eq!(daemon.get("/health").status, 200);
    assert!(!daemon.stderr().contains("panicked"), "{}", daemon.report());
}

#[test]
fn bytes_that_are_not_http_close_the_connection_and_nothing_else() {
    let daemon = Daemon::tickets();
    let mut noise = Noise(42);
    for _ in 0..30 {
        let mut stream = TcpStream::connect(&daemon.authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut junk = noise.bytes(2000);
        junk.extend_from_slice(b"\r\n\r\n");
        let _ = stream.write_all(&junk);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
    }
    let huge_header = format!(
        "GET /health HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let mut stream = TcpStream::connect(&daemon.authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(huge_header.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert_eq!(daemon.get("/health").status, 200, "{}", daemon.report());
    assert!(!daemon.stderr().contains("panicked"), "{}", daemon.report());
}

/// One answer read from a connection that stays open: its status, and its body
/// as JSON (`Null` when empty); `None` once the server closed it.
fn next_answer(from: &mut impl BufRead) -> Option<(u16, Value)> {
    let mut status_line = String::new();
    if from.read_line(&mut status_line).ok()? == 0 {
        return None;
    }
    let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let mut length = 0;
    loop {
        let mut line = String::new();
        from.read_line(&mut line).ok()?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    from.read_exact(&mut body).ok()?;
    let json = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or(Value::String(String::from_utf8_lossy(&body).into()))
    };
    Some((status, json))
}

/// Send `requests` one after another on one connection, each once the answer
/// before it came, until the server closes it; every answer.
fn kept_alive<S: Read + Write>(stream: S, requests: &[&[u8]]) -> Vec<(u16, Value)> {
    let mut reader = BufReader::new(stream);
    let mut answers = Vec::new();
    for request in requests {
        if reader.get_mut().write_all(request).is_err() {
            break;
        }
        match next_answer(&mut reader) {
            Some(answer) => answers.push(answer),
            None => break,
        }
    }
    answers.extend(std::iter::from_fn(|| next_answer(&mut reader)));
    answers
}

fn tcp(daemon: &Daemon) -> TcpStream {
    let stream = TcpStream::connect(&daemon.authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

fn unix(daemon: &Daemon) -> UnixStream {
    let stream = UnixStream::connect(&daemon.socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n";

/// The statuses of `answers`, and the body of the last one.
fn statuses(answers: &[(u16, Value)]) -> (Vec<u16>, Value) {
    let last = answers
        .last()
        .map(|(_, body)| body.clone())
        .unwrap_or_default();
    (answers.iter().map(|(status, _)| *status).collect(), last)
}

/// A byte HTTP does not allow in a later request of a kept-alive connection gets
/// the same refusal, body and sentence, as in a connection's first request, over
/// TCP and the Unix socket; the answers before it come first, then the connection
/// closes.
#[test]
fn a_bad_byte_in_a_later_request_of_a_kept_alive_connection_is_refused_with_its_sentence() {
    let daemon = Daemon::tickets();
    let line_sentence = daemon
        .request("GET", "/tokens/a\0b", &[], b"")
        .refused(400, "bad_request");
    let header_sentence = daemon
        .request("GET", "/health", &[("x-trace", "a\0b")], b"")
        .refused(400, "bad_request");
    let bad_line = b"GET /tokens/a\0b HTTP/1.1\r\nhost: x\r\n\r\n".as_slice();
    let bad_header = b"GET /health HTTP/1.1\r\nhost: x\r\nx-trace: a\x01b\r\n\r\n".as_slice();
    let start = |token: &str| {
        let body = json!({"token": token, "context": {"repo": "r"}}).to_string();
        format!(
            "POST /tokens HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let chunked = |token: &str| {
        let body = json!({"token": token, "context": {"repo": "r"}}).to_string();
        let (first, second) = body.split_at(10);
        format!(
            "POST /tokens HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
             {:x}\r\n{first}\r\n{:x};ext=1\r\n{second}\r\n0\r\nx-trailer: t\r\n\r\n",
            first.len(),
            second.len()
        )
    };
    let line_refused = json!({"error": line_sentence, "code": "bad_request"});
    let header_refused = json!({"error": header_sentence, "code": "bad_request"});
    for over_unix in [false, true] {
        let send = |requests: &[&[u8]]| {
            if over_unix {
                kept_alive(unix(&daemon), requests)
            } else {
                kept_alive(tcp(&daemon), requests)
            }
        };
        let answers = send(&[HEALTH, bad_line, HEALTH]);
        assert_eq!(statuses(&answers), (vec![200, 400], line_refused.clone()));
        let answers = send(&[HEALTH, HEALTH, bad_header]);
        assert_eq!(
            statuses(&answers),
            (vec![200, 200, 400], header_refused.clone())
        );
        // After a body, and after a chunked body, the next head is found.
        let (one, two) = if over_unix {
            ("U-1", "U-2")
        } else {
            ("T-1", "T-2")
        };
        let answers = send(&[start(one).as_bytes(), chunked(two).as_bytes(), bad_line]);
        assert_eq!(
            statuses(&answers),
            (vec![201, 201, 400], line_refused.clone())
        );
        // Sent all at once (pipelined): each good one answered, then the refusal.
        let all = [HEALTH, HEALTH, bad_line, HEALTH].concat();
        let answers = send(&[&all]);
        assert_eq!(
            statuses(&answers),
            (vec![200, 200, 400], line_refused.clone())
        );
    }
    for token in ["T-1", "T-2", "U-1", "U-2"] {
        daemon.get(&format!("/tokens/{token}")).expect(200);
    }
    daemon.get("/health").expect(200);
}

/// A head too large, by its size or its number of headers, is 431 with a refusal
/// body and one sentence, first or later on a connection.
#[test]
fn a_request_head_too_large_is_431_with_a_refusal_sentence() {
    let daemon = Daemon::tickets();
    let many: String = (0..101).map(|n| format!("x-{n}: y\r\n")).collect();
    let many = format!("GET /health HTTP/1.1\r\nhost: x\r\n{many}\r\n");
    let big = format!(
        "GET /health HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(500 * 1024)
    );
    for head in [&many, &big] {
        let answers = kept_alive(tcp(&daemon), &[head.as_bytes()]);
        assert_eq!(answers.len(), 1, "{answers:?}");
        let (status, body) = &answers[0];
        assert_eq!(*status, 431, "{answers:?}");
        assert_eq!(body["code"], "bad_request", "{answers:?}");
        let sentence = body["error"].as_str().unwrap();
        assert!(
            sentence.starts_with("the request's head is too large"),
            "{sentence}"
        );
        let later = kept_alive(unix(&daemon), &[HEALTH, head.as_bytes()]);
        assert_eq!(statuses(&later), (vec![200, 431], body.clone()));
    }
    // A head under the limit is served, and the connection serves on.
    let fits = format!(
        "GET /health HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(300 * 1024)
    );
    let answers = kept_alive(tcp(&daemon), &[fits.as_bytes(), HEALTH, b"GET /\0"]);
    assert_eq!(statuses(&answers).0, [200, 200, 400]);
    // Each head refused is counted in /metrics as every refusal is.
    let metrics = String::from_utf8(daemon.get("/metrics").body).unwrap();
    assert!(
        metrics
            .lines()
            .any(|line| line == "stateous_refusals_total{code=\"bad_request\"} 5"),
        "{metrics}"
    );
}
