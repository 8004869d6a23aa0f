//! [`Follower`]: the one way to follow `GET /watch` for as long as a caller
//! wants, through breaks and restarts of the control plane, and [`Backoff`], the
//! waits between tries.
//!
//! The follower keeps the id of the last event it passed on and opens every new
//! stream with it as `Last-Event-ID`, so nothing committed in between is lost.
//! A stream that breaks after it was open for at least the first wait is opened
//! again at once; one that breaks sooner, and every open that fails, waits the
//! next wait of the backoff first, so that a control plane that keeps closing
//! streams is never asked in a tight loop. It says what happened at each step
//! ([`Followed`]) and never gives up by itself: the caller decides which
//! failures end the following (a control plane without `/watch` answers 404).

use std::time::Duration;

use tokio::time::Instant;

use super::api::Client;
use super::error::ClientError;
use super::watch::{Watch, WatchEvent};

/// The waits before each new try, the last one repeating, each moved at random
/// by up to `jitter` of itself either way.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    waits: Vec<Duration>,
    jitter: f64,
}

impl Backoff {
    /// These waits (one second when empty), without jitter.
    pub fn new(waits: Vec<Duration>) -> Backoff {
        let waits = if waits.is_empty() {
            vec![Duration::from_secs(1)]
        } else {
            waits
        };
        Backoff { waits, jitter: 0.0 }
    }

    /// These waits, each moved by up to `jitter` (a share, e.g. 0.2) either way,
    /// so that the many callers that lost one control plane do not all come back
    /// at the same moment.
    pub fn with_jitter(self, jitter: f64) -> Backoff {
        Backoff { jitter, ..self }
    }

    /// The waits, as given (the jitter is added per wait).
    pub fn waits(&self) -> &[Duration] {
        &self.waits
    }

    /// The wait before the try after `failures` failed ones (from 0).
    pub fn wait(&self, failures: usize) -> Duration {
        let wait = self.waits[failures.min(self.waits.len() - 1)];
        if self.jitter == 0.0 {
            return wait;
        }
        wait.mul_f64(1.0 + self.jitter * (2.0 * rand::random::<f64>() - 1.0))
    }
}

/// What one step of following gave.
#[derive(Debug)]
pub enum Followed {
    /// A stream opened: the first one, or a new one after a break, resumed after
    /// the last event passed on.
    Opened,
    /// An event of the stream.
    Event(WatchEvent),
    /// The open stream ended or broke; the next step opens another.
    Broke,
    /// A stream could not be opened; the next step tries again after a wait.
    Unopened(ClientError),
}

/// The `/watch` stream of one control plane (one token's entries, or all),
/// followed through breaks.
#[derive(Debug)]
pub struct Follower {
    client: Client,
    token: Option<String>,
    backoff: Backoff,
    last_event_id: Option<String>,
    stream: Option<Watch>,
    opened_at: Instant,
    /// The wait before the next open, when one is due.
    wait: Option<Duration>,
    /// Tries that failed since a stream last opened.
    failures: usize,
}

impl Follower {
    /// A follower of `client`'s stream (only `token`'s entries when given) that
    /// waits as `backoff` says between tries. Nothing is opened before the
    /// first [`Follower::next`].
    pub fn new(client: Client, token: Option<&str>, backoff: Backoff) -> Follower {
        Follower {
            client,
            token: token.map(str::to_string),
            backoff,
            last_event_id: None,
            stream: None,
            opened_at: Instant::now(),
            wait: None,
            failures: 0,
        }
    }

    /// The id of the last event passed on, which the next stream resumes after.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The next step: an event of the open stream, or the opening of one (after
    /// the wait that is due).
    pub async fn next(&mut self) -> Followed {
        let Some(stream) = self.stream.as_mut() else {
            return self.open().await;
        };
        match stream.next().await {
            Ok(Some(event)) => {
                if event.id.is_some() {
                    self.last_event_id.clone_from(&event.id);
                }
                Followed::Event(event)
            }
            Ok(None) | Err(_) => {
                self.drop_stream();
                Followed::Broke
            }
        }
    }

    /// Close the stream, as when it breaks: the next step opens another (the
    /// caller found the control plane away while reading something else).
    pub fn drop_stream(&mut self) {
        if self.stream.take().is_none() {
            return;
        }
        if self.opened_at.elapsed() < self.backoff.wait(0) {
            self.failed();
        }
    }

    fn failed(&mut self) {
        self.wait = Some(self.backoff.wait(self.failures));
        self.failures += 1;
    }

    async fn open(&mut self) -> Followed {
        if let Some(wait) = self.wait.take() {
            tokio::time::sleep(wait).await;
        }
        let opened = self
            .client
            .watch(self.token.as_deref(), self.last_event_id.as_deref())
            .await;
        match opened {
            Ok(stream) => {
                self.stream = Some(stream);
                self.opened_at = Instant::now();
                self.failures = 0;
                Followed::Opened
            }
            Err(error) => {
                self.failed();
                Followed::Unopened(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_wait_repeats_and_jitter_stays_within_its_share() {
        let backoff = Backoff::new(vec![Duration::from_secs(1), Duration::from_secs(2)]);
        assert_eq!(backoff.wait(0), Duration::from_secs(1));
        assert_eq!(backoff.wait(7), Duration::from_secs(2));
        assert_eq!(Backoff::new(Vec::new()).wait(3), Duration::from_secs(1));
        let spread = backoff.with_jitter(0.2);
        for failures in 0..50 {
            let wait = spread.wait(failures).as_secs_f64();
            assert!((1.6..=2.4).contains(&wait) || (0.8..=1.2).contains(&wait));
        }
    }
}
