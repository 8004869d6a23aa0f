//! `stateous demo` (SPEC section 3.5): a daemon on a temporary SQLite file with
//! the bundled `demo` workflow, a supervisor with the bundled routines, a few
//! tokens (one retries after a failure, one times out, one goes round the loop),
//! then the TUI; without a terminal, the tokens' histories once they end.
//!
//! The daemon and the supervisor run as child processes of this same binary, so
//! that each stays what it is in production; the workflow and the routines come
//! from `assets/`, built in.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;
use stateous_shared::client::Client;
use stateous_shared::history::{entry_line, token_line};

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

/// How long, without a terminal, the demo waits for its tokens to end.
const AT_MOST: Duration = Duration::from_secs(60);

/// The processes and files of a running demo; dropping it stops and removes them.
struct Demo {
    folder: PathBuf,
    children: Vec<Child>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            stop(child);
        }
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// Ask a child to stop (SIGTERM twice: the supervisor then ends its routines
/// too), and kill it if it has not within 3 seconds.
fn stop(child: &mut Child) {
    let pid = child.id() as libc::pid_t;
    for _ in 0..2 {
        // SAFETY: kill only sends a signal to our own child, by its pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Run the demo; the exit code is 0 when it ran.
pub fn run() -> Result<()> {
    let exe = std::env::current_exe().context("cannot find this program's own path")?;
    let folder = std::env::temp_dir().join(format!("stateous-demo-{}", std::process::id()));
    std::fs::create_dir_all(&folder).context("cannot make the demo's folder")?;
    let mut demo = Demo {
        folder: folder.clone(),
        children: Vec::new(),
    };
    let graph = write_workflow(&folder)?;
    let socket = folder.join("d.sock");
    let url = format!("unix://{}", socket.display());
    let supervisor = write_supervisor(&folder, &url, &graph)?;
    demo.children.push(serve(&exe, &folder, &graph, &socket)?);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    let client = Client::new(&url)?;
    runtime.block_on(wait_for(&client))?;
    demo.children.push(supervise(&exe, &folder, &supervisor)?);
    runtime.block_on(start_tokens(&client))?;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        drop(runtime);
        stateous_tui::run(Some(&url))?;
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
    let settings = format!("url: {}\n{SUPERVISOR_YAML}", serde_json::to_string(url)?);
    std::fs::write(at.join("stateous.yaml"), settings)?;
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(graph)?)?;
    let checksum = stateous_shared::graph::checksum(&document);
    let contract = stateous_supervisor::contract::Contract::from_graph(&document, &checksum)
        .map_err(|e| anyhow::anyhow!(e.0))?;
    stateous_supervisor::init::write_folder(&at, url, &contract)?;
    Ok(at)
}

/// `stateous serve` on a temporary database and the socket, any free port.
fn serve(exe: &Path, folder: &Path, graph: &Path, socket: &Path) -> Result<Child> {
    let log = std::fs::File::create(folder.join("serve.log"))?;
    Command::new(exe)
        .arg("serve")
        .arg(graph)
        .arg("--db")
        .arg(format!("sqlite:///{}", folder.join("demo.db").display()))
        .args(["--listen", "127.0.0.1:0", "--socket"])
        .arg(socket)
        .args(["--lease", "10s", "--tick", "200ms"])
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("cannot start the daemon")
}

/// `stateous supervise` on the demo's folder; the routines call `stateous ctx`,
/// so this program's folder goes first on their `PATH`.
fn supervise(exe: &Path, folder: &Path, supervisor: &Path) -> Result<Child> {
    let log = std::fs::File::create(folder.join("supervise.log"))?;
    let mut path = exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .into_os_string();
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(":");
        path.push(rest);
    }
    Command::new(exe)
        .arg("supervise")
        .arg(supervisor)
        .env("PATH", path)
        .env_remove("STATEOUS_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("cannot start the supervisor")
}

/// Wait until the daemon answers, at most 10 s.
async fn wait_for(client: &Client) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.health().await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() > deadline => {
                bail!("the demo's daemon did not start: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn start_tokens(client: &Client) -> Result<()> {
    for (id, context) in tokens() {
        let context = context.as_object().cloned().unwrap_or_default();
        client.start(id, &context).await?;
    }
    Ok(())
}

/// Without a terminal: wait until every token ended (at most [`AT_MOST`]), then
/// print each one's line and history.
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
    for (id, _) in tokens() {
        println!("{}", token_line(&client.token(id).await?));
        for entry in client.history(id).await? {
            println!("  {}", entry_line(&entry));
        }
        println!();
    }
    Ok(())
}
