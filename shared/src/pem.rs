//! Certificates in PEM files, as the client's CA file, the daemon's `--tls-cert`
//! and `--tls-client-ca`, and a Postgres URL's `sslrootcert` are read: one reader
//! and one pair of sentences for all of them.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// The certificates of the PEM file at `path`, in their order; `what` names the
/// file in a sentence (`CA`, `--tls-cert`).
///
/// Errors: `cannot read the WHAT file PATH: REASON`, or `the WHAT file PATH holds
/// no PEM certificate`.
pub fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let cannot = |error: &dyn std::fmt::Display| {
        format!("cannot read the {what} file {}: {error}", path.display())
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|error| cannot(&error))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| cannot(&error))?;
    if certificates.is_empty() {
        return Err(format!(
            "the {what} file {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certificates)
}
