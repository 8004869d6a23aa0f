//! [`Endpoints`]: the addresses a client knows (a serving control plane and its
//! standbys), which of them serves, and the one rule for moving on.
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
//! The next request starts from the address that answered last, and moves on only
//! by the rule; except that after a request that got no answer (a timeout, a
//! connection broken), the next one starts at the address after it. Without that,
//! a control plane that hangs while its port still takes connections (SIGSTOP, a
//! frozen VM) would take every request of its clients until their timeout, for
//! ever, even after a standby took its database over: a new request to a standby
//! that does not serve yet is answered 503 `standby` and comes back round.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::access::AccessKey;
use super::error::ClientError;
use super::tls::TlsOptions;
use super::transport::{Answer, Endpoint, Transport, TransportError};
use super::watch::Watch;
use stateous_shared::refusal::{Code, Refusal};

/// One address: its URL (for messages) and the transport to it.
#[derive(Debug)]
struct Address {
    url: String,
    transport: Transport,
}

/// The addresses of the control plane, in the order given, the index of the one
/// that answered last, and the index where the next request starts. Cheap to
/// clone; clones share both (and the keep-alive pools).
#[derive(Debug, Clone)]
pub struct Endpoints {
    addresses: Arc<[Address]>,
    serving: Arc<AtomicUsize>,
    next: Arc<AtomicUsize>,
}

/// What one address's result means for the request and for the next one.
enum Verdict {
    /// An answer: the request ends here, and the next one starts here.
    Answered,
    /// Certainly nothing was changed there, for this reason: the same request
    /// goes to the next address.
    Passes(String),
    /// No answer (a timeout, a broken connection): the request may have been
    /// applied, so it ends here; the next request starts at the next address.
    Unanswered,
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
    /// The index of the address that gave `result`.
    at: usize,
}

impl Endpoints {
    /// The endpoints of `list` (one URL, or several separated by commas), each
    /// request waiting at most `timeout` for its answer; `keep_alive` keeps
    /// connections open between requests (see [`Transport::keep_alive`]). An
    /// https address trusts the platform's root certificates.
    ///
    /// Errors: [`ClientError::BadUrl`] when an address is empty or not a URL of a
    /// control plane.
    pub fn parse(
        list: &str,
        timeout: Duration,
        keep_alive: bool,
    ) -> Result<Endpoints, ClientError> {
        Endpoints::parse_with_tls(list, timeout, keep_alive, &TlsOptions::default())
    }

    /// As [`Endpoints::parse`], an https address trusting what `tls` says. The
    /// options are read only when an address is https.
    ///
    /// Errors: also [`ClientError::BadTls`] when a file of `tls` cannot be used.
    pub fn parse_with_tls(
        list: &str,
        timeout: Duration,
        keep_alive: bool,
        tls: &TlsOptions,
    ) -> Result<Endpoints, ClientError> {
        let addresses = super::urls::addresses(list)?;
        let https = addresses
            .iter()
            .any(|(_, endpoint)| matches!(endpoint, Endpoint::Https { .. }));
        let tls = match https {
            true => Some(tls.load().map_err(ClientError::BadTls)?),
            false => None,
        };
        let addresses: Vec<Address> = addresses
            .into_iter()
            .map(|(url, endpoint)| Address {
                url,
                transport: Transport::build(endpoint, timeout, keep_alive, tls.clone()),
            })
            .collect();
        Ok(Endpoints {
            addresses: addresses.into(),
            serving: Arc::default(),
            next: Arc::default(),
        })
    }

    /// These endpoints sending `key` as `Authorization: Bearer SECRET` with every
    /// request, at every address (the watch stream's too).
    pub fn with_access_key(self, key: Option<&AccessKey>) -> Endpoints {
        let addresses: Vec<Address> = self
            .addresses
            .iter()
            .map(|address| Address {
                url: address.url.clone(),
                transport: address.transport.clone().with_access_key(key.cloned()),
            })
            .collect();
        Endpoints {
            addresses: addresses.into(),
            ..self
        }
    }

    /// The URL of the address that answered last (the first one before any
    /// answer), less a trailing `/`.
    pub fn url(&self) -> &str {
        &self.addresses[self.serving.load(Ordering::SeqCst) % self.addresses.len()].url
    }

    /// Every URL, in the order given.
    pub fn urls(&self) -> Vec<&str> {
        self.addresses.iter().map(|a| a.url.as_str()).collect()
    }

    /// How long each request waits for its answer.
    pub fn timeout(&self) -> Duration {
        self.addresses[0].transport.timeout()
    }

    /// Send one request (as [`Transport::send_waiting`]: its answer may come
    /// `longer` after the timeout) by the rule of this module.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
        longer: Duration,
    ) -> Sent<Result<Answer, TransportError>> {
        self.each(
            |address| {
                let body = body.clone();
                address
                    .transport
                    .send_waiting(method, path, body, headers, longer)
            },
            |result| match result {
                Err(TransportError::Connect(error)) => {
                    Verdict::Passes(format!("cannot connect: {error}"))
                }
                Ok(answer) => does_not_serve(answer.status, &answer.body),
                Err(TransportError::Timeout(_) | TransportError::Http(_)) => Verdict::Unanswered,
                Err(TransportError::BadUrl(_)) => Verdict::Answered,
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
        let mut sent = self
            .each(
                |address| Watch::open(&address.url, &address.transport, path, headers),
                |result| match result {
                    Err(TransportError::Connect(error)) => {
                        Verdict::Passes(format!("cannot connect: {error}"))
                    }
                    Ok(Err((status, body))) => does_not_serve(*status, body),
                    Ok(Ok(_)) | Err(TransportError::BadUrl(_)) => Verdict::Answered,
                    Err(TransportError::Timeout(_) | TransportError::Http(_)) => {
                        Verdict::Unanswered
                    }
                },
            )
            .await;
        // A stream that dies later is a request that got no answer: the next
        // request starts at the address after the one that served it.
        if let Ok(Ok(watch)) = sent.result {
            let after = (sent.at + 1) % self.addresses.len();
            sent.result = Ok(Ok(watch.moving(Arc::clone(&self.next), after)));
        }
        sent
    }

    /// Try `attempt` on each address from where the next request starts, moving
    /// on while `verdict` says it passes, at most once around.
    async fn each<'a, T, F, Fut>(
        &'a self,
        mut attempt: F,
        verdict: impl Fn(&T) -> Verdict,
    ) -> Sent<T>
    where
        F: FnMut(&'a Address) -> Fut,
        Fut: Future<Output = T>,
    {
        let count = self.addresses.len();
        let first = self.next.load(Ordering::SeqCst) % count;
        let mut passed = Vec::new();
        let mut step = 0;
        loop {
            let at = (first + step) % count;
            let address = &self.addresses[at];
            let result = attempt(address).await;
            let next = match verdict(&result) {
                Verdict::Passes(reason) if step + 1 < count => {
                    passed.push(Passed {
                        url: address.url.clone(),
                        reason,
                    });
                    step += 1;
                    continue;
                }
                // Around the list with none serving: the next request starts
                // where this one did.
                Verdict::Passes(_) => first,
                Verdict::Answered => {
                    self.serving.store(at, Ordering::SeqCst);
                    at
                }
                Verdict::Unanswered => (at + 1) % count,
            };
            self.next.store(next, Ordering::SeqCst);
            return Sent {
                url: address.url.clone(),
                result,
                passed,
                at,
            };
        }
    }
}

/// An answer of `status` with `body` passes when it is 503 `not_serving` or
/// `standby` (nothing was applied); any other answer is [`Verdict::Answered`].
fn does_not_serve(status: u16, body: &[u8]) -> Verdict {
    let code = (status == 503)
        .then(|| serde_json::from_slice::<Refusal>(body).ok())
        .flatten()
        .map(|refusal| refusal.code);
    match code {
        Some(code @ (Code::NotServing | Code::Standby)) => {
            Verdict::Passes(format!("it answered 503 {}", code.as_str()))
        }
        _ => Verdict::Answered,
    }
}
