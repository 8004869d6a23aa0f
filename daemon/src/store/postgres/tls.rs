//! Postgres over TLS: the `sslmode` and `sslrootcert` of a `postgresql://` URL, with
//! rustls on its `ring` provider (no OpenSSL), as libpq reads them
//! (`docs/how-to/use-postgres.md`, "Over TLS"):
//!
//! - no `sslmode`, or `disable`: plain TCP, as before;
//! - `prefer`: TLS when the server offers it, its certificate not checked;
//! - `require`: TLS or no connection; the certificate is not checked, unless
//!   `sslrootcert` is given, which makes it `verify-ca` (as libpq does);
//! - `verify-ca`: the certificate must chain to `sslrootcert` (else the platform's
//!   roots), whatever name it carries;
//! - `verify-full`: that, and it must name the host of the URL.
//!
//! The postgres crate knows only `disable`, `prefer` and `require`, and no
//! `sslrootcert`, so both are taken out of the URL here and given to the
//! connection as a rustls configuration.

use std::path::PathBuf;
use std::sync::Arc;

use postgres::config::SslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How a connection checks the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Plain TCP.
    Off,
    /// TLS when offered, nothing checked (`prefer`).
    Prefer,
    /// TLS, the certificate not checked (`require` without `sslrootcert`).
    Encrypt,
    /// TLS, the certificate chains to the roots (`verify-ca`).
    Chain,
    /// TLS, the certificate chains to the roots and names the host (`verify-full`).
    Full,
}

/// The TLS settings of a Postgres URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgTls {
    /// What is checked.
    pub check: Check,
    /// `sslrootcert`: the CA certificates (PEM) to trust instead of the platform's.
    pub root: Option<PathBuf>,
}

/// `url` without its `sslmode` and `sslrootcert`, and the TLS settings they gave.
///
/// Errors: a `sslmode` this control plane does not know, in one sentence.
pub fn split(url: &str) -> Result<(String, PgTls), String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    let (mut mode, mut root) = (None, None);
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned();
        match key {
            "sslmode" => mode = Some(value),
            "sslrootcert" => root = Some(PathBuf::from(value)),
            _ => kept.push(pair),
        }
    }
    let check = match mode.as_deref() {
        None | Some("disable") => Check::Off,
        Some("prefer" | "allow") => Check::Prefer,
        Some("require") if root.is_some() => Check::Chain,
        Some("require") => Check::Encrypt,
        Some("verify-ca") => Check::Chain,
        Some("verify-full") => Check::Full,
        Some(other) => {
            return Err(format!(
                "--db has sslmode={other}, which is not one of disable, prefer, require, \
                 verify-ca and verify-full"
            ))
        }
    };
    let url = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((url, PgTls { check, root }))
}

impl PgTls {
    /// The postgres crate's mode for these settings.
    pub fn mode(&self) -> SslMode {
        match self.check {
            Check::Off => SslMode::Disable,
            Check::Prefer => SslMode::Prefer,
            Check::Encrypt | Check::Chain | Check::Full => SslMode::Require,
        }
    }

    /// The connector of these settings, `None` for plain TCP.
    ///
    /// Errors: an `sslrootcert` that cannot be read or holds no certificate.
    pub fn connector(&self) -> Result<Option<MakeRustlsConnect>, String> {
        if self.check == Check::Off {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = Arc::new(self.roots()?);
        let verifier: Arc<dyn ServerCertVerifier> = match self.check {
            Check::Off | Check::Prefer | Check::Encrypt => Arc::new(Lenient {
                chain: None,
                provider: provider.clone(),
            }),
            Check::Chain | Check::Full => {
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                    .build()
                    .map_err(|error| format!("--db: the TLS roots cannot be used: {error}"))?;
                match self.check {
                    Check::Full => webpki,
                    _ => Arc::new(Lenient {
                        chain: Some(webpki),
                        provider: provider.clone(),
                    }),
                }
            }
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| format!("TLS cannot be set up: {error}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Some(MakeRustlsConnect::new(config)))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        let Some(path) = &self.root else {
            if matches!(self.check, Check::Chain | Check::Full) {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
            return Ok(roots);
        };
        for certificate in stateous_shared::pem::certificates(path, "sslrootcert")? {
            roots.add(certificate).map_err(|error| {
                format!(
                    "the sslrootcert file {} holds a certificate that cannot be trusted: {error}",
                    path.display()
                )
            })?;
        }
        Ok(roots)
    }
}

/// `verify-ca` (with `chain`: the chain is checked, the name the certificate carries
/// is not), and `require` and `prefer` (without: encrypted, the certificate taken as
/// it comes, as libpq does). The handshake's signatures are checked in both.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    // The chain's verifier checks signatures with the algorithms of the same
    // provider: these are its checks.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let schemes = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, schemes)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let schemes = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, schemes)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_leave_the_url_and_set_the_check() {
        let (url, tls) = split("postgresql://u@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x").unwrap();
        assert_eq!(url, "postgresql://u@h:5/db?application_name=x");
        assert_eq!(tls.check, Check::Full);
        assert_eq!(tls.root, Some(PathBuf::from("/tmp/ca.pem")));
        let (url, tls) = split("postgresql://u@h/db").unwrap();
        assert_eq!(
            (url.as_str(), tls.check),
            ("postgresql://u@h/db", Check::Off)
        );
        let (_, tls) = split("postgresql://h/db?sslmode=require").unwrap();
        assert_eq!(tls.check, Check::Encrypt);
        let (_, tls) = split("postgresql://h/db?sslmode=require&sslrootcert=ca.pem").unwrap();
        assert_eq!(tls.check, Check::Chain);
        let wrong = split("postgresql://h/db?sslmode=maybe").unwrap_err();
        assert!(wrong.contains("sslmode=maybe"), "{wrong}");
        let missing = PgTls {
            check: Check::Full,
            root: Some("/nonexistent/ca.pem".into()),
        };
        let Err(refused) = missing.connector() else {
            panic!("a missing root is refused");
        };
        assert!(
            refused.contains("cannot read the sslrootcert file /nonexistent/ca.pem"),
            "{refused}"
        );
    }
}
