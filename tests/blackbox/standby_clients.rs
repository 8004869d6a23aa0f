//! Black-box, Postgres (skipped unless `STATEOUS_TEST_POSTGRES` names a server):
//! clients given the addresses of an active control plane and its standby (`serve
//! --standby`). A supervisor and the token commands stay with the active one, and after
//! it is killed they go on at the standby once it has taken over; the supervisor's
//! notes arrive in order.

use crate::harness;
use crate::supervising;

use std::process::Command;
use std::time::{Duration, Instant};

use harness::{asset_graph, Backend, Setup, KEEPALIVES};
use supervising::{folder_for, history, start_token, wait_for_status, Supervise};

/// Notes `one` and `two`, waits for the file `go`, notes `three`, and is done.
const CODING: &str = "stateous ctx note one\nstateous ctx note two\ntouch waiting\n\
    while [ ! -f go ]; do sleep 0.05; done\nstateous ctx note three\nstateous ctx emit done";
const TESTING: &str = r#"stateous ctx emit passed '{"passed": 1, "failed": 0}'"#;

fn notes_of(daemon: &harness::Daemon, token: &str) -> Vec<String> {
    history(daemon, token)
        .iter()
        .filter(|e| e["kind"] == "note")
        .map(|e| e["data"]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

fn until(within: Duration, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn clients_of_an_active_and_its_standby_go_on_at_the_standby_once_it_serves() {
    let active = Setup::new(asset_graph("sdlc"))
        .args(&KEEPALIVES)
        .args(&["--lease", "60s"])
        .start();
    let standby = Setup::new(asset_graph("sdlc"))
        .database_of(&active)
        .args(&KEEPALIVES)
        .args(&["--lease", "60s"])
        .start_standby();
    let list = format!("{},{}", standby.url, active.url);
    // The standby first in the list: the token command passes over it.
    let shown = Command::new(harness::binary())
        .args(["token", "start", "T-0", r#"{"repo": "r"}"#, "--url", &list])
        .env_remove("STATEOUS_URL")
        .output()
        .expect("the binary runs");
    assert!(shown.status.success(), "{shown:?}");

    let folder = folder_for(&active, &[("coding", CODING), ("testing", TESTING)]);
    let yaml = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&yaml).expect("stateous.yaml");
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("url:")).collect();
    let urls = format!("url: [{}, {}]\n", active.url, standby.url);
    std::fs::write(&yaml, urls + &kept.join("\n") + "\n").expect("written");
    let mut sup = Supervise::start(&folder);
    sup.wait_for_line("the control plane is");
    start_token(&active, "T-1");
    let waiting = folder.join("waiting");
    until(Duration::from_secs(30), "the routine waits", || {
        waiting.exists()
    });
    until(Duration::from_secs(10), "both notes land", || {
        notes_of(&active, "T-1") == ["one", "two"]
    });
    active.signal(libc::SIGKILL);
    standby.wait_for_line("serving on ", Duration::from_secs(15));
    std::fs::write(folder.join("go"), "").expect("go");
    wait_for_status(&standby, "T-1", "completed");
    wait_for_status(&standby, "T-0", "completed");
    sup.wait_for_line(&format!(
        "connected to the control plane at {}",
        standby.url
    ));
    assert_eq!(
        notes_of(&standby, "T-1"),
        ["one", "two", "three"],
        "{}",
        sup.report()
    );
    sup.signal(libc::SIGTERM);
    assert_eq!(sup.wait().code(), Some(0), "{}", sup.report());
}

#[test]
fn clients_of_an_active_and_its_standby_go_on_at_the_standby_once_it_serves_postgres() {
    harness::on(
        Backend::Postgres,
        clients_of_an_active_and_its_standby_go_on_at_the_standby_once_it_serves,
    );
}
