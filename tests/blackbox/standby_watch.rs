//! Black-box, Postgres (skipped unless `STATEOUS_TEST_POSTGRES` names a server): the
//! live stream `GET /watch` of clients given the addresses of an active control plane
//! and its standby, when the active is stopped (SIGSTOP) and an operator ends its
//! sessions. The stopped one's port still holds the stream's connection open and sends
//! nothing; a reader takes a stream silent for longer than the daemon's keep-alive and
//! its request timeout as dead, and opens it again at the next address. So `stateous
//! token show --follow` prints what happens at the standby, and a supervisor learns
//! from its stream, not only at its next heartbeat, that a task it runs was cancelled
//! there.

use crate::harness;
use crate::supervising;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{asset_graph, eventually, Backend, Setup, KEEPALIVES};
use serde_json::json;
use supervising::{folder_for, set_urls, start_token, Supervise};

/// A child process killed when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The routine of `coding`: says it started, then runs until it is stopped.
const CODING: &str = "touch started-$STATEOUS_TOKEN\nwhile true; do sleep 0.1; done";

fn a_stream_on_a_stopped_active_moves_to_the_standby_once_it_serves() {
    // A lease of 10 minutes: the supervisor's heartbeat comes every 2 minutes,
    // so only its stream can tell it within the test that a task was cancelled.
    let flags = ["--lease", "600s", "--tick", "200ms"];
    let mut active = Setup::new(asset_graph("sdlc"))
        .args(&KEEPALIVES)
        .args(&flags)
        .start();
    let standby = Setup::new(asset_graph("sdlc"))
        .database_of(&active)
        .args(&KEEPALIVES)
        .args(&flags)
        .start_standby();
    let list = format!("{},{}", active.url, standby.url);

    let folder = folder_for(&active, &[("coding", CODING)]);
    set_urls(&folder, &[&active.url, &standby.url]);
    let yaml = folder.join("stateous.yaml");
    let text = std::fs::read_to_string(&yaml).expect("stateous.yaml");
    let text = text.replace("heartbeat: 200ms", "heartbeat: 120s\nrequest_timeout: 2s");
    std::fs::write(&yaml, text).expect("written");
    let sup = Supervise::start(&folder);
    sup.wait_for_line("the control plane is");
    start_token(&active, "T-1");
    start_token(&active, "T-2");

    let followed = active.dir.path().join("follow.out");
    let mut follow = Killed(
        Command::new(harness::binary())
            .args(["token", "show", "T-2", "--follow", "--url", &list])
            .env_remove("STATEOUS_URL")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&followed).expect("a file"))
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the binary runs"),
    );
    let read_follow = || std::fs::read_to_string(&followed).unwrap_or_default();
    eventually(
        Duration::from_secs(30),
        "both routines run and the follower shows T-2's claim",
        || format!("{}\n--- follow ---\n{}", sup.report(), read_follow()),
        || {
            folder.join("started-T-1").exists()
                && folder.join("started-T-2").exists()
                && read_follow().contains("took task")
        },
    );

    active.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(active.end_sessions() > 0, "the stopped active had sessions");
    standby.wait_for_line("serving on ", Duration::from_secs(10));
    standby.post("/tokens/T-1/cancel", &json!({})).expect(200);
    standby.post("/tokens/T-2/cancel", &json!({})).expect(200);

    // The supervisor's stream was on the stopped active: once it has been silent
    // for a keep-alive (15 s) and a request timeout (2 s), it opens again at the
    // standby and the routines stop.
    eventually(
        Duration::from_secs(40),
        "the supervisor stopped the routines of the cancelled tasks",
        || sup.report(),
        || {
            let log = sup.stderr();
            ["T-1", "T-2"].iter().all(|token| {
                log.contains(&format!(
                    "of {token}: the control plane took attempt 1 back"
                ))
            })
        },
    );
    // The follower's client waits 30 s for an answer: its stream is dead 45 s
    // after its last keep-alive, and it then shows the cancel and ends.
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = follow.0.try_wait().expect("the follower's status") {
            break status;
        }
        if Instant::now() > deadline {
            panic!(
                "the follower did not show the cancel at the standby\n{}",
                read_follow()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}\n{}", read_follow());
    assert!(read_follow().contains("cancelled"), "{}", read_follow());

    active.signal(libc::SIGCONT);
    assert_eq!(active.wait(Duration::from_secs(10)).code(), Some(1));
}

#[test]
fn a_stream_on_a_stopped_active_moves_to_the_standby_once_it_serves_postgres() {
    harness::on(
        Backend::Postgres,
        a_stream_on_a_stopped_active_moves_to_the_standby_once_it_serves,
    );
}
