//! The trace exporter of `serve --otlp-endpoint` as a part of serving: started
//! once the database is held (after a standby's takeover too), stopped after the
//! clock, with the spans still queued given a short while to go out.

use stateous_otlp::Endpoint;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::control::Control;
use crate::traces::{queue, Tracer, FLUSH_WITHIN};

/// The running exporter: the tracer that reads the ledger, and the queue's task.
pub struct Tracing {
    tracer: JoinHandle<()>,
    queue: JoinHandle<()>,
}

/// Start exporting `control`'s traces to `endpoint`, from the ledger rows after the
/// id `from` on, until `stop` turns true; `None` (with a line in the log) when the
/// exporter cannot be set up.
pub fn start(
    control: &Control,
    (endpoint, from): (Endpoint, i64),
    stop: &watch::Receiver<bool>,
) -> Option<Tracing> {
    let url = endpoint.url.clone();
    match queue(endpoint, control.metrics().clone()) {
        Ok((spans, queue)) => {
            tracing::info!(target: "stateous.serve", "traces: spans go to {url}");
            let tracer = Tracer {
                control: control.clone(),
                spans,
                from,
            };
            let tracer = tokio::spawn(tracer.run(stop.clone()));
            Some(Tracing { tracer, queue })
        }
        Err(sentence) => {
            tracing::error!(target: "stateous.serve", "traces: {sentence}; no spans are sent");
            None
        }
    }
}

impl Tracing {
    /// Wait for the tracer to end (its stop was sent), then give the queue
    /// [`FLUSH_WITHIN`] to send what is left.
    pub async fn finish(self) {
        let _ = self.tracer.await;
        if tokio::time::timeout(FLUSH_WITHIN, self.queue)
            .await
            .is_err()
        {
            tracing::warn!(target: "stateous.serve", "traces: some spans were not sent before the stop");
        }
    }
}
