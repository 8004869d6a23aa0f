//! Power loss, simulated (`docs/guarantees.md`, "Power loss"). A SIGKILL leaves the
//! page cache whole, so it cannot show that a change is on disk before it is
//! acknowledged. Here the daemon's store and the supervisor's outbox run in this
//! process on a SQLite VFS (`vfs.rs`) that holds every write until its file is
//! synced and, at a chosen moment, drops what it holds and fails every later call,
//! as a machine that loses power does. The files as they are on disk then are
//! copied and opened with the plain VFS: every change acknowledged before the cut
//! must be there, and the database must be whole.
//!
//! These tests run in process (a VFS cannot be put under another process), on
//! SQLite; for Postgres the server's settings carry the promise
//! (`docs/how-to/use-postgres.md`, "Durability").

mod vfs;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;
use stateous_daemon::control::{Control, Options};
use stateous_daemon::validated::StartInput;
use stateous_shared::graph::Graph;
use stateous_supervisor::outbox::{Kind, Outbox};
use vfs::Power;

use crate::harness::asset_graph;

/// Where the cut falls: after this many acknowledged changes, plus a part that
/// moves with the clock, so that runs cut at different moments; printed on
/// failure to rerun one (`STATEOUS_TEST_CUT_AFTER`).
fn cut_after(least: usize) -> usize {
    if let Some(fixed) = std::env::var("STATEOUS_TEST_CUT_AFTER")
        .ok()
        .and_then(|text| text.parse().ok())
    {
        return fixed;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as usize);
    least + nanos % least
}

/// `integrity_check`'s answer for the copy at `path`.
fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

/// The simulation loses what a real power loss loses: with `synchronous=OFF`,
/// committed rows that were never synced are gone; with `FULL`, none is.
#[test]
fn a_simulated_power_loss_drops_what_was_never_synced() {
    vfs::install();
    for (synchronous, all_kept) in [("OFF", false), ("FULL", true)] {
        let dir = tempfile::tempdir().unwrap();
        let copy = tempfile::tempdir().unwrap();
        let power = Power::arm(dir.path());
        let conn = Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous};
             CREATE TABLE t (n INTEGER);"
        ))
        .unwrap();
        for n in 0..100 {
            conn.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
        }
        power.cut();
        power.snapshot(&["t.db", "t.db-wal"], copy.path());
        drop(conn);
        let reopened = Connection::open(copy.path().join("t.db")).unwrap();
        let kept: i64 = reopened
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap_or(0);
        assert_eq!(
            kept == 100,
            all_kept,
            "synchronous={synchronous}: {kept} rows kept"
        );
    }
}

/// Starts run on eight tasks at once; the power is cut while they run. Every
/// start answered before the cut is in the copy, with its whole ledger, and the
/// database passes its integrity check.
#[test]
fn every_start_acknowledged_before_a_power_loss_is_on_disk_after_it() {
    vfs::install();
    let dir = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    let power = Arc::new(Power::arm(dir.path()));
    let graph = std::fs::read_to_string(asset_graph("orders")).unwrap();
    let graph = Arc::new(Graph::load(&graph).unwrap());
    let cut_at = cut_after(150);
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut options = Options::new(dir.path().join("stateous.db"));
        // After the cut, a start already at the writer retries its dead file until
        // the busy timeout (30 s by default) before it is refused: this test then
        // took 30 s instead of 0.2 s in about half the runs.
        options.busy_timeout = Duration::from_secs(3);
        let control = Control::open(graph, options).await.unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for task in 0..8 {
            let (control, power, acked, count) = (
                control.clone(),
                Arc::clone(&power),
                Arc::clone(&acked),
                Arc::clone(&count),
            );
            tasks.push(tokio::spawn(async move {
                for n in 0.. {
                    let id = format!("P-{task}-{n}");
                    let context = json!({"title": id}).as_object().unwrap().clone();
                    let started = control.start(StartInput::new(id.clone(), context).unwrap());
                    match started.await {
                        // Answered before the cut: it must survive it.
                        Ok(_) if !power.is_cut() => {
                            acked.lock().unwrap().push(id);
                            if count.fetch_add(1, Ordering::SeqCst) + 1 == cut_at {
                                power.cut();
                            }
                        }
                        _ if power.is_cut() => break,
                        Ok(_) => {}
                        Err(refused) => panic!("a start before the cut was refused: {refused:?}"),
                    }
                }
            }));
        }
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(60), task)
                .await
                .expect("the starts end after the cut")
                .unwrap();
        }
        // The control plane's files fail from the cut on; it is left as a dead
        // machine's would be, unstopped.
        std::mem::forget(control);
    });
    power.snapshot(&["stateous.db", "stateous.db-wal"], copy.path());
    let conn = Connection::open(copy.path().join("stateous.db")).unwrap();
    assert_eq!(integrity(&conn), "ok", "cut after {cut_at} starts");
    let kept: std::collections::HashSet<String> = conn
        .prepare("SELECT token FROM tokens")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= cut_at, "{} acknowledged", acked.len());
    let lost: Vec<&String> = acked.iter().filter(|id| !kept.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "cut after {cut_at}: acknowledged starts lost: {lost:?}"
    );
    // Each kept token's ledger is whole: its entries numbered 1 to n.
    let gaps: i64 = conn
        .query_row(
            "SELECT count(*) FROM (SELECT token FROM ledger GROUP BY token
             HAVING count(*) != max(seq) OR min(seq) != 1)",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(gaps, 0, "cut after {cut_at}: a ledger with a gap");
    runtime.shutdown_background();
}

/// A supervisor writes each report to its outbox before it sends it; the power
/// is cut between two writes. Every message whose write returned is in the copy,
/// in order.
#[test]
fn every_outbox_message_written_before_a_power_loss_is_on_disk_after_it() {
    vfs::install();
    let dir = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(copy.path().join(".stateous")).unwrap();
    let power = Power::arm(dir.path());
    let outbox = Outbox::open(&dir.path().join(".stateous").join("outbox.db")).unwrap();
    let cut_at = cut_after(40);
    let mut written = Vec::new();
    for n in 1..=cut_at as i64 {
        let body = json!({"outcome": "event", "event": "done", "n": n});
        let message = outbox.append(n, 1, "T-1", Kind::Report, &body).unwrap();
        written.push(message.id);
    }
    power.cut();
    let after = json!({"outcome": "event", "event": "done"});
    assert!(
        outbox.append(0, 1, "T-1", Kind::Report, &after).is_err(),
        "a write after the cut fails"
    );
    let files = [".stateous/outbox.db", ".stateous/outbox.db-wal"];
    power.snapshot(&files, copy.path());
    drop(outbox);
    let conn = Connection::open(copy.path().join(".stateous").join("outbox.db")).unwrap();
    assert_eq!(integrity(&conn), "ok");
    let kept: Vec<i64> = conn
        .prepare("SELECT id FROM messages ORDER BY id")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kept, written, "cut after {cut_at} messages");
}
