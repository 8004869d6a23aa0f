//! Black-box: bad input never takes the daemon down. Garbage bodies, paths, headers and
//! bytes that are not HTTP at all each get a refusal or a closed connection, and the
//! daemon answers as before afterwards.

use crate::harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use harness::Daemon;
use serde_json::Value;

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
