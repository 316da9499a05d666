//! HTTPS for Tidemark: certificates made at start, PEM files read, the user a client
//! certificate names, and one accept loop that serves an axum `Router` over rustls.
//!
//! Both sides of Tidemark's tests use it: the simulated API server (a CA it generates, a
//! serving certificate, client certificates it issues) and the manager's secure port
//! (`--secure-port`, a self-signed certificate unless `--tls-cert-file` is given). rustls
//! with ring is the one TLS stack of the workspace: [`install_crypto_provider`] makes it the
//! process default, which kube-rs' client relies on.
//!
//! ```
//! # fn main() -> Result<(), tidemark_tls::TlsError> {
//! let ca = tidemark_tls::CertificateAuthority::generate("example-ca")?;
//! let server = ca.issue_server(&["localhost".into(), "127.0.0.1".into()])?;
//! let client = ca.issue_client("jane", &["developers".into()])?;
//! let id = tidemark_tls::client_identity(&tidemark_tls::certificates_from_pem(&client.cert_pem)?[0])?;
//! assert_eq!(id.user, "jane");
//! assert_eq!(id.groups, vec!["developers".to_string()]);
//! assert!(server.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod activity;
mod between_requests;
mod client;
mod error;
mod fetch;
mod identity;
mod pem;
mod pki;
mod serve;
mod server_config;

pub use client::{HttpsGet, HttpsResponse, https_get};
pub use error::TlsError;
pub use fetch::peer_certificate;
pub use identity::{ClientIdentity, client_identity};
pub use pem::{certificates_from_pem, private_key_from_pem, read_certificates, read_private_key};
pub use pki::{CertificateAuthority, IssuedCertificate, self_signed};
pub use serve::{PeerCertificates, ServeOptions, serve};
pub use server_config::{ServerIdentity, server_config};

/// Makes rustls' ring provider the process default. Idempotent. kube-rs builds its
/// `ClientConfig` with the default provider, so call this before creating a client.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
