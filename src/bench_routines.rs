//! `stateous bench-routines`: how many short program routines a supervisor runs per
//! second. It starts a daemon and a supervisor of its own on a temporary folder, with a
//! one-state workflow whose routine is a shell script that only calls `stateous ctx
//! emit done`, starts N tokens, and times the supervisor from its start to the last
//! token's end.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use stateous_client::{Client, TokenQuery};

use crate::children::{supervisor_folder, wait_for, Setup};

/// The workflow: one state, `work`, whose routine emits `done`.
const FLOW: &str = "workflow: routines\nstates:\n  work: {}\nevents:\n  done: {}\n\
transitions:\n  - {from: START, to: work}\n  - {from: work, to: END, on: done}\nschemas: {}\n";

/// The routine: as short as a real program routine can be. `{exe}` is this
/// program's own path, so that the routine runs this build's `ctx` whatever
/// `stateous` the PATH finds (none, when the binary has another name).
const ROUTINE: &str = "#!/bin/sh\nexec {exe} ctx emit done\n";

/// What to measure.
pub struct Options {
    /// How many routines (one token each) to run.
    pub routines: usize,
    /// How many routines the supervisor runs at once (`tasks` in stateous.yaml).
    pub tasks: usize,
    /// Give up after this long.
    pub max_time: Duration,
}

/// Run the benchmark and print its figures to stdout.
pub fn run(options: &Options) -> Result<()> {
    if options.routines == 0 || !(1..=1000).contains(&options.tasks) {
        bail!("--routines must be 1 or more, and --tasks 1 to 1000");
    }
    if options.max_time.is_zero() {
        bail!("--max-seconds must be at least 1");
    }
    let mut setup = Setup::new("bench-routines")?;
    let folder = setup.folder.clone();
    let graph = folder.join("routines.json");
    let compiled = stateous_shared::compiler::compile_text(FLOW, "routines/flow.yaml")?;
    stateous_shared::compiler::write_graph(&graph, &compiled.document)?;
    let url = setup.serve(&graph, &["--tick", "200ms"])?;
    let supervisor = write_supervisor(&folder, &url, &graph, options.tasks, &setup.exe)?;
    let runtime =
        stateous_client::runtime::runtime(stateous_client::runtime::Threads::Workers(None))
            .context("cannot start the runtime")?;
    let client = Client::new(&url)?;
    runtime.block_on(async {
        wait_for(&client).await?;
        for n in 0..options.routines {
            client.start(&format!("R-{n}"), &Default::default()).await?;
        }
        anyhow::Ok(())
    })?;
    let began = Instant::now();
    setup.supervise(&supervisor)?;
    let done = runtime.block_on(wait_until_completed(&client, options, began))?;
    let seconds = began.elapsed().as_secs_f64();
    println!(
        "{done} program routines in {seconds:.2} s with {} at once: {:.0} routines/s \
         (from the supervisor's start, so its start-up counts too)",
        options.tasks,
        done as f64 / seconds
    );
    let failed = runtime.block_on(failed(&client))?;
    if failed > 0 || done < options.routines {
        setup.keep_folder();
    }
    if failed > 0 {
        bail!(
            "{failed} routine(s) failed; see {}",
            folder.join("supervise.log").display()
        );
    }
    if done < options.routines {
        bail!(
            "only {done} of {} tokens completed in {:?}; see {}",
            options.routines,
            options.max_time,
            folder.join("supervise.log").display()
        );
    }
    Ok(())
}

/// The supervisor's folder: settings with short waits, the contract, the routine.
fn write_supervisor(
    folder: &Path,
    url: &str,
    graph: &Path,
    tasks: usize,
    exe: &Path,
) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let at = folder.join("routines-supervisor");
    std::fs::create_dir_all(&at)?;
    let routine = at.join("work.sh");
    let quoted = format!("'{}'", exe.display().to_string().replace('\'', r"'\''"));
    std::fs::write(&routine, ROUTINE.replace("{exe}", &quoted))?;
    std::fs::set_permissions(&routine, std::fs::Permissions::from_mode(0o755))?;
    let settings = format!("tasks: {tasks}\nname: bench-box\nidle: 50ms\n");
    supervisor_folder(&at, url, graph, &settings)?;
    Ok(at)
}

/// Poll until no token is active, or the time is up; how many ended. Each poll asks for
/// one active token only: listing up to 1000 of them every 20 ms made the daemon and
/// this process spend on the poll what the supervisor needed. The count is taken once,
/// at the end.
async fn wait_until_completed(client: &Client, options: &Options, began: Instant) -> Result<usize> {
    let any_active = TokenQuery {
        status: Some("active".into()),
        limit: Some(1),
        ..TokenQuery::default()
    };
    while began.elapsed() < options.max_time {
        if client.tokens(&any_active).await?.is_empty() {
            return Ok(options.routines);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ended(client, options.routines).await
}

/// How many tokens ended: those no longer active. The listing answers at most 1000
/// tokens, so while more are active this is a lower bound.
async fn ended(client: &Client, total: usize) -> Result<usize> {
    let query = TokenQuery {
        status: Some("active".into()),
        limit: Some(1000),
        ..TokenQuery::default()
    };
    let active = client.tokens(&query).await?.len();
    Ok(total.saturating_sub(active))
}

/// How many tokens failed (a routine that failed: the benchmark's figure is then wrong).
async fn failed(client: &Client) -> Result<usize> {
    let query = TokenQuery {
        status: Some("failed".into()),
        limit: Some(1000),
        ..TokenQuery::default()
    };
    Ok(client.tokens(&query).await?.len())
}
