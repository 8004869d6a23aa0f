//! Black-box: a soak with seeded faults. Real `stateous serve` and two `stateous
//! supervise` processes (behind a proxy that cuts and black-holes their
//! connections) run a small workflow while the daemon and the supervisors are
//! killed and paused (and, on Postgres, their sessions ended), a fault every 1 to
//! 3 s; clients start tokens and fire keyed events, each key 1 to 3 times. Then a
//! checker reads what happened against the guarantees of `docs/guarantees.md`.
//!
//! `STATEOUS_SOAK_SEED` repeats a run (as far as the OS schedules alike) and
//! `STATEOUS_SOAK_SECONDS` sets the length of the faults (30 s by default);
//! `scripts/soak.sh` runs a long one.

mod check;
mod faults;
mod proxy;
mod workload;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::harness;
use crate::harness::{backend, run, Setup};
use crate::supervising::{folder_named, set_urls, Supervise};

use faults::{Fault, Rng, Target};
use proxy::Proxy;
use workload::Clients;

/// The workflow: `work` runs a routine (retries enough for every fault to end
/// attempts), then `gate` waits for the keyed event `go` from outside.
const FLOW: &str = "workflow: soak
context: Job
states:
  work: {retries: 60}
  gate: {}
events:
  done: {}
  go: {}
transitions:
  - {from: START, to: work}
  - {from: work, to: gate, on: done}
  - {from: gate, to: END, on: go}
schemas:
  Job:
    type: object
    properties:
      repo: {type: string}
      fails: {type: integer}
      pause: {type: integer}
";

/// The routine of `work`: it logs its grant (the checker reads them), says what
/// memory it sees, writes its own (`aN` for attempt N), waits the token's
/// `pause`, and fails the token's first `fails` attempts.
const ROUTINE: &str = r#"#!/usr/bin/env python3
import json, os, subprocess, sys, time
grant = json.loads(sys.stdin.readline())
token, attempt, context = grant["token"], grant["attempt"], grant["context"]
os.makedirs("grants", exist_ok=True)
with open(f"grants/{token}.{attempt}.{os.getpid()}.json", "w") as f:
    json.dump(grant, f)
print(f"attempt {attempt} sees memory {sorted(grant.get('memory') or {})}", file=sys.stderr)
subprocess.run(["stateous", "ctx", "memory", "set", f"a{attempt}", "true"], check=True)
time.sleep(context.get("pause", 300) / 1000)
if attempt <= context.get("fails", 0):
    sys.exit(1)
subprocess.run(["stateous", "ctx", "emit", "done"], check=True)
"#;

/// The run's seed: `STATEOUS_SOAK_SEED`, or the clock's nanoseconds.
fn run_seed() -> u64 {
    match std::env::var("STATEOUS_SOAK_SEED") {
        Ok(text) => text.trim().parse().expect("STATEOUS_SOAK_SEED is a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

/// How long the faults last: `STATEOUS_SOAK_SECONDS`, or 30 s.
fn seconds() -> u64 {
    std::env::var("STATEOUS_SOAK_SECONDS")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(30)
}

/// The graph file of [`FLOW`], compiled by `stateous compile` in `dir`.
fn compiled(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("flow.yaml"), FLOW).expect("flow.yaml");
    let made = run(dir, &["compile", "flow.yaml"]);
    assert_eq!(made.code(), 0, "{made}");
    dir.join("build/soak.json")
}

/// A supervisor folder reaching the daemon through `proxy`, running [`ROUTINE`].
fn supervisor_folder(daemon: &crate::harness::Daemon, proxy: &Proxy, name: &str) -> PathBuf {
    let folder = folder_named(daemon, name, name, &[]);
    // `gate` has no routine: it waits for the clients' `go`.
    for stub in ["work.sh", "gate.sh"] {
        std::fs::remove_file(folder.join(stub)).expect("a stub of init");
    }
    let routine = folder.join("work.py");
    std::fs::write(&routine, ROUTINE).expect("the routine");
    std::fs::set_permissions(&routine, std::fs::Permissions::from_mode(0o755)).expect("mode");
    set_urls(&folder, &[&format!("http://{}", proxy.authority)]);
    let config = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&config).expect("stateous.yaml");
    std::fs::write(&config, text + "request_timeout: 2s\n").expect("stateous.yaml");
    folder
}

fn faults_keep_every_guarantee() {
    let seed = run_seed();
    let (seconds, backend) = (seconds(), backend());
    eprintln!(
        "soak: seed {seed} on {backend:?}, {seconds} s of faults (STATEOUS_SOAK_SEED={seed})"
    );
    let graph_dir = tempfile::tempdir().expect("a temp folder");
    let daemon = Setup::new(compiled(graph_dir.path()))
        .args(&["--lease", "3s", "--stale-after", "1s"])
        .start();
    let proxy = Proxy::start(&daemon.authority);
    let folders: Vec<PathBuf> = ["sup-a", "sup-b"]
        .iter()
        .map(|name| supervisor_folder(&daemon, &proxy, name))
        .collect();
    let supervisors = folders.iter().map(|f| Supervise::start(f)).collect();
    let ending = Arc::new(AtomicBool::new(false));
    let clients = Clients {
        authority: daemon.authority.clone(),
        seed,
        ending: ending.clone(),
        drain: Duration::from_secs(120),
    };
    let clients = std::thread::spawn(move || clients.run());
    let mut target = Target {
        daemon,
        supervisors,
        folders,
        proxy,
        old_logs: Vec::new(),
        counts: BTreeMap::new(),
        restarts: 0,
    };
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(rng.millis(1000, 3000));
        let fault = Fault::pick(&mut rng, backend, target.supervisors.len());
        target.apply(fault);
    }
    ending.store(true, Ordering::SeqCst);
    let record = clients.join().expect("the clients end");
    // A running supervisor holds its outbox alone: a graceful stop sends what is
    // left in it (the daemon is up), then the checker reads it.
    for supervisor in &mut target.supervisors {
        supervisor.signal(libc::SIGTERM);
        supervisor.wait();
    }
    let found = check::violations(&target.daemon, &record, &target.folders, &target.logs());
    let total: u64 = target.counts.values().sum();
    eprintln!(
        "soak figures: seed {seed}, {backend:?}, {seconds} s; faults {total}: {:?}; \
         daemon started again after its hold ended {}; tokens {}; changes acknowledged {}; duplicates answered {}; requests unanswered (sent again) {}; \
         attempts logged {}; violations {}",
        target.counts,
        target.restarts,
        record.tokens.len(),
        record.changes,
        record.duplicates,
        record.unanswered,
        check::grants(&target.folders).len(),
        found.len()
    );
    assert!(
        found.is_empty(),
        "soak with seed {seed} on {backend:?} (again: STATEOUS_SOAK_SEED={seed}): {} violations:\n{}",
        found.len(),
        found.join("\n")
    );
}

both!(faults_keep_every_guarantee);
