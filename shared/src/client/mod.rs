//! The client of the control plane's HTTP API, over TCP or a Unix socket.
//!
//! Where to connect (SPEC section 3.3): `--url`, then `STATEOUS_URL`, then the
//! default socket when a daemon listens there, then `http://127.0.0.1:8080`.
//! `unix:///path/to.sock` names a socket. `--url` and `STATEOUS_URL` may name
//! several addresses separated by commas (issue 14: a control plane and its
//! standbys on the same database).
//!
//! The client never retries by itself, with one exception: a request that
//! certainly changed nothing where it went (no connection could be made, or the
//! answer was 503 `not_serving` or `standby`) goes to the next address, at most
//! once around the list, and the client stays with the address that serves
//! ([`Endpoints`]). A timeout or a connection broken mid-request is returned as
//! it is: the request may have been applied, and only the caller knows whether
//! sending it again is safe ([`ClientError::is_retryable`]).

mod api;
mod calls;
mod error;
mod failover;
mod transport;
mod urls;
mod watch;

pub use api::{Client, Fired, DEFAULT_TIMEOUT};
pub use calls::{segment, Call, ClaimRequest, Steer, TokenQuery};
pub use error::{synthetic_code, ClientError};
pub use failover::{Endpoints, Passed, Sent};
pub use transport::{Answer, Endpoint, Transport, TransportError};
pub use watch::{Watch, WatchEntry, WatchEvent};

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testserver;

use std::path::PathBuf;

/// The address every client uses when nothing else is given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// The default path of the daemon's Unix socket: `stateous.sock` in the user's
/// runtime folder (from the `directories` crate), or in the temp folder when the
/// platform has no runtime folder.
pub fn default_socket() -> PathBuf {
    directories::BaseDirs::new()
        .and_then(|dirs| dirs.runtime_dir().map(|dir| dir.to_path_buf()))
        .unwrap_or_else(std::env::temp_dir)
        .join("stateous.sock")
}

/// The URL a client uses: `flag`, then `STATEOUS_URL`, then the default socket if
/// something listens there, then [`DEFAULT_URL`]. The first two may be a list
/// of addresses separated by commas, which [`Client::new`] checks. A
/// `STATEOUS_URL` that is set is used even when empty, so that the client refuses
/// it as it refuses `--url ""`: falling back to the default address would talk to
/// a control plane nobody named (README, "Which daemon a client talks to").
pub fn resolve_url(flag: Option<&str>) -> String {
    if let Some(url) = flag {
        return url.to_string();
    }
    if let Some(url) = std::env::var_os("STATEOUS_URL") {
        return url.to_string_lossy().into_owned();
    }
    let socket = default_socket();
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return format!("unix://{}", socket.display());
    }
    DEFAULT_URL.to_string()
}
