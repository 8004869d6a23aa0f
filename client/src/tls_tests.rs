//! The client over https against a small rustls server of the test, with
//! certificates made in the test: the right CA answers, a wrong one is refused
//! before any request leaves, and a server that asks for a client certificate
//! answers only the client that shows one it trusts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use super::testserver::{serve_on, Handler, Log, Seen};
use super::*;

/// A self-signed certificate for `localhost`, and its PEM files in `dir`.
struct Made {
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    cert_file: PathBuf,
    key_file: PathBuf,
}

fn made(dir: &Path, name: &str) -> Made {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_file = dir.join(format!("{name}.pem"));
    let key_file = dir.join(format!("{name}.key"));
    std::fs::write(&cert_file, made.cert.pem()).unwrap();
    std::fs::write(&key_file, made.signing_key.serialize_pem()).unwrap();
    Made {
        cert: made.cert.der().clone(),
        key: PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()).into(),
        cert_file,
        key_file,
    }
}

/// An https server on a free port that shows `server`'s certificate and, with
/// `clients`, asks each client for a certificate that it signed. Its URL names
/// `localhost`, the name the certificate bears.
async fn tls_server(server: &Made, clients: Option<&Made>) -> (String, Arc<Log>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match clients {
        Some(clients) => {
            let mut roots = RootCertStore::empty();
            roots.add(clients.cert.clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(vec![server.cert.clone()], server.key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    let handler: Arc<Handler> =
        Arc::new(|_: &Seen| (200, r#"{"workflow":"w","checksum":"c"}"#.to_string()));
    let log = serve_on(listener, handler, move |stream| {
        let accepting = acceptor.accept(stream);
        async move { accepting.await.ok().map(TokioIo::new) }
    });
    (url, log)
}

fn trusting(ca: &Made) -> TlsOptions {
    TlsOptions {
        ca_file: Some(ca.cert_file.clone()),
        identity: None,
    }
}

#[tokio::test]
async fn a_control_plane_whose_certificate_the_ca_file_signed_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = made(dir.path(), "server");
    let (url, log) = tls_server(&server, None).await;
    for keep_alive in [false, true] {
        let client =
            Client::with_tls(&url, DEFAULT_TIMEOUT, keep_alive, &trusting(&server)).unwrap();
        assert_eq!(client.health().await.unwrap().checksum, "c");
        assert_eq!(client.health().await.unwrap().workflow, "w");
    }
    assert_eq!(log.requests.lock().unwrap().len(), 4);
    assert_eq!(log.last().path, "/health");
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_before_any_request_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let server = made(dir.path(), "server");
    let other = made(dir.path(), "other");
    let (url, log) = tls_server(&server, None).await;

    let client = Client::with_tls(&url, DEFAULT_TIMEOUT, false, &trusting(&other)).unwrap();
    let error = client.health().await.unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Unreachable {
                source: TransportError::Connect(_),
                ..
            }
        ),
        "{error:?}"
    );
    let said = error.to_string();
    assert!(
        said.starts_with(&format!(
            "cannot reach the control plane at {url}: cannot connect: the TLS handshake \
             with localhost failed: invalid peer certificate"
        )),
        "{said}"
    );
    assert!(!said.contains('\n'), "{said}");

    // The platform's roots do not know a certificate made in the test either.
    let error = Client::new(&url).unwrap().health().await.unwrap_err();
    assert!(
        error.to_string().contains("invalid peer certificate"),
        "{error}"
    );
    assert!(log.requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_server_that_asks_for_a_client_certificate_answers_the_client_that_shows_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = made(dir.path(), "server");
    let client_cert = made(dir.path(), "client");
    let (url, log) = tls_server(&server, Some(&client_cert)).await;

    let without = Client::with_tls(&url, DEFAULT_TIMEOUT, false, &trusting(&server)).unwrap();
    let error = without.health().await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot reach the control plane at"),
        "{error}"
    );
    assert!(log.requests.lock().unwrap().is_empty());

    let options = TlsOptions {
        identity: Some(Identity {
            cert_file: client_cert.cert_file.clone(),
            key_file: client_cert.key_file.clone(),
        }),
        ..trusting(&server)
    };
    let with = Client::with_tls(&url, DEFAULT_TIMEOUT, false, &options).unwrap();
    assert_eq!(with.health().await.unwrap().checksum, "c");
    assert_eq!(log.last().path, "/health");
}

#[test]
fn tls_files_that_cannot_be_used_are_refused_when_the_client_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let options = TlsOptions {
        ca_file: Some(missing.clone()),
        identity: None,
    };
    let error = Client::with_tls("https://localhost", DEFAULT_TIMEOUT, false, &options)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!("cannot read the CA file {}: ", missing.display())),
        "{error}"
    );

    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let options = TlsOptions {
        ca_file: Some(empty.clone()),
        identity: None,
    };
    let error = Client::with_tls("https://localhost", DEFAULT_TIMEOUT, false, &options)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!("the CA file {} holds no PEM certificate", empty.display())
    );

    // Plain addresses never read the options.
    assert!(Client::with_tls("http://127.0.0.1:1", DEFAULT_TIMEOUT, false, &options).is_ok());
}
