//! The schedules' tick probe (`docs/schedules.md`, "Scale"): the time of a clock tick
//! with many schedules kept. It runs the control plane in this process (no HTTP) on
//! a manual clock, adds the schedules (daily, at minutes spread over the day, so
//! that about seven fall due each minute), then ticks: once a second where nothing
//! is due, and once a minute where that minute's occurrences start their tokens.
//!
//! ```text
//! cargo run --release -p stateous-daemon --example schedule_ticks -- \
//!     GRAPH.json DB [SCHEDULES] [TICKS]
//! ```
//!
//! GRAPH is the `orders` starter (`assets/orders/build/orders.json`). DB is a SQLite
//! file that must not exist, or a `postgresql://` URL of an empty database. The
//! defaults: 10,000 schedules, 300 ticks of each kind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;
use stateous_daemon::control::{Control, Options};
use stateous_daemon::store::backend::Database;
use stateous_daemon::time_source::Clock;
use stateous_shared::graph::Graph;
use stateous_shared::schedules::NewSchedule;

type Failure = Box<dyn std::error::Error>;

/// The allocator of the `stateous` binary (`src/main.rs`), SQLite's `malloc`
/// included: the figures are those of what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// 2027-01-04T00:00:30Z, in microseconds: the probe's clock starts here.
const START: i64 = 1_799_020_830_000_000;
const SECOND: i64 = 1_000_000;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [graph, db, rest @ ..] = args.as_slice() else {
        return Err("usage: schedule_ticks GRAPH.json DB [SCHEDULES] [TICKS]".into());
    };
    let number = |index: usize, default: usize| -> Result<usize, Failure> {
        Ok(rest
            .get(index)
            .map(|n| n.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let (schedules, ticks) = (number(0, 10_000)?, number(1, 300)?);
    let database = if db.starts_with("postgresql://") || db.starts_with("postgres://") {
        Database::Postgres(db.clone())
    } else if std::path::Path::new(db).exists() {
        return Err(format!("{db} exists; name a new file").into());
    } else {
        Database::Sqlite(db.into())
    };
    let graph = Arc::new(Graph::load(&std::fs::read_to_string(graph)?)?);
    let clock = Clock::manual(START);
    let options = Options {
        clock: clock.clone(),
        ..Options::on(database)
    };
    tokio::runtime::Runtime::new()?.block_on(async move {
        let control = Control::open(graph, options).await?;
        let began = Instant::now();
        // Queued a thousand at a time, so that the writer commits them together.
        for chunk in (0..schedules).collect::<Vec<_>>().chunks(1000) {
            let added = join_all(chunk.iter().map(|n| control.add_schedule(daily(*n)))).await;
            for one in added {
                one?;
            }
        }
        println!(
            "added {schedules} schedules in {:.1} s",
            began.elapsed().as_secs_f64()
        );
        // The first tick after the adds, uncounted: it warms the caches.
        control.tick().await?;
        let mut quiet = Vec::with_capacity(ticks);
        for _ in 0..ticks {
            clock.advance(Duration::from_millis(1));
            let began = Instant::now();
            control.tick().await?;
            quiet.push(began.elapsed());
        }
        show("tick, none due", quiet);
        let mut busy = Vec::with_capacity(ticks);
        let mut minute = (clock.now() / (60 * SECOND) + 1) * 60 * SECOND;
        for _ in 0..ticks {
            clock.move_to(minute);
            let began = Instant::now();
            control.tick().await?;
            busy.push(began.elapsed());
            minute += 60 * SECOND;
        }
        let due = (schedules as f64) / 1440.0;
        show(&format!("tick, ~{due:.0} due (each starts a token)"), busy);
        control.shutdown().await?;
        Ok::<(), Failure>(())
    })
}

/// The `n`th schedule: daily at a minute of the day spread by `n`.
fn daily(n: usize) -> NewSchedule {
    let minute_of_day = (n * 7919) % 1440;
    NewSchedule {
        name: format!("daily-{n}"),
        spec: format!("{} {} * * *", minute_of_day % 60, minute_of_day / 60),
        token: Some("{schedule}-{date}".into()),
        context: json!({"title": "{schedule}"}).as_object().cloned(),
        overlap: Some("allow".into()),
        ..NewSchedule::default()
    }
}

/// Print `name: p50 .. p99 .. max ..`.
fn show(name: &str, mut took: Vec<Duration>) {
    took.sort_unstable();
    let at = |p: usize| {
        let index = (took.len() * p).div_ceil(100).clamp(1, took.len().max(1)) - 1;
        took.get(index).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "  {name}: p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        at(50),
        at(99),
        at(100)
    );
}
