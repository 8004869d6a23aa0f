//! `stateous demo`: a daemon on a temporary SQLite file with the bundled `demo`
//! workflow, a supervisor with the bundled routines, a few tokens (one retries after a
//! failure, one times out, one goes round the loop, and one is left paused, so that the
//! TUI has a token to steer once the others have ended), then the TUI; without a
//! terminal, the tokens' histories once the others end.
//!
//! The daemon and the supervisor run as child processes of this same binary, so
//! that each stays what it is in production; the workflow and the routines come
//! from `assets/`, built in.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use stateous_client::Client;
use stateous_shared::history::{entry_line, token_line};

use crate::children::{supervisor_folder, wait_for, Setup};

const FLOW: &str = include_str!("../assets/demo/flow.yaml");
const CODING: &str = include_str!("../assets/demo-supervisor/coding.sh");
const TESTING: &str = include_str!("../assets/demo-supervisor/testing.sh");

/// The supervisor's settings: short timings, so that the demo moves in seconds.
const SUPERVISOR_YAML: &str = "tasks: 4\nname: demo-box\nheartbeat: 1s\nidle: 200ms\n";

/// The demo's tokens: id, context.
fn tokens() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("DEMO-1", json!({"title": "fix the login page"})),
        ("DEMO-2", json!({"title": "a flaky build", "flaky": true})),
        ("DEMO-3", json!({"title": "tests that hang", "slow": true})),
        (
            "DEMO-4",
            json!({"title": "a failing test", "failing": true}),
        ),
    ]
}

/// The token left waiting: paused as soon as it starts, in `coding` (whose
/// timeout stands still while it is paused). `r` in the TUI resumes it; what its
/// routine reported meanwhile was held, and then applies.
const WAITING: &str = "DEMO-5";

/// What the waiting token's context says, so that the TUI tells what to do.
fn waiting_context() -> serde_json::Value {
    json!({"title": "waits for you: select it, r resumes it"})
}

/// How long, without a terminal, the demo waits for its tokens to end.
const AT_MOST: Duration = Duration::from_secs(60);

/// Run the demo; the exit code is 0 when it ran.
pub fn run() -> Result<()> {
    let mut demo = Setup::new("demo")?;
    let folder = demo.folder.clone();
    let graph = write_workflow(&folder)?;
    let url = demo.serve(&graph, &["--lease", "10s", "--tick", "200ms"])?;
    let supervisor = write_supervisor(&folder, &url, &graph)?;
    let runtime =
        stateous_client::runtime::runtime(stateous_client::runtime::Threads::Workers(None))
            .context("cannot start the runtime")?;
    let client = Client::new(&url)?;
    runtime.block_on(wait_for(&client))?;
    demo.supervise(&supervisor)?;
    runtime.block_on(start_tokens(&client))?;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        drop(runtime);
        let options = stateous_tui::Options {
            connection: stateous_client::Connection {
                url: Some(url),
                ..Default::default()
            },
            read_only: false,
            color: stateous_tui::color_wanted(),
            filter: None,
        };
        stateous_tui::run(options)?;
        return Ok(());
    }
    runtime.block_on(print_histories(&client))
}

/// The demo workflow, compiled, as `demo.json`.
fn write_workflow(folder: &Path) -> Result<PathBuf> {
    let compiled = stateous_shared::compiler::compile_text(FLOW, "demo/flow.yaml")?;
    let graph = folder.join("demo.json");
    stateous_shared::compiler::write_graph(&graph, &compiled.document)?;
    Ok(graph)
}

/// The supervisor's folder: the routines, its settings, its contract.
fn write_supervisor(folder: &Path, url: &str, graph: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let at = folder.join("demo-supervisor");
    std::fs::create_dir_all(&at)?;
    for (name, text) in [("coding.sh", CODING), ("testing.sh", TESTING)] {
        let path = at.join(name);
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    supervisor_folder(&at, url, graph, SUPERVISOR_YAML)?;
    Ok(at)
}

/// Start the tokens, and the waiting one, paused at once.
async fn start_tokens(client: &Client) -> Result<()> {
    for (id, context) in tokens() {
        let context = context.as_object().cloned().unwrap_or_default();
        client.start(id, &context).await?;
    }
    let context = waiting_context().as_object().cloned().unwrap_or_default();
    client.start(WAITING, &context).await?;
    client.pause(WAITING).await?;
    Ok(())
}

/// Without a terminal: wait until every token but the waiting one ended (at most
/// [`AT_MOST`]), then print each one's line and history, the waiting one's last.
async fn print_histories(client: &Client) -> Result<()> {
    let deadline = Instant::now() + AT_MOST;
    let ended = |status: &str| matches!(status, "completed" | "failed" | "cancelled");
    loop {
        let mut all = true;
        for (id, _) in tokens() {
            all &= ended(&client.token(id).await?.status);
        }
        if all || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut text = String::new();
    let all = tokens().into_iter().map(|(id, _)| id).chain([WAITING]);
    for id in all {
        text.push_str(&format!("{}\n", token_line(&client.token(id).await?)));
        for entry in client.history(id).await? {
            text.push_str(&format!("  {}\n", entry_line(&entry)));
        }
        text.push('\n');
    }
    // A reader that stops early (`stateous demo | head`) is not an error.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
