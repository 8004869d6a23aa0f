//! Black-box: `stateous backup FILE` copies a SQLite database while the control
//! plane serves and writes it, the copy is whole and can be served in its place,
//! and a backup that cannot be made says why (a missing folder included) and leaves
//! nothing behind.

use crate::harness;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use harness::{run, Daemon, Setup};
use serde_json::json;

fn start(daemon: &Daemon, id: &str) {
    let body = json!({"token": id, "context": {"title": id}});
    daemon.post("/tokens", &body).expect(201);
}

/// A copy made while starts keep committing holds every token committed before
/// it and each of them whole (no token without its ledger), and a control plane
/// serving the copy answers for them.
#[test]
fn a_backup_taken_while_serving_is_whole_and_serves() {
    let daemon = Daemon::orders();
    for n in 0..50 {
        start(&daemon, &format!("B-{n}"));
    }
    let busy = Arc::new(AtomicBool::new(true));
    let writer = {
        let (busy, authority) = (busy.clone(), daemon.authority.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while busy.load(Ordering::SeqCst) {
                let body = json!({"token": format!("W-{n}"), "context": {"title": "w"}});
                let stream = std::net::TcpStream::connect(&authority).unwrap();
                let headers = [("content-type", "application/json")];
                let reply = harness::exchange(
                    stream,
                    "POST",
                    "/tokens",
                    &headers,
                    body.to_string().as_bytes(),
                )
                .unwrap();
                assert_eq!(reply.status, 201);
                n += 1;
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let target = daemon.dir.path().join("copy.db");
    let db = format!("sqlite:///{}", daemon.db.display());
    let made = run(
        daemon.dir.path(),
        &["backup", target.to_str().unwrap(), "--db", &db],
    );
    busy.store(false, Ordering::SeqCst);
    let written = writer.join().unwrap();
    assert_eq!(made.code(), 0, "{made}");
    assert!(made.stdout.starts_with("wrote "), "{made}");
    assert!(made.stdout.contains("checks whole"), "{made}");
    assert!(written > 0, "the writer wrote while the copy was made");
    assert!(!daemon.dir.path().join("copy.db.partial").exists());

    let copy = rusqlite::Connection::open(&target).unwrap();
    let count = |sql: &str| -> i64 { copy.query_row(sql, [], |row| row.get(0)).unwrap() };
    assert!(count("SELECT count(*) FROM tokens") >= 50);
    assert_eq!(
        count("SELECT count(*) FROM tokens t WHERE NOT EXISTS (SELECT 1 FROM ledger l WHERE l.token = t.token)"),
        0,
        "every token in the copy has its ledger"
    );
    drop(copy);

    let restored_dir = tempfile::tempdir().unwrap();
    let restored_db = restored_dir.path().join("stateous.db");
    std::fs::copy(&target, &restored_db).unwrap();
    let restored = Setup::new(harness::asset_graph("orders"))
        .in_dir(restored_dir, restored_db)
        .start();
    let token = restored.get("/tokens/B-49").expect(200);
    assert_eq!(token["state"], "draft", "{token}");
}

/// A backup that cannot be made says why in one line, exits 1, and leaves no file.
#[test]
fn a_backup_that_cannot_be_made_says_why_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    let cases: [(&[&str], &str); 4] = [
        (
            &["backup", "out.db", "--db", "sqlite:///missing.db"],
            "error: there is no database at missing.db; give the file the control plane serves with --db",
        ),
        (
            &["backup", "out.db", "--db", "postgresql://u:secret@127.0.0.1:1/x"],
            "error: postgresql://u:***@127.0.0.1:1/x is a Postgres database: back it up with the server's own tools",
        ),
        (
            &["backup", "out.db", "--db", "mysql://x"],
            "error: --db 'mysql://x' is not a database URL",
        ),
        (
            &["backup", "out.db", "--db", "sqlite:///notes.txt"],
            "error: cannot read the copy (is it a Stateous database?)",
        ),
    ];
    std::fs::write(here.join("notes.txt"), b"").unwrap();
    for (args, said) in cases {
        let finished = run(here, args);
        assert_eq!(finished.code(), 1, "{finished}");
        assert!(finished.stderr.starts_with(said), "{finished}");
        assert!(!here.join("out.db").exists(), "{finished}");
        assert!(!here.join("out.db.partial").exists(), "{finished}");
    }
    std::fs::write(here.join("taken.db"), b"mine").unwrap();
    let daemon = Daemon::orders();
    let db = format!("sqlite:///{}", daemon.db.display());
    let taken = here.join("taken.db");
    let finished = run(here, &["backup", taken.to_str().unwrap(), "--db", &db]);
    assert_eq!(finished.code(), 1, "{finished}");
    assert!(finished.stderr.contains("exists already"), "{finished}");
    assert_eq!(std::fs::read(&taken).unwrap(), b"mine");

    let finished = run(here, &["backup", "backups/out.db", "--db", &db]);
    assert_eq!(finished.code(), 1, "{finished}");
    assert_eq!(
        finished.stderr.trim_end(),
        "error: the folder backups does not exist; make it first",
        "{finished}"
    );
    assert!(!here.join("backups").exists(), "{finished}");
}
