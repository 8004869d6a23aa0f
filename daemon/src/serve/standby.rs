//! A standby's wait (`serve --standby`): it says that it stands by, then runs the
//! same [`Control::open`] as a start, which waits for the database's serving lock,
//! and checks its graph against the database every [`STANDBY_CHECK_EVERY`] while
//! it waits, saying when a takeover would refuse the graph, and apart from that
//! when the database cannot be read.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use stateous_shared::graph::Graph;

use super::{Signals, STANDBY_CHECK_EVERY, STANDBY_UNREAD_LINE, STANDBY_WAITING_LINE};
use crate::control::{Checked, Control, Options};

/// How a standby's wait ended.
pub(super) enum Waited {
    /// It holds the database now.
    Took(Control),
    /// A signal stopped it.
    Stopped,
    /// The takeover was refused (e.g. the structure on record changed meanwhile).
    Failed(String),
}

/// A standby's wait: say so, then run the same [`Control::open`] as a start (which
/// waits for the serving lock first) until it returns or a signal comes. A signal
/// sets `stop`, which ends the wait's thread within [`super::STANDBY_EVERY`].
pub(super) async fn stand_by(
    graph: Arc<Graph>,
    options: Options,
    stop: &AtomicBool,
    signals: &mut Signals,
    url: &str,
    socket_path: &str,
) -> Waited {
    super::say(&format!("standby on {url} (Ctrl-C stops)"));
    super::say(STANDBY_WAITING_LINE);
    super::say(&format!("the same API on unix://{socket_path}"));
    // Under systemd a standby is up once it answers as one.
    let _ = sd_notify::notify(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(STANDBY_WAITING_LINE),
    ]);
    let checking = (Arc::clone(&graph), options.clone());
    let mut opening = tokio::spawn(Control::open(graph, options));
    let mut every = tokio::time::interval(STANDBY_CHECK_EVERY);
    every.tick().await;
    let mut refused: Option<String> = None;
    let mut unread = false;
    loop {
        tokio::select! {
            opened = &mut opening => return match opened {
                Ok(Ok(control)) => Waited::Took(control),
                Ok(Err(sentence)) => Waited::Failed(sentence),
                Err(_) => Waited::Failed("the standby failed unexpectedly".to_string()),
            },
            _ = signals.next() => {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                return Waited::Stopped;
            }
            _ = every.tick() => {
                let check = Control::check(Arc::clone(&checking.0), &checking.1);
                // A database that does not answer soon leaves the verdict as it was.
                let Ok(checked) = tokio::time::timeout(STANDBY_CHECK_EVERY / 2, check).await else {
                    continue;
                };
                let now = match checked {
                    Checked::Agrees => None,
                    Checked::Refused(sentence) => Some(sentence),
                    // Nor does one that cannot be read: that is the database's
                    // trouble, not the graph's, and is said as such, once.
                    Checked::Unread(sentence) => {
                        if !unread {
                            tracing::warn!(
                                target: "stateous.serve",
                                "{STANDBY_UNREAD_LINE} ({sentence}); it checks again every {} s",
                                STANDBY_CHECK_EVERY.as_secs()
                            );
                        }
                        unread = true;
                        continue;
                    }
                };
                unread = false;
                if now != refused {
                    match &now {
                        Some(sentence) => tracing::warn!(
                            target: "stateous.serve",
                            "standby: a takeover now would be refused ({sentence})"
                        ),
                        None => tracing::info!(
                            target: "stateous.serve",
                            "standby: the graph agrees with the database again"
                        ),
                    }
                    refused = now;
                }
            }
        }
    }
}
