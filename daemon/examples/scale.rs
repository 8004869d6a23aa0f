//! The scale probe (`ARCHITECTURE.md`, "Speed"): claim and fire latency with many tokens
//! stored, against an empty database, and the time of a clock tick with many
//! pending timers. It runs the control plane in this process (no HTTP), so the
//! figures are the write path's own.
//!
//! ```text
//! cargo run --release -p stateous-daemon --example scale -- \
//!     GRAPH.json DB_FILE [TOKENS] [TIMERS] [ROUNDS]
//! ```
//!
//! GRAPH is the `orders` starter (`stateous init workflow orders`). DB_FILE must
//! not exist, nor DB_FILE.empty (the empty database); it is left filled, so that `stateous serve` can run on it (to read
//! the daemon's memory with a million tokens: `grep VmRSS /proc/PID/status`).
//! The defaults: 1,000,000 tokens, 100,000 timers, 300 rounds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use stateous_daemon::control::{Control, Options};
use stateous_daemon::store::sqlite::open;
use stateous_daemon::store::sqlite::schema::migrate;
use stateous_daemon::validated::{ClaimInput, FireInput, ReportInput, StartInput};
use stateous_shared::graph::Graph;
use stateous_shared::wire::{Object, Outcome};

type Failure = Box<dyn std::error::Error>;

/// Clock ticks timed after the rounds: enough that their p99 is not their slowest.
const TICKS: usize = 200;

/// The allocator of the `stateous` binary (`src/main.rs`), SQLite's `malloc`
/// included: the figures are those of what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows inserted per fill statement, so one transaction never grows too large.
const FILL_CHUNK: u64 = 100_000;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [graph, db, rest @ ..] = args.as_slice() else {
        return Err("usage: scale GRAPH.json DB_FILE [TOKENS] [TIMERS] [ROUNDS]".into());
    };
    let number = |index: usize, default: u64| -> Result<u64, Failure> {
        Ok(rest
            .get(index)
            .map(|n| n.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let (tokens, timers, rounds) = (number(0, 1_000_000)?, number(1, 100_000)?, number(2, 300)?);
    let db = PathBuf::from(db);
    if db.exists() {
        return Err(format!("{} exists; name a new file", db.display()).into());
    }
    let graph = Arc::new(Graph::load(&std::fs::read_to_string(graph)?)?);
    let runtime = tokio::runtime::Runtime::new()?;

    // The empty database goes through the same steps as the full one (a fill of
    // nothing, a checkpoint), so that the two differ only in what they hold.
    let mut empty_db = db.clone().into_os_string();
    empty_db.push(".empty");
    let empty_db = PathBuf::from(empty_db);
    if empty_db.exists() {
        return Err(format!("{} exists; name a new file", empty_db.display()).into());
    }
    fill(&empty_db, 0, 0)?;
    println!("empty database ({}):", empty_db.display());
    let empty = runtime.block_on(probe(&graph, &empty_db, rounds, "E"))?;
    let began = Instant::now();
    fill(&db, tokens, timers)?;
    println!(
        "filled {tokens} completed tokens and {timers} pending timers in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    println!("{tokens} tokens stored:");
    let full = runtime.block_on(probe(&graph, &db, rounds, "F"))?;
    println!(
        "ratio full/empty (p50): claim {:.2}  fire {:.2}  report {:.2}",
        full.claim / empty.claim,
        full.fire / empty.fire,
        full.report / empty.report
    );
    println!(
        "process VmRSS after the probe: {}",
        rss().unwrap_or_default()
    );
    Ok(())
}

/// The p50 latencies of one probe, in milliseconds.
struct Medians {
    claim: f64,
    fire: f64,
    report: f64,
}

/// `rounds` times (after `rounds / 2` uncounted ones): start a token, fire `submitted` (draft to review), claim its
/// review task, report `reviewed`; then [`TICKS`] ticks. Prints p50/p99 of each.
async fn probe(
    graph: &Arc<Graph>,
    db: &Path,
    rounds: u64,
    prefix: &str,
) -> Result<Medians, Failure> {
    let control = Control::open(Arc::clone(graph), Options::new(db)).await?;
    let context: Object = json!({"title": "probe"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let (mut fires, mut claims, mut reports) = (Vec::new(), Vec::new(), Vec::new());
    // The first rounds warm the caches and the WAL file up; they are not counted.
    let warm = rounds / 2;
    for round in 0..warm + rounds {
        let counted = round >= warm;
        let token = format!("{prefix}-probe-{round}");
        control
            .start(StartInput::new(token.clone(), context.clone())?)
            .await?;
        let began = Instant::now();
        control
            .fire(FireInput::new(
                token.clone(),
                "submitted".into(),
                None,
                None,
            )?)
            .await?;
        if counted {
            fires.push(began.elapsed());
        }
        let began = Instant::now();
        let grant = control
            .claim(ClaimInput::new(
                "probe".into(),
                vec!["review".into()],
                None,
            )?)
            .await?
            .ok_or("the claim found no task")?;
        if counted {
            claims.push(began.elapsed());
        }
        let outcome = Outcome {
            kind: "event".into(),
            event: Some("reviewed".into()),
            payload: json!({"approved": true}).as_object().cloned(),
            error: None,
            context: Object::new(),
            schedules: Vec::new(),
            attempt: Some(grant.attempt),
            supervisor: Some("probe".into()),
        };
        let began = Instant::now();
        control
            .report(ReportInput::new(grant.task, outcome)?)
            .await?;
        if counted {
            reports.push(began.elapsed());
        }
    }
    let mut ticks = Vec::new();
    for _ in 0..TICKS {
        let began = Instant::now();
        control.tick().await?;
        ticks.push(began.elapsed());
        if std::env::var_os("SCALE_TICKS").is_some() {
            println!("    tick {:?}", began.elapsed());
        }
    }
    control.shutdown().await?;
    let medians = Medians {
        fire: show("fire", fires),
        claim: show("claim", claims),
        report: show("report", reports),
    };
    show("tick", ticks);
    Ok(medians)
}

/// Print `name: p50 .. p99 .. max ..` and return the p50 in milliseconds.
fn show(name: &str, mut took: Vec<Duration>) -> f64 {
    took.sort_unstable();
    let at = |p: usize| {
        let index = (took.len() * p).div_ceil(100).clamp(1, took.len().max(1)) - 1;
        took.get(index).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "  {name:<7} p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        at(50),
        at(99),
        at(100)
    );
    at(50)
}

/// Fill the database straight through SQL: `tokens` completed tokens of `orders`
/// with their tasks and a short ledger, then `timers` active tokens in `review`,
/// each with a pending timer due in a year (so a tick finds none due).
fn fill(db: &Path, tokens: u64, timers: u64) -> Result<(), Failure> {
    let conn = open(db, Duration::from_secs(30), false)?;
    migrate(&conn)?;
    // The clock's now (microseconds since 1970): the timers must be due later.
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_micros(),
    )?;
    let mut start = 0;
    while start < tokens {
        let end = (start + FILL_CHUNK).min(tokens);
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let base: i64 =
            conn.query_row("SELECT coalesce(max(rowid), 0) FROM tokens", [], |row| {
                row.get(0)
            })?;
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2)
             INSERT INTO tokens (token, state, status, visit, context, entered_at, workflow)
             SELECT 'FILL-' || i, 'review', 'completed', 2, '{\"title\":\"fill\"}', ?3 + i, NULL
             FROM n",
            (start, end, now),
        )?;
        conn.execute(
            "INSERT INTO tasks (token, state, visit, status, attempt, claimed_by, queued_at)
             SELECT token, s.state, s.visit, 'done', 1, 'fill', entered_at FROM tokens,
                 (SELECT 'draft' AS state, 1 AS visit UNION ALL SELECT 'review', 2) AS s
             WHERE rowid > ?1",
            [base],
        )?;
        conn.execute(
            "INSERT INTO ledger (token, seq, at, kind, data)
             SELECT token, k.seq, entered_at, k.kind, k.data FROM tokens, (
                 SELECT 1 AS seq, 'started' AS kind, '{\"context\":{\"title\":\"fill\"}}' AS data
                 UNION ALL SELECT 2, 'entered', '{\"state\":\"draft\",\"visit\":1}'
                 UNION ALL SELECT 3, 'event_accepted', '{\"event\":\"submitted\",\"payload\":null}'
                 UNION ALL SELECT 4, 'entered', '{\"state\":\"review\",\"visit\":1}'
                 UNION ALL SELECT 5, 'event_accepted', '{\"event\":\"reviewed\",\"payload\":{\"approved\":true,\"note\":\"\"}}'
                 UNION ALL SELECT 6, 'completed', '{}') AS k
             WHERE rowid > ?1",
            [base],
        )?;
        conn.execute_batch("COMMIT")?;
        start = end;
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
         INSERT INTO tokens (token, state, status, visit, context, entered_at, workflow)
         SELECT 'TIMED-' || i, 'review', 'active', 1, '{\"title\":\"timed\"}', ?2, NULL FROM n",
        (timers, now),
    )?;
    conn.execute(
        "INSERT INTO timers (token, state, visit, event, set_at, due_at, status, kind)
         SELECT token, 'review', 1, 'reviewed', ?1, ?1 + 365 * 86400 * 1000000, 'pending', 'timer'
         FROM tokens WHERE token >= 'TIMED-' AND token < 'TIMED.'",
        [now],
    )?;
    conn.execute_batch("COMMIT")?;
    // Move the fill out of the WAL now, or the probe's first commit would do it.
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}

/// This process's resident memory, as `/proc/self/status` says it.
fn rss() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    Some(line.trim_start_matches("VmRSS:").trim().to_string())
}
