//! `--log-format json` on `serve` and `supervise`: every line of stderr is one JSON
//! object with a timestamp, a level and a message, and a task's lines name the
//! task, its token and its trace.

use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{eventually, CALLER_SPAN, TRACE, WITHIN};
use crate::harness::{asset_graph, binary, exchange, Timed};
use crate::supervising::{write_script, Supervise};

/// Each line of `text` as a JSON object; panics naming a line that is not one.
fn objects(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| {
            let object: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line}\n{text}"));
            for field in ["timestamp", "level", "message"] {
                assert!(object.get(field).is_some(), "no {field}: {line}");
            }
            object
        })
        .collect()
}

fn message(object: &Value) -> &str {
    object["message"].as_str().unwrap_or_default()
}

#[test]
fn json_logs_are_one_object_per_line_with_the_task_token_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("d.sock");
    let log = dir.path().join("serve.log");
    let graph = asset_graph("orders");
    let mut serve = Command::new(binary())
        .args(["serve", graph.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--db", "sqlite:///db.sqlite", "--log-format", "json"])
        .arg("--socket")
        .arg(&socket)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let serve_log = || std::fs::read_to_string(&log).unwrap_or_default();
    eventually(WITHIN, "serve serves", serve_log, || {
        serve_log().contains("\"message\":\"the same API on unix://")
    });
    let url = format!("unix://{}", socket.display());
    let request = |path: &str, headers: &[(&str, &str)], body: &Value| {
        let stream = UnixStream::connect(&socket).unwrap().timed();
        exchange(stream, "POST", path, headers, body.to_string().as_bytes()).unwrap()
    };

    let folder = dir.path().join("sup");
    let made = crate::harness::run(dir.path(), &["init", "supervisor", &url, "sup"]);
    assert_eq!(made.code(), 0, "{made}");
    write_script(
        &folder.join("draft.sh"),
        "echo drafting >&2\nstateous ctx emit submitted",
    );
    write_script(&folder.join("review.sh"), "stateous ctx wait");
    let mut supervisor = Supervise::start_with(&folder, &["--url", &url, "--log-format", "json"]);
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let start = json!({"token": "O-1", "context": {"title": "x"}});
    request("/tokens", &[("traceparent", &traceparent)], &start).expect(201);
    // A traceparent that does not parse: a warning in the log, the start goes on.
    let other = json!({"token": "O-2", "context": {"title": "y"}});
    request("/tokens", &[("traceparent", "garbage")], &other).expect(201);
    supervisor.wait_for_line("reported waiting");
    supervisor.signal(libc::SIGTERM);
    assert_eq!(supervisor.wait().code(), Some(0), "{}", supervisor.report());
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    assert_eq!(serve.wait().unwrap().code(), Some(0), "{}", serve_log());

    let served = objects(&serve_log());
    assert!(served
        .iter()
        .any(|o| message(o).starts_with("serving on http://127.0.0.1:")));
    assert_eq!(served.last().map(message), Some("stopped"));
    let ignored = served
        .iter()
        .find(|o| message(o).starts_with("a traceparent header was ignored"))
        .expect("a warning for the bad traceparent");
    assert_eq!(ignored["level"], "WARN");
    let supervised = objects(&supervisor.stderr());
    let task_lines: Vec<&Value> = supervised.iter().filter(|o| o["task"] == 1).collect();
    assert!(task_lines.len() >= 3, "{supervised:#?}");
    for line in &task_lines {
        assert_eq!(line["token"], "O-1", "{line}");
        assert_eq!(line["trace_id"], TRACE, "{line}");
    }
    assert!(task_lines.iter().any(|o| message(o) == "task 1 | drafting"));
}
