//! PEM files and strings to the DER types rustls takes.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsError;

/// Every certificate in `pem`, in order; an error when there is none.
pub fn certificates_from_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            what: "certificate",
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in `pem`.
pub fn private_key_from_pem(pem: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|source| TlsError::Pem {
        what: "private key",
        source,
    })
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The certificates of a PEM file.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    certificates_from_pem(&read(path)?)
}

/// The private key of a PEM file.
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    private_key_from_pem(&read(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_a_certificate_is_an_error_not_an_empty_chain() {
        assert!(matches!(
            certificates_from_pem("not pem at all"),
            Err(TlsError::NoCertificate)
        ));
        assert!(private_key_from_pem("").is_err());
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let err = read_certificates(Path::new("/nonexistent/ca.crt")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/ca.crt"), "{err}");
    }
}
