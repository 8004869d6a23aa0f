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
                let answer = answer(&ctx, &line).await;
                let mut text = answer.to_string();
                text.push('\n');
                if write.write_all(text.as_bytes()).await.is_err() {
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
}

fn json_arg(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|_| {
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
        })
    }
}

/// Run one helper call: send it to the socket `STATEOUS_CTX` names and print the
/// answer's value (JSON; with `raw`, a string without its quotes). Returns the
/// exit code: 0, or 1 after `error: ...` on stderr.
pub fn run_helper(helper: Helper, raw: bool) -> i32 {
    let Some(socket) = std::env::var_os(CTX_ENV) else {
        eprintln!(
            "error: {CTX_ENV} is not set: `stateous ctx` works inside a routine that \
             `stateous supervise` runs"
        );
        return 1;
    };
    let answer = helper
        .request()
        .and_then(|request| call(Path::new(&socket), &request));
    match answer {
        Ok(Value::Null) => 0,
        Ok(Value::String(text)) if raw => {
            println!("{text}");
            0
        }
        Ok(value) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
            0
        }
        Err(error) => {
            eprintln!("error: {error}");
            1
        }
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
