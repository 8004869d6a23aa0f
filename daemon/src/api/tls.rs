//! HTTPS on the TCP listener (`serve --tls-cert --tls-key [--tls-client-ca]`):
//! rustls with its `ring` provider, and the certificate files read again when they
//! change, so that a renewed certificate is served without a restart.
//!
//! The files are looked at (their modification time and length) at most once per
//! [`RELOAD_EVERY`], when a connection comes. A change is read whole: certificate,
//! key and client CA together. A new set that cannot be used (a half-written file,
//! a key that does not match its certificate) is logged in one line and the
//! configuration in use stays; the next change is tried again. A connection holds
//! the configuration it was accepted with. The rules are in `docs/reference/cli.md`
//! (`serve`) and the operator's steps in `README.md`, "Run it across machines".

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use stateous_shared::pem::certificates;
use tokio_rustls::TlsAcceptor;

/// At most this often the certificate files are looked at for a change.
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The files of `serve`'s TLS flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--tls-cert`: the certificate chain (PEM), the server's own first.
    pub cert: PathBuf,
    /// `--tls-key`: the private key of the first certificate (PEM).
    pub key: PathBuf,
    /// `--tls-client-ca`: the CA certificates (PEM) a client's certificate must
    /// chain to; with it, a client without such a certificate is refused at the
    /// handshake.
    pub client_ca: Option<PathBuf>,
}

/// The TLS of a listener: the configuration in use, read again when its files
/// change. Shared by the accept loop; cheap to share behind an `Arc`.
pub struct ServerTls {
    files: TlsFiles,
    state: Mutex<Loaded>,
}

/// A file's modification time and length, or `None` when it cannot be read.
type Stamp = Option<(SystemTime, u64)>;

struct Loaded {
    acceptor: TlsAcceptor,
    /// The stamps of the set last tried, used or not: a set that failed is
    /// logged once, not at every connection.
    stamps: Vec<Stamp>,
    checked: Instant,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Read `files` now.
    ///
    /// Errors: one sentence naming the file that cannot be read or used (at
    /// start, `serve` exits 1 with it).
    pub fn load(files: TlsFiles) -> Result<ServerTls, String> {
        let stamps = stamps(&files);
        let config = build(&files)?;
        Ok(ServerTls {
            state: Mutex::new(Loaded {
                acceptor: TlsAcceptor::from(Arc::new(config)),
                stamps,
                checked: Instant::now(),
            }),
            files,
        })
    }

    /// The acceptor for a new connection: the configuration in use, after
    /// reading the files again if they changed (looked at most once per
    /// [`RELOAD_EVERY`]).
    pub fn acceptor(&self) -> TlsAcceptor {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.checked.elapsed() >= RELOAD_EVERY {
            state.checked = Instant::now();
            let now = stamps(&self.files);
            if now != state.stamps {
                state.stamps = now;
                match build(&self.files) {
                    Ok(config) => {
                        state.acceptor = TlsAcceptor::from(Arc::new(config));
                        tracing::info!(
                            target: "stateous.serve",
                            "read the new TLS certificate from {}",
                            self.files.cert.display()
                        );
                    }
                    Err(sentence) => tracing::warn!(
                        target: "stateous.serve",
                        "kept the TLS certificate in use: {sentence}"
                    ),
                }
            }
        }
        state.acceptor.clone()
    }
}

fn stamps(files: &TlsFiles) -> Vec<Stamp> {
    let stamp = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .and_then(|meta| Some((meta.modified().ok()?, meta.len())))
    };
    let mut all = vec![stamp(&files.cert), stamp(&files.key)];
    if let Some(ca) = &files.client_ca {
        all.push(stamp(ca));
    }
    all
}

/// Whether the certificate of `files` (the first of its chain, the server's own)
/// is valid for `name`, a DNS name or an IP address, as a client checks it; false
/// when it cannot be read.
pub fn names(files: &TlsFiles, name: &str) -> bool {
    let Ok(chain) = certificates(&files.cert, "--tls-cert") else {
        return false;
    };
    let Some(first) = chain.first() else {
        return false;
    };
    let (Ok(parsed), Ok(name)) = (
        rustls::server::ParsedCertificate::try_from(first),
        rustls::pki_types::ServerName::try_from(name),
    ) else {
        return false;
    };
    rustls::client::verify_server_name(&parsed, &name).is_ok()
}

/// The configuration of `files`, or the sentence of what is wrong.
fn build(files: &TlsFiles) -> Result<ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&files.cert, "--tls-cert")?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|error| {
        format!(
            "--tls-key: cannot read a private key from {}: {error}",
            files.key.display()
        )
    })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS cannot be set up: {error}"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for certificate in certificates(path, "--tls-client-ca")? {
                roots.add(certificate).map_err(|error| {
                    format!(
                        "--tls-client-ca {} holds a certificate that cannot be trusted: {error}",
                        path.display()
                    )
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| {
                    format!("--tls-client-ca {} cannot be used: {error}", path.display())
                })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|error| {
        format!(
            "--tls-cert {} and --tls-key {} cannot be used: {error}",
            files.cert.display(),
            files.key.display()
        )
    })?;
    // (`with_single_cert` refuses a key that does not match the certificate.)
    // The API speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
