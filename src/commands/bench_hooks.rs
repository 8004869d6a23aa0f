//! `stateous hooks bench`: send signed deliveries to a control plane's hook with
//! many clients at once, and measure verified deliveries per second and their
//! latency. Each delivery names a new token (`{"token": ..., "event": ...}`), so
//! the hook must read `{body.token}` and `{body.event}` and start missing tokens
//! (`assets/bench/hooks.yaml`). With `--redeliver`, each is sent again and must
//! answer `duplicate`. Nothing is timed by a test: this is the measurement.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stateous_client::{resolve_url, Endpoint, Transport};
use stateous_shared::hooks::HookSpec;

use crate::hooks_args::{headers, hook_and_key, BenchHooksArgs};

struct Shared {
    transport: Transport,
    hook: HookSpec,
    key: Vec<u8>,
    path: String,
    event: String,
    run: String,
    total: usize,
    redeliver: bool,
    next: AtomicUsize,
    deadline: Instant,
}

/// Run the bench; the error is one sentence.
pub fn run(args: BenchHooksArgs) -> Result<(), String> {
    if args.deliveries == 0 || args.clients == 0 || args.max_seconds == 0 {
        return Err("--deliveries, --clients and --max-seconds must be at least 1".into());
    }
    let (hook, key) = hook_and_key(&args.hooks, &args.hook)?;
    let url = resolve_url(args.url.url.as_deref()).map_err(|e| e.to_string())?;
    let endpoint = Endpoint::parse(&url).map_err(|e| e.to_string())?;
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let shared = Arc::new(Shared {
        transport: Transport::keep_alive(endpoint, Duration::from_secs(30)),
        path: stateous_client::routes::hook(&hook.name),
        hook,
        key,
        event: args.event,
        run: format!("HB-{:x}", since.as_micros()),
        total: args.deliveries,
        redeliver: args.redeliver,
        next: AtomicUsize::new(0),
        deadline: Instant::now() + Duration::from_secs(args.max_seconds),
    });
    let runtime = stateous_client::runtime::runtime(stateous_client::runtime::Threads::One)
        .map_err(|e| format!("cannot start the bench: {e}"))?;
    println!(
        "hooks bench: {} deliveries to {}{} ({}), {} clients{}",
        args.deliveries,
        url,
        shared.path,
        shared.hook.verify.as_str(),
        args.clients,
        if args.redeliver {
            ", each sent twice"
        } else {
            ""
        }
    );
    let began = Instant::now();
    let mut latencies: Vec<u32> = runtime.block_on(async {
        let workers: Vec<_> = (0..args.clients)
            .map(|_| tokio::spawn(work(shared.clone())))
            .collect();
        let mut all = Vec::new();
        for worker in workers {
            all.extend(worker.await.map_err(|e| e.to_string())??);
        }
        Ok::<_, String>(all)
    })?;
    let elapsed = began.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let at = |p: f64| {
        let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
        f64::from(latencies[i]) / 1000.0
    };
    println!(
        "{} requests in {elapsed:.2} s: {:.0} deliveries/s",
        latencies.len(),
        latencies.len() as f64 / elapsed
    );
    println!(
        "latency ms: p50 {:.2}, p90 {:.2}, p99 {:.2}, max {:.2}",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    Ok(())
}

/// One client: deliveries until none is left; each answer's status is checked.
async fn work(shared: Arc<Shared>) -> Result<Vec<u32>, String> {
    let mut latencies = Vec::new();
    loop {
        let number = shared.next.fetch_add(1, Ordering::SeqCst);
        if number >= shared.total {
            return Ok(latencies);
        }
        if Instant::now() > shared.deadline {
            return Err(format!("the bench did not finish in time ({number} sent)"));
        }
        let token = format!("{}-{number}", shared.run);
        let body = serde_json::json!({"token": token, "event": shared.event, "title": "bench"});
        let body = body.to_string().into_bytes();
        let id = format!("{token}-delivery");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let timestamp = i64::try_from(now.as_secs()).unwrap_or(0);
        let sent = headers(&shared.hook, &shared.key, &id, timestamp, &body);
        let pairs: Vec<(&str, &str)> = sent
            .iter()
            .filter(|(name, _)| name != "Content-Type")
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let rounds = if shared.redeliver { 2 } else { 1 };
        for round in 0..rounds {
            let began = Instant::now();
            let answer = shared
                .transport
                .send("POST", &shared.path, Some(body.clone()), &pairs)
                .await
                .map_err(|e| format!("a delivery failed: {e}"))?;
            latencies.push(u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX));
            let duplicate = answer.body.windows(16).any(|w| w == b"\"duplicate\":true");
            if answer.status != 200 || duplicate != (round == 1) {
                return Err(format!(
                    "the delivery {id} was answered {}: {}",
                    answer.status,
                    String::from_utf8_lossy(&answer.body)
                ));
            }
        }
    }
}
