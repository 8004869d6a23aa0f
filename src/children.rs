//! The daemon and a supervisor as child processes of this same binary, for the
//! commands that run a whole setup of their own (`demo`, `bench-routines`): each
//! child stays what it is in production, and is stopped when the command ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use stateous_client::Client;

/// Finish the supervisor's folder `at`, whose routines are written: its
/// `stateous.yaml` (`url`, then the lines of `settings`), its contract for the
/// graph file `graph`, and what `stateous init supervisor` adds.
pub fn supervisor_folder(at: &Path, url: &str, graph: &Path, settings: &str) -> Result<()> {
    let settings = format!("url: {}\n{settings}", serde_json::to_string(url)?);
    std::fs::write(at.join("stateous.yaml"), settings)?;
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(graph)?)?;
    let checksum = stateous_shared::graph::checksum(&document);
    let contract = stateous_supervisor::contract::Contract::from_graph(&document, &checksum)
        .map_err(|e| anyhow::anyhow!(e.0))?;
    stateous_supervisor::init::write_folder(at, url, &contract)?;
    Ok(())
}

/// A temporary folder and the processes started in it; dropping it stops them
/// (the last started first) and removes the folder, unless it was kept.
pub struct Setup {
    /// The folder: the database, the graph file, the supervisor's folder, the logs.
    pub folder: PathBuf,
    /// This program's own path, which the children run.
    pub exe: PathBuf,
    children: Vec<Child>,
    /// Leave the folder when dropped (its logs explain a failure).
    keep: bool,
}

impl Setup {
    /// A new folder `stateous-<what>-<pid>` in the temp folder.
    pub fn new(what: &str) -> Result<Setup> {
        let exe = std::env::current_exe().context("cannot find this program's own path")?;
        let folder = std::env::temp_dir().join(format!("stateous-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&folder).context("cannot make a temporary folder")?;
        Ok(Setup {
            folder,
            exe,
            children: Vec::new(),
            keep: false,
        })
    }

    /// Stop the processes when dropped, but leave the folder: an error names a
    /// log in it.
    pub fn keep_folder(&mut self) {
        self.keep = true;
    }

    /// `stateous serve GRAPH` on `<folder>/stateous.db`, any free port, the socket
    /// `<folder>/d.sock`, with `extra` flags (timings). Its log is `serve.log`.
    /// Answers the socket's URL.
    pub fn serve(&mut self, graph: &Path, extra: &[&str]) -> Result<String> {
        let socket = self.folder.join("d.sock");
        let log = std::fs::File::create(self.folder.join("serve.log"))?;
        let child = Command::new(&self.exe)
            .arg("serve")
            .arg(graph)
            .arg("--db")
            .arg(format!(
                "sqlite:///{}",
                self.folder.join("stateous.db").display()
            ))
            .args(["--listen", "127.0.0.1:0", "--socket"])
            .arg(&socket)
            .args(extra)
            .current_dir(&self.folder)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("cannot start the daemon")?;
        self.children.push(child);
        Ok(format!("unix://{}", socket.display()))
    }

    /// `stateous supervise FOLDER`; the routines call `stateous ctx`, so this
    /// program's folder goes first on their `PATH`. Its log is `supervise.log`.
    pub fn supervise(&mut self, supervisor: &Path) -> Result<()> {
        let log = std::fs::File::create(self.folder.join("supervise.log"))?;
        let child = Command::new(&self.exe)
            .arg("supervise")
            .arg(supervisor)
            .env("PATH", self.path_with_exe())
            .env_remove("STATEOUS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("cannot start the supervisor")?;
        self.children.push(child);
        Ok(())
    }

    fn path_with_exe(&self) -> OsString {
        let mut path = self
            .exe
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .into_os_string();
        if let Some(rest) = std::env::var_os("PATH") {
            path.push(":");
            path.push(rest);
        }
        path
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            stop(child);
        }
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

/// Ask a child to stop (SIGTERM twice: a supervisor then ends its routines too),
/// and kill it if it has not within 3 seconds.
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

/// Wait until the daemon answers, at most 10 s.
pub async fn wait_for(client: &Client) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.health().await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() > deadline => {
                bail!("the daemon did not start: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}
