//! Black-box: limits on claims (`docs/limits.md`), with the real `stateous serve`
//! and several `stateous supervise` processes whose program routines log when they
//! start and end to one shared file: a global limit never has more routines
//! running than its `max` (counted from the routines' own log), a per-key limit
//! runs keys side by side and never two of one key, a SIGKILL of a supervisor
//! holding a slot frees it at its lease end, a SIGKILL of the daemon over-admits
//! nothing, a lowered limit admits nothing until below, a rate spaces the claims,
//! and bad input is refused with nothing changed.

use crate::harness;
use crate::supervising;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::{asset_graph, run, Daemon, Setup};
use serde_json::{json, Value};
use supervising::{folder_named, history, wait_for_status, Supervise};

/// `testing` passes at once: the limits here are about `coding`.
const TESTING: &str = "stateous ctx emit passed '{\"passed\": 1, \"failed\": 0}'";

/// A daemon on `sdlc` with a lease of 2 s.
fn sdlc() -> Daemon {
    Setup::new(asset_graph("sdlc"))
        .args(&["--lease", "2s", "--stale-after", "1s"])
        .start()
}

/// The shared log of the routines.
fn log_path(daemon: &Daemon) -> PathBuf {
    daemon.dir.path().join("runs.log")
}

/// A `coding` routine that logs `start TOKEN` and `end TOKEN` around a sleep of
/// `seconds`, then emits `done`. The end is logged before the report, so a start
/// logged after it was claimed after its slot came back.
fn coding(log: &Path, seconds: &str) -> String {
    let log = log.display();
    format!(
        "echo \"start $STATEOUS_TOKEN $(date +%s.%N)\" >> {log}\n\
         sleep {seconds}\n\
         echo \"end $STATEOUS_TOKEN\" >> {log}\n\
         stateous ctx emit done"
    )
}

/// `count` supervisors `box-1`..., each with `tasks: 4`, whose `coding` sleeps
/// `seconds`.
fn supervisors(daemon: &Daemon, count: usize, seconds: &str) -> Vec<Supervise> {
    let script = coding(&log_path(daemon), seconds);
    (1..=count)
        .map(|n| {
            let folder = folder_named(
                daemon,
                &format!("sup{n}"),
                &format!("box-{n}"),
                &[("coding.sh", &script), ("testing.sh", TESTING)],
            );
            Supervise::start(&folder)
        })
        .collect()
}

/// `stateous limit ARGS... --url URL`.
fn limit(daemon: &Daemon, args: &[&str]) -> harness::Finished {
    let mut all = vec!["limit"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", &daemon.url]);
    run(daemon.dir.path(), &all)
}

fn start(daemon: &Daemon, id: &str, repo: &str) {
    daemon
        .post("/tokens", &json!({"token": id, "context": {"repo": repo}}))
        .expect(201);
}

/// The log's lines, each `(start|end|mark, token)`.
fn events(daemon: &Daemon) -> Vec<(String, String)> {
    std::fs::read_to_string(log_path(daemon))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect()
}

/// The most routines running at once, over all and by the key `key_of` gives
/// each token, replaying the log; and the most at once after the line `mark`.
fn most_running(
    daemon: &Daemon,
    key_of: &dyn Fn(&str) -> String,
) -> (usize, HashMap<String, usize>) {
    let (mut running, mut most) = (0usize, 0usize);
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut most_by_key: HashMap<String, usize> = HashMap::new();
    for (kind, token) in events(daemon) {
        let key = key_of(&token);
        match kind.as_str() {
            "start" => {
                running += 1;
                most = most.max(running);
                let now = by_key.entry(key.clone()).or_insert(0);
                *now += 1;
                let top = most_by_key.entry(key).or_insert(0);
                *top = (*top).max(*now);
            }
            "end" => {
                running = running.saturating_sub(1);
                if let Some(now) = by_key.get_mut(&key) {
                    *now = now.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    (most, most_by_key)
}

fn a_global_limit_of_2_over_3_supervisors_never_runs_more_than_2() {
    let daemon = sdlc();
    let set = limit(
        &daemon,
        &["set", "coding", "--states", "coding", "--max", "2"],
    );
    assert_eq!(set.code(), 0, "{set}");
    assert!(set.stdout.contains("coding  coding  0 used of 2"), "{set}");
    let _sups = supervisors(&daemon, 3, "0.3");
    for n in 1..=8 {
        start(&daemon, &format!("G-{n}"), "acme");
    }
    for n in 1..=8 {
        wait_for_status(&daemon, &format!("G-{n}"), "completed");
    }
    let (most, _) = most_running(&daemon, &|_| String::new());
    assert_eq!(most, 2, "{:?}", events(&daemon));
    let metrics = String::from_utf8_lossy(&daemon.get("/metrics").body).into_owned();
    let line = |kind: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("stateous_limit_slots{")
                    && l.contains(&format!("kind=\"{kind}\""))
                    && l.contains("limit=\"coding\"")
            })
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("max").ends_with(" 2"), "{metrics}");
    assert!(line("used").ends_with(" 0"), "{metrics}");
}

fn a_per_repo_limit_runs_repos_side_by_side_and_never_two_of_one() {
    let daemon = sdlc();
    let set = limit(
        &daemon,
        &[
            "set",
            "coding-per-repo",
            "--states",
            "coding",
            "--max",
            "1",
            "--per",
            "ctx['repo']",
        ],
    );
    assert_eq!(set.code(), 0, "{set}");
    let _sups = supervisors(&daemon, 3, "0.4");
    // Repo a's tasks queue first: a full key never holds back the others.
    let repos = ["a", "a", "a", "b", "b", "c"];
    for (n, repo) in repos.iter().enumerate() {
        start(&daemon, &format!("R-{n}"), repo);
    }
    for n in 0..repos.len() {
        wait_for_status(&daemon, &format!("R-{n}"), "completed");
    }
    let key_of = |token: &str| {
        let n: usize = token.trim_start_matches("R-").parse().unwrap_or(0);
        repos[n].to_string()
    };
    let (most, by_key) = most_running(&daemon, &key_of);
    assert!(by_key.values().all(|most| *most == 1), "{by_key:?}");
    assert!(
        most >= 2,
        "the repos ran one at a time: {:?}",
        events(&daemon)
    );
}

fn a_sigkill_of_a_supervisor_holding_a_slot_frees_it_at_its_lease_end() {
    let daemon = sdlc();
    assert_eq!(
        limit(
            &daemon,
            &["set", "coding", "--states", "coding", "--max", "1"]
        )
        .code(),
        0
    );
    let mut first = supervisors(&daemon, 1, "30");
    start(&daemon, "K-1", "acme");
    start(&daemon, "K-2", "acme");
    harness::eventually(
        Duration::from_secs(20),
        "K-1 or K-2 started",
        || format!("{:?}", events(&daemon)),
        || !events(&daemon).is_empty(),
    );
    let holder = events(&daemon)[0].1.clone();
    let waiting = if holder == "K-1" { "K-2" } else { "K-1" };
    let why = daemon.token(&["why", waiting]);
    assert!(
        why.stdout
            .contains("waiting for a slot of coding: 1 of 1 held by box-1, task"),
        "{why}"
    );
    let mut sup = first.remove(0);
    sup.child.kill().expect("SIGKILL");
    let _ = sup.child.wait();
    let killed_at = Instant::now();
    let log = log_path(&daemon);
    let folder = folder_named(
        &daemon,
        "sup-b",
        "box-b",
        &[("coding.sh", &coding(&log, "0.1")), ("testing.sh", TESTING)],
    );
    let _b = Supervise::start(&folder);
    harness::eventually(
        Duration::from_secs(20),
        "box-b started a routine",
        || format!("{:?}", events(&daemon)),
        || events(&daemon).iter().filter(|(k, _)| k == "start").count() >= 2,
    );
    // The slot came back only with the lease's end: the held attempt failed
    // with its supervisor's silence before the second start was claimed.
    let failed = history(&daemon, &holder)
        .into_iter()
        .any(|entry| entry["kind"] == "task_failed");
    assert!(failed, "{:?}", history(&daemon, &holder));
    assert!(killed_at.elapsed() >= Duration::from_secs(1));
    let other = if holder == "K-1" { "K-2" } else { "K-1" };
    wait_for_status(&daemon, other, "completed");
    wait_for_status(&daemon, &holder, "completed");
}

fn a_sigkill_of_the_daemon_over_admits_nothing() {
    let mut daemon = sdlc();
    assert_eq!(
        limit(
            &daemon,
            &["set", "coding", "--states", "coding", "--max", "1"]
        )
        .code(),
        0
    );
    let _sups = supervisors(&daemon, 2, "0.5");
    for n in 1..=4 {
        start(&daemon, &format!("D-{n}"), "acme");
    }
    harness::eventually(
        Duration::from_secs(20),
        "a routine started",
        || format!("{:?}", events(&daemon)),
        || !events(&daemon).is_empty(),
    );
    daemon.crash_and_restart();
    for n in 1..=4 {
        wait_for_status(&daemon, &format!("D-{n}"), "completed");
    }
    let (most, _) = most_running(&daemon, &|_| String::new());
    assert_eq!(most, 1, "{:?}", events(&daemon));
}

fn a_lowered_limit_admits_nothing_until_below() {
    let daemon = sdlc();
    assert_eq!(
        limit(
            &daemon,
            &["set", "coding", "--states", "coding", "--max", "3"]
        )
        .code(),
        0
    );
    let _sups = supervisors(&daemon, 1, "1");
    for n in 1..=6 {
        start(&daemon, &format!("L-{n}"), "acme");
    }
    harness::eventually(
        Duration::from_secs(20),
        "three routines running",
        || format!("{:?}", events(&daemon)),
        || events(&daemon).iter().filter(|(k, _)| k == "start").count() >= 3,
    );
    assert_eq!(
        limit(
            &daemon,
            &["set", "coding", "--states", "coding", "--max", "1"]
        )
        .code(),
        0
    );
    let marked = events(&daemon).len();
    for n in 1..=6 {
        wait_for_status(&daemon, &format!("L-{n}"), "completed");
    }
    // After the change, every start came when no routine ran.
    let all = events(&daemon);
    let mut running = 0i64;
    for (at, (kind, _)) in all.iter().enumerate() {
        match kind.as_str() {
            "start" => {
                assert!(at < marked || running == 0, "{all:?} (lowered at {marked})");
                running += 1;
            }
            _ => running -= 1,
        }
    }
}

fn a_rate_spaces_the_claims() {
    let daemon = sdlc();
    let set = limit(
        &daemon,
        &[
            "set",
            "coding",
            "--states",
            "coding",
            "--max",
            "100",
            "--rate",
            "4 per second",
        ],
    );
    assert_eq!(set.code(), 0, "{set}");
    assert!(set.stdout.contains("4 per second"), "{set}");
    let _sups = supervisors(&daemon, 2, "0");
    let began = Instant::now();
    for n in 1..=12 {
        start(&daemon, &format!("T-{n}"), "acme");
    }
    for n in 1..=12 {
        wait_for_status(&daemon, &format!("T-{n}"), "completed");
    }
    // A full bucket lets 4 through at once; the other 8 come at 4 a second.
    let took = began.elapsed();
    let starts: Vec<f64> = std::fs::read_to_string(log_path(&daemon))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("start"))
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect();
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    eprintln!("12 claims at 4 per second: spread {spread:.2} s, all done in {took:?}");
    assert!(spread >= 1.7, "{starts:?}");
}

/// The tokens in the order their routines started.
fn start_order(daemon: &Daemon) -> Vec<String> {
    events(daemon)
        .into_iter()
        .filter(|(kind, _)| kind == "start")
        .map(|(_, token)| token)
        .collect()
}

fn claims_take_higher_priorities_first_then_the_oldest() {
    let daemon = sdlc();
    assert_eq!(
        limit(&daemon, &["set", "one", "--states", "coding", "--max", "1"]).code(),
        0
    );
    for (id, priority) in [
        ("P-1", "0"),
        ("P-2", "0"),
        ("P-3", "5"),
        ("P-4", "-1"),
        ("P-5", "5"),
    ] {
        let started = daemon.token(&["start", id, r#"{"repo": "acme"}"#, "--priority", priority]);
        assert_eq!(started.code(), 0, "{started}");
    }
    // Changed later: P-2 goes before P-1.
    let changed = daemon.token(&["priority", "P-2", "1"]);
    assert_eq!(changed.code(), 0, "{changed}");
    assert!(changed.stdout.contains("P-2: priority 1"), "{changed}");
    // Seen where the token is shown: its detail, `token show` and its --json.
    assert_eq!(daemon.get("/tokens/P-3/detail").expect(200)["priority"], 5);
    let detail = daemon.get("/tokens/P-1/detail").expect(200);
    assert!(detail.get("priority").is_none(), "0 is left out: {detail}");
    let shown = daemon.token(&["show", "P-4"]);
    assert!(shown.stdout.contains("\n  priority -1\n"), "{shown}");
    let shown = daemon.token(&["show", "P-5", "--json"]);
    assert!(shown.stdout.contains("\"priority\": 5"), "{shown}");
    let _sups = supervisors(&daemon, 1, "0");
    for n in 1..=5 {
        wait_for_status(&daemon, &format!("P-{n}"), "completed");
    }
    assert_eq!(start_order(&daemon), ["P-3", "P-5", "P-2", "P-1", "P-4"]);
}

fn within_a_priority_keys_with_queued_tasks_take_turns() {
    let daemon = sdlc();
    assert_eq!(
        limit(&daemon, &["set", "one", "--states", "coding", "--max", "1"]).code(),
        0
    );
    let set = limit(
        &daemon,
        &[
            "set",
            "per-repo",
            "--states",
            "coding",
            "--max",
            "5",
            "--per",
            "ctx['repo']",
        ],
    );
    assert_eq!(set.code(), 0, "{set}");
    for n in 1..=3 {
        start(&daemon, &format!("A-{n}"), "a");
    }
    start(&daemon, "B-1", "b");
    // Repo a took the first turn: B-1 goes next, ahead of the older A-2.
    let _sups = supervisors(&daemon, 1, "0");
    for id in ["A-1", "A-2", "A-3", "B-1"] {
        wait_for_status(&daemon, id, "completed");
    }
    let order = start_order(&daemon);
    assert_eq!(order, ["A-1", "B-1", "A-2", "A-3"]);
}

fn a_retry_delay_of_2s_doubling_holds_the_next_attempts_back() {
    let daemon = sdlc();
    let set = limit(
        &daemon,
        &[
            "retry",
            "coding",
            "--delay",
            "2s",
            "--doubling",
            "--cap",
            "1m",
        ],
    );
    assert_eq!(set.code(), 0, "{set}");
    assert!(set.stdout.contains("coding: 2s doubling to 1m"), "{set}");
    let log = log_path(&daemon);
    let failing = format!(
        "echo \"start $STATEOUS_TOKEN $(date +%s.%N)\" >> {log}\n\
         if [ \"$STATEOUS_ATTEMPT\" -lt 3 ]; then\n\
           echo \"fail $STATEOUS_TOKEN $(date +%s.%N)\" >> {log}; exit 1\n\
         fi\n\
         stateous ctx emit done",
        log = log.display()
    );
    let folder = folder_named(
        &daemon,
        "sup-retry",
        "box-1",
        &[("coding.sh", &failing), ("testing.sh", TESTING)],
    );
    let _sup = Supervise::start(&folder);
    start(&daemon, "Y-1", "acme");
    harness::eventually(
        Duration::from_secs(20),
        "the first attempt failed",
        || format!("{:?}", events(&daemon)),
        || events(&daemon).iter().any(|(kind, _)| kind == "fail"),
    );
    harness::eventually(
        Duration::from_secs(5),
        "token why names the retry policy's hold",
        || daemon.token(&["why", "Y-1"]).to_string(),
        || {
            daemon
                .token(&["why", "Y-1"])
                .stdout
                .contains("its retry policy holds the next attempt until")
        },
    );
    wait_for_status(&daemon, "Y-1", "completed");
    let times: Vec<(String, f64)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            Some((words.first()?.to_string(), words.get(2)?.parse().ok()?))
        })
        .collect();
    let kinds: Vec<&str> = times.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["start", "fail", "start", "fail", "start"],
        "{times:?}"
    );
    let second = times[2].1 - times[1].1;
    let third = times[4].1 - times[3].1;
    eprintln!("pauses before attempts 2 and 3: {second:.2} s, {third:.2} s");
    assert!(second >= 2.0, "{times:?}");
    assert!(third >= 4.0, "{times:?}");
}

both!(
    a_retry_delay_of_2s_doubling_holds_the_next_attempts_back,
    claims_take_higher_priorities_first_then_the_oldest,
    within_a_priority_keys_with_queued_tasks_take_turns,
    a_global_limit_of_2_over_3_supervisors_never_runs_more_than_2,
    a_per_repo_limit_runs_repos_side_by_side_and_never_two_of_one,
    a_sigkill_of_a_supervisor_holding_a_slot_frees_it_at_its_lease_end,
    a_sigkill_of_the_daemon_over_admits_nothing,
    a_lowered_limit_admits_nothing_until_below,
    a_rate_spaces_the_claims,
    limits_refuse_bad_input_and_change_nothing,
    a_limits_file_is_set_at_start_and_a_bad_one_changes_nothing,
    a_bulk_priority_previews_then_sets_every_match,
);

#[test]
fn a_standby_takeover_on_postgres_over_admits_nothing() {
    harness::on(harness::Backend::Postgres, || {
        let active = Setup::new(asset_graph("sdlc"))
            .args(&harness::KEEPALIVES)
            .args(&["--lease", "2s", "--stale-after", "1s"])
            .start();
        let standby = Setup::new(asset_graph("sdlc"))
            .database_of(&active)
            .args(&harness::KEEPALIVES)
            .args(&["--lease", "2s", "--stale-after", "1s"])
            .start_standby();
        assert_eq!(
            limit(
                &active,
                &["set", "coding", "--states", "coding", "--max", "1"]
            )
            .code(),
            0
        );
        let script = coding(&log_path(&active), "0.5");
        let _sups: Vec<Supervise> = (1..=2)
            .map(|n| {
                let folder = folder_named(
                    &active,
                    &format!("sup{n}"),
                    &format!("box-{n}"),
                    &[("coding.sh", &script), ("testing.sh", TESTING)],
                );
                supervising::set_urls(&folder, &[&active.url, &standby.url]);
                Supervise::start(&folder)
            })
            .collect();
        for n in 1..=4 {
            start(&active, &format!("S-{n}"), "acme");
        }
        harness::eventually(
            Duration::from_secs(20),
            "a routine started",
            || format!("{:?}", events(&active)),
            || !events(&active).is_empty(),
        );
        active.signal(libc::SIGKILL);
        standby.wait_for_line("serving on", Duration::from_secs(30));
        for n in 1..=4 {
            wait_for_status(&standby, &format!("S-{n}"), "completed");
        }
        let (most, _) = most_running(&active, &|_| String::new());
        assert_eq!(most, 1, "{:?}", events(&active));
    });
}

fn limits_refuse_bad_input_and_change_nothing() {
    let daemon = sdlc();
    let bad = [
        (
            json!({"states": ["coding"], "max": 2, "per": "ctx['repo"}),
            "per",
        ),
        (
            json!({"states": ["nowhere"], "max": 2}),
            "no state 'nowhere'",
        ),
        (json!({"states": ["coding"], "max": 0}), "from 1 to 1000000"),
        (
            json!({"states": ["coding"], "max": 1_000_001}),
            "from 1 to 1000000",
        ),
        (
            json!({"states": ["coding"], "max": 2, "rate": "0 per second"}),
            "a rate is",
        ),
        (json!({"states": [], "max": 2}), "'states'"),
        (
            json!({"states": ["coding", "coding"], "max": 2}),
            "names \"coding\" twice",
        ),
        (
            json!({"states": ["", ""], "max": 2}),
            "'states' holds an empty name",
        ),
        (
            json!({"states": ["coding"], "max": 2, "per": "1"}),
            "gives every token the same key",
        ),
    ];
    for (body, words) in bad {
        let sentence = daemon
            .put("/limits/coding", &body)
            .refused(422, "invalid_limit");
        assert!(sentence.contains(words), "{sentence} for {body}");
    }
    daemon
        .put(
            "/limits/Bad%20Name",
            &json!({"states": ["coding"], "max": 1}),
        )
        .refused(422, "invalid_limit");
    let listed = daemon.get("/limits").expect(200);
    assert_eq!(listed, json!({"limits": []}));
    // A retry policy's value is refused rather than cut or raised.
    let bad_policies = [
        (json!({"delay": "2s", "jitter": "1000d"}), "at most 1 day"),
        (json!({"delay": "2d"}), "at most 1 day"),
        (
            json!({"delay": "10s", "backoff": "doubling", "cap": "5s"}),
            "at least the delay (10s), not 5s",
        ),
        (json!({"delay": "2s", "backoff": 2}), "fixed or doubling"),
        (
            json!({"delay": "1s", "cap": "1m"}),
            "goes with a doubling backoff",
        ),
    ];
    for (body, words) in bad_policies {
        let sentence = daemon
            .put("/retry-policies/coding", &body)
            .refused(422, "invalid_argument");
        assert!(sentence.contains(words), "{sentence} for {body}");
    }
    let policies = daemon.get("/retry-policies").expect(200);
    assert!(!policies.to_string().contains("coding"), "{policies}");
    daemon
        .request("DELETE", "/limits/coding", &[], b"")
        .refused(404, "limit_not_found");
    // A negative max reaches the control plane's sentence, not a parser's hint.
    let negative = limit(
        &daemon,
        &["set", "coding", "--states", "coding", "--max", "-5"],
    );
    assert_eq!(negative.code(), 1, "{negative}");
    assert!(
        negative.stderr.contains("from 1 to 1000000, not -5"),
        "{negative}"
    );
    let removed = limit(&daemon, &["remove", "coding"]);
    assert_eq!(removed.code(), 1, "{removed}");
    assert!(removed.stderr.starts_with("error: "), "{removed}");
    // A good one is kept, on the journal with its key name.
    daemon
        .put(
            "/limits/coding",
            &json!({"states": ["coding"], "max": 3, "per": "ctx['repo']"}),
        )
        .expect(200);
    let journal = daemon.get("/journal?subject=limit").expect(200);
    assert!(journal.to_string().contains("\"coding\""), "{journal}");
    let listed = limit(&daemon, &["list"]);
    assert!(
        listed
            .stdout
            .contains("coding  coding  0 used, 3 per ctx['repo']"),
        "{listed}"
    );
    assert_eq!(limit(&daemon, &["remove", "coding"]).code(), 0);
    assert_eq!(daemon.get("/limits").expect(200), json!({"limits": []}));
}

/// `serve --limits FILE` (`docs/limits.md`, "The limits file").
const LIMITS_FILE: &str = "\
limits:
  coding-per-repo:
    states: [coding]
    max: 1
    per: \"ctx['repo']\"
retry_policies:
  coding:
    delay: 2s
    backoff: doubling
    cap: 1m
";

/// `serve --limits FILE` sets what the file names as serve starts, each on the
/// journal as `file:PATH`, and leaves a limit it does not name; a restart with the
/// same file changes nothing; a bad file stops serve (`error: `, exit 1, every
/// problem listed) before it serves or changes anything.
fn a_limits_file_is_set_at_start_and_a_bad_one_changes_nothing() {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("limits.yaml");
    std::fs::write(&path, LIMITS_FILE).unwrap();
    let shown = path.display().to_string();
    let mut daemon = Setup::new(asset_graph("sdlc"))
        .args(&["--limits", &shown])
        .start();
    assert!(
        daemon.stderr().contains(&format!(
            "limits file {shown}: set limit coding-per-repo, retry policy coding"
        )),
        "{}",
        daemon.report()
    );
    let listed = daemon.get("/limits").expect(200);
    assert_eq!(listed["limits"][0]["name"], "coding-per-repo", "{listed}");
    assert_eq!(listed["limits"][0]["max"], 1, "{listed}");
    assert_eq!(listed["limits"][0]["per"], "ctx['repo']", "{listed}");
    let policies = daemon.get("/retry-policies").expect(200);
    assert_eq!(policies["policies"][0]["backoff"], "doubling", "{policies}");
    let by = format!("file:{shown}");
    for subject in ["limit", "retry_policy"] {
        let journal = daemon
            .get(&format!("/journal?subject={subject}"))
            .expect(200);
        let entries = journal["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{journal}");
        assert_eq!(entries[0]["by"], by.as_str(), "{journal}");
    }
    // A limit set over the API, which the file does not name, stays.
    daemon
        .put("/limits/coding", &json!({"states": ["coding"], "max": 3}))
        .expect(200);
    daemon.stop_with(libc::SIGTERM);
    daemon.start_again();
    assert!(
        daemon.stderr().contains(&format!(
            "limits file {shown}: the database holds it already"
        )),
        "{}",
        daemon.report()
    );
    let journal = daemon.get("/journal?subject=limit").expect(200);
    assert_eq!(journal["entries"].as_array().unwrap().len(), 2, "{journal}");
    let names: Vec<Value> = daemon.get("/limits").expect(200)["limits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|limit| limit["name"].clone())
        .collect();
    assert_eq!(names, [json!("coding"), json!("coding-per-repo")]);
    daemon.stop_with(libc::SIGTERM);
    let before = daemon.rows("SELECT name, max FROM limits ORDER BY name");
    let bad = files.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "limits:\n  coding-per-repo: {states: [coding], max: 5}\n  \
         elsewhere: {states: [nowhere], max: 1}\n  \
         coding-per-repo: {states: [coding], max: 6}\nretry_policies:\n  coding: {delay: soon}\n",
    )
    .unwrap();
    let socket = daemon.dir.path().join("once.sock").display().to_string();
    let graph = asset_graph("sdlc").display().to_string();
    let url = daemon.database.url();
    let bad_shown = bad.display().to_string();
    let refused = harness::run_within(
        daemon.dir.path(),
        &[
            "serve",
            &graph,
            "--db",
            &url,
            "--listen",
            "127.0.0.1:0",
            "--socket",
            &socket,
            "--limits",
            &bad_shown,
        ],
        Duration::from_secs(15),
    );
    assert_eq!(refused.code(), 1, "{refused}");
    assert!(
        refused
            .stderr
            .starts_with(&format!("error: the limits file {bad_shown} is not valid:")),
        "{refused}"
    );
    // Every problem at once: a name written twice does not hide the others.
    assert!(
        refused
            .stderr
            .contains("'coding-per-repo' is written twice"),
        "{refused}"
    );
    assert!(refused.stderr.contains("no state 'nowhere'"), "{refused}");
    assert!(
        refused.stderr.contains("retry policy \"coding\""),
        "{refused}"
    );
    assert!(!refused.stderr.contains("serving on"), "{refused}");
    assert_eq!(
        daemon.rows("SELECT name, max FROM limits ORDER BY name"),
        before
    );
}

/// `stateous token priority N --where EXPR` (`docs/limits.md`, "Priorities"): the
/// preview says what it would do to each match (a token with that priority already
/// is found done, an ended one is left out or refused) and changes nothing; the run
/// sets it on each live match, on the journal and in each history; claims then take
/// those tokens first.
fn a_bulk_priority_previews_then_sets_every_match() {
    let daemon = sdlc();
    assert_eq!(
        limit(&daemon, &["set", "one", "--states", "coding", "--max", "1"]).code(),
        0
    );
    for (id, repo) in [("Q-1", "b"), ("Q-2", "a"), ("Q-3", "a"), ("Q-4", "a")] {
        start(&daemon, id, repo);
    }
    assert_eq!(daemon.token(&["priority", "Q-3", "7"]).code(), 0);
    daemon.post_empty("/tokens/Q-4/cancel").expect(200);
    let filter = "ctx['repo'] == 'a'";
    let preview = daemon.token(&["priority", "7", "--where", filter, "--dry-run"]);
    assert_eq!(preview.code(), 0, "{preview}");
    assert!(
        preview
            .stdout
            .contains("priority would apply to 1 token (1 already done); 1 ended token left out"),
        "{preview}"
    );
    assert!(
        preview.stdout.contains("sets its priority from 0 to 7"),
        "{preview}"
    );
    let journal = daemon.get("/journal?subject=priority").expect(200);
    assert_eq!(journal["entries"].as_array().unwrap().len(), 1, "{journal}");
    let ran = daemon.token(&[
        "priority", "7", "--where", filter, "--reason", "hotfix", "--yes",
    ]);
    assert_eq!(ran.code(), 0, "{ran}");
    let journal = daemon.get("/journal?subject=priority").expect(200);
    let names: Vec<&str> = journal["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names.iter().filter(|n| **n == "Q-2").count(),
        1,
        "{journal}"
    );
    assert_eq!(names.len(), 2, "{journal}");
    let history = daemon.get("/tokens/Q-2/history").expect(200).to_string();
    assert!(
        history.contains("hotfix") && history.contains("\"priority\""),
        "{history}"
    );
    let shown = daemon.token(&["show", "Q-2"]);
    assert!(
        shown
            .stdout
            .contains("asked to set its priority to 7: hotfix"),
        "{shown}"
    );
    // Q-1 (priority 0, oldest) goes last.
    let _sups = supervisors(&daemon, 1, "0");
    for id in ["Q-1", "Q-2", "Q-3"] {
        wait_for_status(&daemon, id, "completed");
    }
    assert_eq!(start_order(&daemon), ["Q-2", "Q-3", "Q-1"]);
}
