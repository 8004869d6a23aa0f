//! A part of serving on a thread of its own at a lower priority (nice 10): the
//! notifications' sender (`notifier.rs`) and the trace exporter (`tracer.rs`).
//! When the machine is busy the requests go first; these fall behind in their
//! queues rather than slowing the write path, and catch up when the load passes.

use std::time::Duration;

use tokio::sync::oneshot;

/// How much lower than the server's the thread's scheduling priority is.
const NICER: i32 = 10;

/// A thread that [`Lowered::start`] started: told when it has ended.
pub struct Lowered {
    ended: oneshot::Receiver<()>,
}

impl Lowered {
    /// Run `body` on a thread named `name`, at a lower priority. `None` when the
    /// thread cannot start, with the line `WHAT: cannot start (ERROR); LOST` in the
    /// log, `what` and `lost` being the part and what goes undone.
    pub fn start(
        name: &str,
        (what, lost): (&str, &str),
        body: impl FnOnce() + Send + 'static,
    ) -> Option<Lowered> {
        let (ended, on_end) = oneshot::channel();
        let started = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                lower_priority();
                body();
                let _ = ended.send(());
            });
        match started {
            Ok(_) => Some(Lowered { ended: on_end }),
            Err(error) => {
                tracing::error!(target: "stateous.serve", "{what}: cannot start ({error}); {lost}");
                None
            }
        }
    }

    /// Wait at most `within` for the thread to end (its stop was sent).
    pub async fn finish(self, within: Duration) {
        let _ = tokio::time::timeout(within, self.ended).await;
    }
}

/// This thread, and the threads it starts (a runtime's), at a lower priority;
/// should the system refuse, at the same priority.
fn lower_priority() {
    let thread = rustix::thread::gettid();
    let _ = rustix::process::setpriority_process(Some(thread), NICER);
}
