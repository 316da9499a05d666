//! The rustls server configuration of a listener: its certificate, and which client
//! certificates it asks for.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::{IssuedCertificate, TlsError, certificates_from_pem, private_key_from_pem};

/// A serving certificate chain and its key.
#[derive(Debug)]
pub struct ServerIdentity {
    /// The chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
}

impl ServerIdentity {
    /// From PEM text.
    pub fn from_issued(issued: &IssuedCertificate) -> Result<Self, TlsError> {
        Ok(Self {
            chain: certificates_from_pem(&issued.cert_pem)?,
            key: private_key_from_pem(&issued.key_pem)?,
        })
    }
}

/// A server configuration (HTTP/2 and HTTP/1.1 by ALPN). With `client_ca`, client
/// certificates signed by it are verified and handed to the handler; a client that sends
/// none is still served (it may authenticate with a bearer token), as kube-apiserver does.
pub fn server_config(
    identity: ServerIdentity,
    client_ca: Option<&[CertificateDer<'static>]>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        Some(cas) => {
            let mut roots = RootCertStore::empty();
            for ca in cas {
                roots.add(ca.clone())?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(identity.chain, identity.key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
