//! The runner through the spawner (`spawner/`), in a process of this test's own:
//! `spawner::start` needs a process with one thread, which the test harness is
//! not, so this file has its own `main` (`harness = false`) and runs each check in
//! turn. The last ones kill the spawner.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stateous_shared::wire::Grant;
use stateous_supervisor::routines::Program;
use stateous_supervisor::runner::{self, Ended, Exit, RunSpec};
use stateous_supervisor::spawner;
use stateous_supervisor::stop::Stop;

fn main() {
    spawner::start().expect("the spawner starts: this process has one thread");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        check(
            "a_routine_gets_its_grant_env_folder_and_exit_status",
            a_routine_gets_its_grant_env_folder_and_exit_status,
        )
        .await;
        check(
            "a_killed_routine_ends_by_sigterm_to_its_group",
            a_killed_routine_ends_by_sigterm_to_its_group,
        )
        .await;
        check(
            "a_missing_program_does_not_start_and_says_why",
            a_missing_program_does_not_start_and_says_why,
        )
        .await;
        check(
            "many_routines_at_once_each_get_their_own_status",
            many_routines_at_once_each_get_their_own_status,
        )
        .await;
        check(
            "when_the_spawner_dies_its_routine_group_stops_and_the_next_starts_anyway",
            when_the_spawner_dies_its_routine_group_stops_and_the_next_starts_anyway,
        )
        .await;
    });
    println!("test result: ok. 5 passed");
}

/// Run one check in a folder of its own.
async fn check<F, R>(name: &str, body: F)
where
    F: FnOnce(PathBuf) -> R,
    R: std::future::Future<Output = ()>,
{
    let folder = tempfile::tempdir().expect("a folder");
    body(folder.path().to_path_buf()).await;
    println!("test {name} ... ok");
}

fn grant(task: i64) -> Grant {
    Grant {
        task,
        token: format!("T-{task}"),
        state: "coding".into(),
        visit: 1,
        attempt: 2,
        context: serde_json::from_str(r#"{"repo": "acme"}"#).expect("an object"),
        memory: Default::default(),
        entered_by: None,
        traceparent: None,
    }
}

fn spec(folder: &Path) -> RunSpec {
    RunSpec {
        folder: folder.to_path_buf(),
        log_file: folder.join(".stateous/logs/run.log"),
        ctx_socket: folder.join("ctx.sock"),
        grace: Duration::from_secs(2),
    }
}

async fn run(folder: &Path, task: i64, line: &str, kill: &Stop) -> Exit {
    let program = Program::Command(line.into());
    runner::run(&program, &grant(task), &spec(folder), kill).await
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

/// The process whose parent is this one: the spawner.
fn spawner_pid() -> i32 {
    let ours = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit(") ").next().and_then(|r| r.split(' ').nth(1)) == Some(&ours)
            })
        })
        .expect("a child process: the spawner")
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')),
        Err(_) => true,
    }
}

async fn a_routine_gets_its_grant_env_folder_and_exit_status(folder: PathBuf) {
    let folder = folder.as_path();
    let line = "read grant; echo \"$grant\" > grant.json\n\
                echo $STATEOUS_TASK $STATEOUS_ATTEMPT $STATEOUS_STATE > env.txt\n\
                echo $PPID > parent.txt; pwd > folder.txt\n\
                echo out; echo err >&2; exit 3";
    let exit = run(folder, 7, line, &Stop::new()).await;
    assert_eq!(exit.ended, Ended::Exited(3), "{exit:?}");
    assert_eq!(exit.stderr_tail, ["err"]);
    let given: serde_json::Value =
        serde_json::from_str(&read(folder.join("grant.json"))).expect("the grant");
    assert_eq!(given["token"], "T-7");
    assert_eq!(given["context"]["repo"], "acme");
    assert_eq!(read(folder.join("env.txt")), "7 2 coding");
    let parent: u32 = read(folder.join("parent.txt")).parse().expect("a pid");
    assert_ne!(parent, std::process::id(), "the spawner started it");
    assert_eq!(
        PathBuf::from(read(folder.join("folder.txt")))
            .canonicalize()
            .ok(),
        folder.canonicalize().ok()
    );
    // Two readers, one per stream: the file has both lines, in either order.
    let mut kept: Vec<String> = read(folder.join(".stateous/logs/run.log"))
        .lines()
        .map(String::from)
        .collect();
    kept.sort();
    assert_eq!(kept, ["err", "out"]);
}

async fn a_killed_routine_ends_by_sigterm_to_its_group(folder: PathBuf) {
    let folder = folder.as_path();
    let kill = Stop::new();
    let later = kill.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.set();
    });
    let began = Instant::now();
    let exit = run(folder, 1, "sleep 30 & echo $! > child.pid; wait", &kill).await;
    assert_eq!(exit.ended, Ended::Signalled(libc::SIGTERM), "{exit:?}");
    assert!(began.elapsed() < Duration::from_secs(2), "within the grace");
    let child: i32 = read(folder.join("child.pid")).parse().expect("a pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(child) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(child), "the whole group got SIGTERM");
}

async fn a_missing_program_does_not_start_and_says_why(folder: PathBuf) {
    let folder = folder.as_path();
    let program = Program::File(folder.join("missing.sh"));
    let exit = runner::run(&program, &grant(1), &spec(folder), &Stop::new()).await;
    assert_eq!(
        exit.ended,
        Ended::NotStarted(
            "the routine missing.sh could not start: No such file or directory (os error 2)".into()
        )
    );
}

async fn many_routines_at_once_each_get_their_own_status(folder: PathBuf) {
    let mut runs = tokio::task::JoinSet::new();
    for task in 1..=40 {
        let folder = folder.clone();
        runs.spawn(async move {
            let exit = run(&folder, task, "exit $((STATEOUS_TASK % 7))", &Stop::new()).await;
            (task, exit.ended)
        });
    }
    let mut seen = 0;
    while let Some(done) = runs.join_next().await {
        let (task, ended) = done.expect("a run");
        assert_eq!(ended, Ended::Exited((task % 7) as i32), "task {task}");
        seen += 1;
    }
    assert_eq!(seen, 40);
}

async fn when_the_spawner_dies_its_routine_group_stops_and_the_next_starts_anyway(folder: PathBuf) {
    let folder = folder.as_path();
    let spawner = spawner_pid();
    let never = Stop::new();
    // It ignores SIGTERM, and so does its child: only SIGKILL after the grace
    // stops them.
    let line = "trap '' TERM; echo $$ > routine.pid; sleep 30 & echo $! > child.pid; wait";
    let running = run(folder, 1, line, &never);
    let killer = async {
        let pid_file = folder.join("routine.pid");
        while !pid_file.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        // SAFETY: kill(2) on our own child has no memory effects.
        unsafe { libc::kill(spawner, libc::SIGKILL) };
    };
    let (exit, ()) = tokio::join!(running, killer);
    let Ended::NotStarted(why) = &exit.ended else {
        panic!("{exit:?}");
    };
    assert!(why.contains("spawner ended before the routine"), "{why}");
    let deadline = Instant::now() + Duration::from_secs(5);
    for name in ["routine.pid", "child.pid"] {
        let pid: i32 = read(folder.join(name)).parse().expect("a pid");
        while !gone(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !gone(pid) {
            // SAFETY: kill(2) on a pid the routine wrote has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{name}: the routine's group got SIGKILL after the grace");
        }
    }
    let exit = run(folder, 2, "echo $PPID > parent.txt", &Stop::new()).await;
    assert_eq!(exit.ended, Ended::Exited(0), "{exit:?}");
    let parent: u32 = read(folder.join("parent.txt")).parse().expect("a pid");
    assert_eq!(
        parent,
        std::process::id(),
        "the supervisor started it itself"
    );
}
