//! The notifications' sender as a part of serving (`docs/notifications.md`):
//! started once the database is held (after a standby's takeover too), stopped
//! after the clock. It runs on a thread of its own with a runtime of its own, so
//! that no receiver, however slow, holds up a request's thread: the write path
//! only writes the outbox rows. It runs at a lower priority, as the trace
//! exporter does: under load it falls behind in its queues rather than slowing
//! the write path, and catches up when the load passes.

use std::time::Duration;

use tokio::sync::watch;

use super::lowered::Lowered;
use crate::control::Control;
use crate::notify::sender::{run, SenderOptions};

/// How long the stop waits for the sender's thread: an attempt under way is
/// dropped (it is sent again by the next control plane).
const STOP_WITHIN: Duration = Duration::from_secs(1);

/// The running sender: told when its thread has ended.
pub struct Notifying(Lowered);

/// Start sending `control`'s notifications until `stop` turns true; `None` (with a
/// line in the log) when its thread cannot start.
pub fn start(
    control: &Control,
    options: SenderOptions,
    stop: &watch::Receiver<bool>,
) -> Option<Notifying> {
    let (control, stop) = (control.clone(), stop.clone());
    let cannot = ("notifications", "none are sent");
    let body = move || match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("stateous-notify")
        .enable_all()
        .build()
    {
        Ok(runtime) => {
            runtime.block_on(run(control, options, stop));
            runtime.shutdown_timeout(STOP_WITHIN);
        }
        Err(error) => {
            let (what, lost) = cannot;
            tracing::error!(target: "stateous.serve", "{what}: cannot start ({error}); {lost}");
        }
    };
    Lowered::start("stateous-notify", cannot, body).map(Notifying)
}

impl Notifying {
    /// Wait for the sender's thread to end (its stop was sent).
    pub async fn finish(self) {
        self.0.finish(STOP_WITHIN + STOP_WITHIN).await;
    }
}
