//! [`Endpoints`]: the addresses a client knows (a serving control plane and its
//! standbys, issue 14), which of them serves, and the one rule for moving on.
//!
//! A request goes to the address that served last. It moves to the next address,
//! and the same request goes there, only when it certainly changed nothing where
//! it went: no connection could be made (refused, no such socket, none within the
//! timeout), or the answer was 503 `not_serving` or `standby` (a control plane
//! that lost its database, or one that waits for it, applies nothing). It goes
//! at most once around the list, and then the last address's result stands. An
//! answer, any other refusal (503 `database_busy` too: that control plane serves),
//! a timeout or a connection broken after it was made end the request where they
//! happened: the request may have been applied, so only its caller may send it
//! again (the supervisor does, with its request ids, attempts and idempotency).
//! The next request starts from that address, and moves on only by the rule.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::error::ClientError;
use super::transport::{Answer, Transport, TransportError};
use super::watch::Watch;
use crate::refusal::{Code, Refusal};

/// One address: its URL (for messages) and the transport to it.
#[derive(Debug)]
struct Address {
    url: String,
    transport: Transport,
}

/// The addresses of the control plane, in the order given, and the index of the
/// one that served last. Cheap to clone; clones share which one serves (and the
/// keep-alive pools).
#[derive(Debug, Clone)]
pub struct Endpoints {
    addresses: Arc<[Address]>,
    serving: Arc<AtomicUsize>,
}

/// An address a request passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// The URL passed over.
    pub url: String,
    /// Why, for a log line: `cannot connect: ...`, or `it answered 503 standby`.
    pub reason: String,
}

/// The result of a request sent by [`Endpoints`].
#[derive(Debug)]
pub struct Sent<T> {
    /// The URL of the address that gave `result`.
    pub url: String,
    /// What that address gave.
    pub result: T,
    /// The addresses passed over before it, in order (empty when the first
    /// address tried gave the result).
    pub passed: Vec<Passed>,
}

impl Endpoints {
    /// The endpoints of `list` (one URL, or several separated by commas), each
    /// request waiting at most `timeout` for its answer; `keep_alive` keeps
    /// connections open between requests (see [`Transport::keep_alive`]).
    ///
    /// Errors: [`ClientError::BadUrl`] when an address is empty or not a URL of a
    /// control plane.
    pub fn parse(
        list: &str,
        timeout: Duration,
        keep_alive: bool,
    ) -> Result<Endpoints, ClientError> {
        let addresses: Vec<Address> = super::urls::addresses(list)?
            .into_iter()
            .map(|(url, endpoint)| Address {
                url,
                transport: if keep_alive {
                    Transport::keep_alive(endpoint, timeout)
                } else {
                    Transport::new(endpoint, timeout)
                },
            })
            .collect();
        Ok(Endpoints {
            addresses: addresses.into(),
            serving: Arc::default(),
        })
    }

    /// The URL of the address that served last (the first one before any
    /// request), less a trailing `/`.
    pub fn url(&self) -> &str {
        &self.addresses[self.serving()].url
    }

    /// Every URL, in the order given.
    pub fn urls(&self) -> Vec<&str> {
        self.addresses.iter().map(|a| a.url.as_str()).collect()
    }

    /// How long each request waits for its answer.
    pub fn timeout(&self) -> Duration {
        self.addresses[0].transport.timeout()
    }

    fn serving(&self) -> usize {
        self.serving.load(Ordering::SeqCst) % self.addresses.len()
    }

    /// Send one request (as [`Transport::send`]) by the rule of this module.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Sent<Result<Answer, TransportError>> {
        self.each(
            |address| address.transport.send(method, path, body.clone(), headers),
            |result| match result {
                Err(TransportError::Connect(error)) => Some(format!("cannot connect: {error}")),
                Ok(answer) => does_not_serve(answer.status, &answer.body),
                Err(_) => None,
            },
        )
        .await
    }

    /// Open the `/watch` stream at `path` by the rule of this module.
    pub(super) async fn watch(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Sent<Result<Result<Watch, (u16, Bytes)>, TransportError>> {
        self.each(
            |address| Watch::open(&address.url, &address.transport, path, headers),
            |result| match result {
                Err(TransportError::Connect(error)) => Some(format!("cannot connect: {error}")),
                Ok(Err((status, body))) => does_not_serve(*status, body),
                _ => None,
            },
        )
        .await
    }

    /// Try `attempt` on each address from the one serving, moving on while
    /// `passes` gives a reason, at most once around.
    async fn each<'a, T, F, Fut>(
        &'a self,
        mut attempt: F,
        passes: impl Fn(&T) -> Option<String>,
    ) -> Sent<T>
    where
        F: FnMut(&'a Address) -> Fut,
        Fut: Future<Output = T>,
    {
        let count = self.addresses.len();
        let first = self.serving();
        let mut passed = Vec::new();
        let mut step = 0;
        loop {
            let at = (first + step) % count;
            let address = &self.addresses[at];
            let result = attempt(address).await;
            match passes(&result) {
                Some(reason) if step + 1 < count => passed.push(Passed {
                    url: address.url.clone(),
                    reason,
                }),
                // Around the list with none serving: the next request starts
                // where this one did.
                Some(_) => {
                    return Sent {
                        url: address.url.clone(),
                        result,
                        passed,
                    }
                }
                None => {
                    self.serving.store(at, Ordering::SeqCst);
                    return Sent {
                        url: address.url.clone(),
                        result,
                        passed,
                    };
                }
            }
            step += 1;
        }
    }
}

/// The reason to pass over an answer of `status` with `body`: 503 `not_serving` or
/// `standby` (nothing was applied); `None` for any other answer.
fn does_not_serve(status: u16, body: &[u8]) -> Option<String> {
    if status != 503 {
        return None;
    }
    let code = serde_json::from_slice::<Refusal>(body).ok()?.code;
    matches!(code, Code::NotServing | Code::Standby)
        .then(|| format!("it answered 503 {}", code.as_str()))
}
