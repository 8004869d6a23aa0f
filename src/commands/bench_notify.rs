//! `stateous bench --notify` (`docs/how-to/measure.md`, "Notifications"): the
//! bench six times in one run against one control plane: without
//! subscriptions; with one subscription that matches every ledger entry, to a
//! receiver in this process that answers 204 at once; without again; with one
//! to a receiver that accepts connections and never answers (each attempt
//! waits for the daemon's `--notify-timeout`); with one to an address that
//! refuses connections (each attempt fails at once and is tried again after
//! its backoff); and without a third time. Each pass with a subscription is
//! set beside the mean of the passes without on either side of it, so that
//! what the database's growth and the machine's drift do between passes falls
//! on both sides; and how many notifications a second reached the receiver.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::bench::{pass, BenchOptions};
use super::{line, CommandError};
use stateous_client::Client;
use stateous_shared::notify::NewSubscription;

/// Every kind of ledger entry: a subscription to all of them matches every entry.
const EVERY_KIND: [&str; 32] = [
    "started",
    "entered",
    "event_accepted",
    "event_deferred",
    "event_dropped",
    "event_rejected",
    "event_replayed",
    "timer_set",
    "timer_fired",
    "task_queued",
    "task_claimed",
    "task_waiting",
    "task_done",
    "task_cancelled",
    "task_failed",
    "task_retrying",
    "context_changed",
    "memory_set",
    "memory_deleted",
    "note",
    "paused",
    "resumed",
    "retried",
    "operator",
    "migrated",
    "branch_started",
    "completed",
    "failed",
    "cancelled",
    "usage_reported",
    "budget_exceeded",
    "budget_set",
];

/// How long the bench waits for the receiver to get every notification.
const DRAIN_WITHIN: Duration = Duration::from_secs(600);

/// How often the bench asks whether every notification was delivered: each
/// question counts the table's rows, work for the database the sender uses too.
const DRAIN_ASKED_EVERY: Duration = Duration::from_millis(200);

/// A receiver that answers each request 204 at once, over kept-alive
/// connections, counting them; its URL.
async fn live_receiver(count: Arc<AtomicU64>) -> Result<String, CommandError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/bench", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                let mut line = String::new();
                loop {
                    let mut length = 0usize;
                    line.clear();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    count.fetch_add(1, Ordering::Relaxed);
                    let answer = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
                    if write.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(url)
}

/// A receiver that accepts connections and never answers; its URL.
async fn dead_receiver() -> Result<String, CommandError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/dead", listener.local_addr()?);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    Ok(url)
}

/// An address where nothing listens (a port taken and let go): each connection
/// is refused.
async fn refusing_receiver() -> Result<String, CommandError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/refused", listener.local_addr()?);
    drop(listener);
    Ok(url)
}

fn subscription(name: &str, url: String) -> NewSubscription {
    let kinds: Vec<String> = EVERY_KIND.iter().map(|k| k.to_string()).collect();
    NewSubscription {
        name: name.into(),
        url,
        kinds,
        ..NewSubscription::default()
    }
}

/// The six passes and the figures side by side.
pub async fn run(
    options: &BenchOptions,
    client: Client,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let failed = |error| CommandError::Client(error).with_code();
    for name in ["bench-all", "bench-dead", "bench-refused"] {
        // Left by an earlier run that stopped: gone before the first pass.
        let _ = client.remove_subscription(name).await;
    }
    line(out, "pass 1: no subscription")?;
    let without = pass(options, client.clone(), out).await?;

    let count = Arc::new(AtomicU64::new(0));
    let url = live_receiver(Arc::clone(&count)).await?;
    client
        .add_subscription(&subscription("bench-all", url))
        .await
        .map_err(failed)?;
    line(
        out,
        "pass 2: one subscription matching every entry, a receiver here",
    )?;
    let began = Instant::now();
    let with = pass(options, client.clone(), out).await?;
    // The sender yields to a busy write path: how many came during the pass, and
    // at what pace the rest came once it ended.
    let (during, ended) = (count.load(Ordering::Relaxed), began.elapsed());
    let deadline = Instant::now() + DRAIN_WITHIN;
    let (delivered, drained) = loop {
        let shown = client.subscription("bench-all").await.map_err(failed)?;
        let counts = shown.subscription.counts;
        if counts.pending + counts.retrying == 0 || Instant::now() > deadline {
            break (counts.delivered, began.elapsed());
        }
        tokio::time::sleep(DRAIN_ASKED_EVERY).await;
    };
    client
        .remove_subscription("bench-all")
        .await
        .map_err(failed)?;

    line(out, "pass 3: no subscription again")?;
    let between = pass(options, client.clone(), out).await?;

    let url = dead_receiver().await?;
    client
        .add_subscription(&subscription("bench-dead", url))
        .await
        .map_err(failed)?;
    line(
        out,
        "pass 4: one subscription matching every entry, a receiver that never answers",
    )?;
    let dead = pass(options, client.clone(), out).await?;
    client
        .remove_subscription("bench-dead")
        .await
        .map_err(failed)?;

    let url = refusing_receiver().await?;
    client
        .add_subscription(&subscription("bench-refused", url))
        .await
        .map_err(failed)?;
    line(
        out,
        "pass 5: one subscription matching every entry, an address that refuses connections",
    )?;
    let refused = pass(options, client.clone(), out).await?;
    client
        .remove_subscription("bench-refused")
        .await
        .map_err(failed)?;
    // The database grew over the passes: the last pass without subscriptions
    // shows how much of a difference that alone makes.
    line(
        out,
        "pass 6: no subscription a third time, on the grown database",
    )?;
    let again = pass(options, client.clone(), out).await?;

    let share =
        |figure: f64, before: f64, after: f64| figure / ((before + after) / 2.0).max(1e-9) * 100.0;
    line(out, "notifications:")?;
    line(
        out,
        &format!("  without subscriptions:   {without:.1}, {between:.1}, {again:.1} tokens/s (passes 1, 3, 6)"),
    )?;
    line(
        out,
        &format!(
            "  matching every entry:    {with:.1} tokens/s ({:.0}% of passes 1 and 3)",
            share(with, without, between)
        ),
    )?;
    line(
        out,
        &format!(
            "  to a dead receiver:      {dead:.1} tokens/s ({:.0}% of passes 3 and 6)",
            share(dead, between, again)
        ),
    )?;
    line(
        out,
        &format!(
            "  to a refusing address:  {refused:.1} tokens/s ({:.0}% of passes 3 and 6)",
            share(refused, between, again)
        ),
    )?;
    line(
        out,
        &format!(
            "  without, on the grown database: {:.0}% of pass 1",
            again / without.max(1e-9) * 100.0
        ),
    )?;
    let seconds = drained.as_secs_f64().max(1e-9);
    line(
        out,
        &format!(
            "  delivered: {delivered} notifications in {seconds:.2} s from the pass's start: \
             {:.0}/s (the receiver counted {})",
            delivered as f64 / seconds,
            count.load(Ordering::Relaxed)
        ),
    )?;
    let after = drained.saturating_sub(ended).as_secs_f64().max(1e-9);
    line(
        out,
        &format!(
            "    {during} during the pass ({:.2} s), the other {} in the {after:.2} s after it: {:.0}/s",
            ended.as_secs_f64(),
            delivered.saturating_sub(during as i64),
            delivered.saturating_sub(during as i64) as f64 / after
        ),
    )?;
    Ok(())
}
