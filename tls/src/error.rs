//! What can go wrong making certificates, reading PEM or configuring TLS.

use std::path::PathBuf;

/// A failure of the TLS layer, with its cause.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key could not be generated.
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// PEM text held no usable certificate or key.
    #[error("invalid PEM ({what}): {source}")]
    Pem {
        /// What was looked for.
        what: &'static str,
        /// The cause.
        source: rustls_pki_types::pem::Error,
    },
    /// PEM text held no certificate.
    #[error("no certificate in the PEM data")]
    NoCertificate,
    /// rustls refused the configuration (a key that does not match its certificate, ...).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The client-certificate verifier could not be built (an empty or invalid CA bundle).
    #[error("client CA bundle: {0}")]
    ClientCa(#[from] rustls::server::VerifierBuilderError),
    /// More groups than a generated client certificate can name.
    #[error("a generated client certificate names at most two groups, not {0}")]
    TooManyGroups(usize),
    /// A connection failed.
    #[error("connection: {0}")]
    Io(std::io::Error),
    /// The HTTP exchange failed.
    #[error("HTTP: {0}")]
    Http(String),
    /// A certificate's DER could not be parsed.
    #[error("cannot parse the certificate: {0}")]
    Parse(String),
}
