//! The `stateous ctx` helper and its server: a routine's way to its supervisor.
//!
//! Each running routine gets a Unix socket of its own, named by `STATEOUS_CTX`.
//! The protocol is one JSON object per line each way: a [`Request`] (`{"op":
//! "emit", "event": "done"}`), then `{"ok": true, "value": ...}` or `{"ok": false,
//! "error": "sentence"}`. A routine may speak it directly (e.g. `socat`, Python's
//! `socket`); the helper is a small client of it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

use crate::ctx::{Request, RunCtx};

/// The environment variable that names the socket.
pub const CTX_ENV: &str = "STATEOUS_CTX";
/// The longest request line the server reads, in bytes.
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Serve `ctx` on `listener` until the task is aborted. Each connection may send
/// many requests, one per line.
pub async fn serve(listener: UnixListener, ctx: Arc<RunCtx>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = tokio::io::BufReader::new(read);
            let mut line = Vec::new();
            loop {
                line.clear();
                let mut limited = (&mut lines).take(MAX_LINE as u64);
                match limited.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let too_long = line.len() >= MAX_LINE && !line.ends_with(b"\n");
                let answer = if too_long {
                    json!({"ok": false, "error": format!("a request is at most {MAX_LINE} bytes")})
                } else {
                    answer(&ctx, &line).await
                };
                let mut text = answer.to_string();
                text.push('\n');
                // The rest of an over-long line cannot be read as a request.
                if write.write_all(text.as_bytes()).await.is_err() || too_long {
                    return;
                }
            }
        });
    }
}

async fn answer(ctx: &Arc<RunCtx>, line: &[u8]) -> Value {
    let request: Request = match serde_json::from_slice(line) {
        Ok(request) => request,
        Err(e) => return json!({"ok": false, "error": format!("not a ctx request: {e}")}),
    };
    let ctx = ctx.clone();
    // Notes and memory writes commit to SQLite, which blocks: keep it off the runtime.
    let done = tokio::task::spawn_blocking(move || ctx.handle(request)).await;
    match done {
        Ok(Ok(value)) => json!({"ok": true, "value": value}),
        Ok(Err(error)) => json!({"ok": false, "error": error}),
        Err(_) => json!({"ok": false, "error": "the supervisor failed to answer"}),
    }
}

/// One helper call as the command line gives it: JSON arguments still as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Helper {
    /// `get [KEY]`.
    Get(Option<String>),
    /// `set KEY JSON`.
    Set(String, String),
    /// `note TEXT`.
    Note(String),
    /// `memory get [KEY]`.
    MemoryGet(Option<String>),
    /// `memory set KEY JSON`.
    MemorySet(String, String),
    /// `memory del KEY`.
    MemoryDel(String),
    /// `schedule EVENT [PAYLOAD] --after D`.
    Schedule(String, Option<String>, String),
    /// `emit EVENT [PAYLOAD]`.
    Emit(String, Option<String>),
    /// `wait`.
    Wait,
    /// `outcome-schema`.
    OutcomeSchema,
    /// `usage NAME=NUMBER ...` (ours).
    Usage(Vec<String>),
}

fn json_arg(what: &str, given: &str) -> Result<Value, String> {
    // Inline, `@FILE` or `-` (standard input), as every JSON argument.
    let (text, what) = stateous_shared::json_arg::json_text(given, what)?;
    serde_json::from_str(&text).map_err(|_| {
        format!("{what} '{text}' is not JSON; write a string with its quotes, e.g. '\"text\"'")
    })
}

impl Helper {
    /// The protocol request of this call, or why the arguments are wrong.
    pub fn request(self) -> Result<Request, String> {
        let payload = |p: Option<String>| p.map(|t| json_arg("the payload", &t)).transpose();
        Ok(match self {
            Helper::Get(key) => Request::Get { key },
            Helper::Set(key, value) => Request::Set {
                value: json_arg("the value", &value)?,
                key,
            },
            Helper::Note(text) => Request::Note { text },
            Helper::MemoryGet(key) => Request::MemoryGet { key },
            Helper::MemorySet(key, value) => Request::MemorySet {
                value: json_arg("the value", &value)?,
                key,
            },
            Helper::MemoryDel(key) => Request::MemoryDel { key },
            Helper::Schedule(event, p, after) => Request::Schedule {
                payload: payload(p)?,
                event,
                after,
            },
            Helper::Emit(event, p) => Request::Emit {
                payload: payload(p)?,
                event,
            },
            Helper::Wait => Request::Wait,
            Helper::OutcomeSchema => Request::OutcomeSchema,
            Helper::Usage(pairs) => Request::Usage {
                usage: stateous_shared::usage::parse_pairs(&pairs, false)?,
            },
        })
    }
}

/// Run one helper call: send it to the socket `STATEOUS_CTX` names and print the
/// answer's value (JSON; with `raw`, a string without its quotes). Errors: one
/// sentence, which the binary prints after `error: ` (exit code 1).
pub fn run_helper(helper: Helper, raw: bool) -> Result<(), String> {
    let Some(socket) = std::env::var_os(CTX_ENV) else {
        return Err(format!(
            "{CTX_ENV} is not set: `stateous ctx` works inside a routine that \
             `stateous supervise` runs"
        ));
    };
    let request = helper.request()?;
    let text = match call(Path::new(&socket), &request)? {
        Value::Null => return Ok(()),
        Value::String(text) if raw => text,
        value => serde_json::to_string_pretty(&value).unwrap_or_default(),
    };
    // A reader that stopped early (`stateous ctx get | grep -q x`) is no error of
    // the routine's: the answer was taken, only its printing was cut short.
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot print the answer: {error}"))
        }
        _ => Ok(()),
    }
}

/// Send one request over the socket at `path` and read its answer.
pub fn call(path: &Path, request: &Request) -> Result<Value, String> {
    let mut stream = std::os::unix::net::UnixStream::connect(path).map_err(|e| {
        format!(
            "cannot reach the supervisor at {} ({e}); is the routine still running?",
            path.display()
        )
    })?;
    let mut line = serde_json::to_string(request).map_err(|e| e.to_string())?;
    line.push('\n');
    stream
        .write_all(line.as_bytes())
        .map_err(|e| format!("the supervisor did not take the request: {e}"))?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .map_err(|e| format!("the supervisor did not answer: {e}"))?;
    let answer: Value = serde_json::from_str(&answer)
        .map_err(|_| "the supervisor's answer is not JSON".to_string())?;
    if answer["ok"] == Value::Bool(true) {
        Ok(answer.get("value").cloned().unwrap_or(Value::Null))
    } else {
        Err(answer["error"]
            .as_str()
            .unwrap_or("the supervisor refused the request")
            .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;
    use crate::ctx::Sink;
    use crate::outbox::Kind;

    struct Nowhere;

    impl Sink for Nowhere {
        fn put(&self, _: Kind, _: Value) -> Result<(), String> {
            Ok(())
        }
    }

    fn run_ctx() -> Arc<RunCtx> {
        let doc = json!({"workflow": "w", "states": {"s": {"emits": ["go"]}},
                         "events": {"go": {}}});
        let contract = Arc::new(Contract::from_graph(&doc, "sha256:0").unwrap());
        let grant = serde_json::from_value(json!({"task": 1, "token": "T", "state": "s",
            "visit": 1, "attempt": 1, "context": {"k": "v"}, "memory": {}}))
        .unwrap();
        Arc::new(RunCtx::new(grant, contract, Arc::new(Nowhere)))
    }

    #[tokio::test]
    async fn the_protocol_answers_each_line_and_the_helper_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sock");
        let ctx = run_ctx();
        let server = tokio::spawn(serve(UnixListener::bind(&path).unwrap(), ctx.clone()));
        let asked = path.clone();
        let got = tokio::task::spawn_blocking(move || {
            let key = call(
                &asked,
                &Request::Get {
                    key: Some("k".into()),
                },
            );
            let wrong = call(
                &asked,
                &Request::Get {
                    key: Some("x".into()),
                },
            );
            let emit = call(
                &asked,
                &Request::Emit {
                    event: "go".into(),
                    payload: None,
                },
            );
            (key, wrong, emit)
        })
        .await
        .unwrap();
        assert_eq!(got.0, Ok(json!("v")));
        assert_eq!(got.1, Err("the context has no key 'x'".to_string()));
        assert_eq!(got.2, Ok(Value::Null));
        assert_eq!(ctx.outcome(None).kind, "event");

        let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        stream
            .write_all(b"not json\n{\"op\": \"wait\"}\n")
            .await
            .unwrap();
        let mut lines = tokio::io::BufReader::new(stream).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first["ok"], false);
        assert!(first["error"]
            .as_str()
            .unwrap()
            .starts_with("not a ctx request"));
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["ok"], false, "the outcome is given already");
        server.abort();
    }

    #[test]
    fn helper_arguments_are_json() {
        let request = Helper::Set("n".into(), "2".into()).request().unwrap();
        assert_eq!(
            request,
            Request::Set {
                key: "n".into(),
                value: json!(2)
            }
        );
        let err = Helper::Emit("go".into(), Some("{oops".into()))
            .request()
            .unwrap_err();
        assert!(err.starts_with("the payload '{oops' is not JSON"), "{err}");
        // `@FILE`: the file's JSON, as every JSON argument of the command line.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.json");
        std::fs::write(&file, r#"{"pr": 7}"#).unwrap();
        let request = Helper::Emit("go".into(), Some(format!("@{}", file.display())))
            .request()
            .unwrap();
        assert_eq!(
            request,
            Request::Emit {
                event: "go".into(),
                payload: Some(json!({"pr": 7}))
            }
        );
        let err = Helper::Set("n".into(), "@/nonexistent/v.json".into())
            .request()
            .unwrap_err();
        assert!(
            err.starts_with("the value: the file /nonexistent/v.json cannot be read"),
            "{err}"
        );
    }
}
