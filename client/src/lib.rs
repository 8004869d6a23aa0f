//! `stateous-client`: the client of the control plane's HTTP API, over TCP, a Unix
//! socket, or https.
//!
//! Where to connect: `--url`, then `STATEOUS_URL`, then the default socket when a
//! daemon listens there, then `http://127.0.0.1:8080`. `unix:///path/to.sock`
//! names a socket; `https://HOST[:PORT]` a control plane behind TLS, trusted by
//! the platform's roots or by a [`TlsOptions`]. `--url` and `STATEOUS_URL` may
//! name several addresses separated by commas (a control plane and its standbys
//! on the same database).
//!
//! The client never retries by itself, with one exception: a request that
//! certainly changed nothing where it went (no connection could be made, or the
//! answer was 503 `not_serving` or `standby`) goes to the next address, at most
//! once around the list, and the client stays with the address that serves
//! ([`Endpoints`]). A timeout or a connection broken mid-request is returned as
//! it is: the request may have been applied, and only the caller knows whether
//! sending it again is safe ([`ClientError::is_retryable`]).

use std::time::Duration;

mod access;
mod api;
mod calls;
mod connector;
mod error;
mod failover;
mod follow;
pub mod routes;
pub mod runtime;
mod tls;
mod transport;
mod urls;
mod watch;

pub use access::AccessKey;
pub use api::{Client, Fired, DEFAULT_TIMEOUT};
pub use calls::{add_bulk_page, Call, ClaimRequest, Claimed, HeartbeatRequest, Steer, TokenQuery};
pub use error::{synthetic_code, ClientError};
pub use failover::{Endpoints, Passed, Sent};
pub use follow::{Backoff, Followed, Follower};
pub use routes::segment;
pub use stateous_shared::socket::default_socket;
pub use tls::{Identity, TlsOptions};
pub use transport::{Answer, Endpoint, Transport, TransportError};
pub use watch::{Watch, WatchEntry, WatchEvent};

#[cfg(test)]
mod tests;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testserver;
#[cfg(test)]
mod tls_tests;

/// Where and how a client reaches a control plane: what `--url`, the access key
/// flags and the TLS flags of every client command say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    /// `--url`: `None` resolves as every client does ([`resolve_url`]).
    pub url: Option<String>,
    /// The access key sent with every request, the watch stream's included.
    pub key: Option<AccessKey>,
    /// How an `https://` control plane is trusted, and the certificate shown to
    /// one that asks.
    pub tls: TlsOptions,
}

impl Connection {
    /// A client of the control plane at the resolved URL, waiting at most
    /// `timeout` for each answer, keeping its connections open between calls
    /// when `keep_alive`, and sending the access key.
    ///
    /// Errors: [`ClientError::BadUrl`] or [`ClientError::BadTls`], one sentence.
    pub fn client(&self, timeout: Duration, keep_alive: bool) -> Result<Client, ClientError> {
        self.client_at(&resolve_url(self.url.as_deref())?, timeout, keep_alive)
    }

    /// As [`Connection::client`], at `url` (resolved by the caller).
    pub fn client_at(
        &self,
        url: &str,
        timeout: Duration,
        keep_alive: bool,
    ) -> Result<Client, ClientError> {
        Ok(Client::with_tls(url, timeout, keep_alive, &self.tls)?
            .with_access_key(self.key.as_ref()))
    }
}

/// The address every client uses when nothing else is given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// `STATEOUS_URL`, when set. Errors: [`ClientError::BadUrl`] when it is set but
/// empty (a sentence naming the variable).
pub fn url_from_env() -> Result<Option<String>, ClientError> {
    let Some(url) = std::env::var_os("STATEOUS_URL") else {
        return Ok(None);
    };
    let url = url.to_string_lossy().into_owned();
    if url.trim().is_empty() {
        return Err(ClientError::BadUrl(
            "STATEOUS_URL is set but empty; set it to http://HOST:PORT or unix:///PATH, \
             or unset it"
                .to_string(),
        ));
    }
    Ok(Some(url))
}

/// The URL a client uses: `flag`, then `STATEOUS_URL`, then the default socket if
/// something listens there, then [`DEFAULT_URL`]. The first two may be a list
/// of addresses separated by commas, which [`Client::new`] checks. A
/// `STATEOUS_URL` that is set but empty is refused, as `--url ""` is: falling
/// back to the default address would talk to a control plane nobody named
/// (README, "Which daemon a client talks to").
///
/// Errors: [`ClientError::BadUrl`] when `flag` is `None` and `STATEOUS_URL` is set
/// but empty (or only spaces); the sentence names the variable, since nothing on
/// the command line was empty.
pub fn resolve_url(flag: Option<&str>) -> Result<String, ClientError> {
    if let Some(url) = flag {
        return Ok(url.to_string());
    }
    if let Some(url) = url_from_env()? {
        return Ok(url);
    }
    let socket = default_socket();
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return Ok(format!("unix://{}", socket.display()));
    }
    Ok(DEFAULT_URL.to_string())
}
