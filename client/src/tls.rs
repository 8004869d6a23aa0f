//! What the client trusts when it speaks https: the platform's root certificates,
//! or the CA file it is given, and the certificate it shows a control plane that
//! asks for one (mutual TLS).
//!
//! TLS runs on rustls with its `ring` provider: no OpenSSL to link, and no
//! aws-lc, whose build needs cmake. A file that cannot be read or holds no
//! certificate or key is refused when the client is made, in one sentence that
//! names it, rather than at the first request, where it would read like an outage.

use std::path::{Path, PathBuf};

use stateous_shared::pem::certificates;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

/// How the client trusts an https control plane. The default trusts the
/// platform's root certificates and shows no certificate of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of CA certificates to trust instead of the platform's roots.
    pub ca_file: Option<PathBuf>,
    /// A certificate chain and its private key (PEM files), shown to a control
    /// plane that asks the client for a certificate.
    pub identity: Option<Identity>,
}

/// A client certificate for mutual TLS: two PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The certificate chain, the client's own certificate first.
    pub cert_file: PathBuf,
    /// The private key of the first certificate.
    pub key_file: PathBuf,
}

/// A TLS configuration ready for connections; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Tls(pub(crate) Arc<ClientConfig>);

impl TlsOptions {
    /// The configuration these options describe. The platform's roots are read
    /// once per process, however many clients use them.
    ///
    /// Errors: one sentence naming the file that cannot be read or used.
    pub(crate) fn load(&self) -> Result<Tls, String> {
        if self == &TlsOptions::default() {
            static PLATFORM: OnceLock<Result<Tls, String>> = OnceLock::new();
            return PLATFORM
                .get_or_init(|| config(platform_roots(), None))
                .clone();
        }
        let roots = match &self.ca_file {
            Some(path) => roots_of(path)?,
            None => platform_roots(),
        };
        let identity = match &self.identity {
            Some(identity) => Some(identity.load()?),
            None => None,
        };
        config(roots, identity)
    }
}

impl Identity {
    fn load(&self) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
        let chain = certificates(&self.cert_file, "client certificate")?;
        let key = PrivateKeyDer::from_pem_file(&self.key_file).map_err(|error| {
            format!(
                "cannot read a private key from {}: {error}",
                self.key_file.display()
            )
        })?;
        Ok((chain, key))
    }
}

/// The CA certificates of the PEM file at `path`, as the only roots trusted.
fn roots_of(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(path, "CA")? {
        roots.add(certificate).map_err(|error| {
            format!(
                "the CA file {} holds a certificate that cannot be trusted: {error}",
                path.display()
            )
        })?;
    }
    Ok(roots)
}

/// The platform's root certificates. Those that cannot be read are left out: a
/// control plane they would have vouched for is then refused at its handshake,
/// with the reason.
fn platform_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    roots
}

/// What to do about a client certificate rustls cannot use, for a cause an
/// operator can fix: an X.509 version 1 certificate (what `openssl req -x509`
/// makes with no extensions), which webpki does not read.
fn client_cert_hint(error: &str) -> &'static str {
    if error.contains("UnsupportedCertVersion") {
        " (it is an X.509 version 1 certificate: make it again with an extension, \
         e.g. openssl's -addext 'extendedKeyUsage=clientAuth', so that it is version 3)"
    } else {
        ""
    }
}

fn config(
    roots: RootCertStore,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<Tls, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS cannot be set up: {error}"))?
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|error| {
            format!(
                "the client certificate cannot be used: {error}{}",
                client_cert_hint(&error.to_string())
            )
        })?,
        None => builder.with_no_client_auth(),
    };
    // The daemon and the client speak HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_client_certificate_is_told_how_to_make_one_that_can_be_used() {
        let said = "invalid peer certificate: Other(OtherError(UnsupportedCertVersion))";
        assert!(client_cert_hint(said).contains("X.509 version 1"));
        assert_eq!(client_cert_hint("the key does not match"), "");
    }
}
