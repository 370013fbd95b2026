//! The webhooks' HTTP client: one connector for `http://` and `https://` receivers. TLS
//! (rustls, ring) trusts the system's roots (rustls-native-certs) and, when
//! `webhook_ca` is set, the private CA in that PEM file. Built without the `tls`
//! feature the connector is plain HTTP, and [`WebhookOptions::new`](super::WebhookOptions::new)
//! refuses an `https://` URL.

use std::path::Path;

use axum::body::Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Connects to `http://` and `https://` receivers alike.
#[cfg(feature = "tls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// Connects to `http://` receivers.
#[cfg(not(feature = "tls"))]
type Connector = HttpConnector;

/// The client a deliverer POSTs with.
pub(super) type HttpClient = Client<Connector, Body>;

/// A client trusting the system's roots and the CA in `ca`, if any; an error names the
/// file and says what to give instead.
pub(super) fn client(ca: Option<&Path>) -> Result<HttpClient, String> {
    Ok(Client::builder(TokioExecutor::new()).build(connector(ca)?))
}

#[cfg(feature = "tls")]
fn connector(ca: Option<&Path>) -> Result<Connector, String> {
    use std::sync::Arc;

    let mut roots = rustls::RootCertStore::empty();
    // Roots the system has but rustls cannot parse are skipped, as by the Redis client.
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(ca) = ca {
        for certificate in private_ca(ca)? {
            roots
                .add(certificate)
                .map_err(|e| ca_error(ca, &format!("holds a certificate rustls refuses ({e})")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("the webhooks' TLS cannot be set up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build())
}

#[cfg(not(feature = "tls"))]
fn connector(_ca: Option<&Path>) -> Result<Connector, String> {
    // An `https://` URL was refused with the settings: the CA has nothing to sign.
    Ok(HttpConnector::new())
}

/// The certificates of the PEM file `ca`: at least one.
#[cfg(feature = "tls")]
fn private_ca(ca: &Path) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let pem = std::fs::read(ca).map_err(|e| ca_error(ca, &format!("cannot be read ({e})")))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ca_error(ca, &format!("is not PEM ({e})")))?;
    if certificates.is_empty() {
        return Err(ca_error(
            ca,
            "holds no certificate (no BEGIN CERTIFICATE block)",
        ));
    }
    Ok(certificates)
}

/// What is wrong with the CA file, and what to do.
#[cfg(feature = "tls")]
fn ca_error(ca: &Path, why: &str) -> String {
    format!(
        "the webhook CA {} (webhook_ca, ROLLBOARD_WEBHOOK_CA) {why}: give the PEM file of \
         the CA that signed the receiver's certificate, or unset it to trust the system's \
         roots only",
        ca.display()
    )
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_without_a_certificate_is_refused_naming_it() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "not a certificate\n").unwrap();
        let Err(error) = client(Some(file.path())) else {
            panic!("a CA file without a certificate was taken");
        };
        assert_eq!(
            error,
            format!(
                "the webhook CA {} (webhook_ca, ROLLBOARD_WEBHOOK_CA) holds no certificate \
                 (no BEGIN CERTIFICATE block): give the PEM file of the CA that signed the \
                 receiver's certificate, or unset it to trust the system's roots only",
                file.path().display()
            )
        );
    }
}
