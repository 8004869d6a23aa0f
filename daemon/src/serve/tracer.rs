//! The trace exporter of `serve --otlp-endpoint` as a part of serving: started
//! once the database is held (after a standby's takeover too), stopped after the
//! clock, with the spans still queued given a short while to go out.
//!
//! It runs on a thread of its own, with a runtime of its own, at a lower priority
//! (nice 10): the requests' threads never wait behind the building and encoding of
//! spans, and when the machine is busy the exporter falls behind in the ledger
//! rather than slowing the write path (it catches up when the load passes).

use stateous_otlp::Endpoint;
use tokio::sync::watch;

use super::lowered::Lowered;
use crate::control::Control;
use crate::traces::{queue, Tracer, FLUSH_WITHIN};

/// The running exporter: told when its thread has ended.
pub struct Tracing(Lowered);

/// Start exporting `control`'s traces to `endpoint`, from the ledger rows after the
/// id `from` on, until `stop` turns true; `None` (with a line in the log) when its
/// thread cannot start.
pub fn start(
    control: &Control,
    (endpoint, from): (Endpoint, i64),
    stop: &watch::Receiver<bool>,
) -> Option<Tracing> {
    let (control, stop) = (control.clone(), stop.clone());
    let body = move || run(control, endpoint, from, stop);
    Lowered::start("stateous-traces", ("traces", "no spans are sent"), body).map(Tracing)
}

/// Follow the ledger and send spans until the stop, then give the queue
/// [`FLUSH_WITHIN`] to send what is left.
fn run(control: Control, endpoint: Endpoint, from: i64, stop: watch::Receiver<bool>) {
    // Its reads' threads (SQLite's run on the runtime's blocking threads) take the
    // exporter's name, so that its CPU time is read as one (`scripts/bench-traces.sh`).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .thread_name("stateous-traces")
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(target: "stateous.serve", "traces: cannot start ({error}); no spans are sent");
            return;
        }
    };
    let url = endpoint.url.clone();
    runtime.block_on(async move {
        match queue(endpoint, control.metrics().clone()) {
            Ok((spans, queue)) => {
                tracing::info!(target: "stateous.serve", "traces: spans go to {url}");
                let tracer = Tracer {
                    control,
                    spans,
                    from,
                };
                tracer.run(stop).await;
                if tokio::time::timeout(FLUSH_WITHIN, queue).await.is_err() {
                    tracing::warn!(
                        target: "stateous.serve",
                        "traces: some spans were not sent before the stop"
                    );
                }
            }
            Err(sentence) => {
                tracing::error!(target: "stateous.serve", "traces: {sentence}; no spans are sent");
            }
        }
    });
}

impl Tracing {
    /// Wait for the exporter's thread to end (its stop was sent): it reads the
    /// ledger up to the stop, then sends for at most [`FLUSH_WITHIN`].
    pub async fn finish(self) {
        self.0.finish(FLUSH_WITHIN + FLUSH_WITHIN).await;
    }
}
