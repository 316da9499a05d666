//! The user a client certificate names: subject CN is the user, each O a group
//! (kube-apiserver's x509 authenticator).

use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::TlsError;

/// A user and groups read off a certificate's subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// Subject common name.
    pub user: String,
    /// Subject organizations, in order.
    pub groups: Vec<String>,
}

/// Reads the identity from a (verified) client certificate. A certificate without a CN is an
/// error: upstream refuses it rather than authenticating an empty user.
pub fn client_identity(cert: &CertificateDer<'_>) -> Result<ClientIdentity, TlsError> {
    let (_, parsed) =
        X509Certificate::from_der(cert.as_ref()).map_err(|e| TlsError::Parse(e.to_string()))?;
    let subject = parsed.subject();
    let user = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())
        .ok_or_else(|| TlsError::Parse("the subject has no common name".into()))?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Ok(ClientIdentity { user, groups })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CertificateAuthority, certificates_from_pem};

    #[test]
    fn the_common_name_is_the_user_and_each_organization_a_group() {
        let ca = CertificateAuthority::generate("test-ca").expect("ca");
        let issued = ca
            .issue_client("system:admin", &["system:masters".into(), "ops".into()])
            .expect("client");
        let cert = &certificates_from_pem(&issued.cert_pem).expect("pem")[0];
        let id = client_identity(cert).expect("identity");
        assert_eq!(id.user, "system:admin");
        assert_eq!(id.groups, vec!["system:masters", "ops"]);
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let junk = CertificateDer::from(vec![0x30, 0x03, 0x01, 0x02]);
        assert!(matches!(client_identity(&junk), Err(TlsError::Parse(_))));
    }
}
