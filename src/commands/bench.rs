//! `stateous bench`: drive a control plane over HTTP as many supervisors without
//! routines, and measure tokens per second and request latency.
//!
//! It starts `tokens` tokens of the `orders` starter and, with `clients` concurrent
//! workers, claims and reports their tasks until every token completed: `draft`
//! emits `submitted`, `review` emits `reviewed` with `{"approved": true, "note": ""}`,
//! so each token takes 5 requests. Each worker has its own keep-alive connection,
//! so the numbers measure the daemon, not connects. The run is bounded: it stops
//! with an error after `max_time`. The bench prints the CPU time it took itself:
//! on a machine it shares with the daemon, that time was not the daemon's.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{line, CommandError};
use stateous_client::{ClaimRequest, Client, ClientError};
use stateous_shared::wire::{Grant, Object, Outcome};

/// The workflow the bench drives: the `orders` starter of `stateous init workflow`.
pub const WORKFLOW: &str = "orders";

/// The options of `stateous bench`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchOptions {
    /// `--url`, the access key and the TLS flags. The key is sent with every
    /// request: one with the roles operate and supervise cannot be one key, so an
    /// admin key.
    pub connection: stateous_client::Connection,
    /// `--tokens`: how many tokens to run through the workflow.
    pub tokens: usize,
    /// `--clients`: how many workers send requests at once.
    pub clients: usize,
    /// `--max-time`: the run fails when it has not finished by then.
    pub max_time: Duration,
    /// `--notify`: run six times in one run, without subscriptions, with one
    /// that matches every entry to a receiver in this process, without again,
    /// with one to a receiver that never answers, with one to an address that
    /// refuses connections, and without a third time; print each pass with a
    /// subscription beside the passes without around it, and the notifications
    /// delivered per second (`super::bench_notify`).
    pub notify: bool,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions {
            connection: stateous_client::Connection::default(),
            tokens: 10_000,
            clients: 64,
            max_time: Duration::from_secs(600),
            notify: false,
        }
    }
}

/// The kinds of request the bench sends, for latency per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Start,
    Claim,
    Report,
}

const KINDS: [(Kind, &str); 3] = [
    (Kind::Start, "start"),
    (Kind::Claim, "claim"),
    (Kind::Report, "report"),
];

/// What one worker measured: each request's kind and latency in microseconds
/// (small, since a long run keeps millions), and the claims that found nothing.
#[derive(Debug, Default)]
struct Measured {
    samples: Vec<(Kind, u32)>,
    empty_claims: usize,
}

/// What the workers share: the next token to start, and the tokens completed.
struct Shared {
    client: Client,
    run: String,
    total: usize,
    next: AtomicUsize,
    completed: AtomicUsize,
    deadline: Instant,
}

/// Run the bench and print its results to `out`.
pub async fn run(options: &BenchOptions, out: &mut dyn Write) -> Result<(), CommandError> {
    if options.tokens == 0 || options.clients == 0 {
        return Err(CommandError::Usage(
            "--tokens and --clients must be at least 1".into(),
        ));
    }
    // Checked before any token starts: with no time at all the run could only
    // fail, after it had started tokens on the control plane.
    if options.max_time.is_zero() {
        return Err(CommandError::Usage(
            "--max-seconds must be at least 1".into(),
        ));
    }
    let client = options
        .connection
        .client(stateous_client::DEFAULT_TIMEOUT, true)?;
    let health = client.health().await?;
    if health.workflow != WORKFLOW {
        return Err(CommandError::Usage(format!(
            "the bench drives the '{WORKFLOW}' starter, but the control plane at {} serves \
             '{}'; serve the graph of `stateous init workflow orders`",
            client.url(),
            health.workflow
        )));
    }
    line(
        out,
        &format!(
            "bench: {} tokens of {WORKFLOW} at {}, {} clients",
            options.tokens,
            client.url(),
            options.clients
        ),
    )?;
    if options.notify {
        return super::bench_notify::run(options, client, out).await;
    }
    pass(options, client, out).await.map(|_| ())
}

/// One pass of the bench: `options.tokens` tokens until each completed; prints
/// its figures and answers its tokens per second.
pub(super) async fn pass(
    options: &BenchOptions,
    client: Client,
    out: &mut dyn Write,
) -> Result<f64, CommandError> {
    let shared = Arc::new(Shared {
        client,
        run: run_id(),
        total: options.tokens,
        next: AtomicUsize::new(0),
        completed: AtomicUsize::new(0),
        deadline: Instant::now() + options.max_time,
    });
    let began = Instant::now();
    let cpu_before = own_cpu();
    let mut workers = Vec::with_capacity(options.clients);
    for index in 0..options.clients {
        workers.push(tokio::spawn(work(shared.clone(), index)));
    }
    let mut all = Measured::default();
    let mut failure = None;
    for worker in workers {
        match worker.await {
            Ok(Ok(measured)) => {
                all.samples.extend(measured.samples);
                all.empty_claims += measured.empty_claims;
            }
            Ok(Err(error)) => failure = failure.or(Some(error)),
            Err(error) => failure = failure.or(Some(CommandError::Usage(error.to_string()))),
        }
    }
    if let Some(error) = failure {
        return Err(error);
    }
    let elapsed = began.elapsed();
    print_results(out, options.tokens, elapsed, &all)?;
    let per_second = options.tokens as f64 / elapsed.as_secs_f64().max(1e-9);
    if let (Some(before), Some(after)) = (cpu_before, own_cpu()) {
        let (user, system) = (after.0 - before.0, after.1 - before.1);
        let per_request = (user + system) / all.samples.len().max(1) as f64 * 1e6;
        line(
            out,
            &format!(
                "bench CPU: {:.2} s (user {user:.2}, system {system:.2}), {per_request:.0} µs a request",
                user + system
            ),
        )?;
    }
    Ok(per_second)
}

/// The CPU time this process has taken so far: user and system seconds.
fn own_cpu() -> Option<(f64, f64)> {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to the struct.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    Some((seconds(usage.ru_utime), seconds(usage.ru_stime)))
}

/// A prefix that makes this run's token ids new, so runs can repeat on one database.
fn run_id() -> String {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_micros())
        .unwrap_or_default();
    format!("BENCH-{micros:x}")
}

/// One worker: start a token while some are left, then claim and report one task;
/// until every token completed. A failed request stops the whole run.
async fn work(shared: Arc<Shared>, index: usize) -> Result<Measured, CommandError> {
    let mut measured = Measured::default();
    let mut claim = ClaimRequest {
        supervisor: format!("bench-{index}"),
        states: vec!["draft".into(), "review".into()],
        request: None,
        outbox: None,
        wait: None,
    };
    let context: Object = json!({"title": "bench"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut claims = 0_u64;
    while shared.completed.load(Ordering::SeqCst) < shared.total {
        if Instant::now() > shared.deadline {
            return Err(CommandError::Usage(format!(
                "the bench did not finish in time: {} of {} tokens completed",
                shared.completed.load(Ordering::SeqCst),
                shared.total
            )));
        }
        let number = shared.next.fetch_add(1, Ordering::SeqCst);
        if number < shared.total {
            let id = format!("{}-{number}", shared.run);
            let began = Instant::now();
            shared.client.start(&id, &context).await.map_err(failed)?;
            measured.samples.push((Kind::Start, micros(began)));
        }
        claims += 1;
        claim.request = Some(format!("b{index}-{claims}"));
        let began = Instant::now();
        let grant = shared.client.claim(&claim).await.map_err(failed)?;
        measured.samples.push((Kind::Claim, micros(began)));
        let Some(grant) = grant else {
            measured.empty_claims += 1;
            // Every task is held by another worker: wait a little, not in a spin.
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let began = Instant::now();
        let after = shared
            .client
            .report(grant.task, &outcome(&grant, &claim.supervisor)?)
            .await
            .map_err(failed)?;
        measured.samples.push((Kind::Report, micros(began)));
        // A task of another run's token (one left over on this database) is
        // worked too, but only this run's tokens count toward its end.
        let ours = after
            .token
            .strip_prefix(shared.run.as_str())
            .is_some_and(|rest| rest.starts_with('-'));
        if after.status == "completed" && ours {
            shared.completed.fetch_add(1, Ordering::SeqCst);
        }
    }
    Ok(measured)
}

/// The outcome of a granted task of `orders`: what a routine of that state emits.
fn outcome(grant: &Grant, supervisor: &str) -> Result<Outcome, CommandError> {
    let (event, payload) = match grant.state.as_str() {
        "draft" => ("submitted", None),
        "review" => (
            "reviewed",
            json!({"approved": true, "note": ""}).as_object().cloned(),
        ),
        other => {
            return Err(CommandError::Usage(format!(
                "the bench got a task of state '{other}', which '{WORKFLOW}' does not have"
            )))
        }
    };
    Ok(Outcome {
        kind: "event".into(),
        event: Some(event.into()),
        payload,
        error: None,
        context: Object::new(),
        schedules: Vec::new(),
        attempt: Some(grant.attempt),
        supervisor: Some(supervisor.to_string()),
    })
}

/// Microseconds since `began`, saturating at about 71 minutes.
fn micros(began: Instant) -> u32 {
    u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX)
}

fn failed(error: ClientError) -> CommandError {
    CommandError::Client(error).with_code()
}

/// Tokens per second, then latency percentiles overall and per kind of request.
fn print_results(
    out: &mut dyn Write,
    tokens: usize,
    elapsed: Duration,
    all: &Measured,
) -> Result<(), CommandError> {
    let seconds = elapsed.as_secs_f64().max(1e-9);
    line(
        out,
        &format!(
            "tokens/s: {:.1} ({tokens} tokens in {seconds:.2} s)",
            tokens as f64 / seconds
        ),
    )?;
    line(
        out,
        &format!(
            "requests: {} ({:.1}/s), of which {} claims found no task",
            all.samples.len(),
            all.samples.len() as f64 / seconds,
            all.empty_claims
        ),
    )?;
    let every: Vec<u32> = all.samples.iter().map(|(_, took)| *took).collect();
    line(out, &format!("latency {}", percentiles(every)))?;
    for (kind, name) in KINDS {
        let some: Vec<u32> = all
            .samples
            .iter()
            .filter(|(of, _)| *of == kind)
            .map(|(_, took)| *took)
            .collect();
        line(out, &format!("  {name:<7}{}", percentiles(some)))?;
    }
    Ok(())
}

/// `p50 1.20 ms  p90 ...  p99 ...  max ...` of `samples`, in microseconds
/// (nearest-rank).
fn percentiles(mut samples: Vec<u32>) -> String {
    if samples.is_empty() {
        return "no requests".to_string();
    }
    samples.sort_unstable();
    let rank = |p: f64| {
        let index = ((p / 100.0) * samples.len() as f64).ceil() as usize;
        samples[index.clamp(1, samples.len()) - 1]
    };
    let ms = |took: u32| f64::from(took) / 1000.0;
    format!(
        "p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        ms(rank(50.0)),
        ms(rank(90.0)),
        ms(rank(99.0)),
        ms(rank(100.0))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(
            percentiles(samples),
            "p50 50.00 ms  p90 90.00 ms  p99 99.00 ms  max 100.00 ms"
        );
        assert_eq!(
            percentiles(vec![3000]),
            "p50 3.00 ms  p90 3.00 ms  p99 3.00 ms  max 3.00 ms"
        );
        assert_eq!(percentiles(Vec::new()), "no requests");
    }

    #[test]
    fn each_state_of_orders_emits_its_event() {
        let grant = |state: &str| Grant {
            task: 1,
            token: "T".into(),
            state: state.into(),
            visit: 1,
            attempt: 2,
            context: Object::new(),
            memory: Object::new(),
            entered_by: None,
            traceparent: None,
        };
        let draft = outcome(&grant("draft"), "bench-0").unwrap();
        assert_eq!(draft.event.as_deref(), Some("submitted"));
        assert_eq!(draft.attempt, Some(2));
        let review = outcome(&grant("review"), "bench-0").unwrap();
        assert_eq!(
            serde_json::to_value(&review.payload).unwrap(),
            json!({"approved": true, "note": ""})
        );
        assert!(outcome(&grant("other"), "bench-0").is_err());
    }
}
