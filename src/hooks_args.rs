//! `stateous hooks ...`: check a hooks file against a graph, print the headers a
//! sender would send for a body, and measure deliveries per second
//! (`docs/reference/cli.md`, "stateous hooks"; the file: `docs/reference/files.md`).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use stateous_shared::graph::Graph;
use stateous_shared::hooks::{self, sign, HookSpec, Verify};

/// `stateous hooks`.
#[derive(Subcommand)]
pub enum HooksCommand {
    /// Check a hooks file: every problem at once (unknown events, unset variables,
    /// bad templates), exit 1 if there is any
    Check {
        /// The hooks file.
        file: PathBuf,
        /// The graph file the hooks fire events into.
        #[arg(long, value_name = "GRAPH")]
        graph: PathBuf,
        /// Accept hooks with `verify: none`, as `serve --insecure` does.
        #[arg(long)]
        insecure: bool,
    },
    /// Print the headers a sender would send with BODY_FILE, for trying a hook
    /// with curl
    ///
    /// The secret is read from the hook's `secret_env` variable, as serve reads
    /// it. One `Name: value` line per header, e.g. for
    /// `curl -H @headers.txt --data-binary @BODY_FILE URL/hooks/NAME`.
    Sign {
        /// The hook's name.
        name: String,
        /// The body to send, as is.
        body_file: PathBuf,
        /// The hooks file.
        #[arg(long, value_name = "FILE", default_value = "hooks.yaml")]
        hooks: PathBuf,
        /// The delivery id [default: a new one].
        #[arg(long)]
        id: Option<String>,
        /// Standard Webhooks: the timestamp, in seconds since the epoch [default: now].
        #[arg(long, allow_hyphen_values = true)]
        timestamp: Option<i64>,
    },
    /// Measure a control plane's hook: signed deliveries per second
    Bench(BenchHooksArgs),
}

/// `stateous hooks bench`.
#[derive(Args)]
pub struct BenchHooksArgs {
    /// The hook's name; its templates must read `{body.token}` and `{body.event}`
    /// (as `assets/bench/hooks.yaml`).
    #[arg(long, default_value = "bench")]
    pub hook: String,
    /// The hooks file the daemon serves (for the hook's kind and secret).
    #[arg(long, value_name = "FILE")]
    pub hooks: PathBuf,
    /// The event each delivery names.
    #[arg(long, default_value = "submitted")]
    pub event: String,
    #[command(flatten)]
    pub url: crate::client_args::UrlArg,
    /// How many deliveries (each a new token).
    #[arg(long, default_value_t = 10_000)]
    pub deliveries: usize,
    /// How many are sent at once.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Also send each delivery a second time, which must be a duplicate.
    #[arg(long)]
    pub redeliver: bool,
    /// Give up, with exit code 1, after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub max_seconds: u64,
}

/// Run a `stateous hooks` command; its exit code.
pub fn run(command: HooksCommand) -> i32 {
    let done = match command {
        HooksCommand::Check {
            file,
            graph,
            insecure,
        } => check(&file, &graph, insecure),
        HooksCommand::Sign {
            name,
            body_file,
            hooks,
            id,
            timestamp,
        } => sign_command(&name, &body_file, &hooks, id, timestamp),
        HooksCommand::Bench(args) => crate::commands::bench_hooks::run(args),
    };
    crate::cli_errors::exit_code(done.map(|()| 0))
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Every problem of `file` for `graph`, at once: the file's own, then the
/// environment's, then the graph's.
fn check(file: &Path, graph: &Path, insecure: bool) -> Result<(), String> {
    let text = read(file, "hooks file")?;
    let graph = Graph::load(&read(graph, "graph file")?)
        .map_err(|e| format!("{} is not a graph file: {}", graph.display(), e.0))?;
    let shown = file.display().to_string();
    let (specs, mut problems) = hooks::parse_partly(&text, &shown);
    problems.extend(hooks::keys(&specs, env, insecure).err().unwrap_or_default());
    problems.extend(hooks::check_against(&specs, &graph));
    if problems.is_empty() {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        println!(
            "{shown}: {} hook(s), fine: {}",
            names.len(),
            names.join(", ")
        );
        return Ok(());
    }
    Err(format!(
        "the hooks file {shown} is not valid:\n  {}",
        problems.join("\n  ")
    ))
}

/// The hook `name` of `file` and its current key.
pub fn hook_and_key(file: &Path, name: &str) -> Result<(HookSpec, Vec<u8>), String> {
    let shown = file.display().to_string();
    let specs = hooks::parse(&read(file, "hooks file")?, &shown).map_err(|p| p.join("\n  "))?;
    let Some(hook) = specs.into_iter().find(|h| h.name == name) else {
        return Err(format!("{shown} has no hook {name:?}"));
    };
    let mut keys = hooks::keys(std::slice::from_ref(&hook), env, true).map_err(|p| p.join("; "))?;
    let key = keys
        .pop()
        .and_then(|mut k| (!k.is_empty()).then(|| k.remove(0)));
    Ok((hook, key.unwrap_or_default()))
}

/// The headers of a delivery of `body` to `hook`: `(name, value)` pairs.
pub fn headers(
    hook: &HookSpec,
    key: &[u8],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(String, String)> {
    let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
    match hook.verify {
        Verify::Github => {
            headers.push(("X-GitHub-Delivery".into(), id.into()));
            headers.push((
                "X-Hub-Signature-256".into(),
                sign::github_signature(key, body),
            ));
        }
        Verify::Standard => {
            headers.push(("webhook-id".into(), id.into()));
            headers.push(("webhook-timestamp".into(), timestamp.to_string()));
            let signature = sign::standard_signature(key, id, timestamp, body);
            headers.push(("webhook-signature".into(), signature));
        }
        Verify::None => {}
    }
    headers
}

fn sign_command(
    name: &str,
    body_file: &Path,
    file: &Path,
    id: Option<String>,
    timestamp: Option<i64>,
) -> Result<(), String> {
    let (hook, key) = hook_and_key(file, name)?;
    let body = std::fs::read(body_file)
        .map_err(|e| format!("cannot read the body {}: {e}", body_file.display()))?;
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let now = i64::try_from(since.as_secs()).unwrap_or(0);
    let id = id.unwrap_or_else(|| format!("msg_{:x}{:x}", since.as_nanos(), std::process::id()));
    for (name, value) in headers(&hook, &key, &id, timestamp.unwrap_or(now), &body) {
        println!("{name}: {value}");
    }
    Ok(())
}
