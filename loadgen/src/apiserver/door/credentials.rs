//! The certificates a simulated API server makes at start: its CA, a serving certificate
//! for loopback, and the admin's client certificate (`system:masters`, as kubeadm's
//! `super-admin.conf`).

use tidemark_tls::{CertificateAuthority, IssuedCertificate, TlsError};

/// The admin user of the kubeconfig the server writes.
pub const ADMIN_USER: &str = "kubernetes-admin";
/// The group RBAC never refuses.
pub const MASTERS_GROUP: &str = "system:masters";

/// A server's CA, serving certificate and admin certificate.
#[derive(Debug)]
pub struct ServerCredentials {
    /// The CA that signed the serving certificate and every client certificate.
    pub ca: CertificateAuthority,
    /// The serving certificate (SANs: `localhost`, `127.0.0.1`, `::1` and `extra_hosts`).
    pub serving: IssuedCertificate,
    /// The admin's client certificate.
    pub admin: IssuedCertificate,
}

impl ServerCredentials {
    /// New credentials; `extra_hosts` are more names or addresses the server answers to.
    pub fn generate(extra_hosts: &[String]) -> Result<Self, TlsError> {
        let ca = CertificateAuthority::generate("loadgen-ca")?;
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_string)
            .collect();
        for h in extra_hosts {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
        let serving = ca.issue_server(&hosts)?;
        let admin = ca.issue_client(ADMIN_USER, &[MASTERS_GROUP.to_string()])?;
        Ok(Self { ca, serving, admin })
    }
}
