//! Certificates made at start: a CA, serving certificates for its hosts, and client
//! certificates whose subject names a user (CN) and its groups (O), as kube-apiserver reads them.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use crate::TlsError;

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct IssuedCertificate {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PEM (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for IssuedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCertificate")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// A certificate authority generated in memory.
pub struct CertificateAuthority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// The OID of X.520 `organizationName`, spelled as rcgen's custom type.
const ORGANIZATION_OID: [u64; 4] = [2, 5, 4, 10];

/// rcgen keeps one value per attribute type, so a second organization is written under the
/// same OID as a custom type; a third has no spelling left and is refused.
fn named(common_name: &str, organizations: &[String]) -> Result<DistinguishedName, TlsError> {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    match organizations {
        [] => {}
        [one] => dn.push(DnType::OrganizationName, one.as_str()),
        [one, two] => {
            dn.push(DnType::OrganizationName, one.as_str());
            dn.push(
                DnType::CustomDnType(ORGANIZATION_OID.to_vec()),
                two.as_str(),
            );
        }
        more => return Err(TlsError::TooManyGroups(more.len())),
    }
    Ok(dn)
}

impl CertificateAuthority {
    /// A new CA with a fresh ECDSA P-256 key.
    pub fn generate(common_name: &str) -> Result<Self, TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = named(common_name, &[])?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate, PEM: what a kubeconfig's `certificate-authority-data` carries.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    fn issue(&self, params: CertificateParams) -> Result<IssuedCertificate, TlsError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(IssuedCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A serving certificate for `hosts` (DNS names or IP addresses).
    pub fn issue_server(&self, hosts: &[String]) -> Result<IssuedCertificate, TlsError> {
        let mut params = CertificateParams::new(hosts.to_vec())?;
        params.distinguished_name = named(hosts.first().map_or("server", String::as_str), &[])?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        self.issue(params)
    }

    /// A client certificate for `user` in `groups` (subject CN and O; at most two groups).
    pub fn issue_client(
        &self,
        user: &str,
        groups: &[String],
    ) -> Result<IssuedCertificate, TlsError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = named(user, groups)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.issue(params)
    }
}

/// A self-signed serving certificate for `hosts`, as kube-controller-manager makes for its
/// secure port when no `--tls-cert-file` is given.
pub fn self_signed(hosts: &[String]) -> Result<IssuedCertificate, TlsError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(hosts.to_vec())?;
    params.distinguished_name = named(hosts.first().map_or("localhost", String::as_str), &[])?;
    let cert = params.self_signed(&key)?;
    Ok(IssuedCertificate {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}
