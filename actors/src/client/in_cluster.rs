//! In-cluster configuration, as client-go's `rest.InClusterConfig`: the API server from
//! `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT`, the mounted ServiceAccount's CA,
//! token file (re-read when it rotates) and namespace. The mount directory is a parameter so
//! that a Pod with its token projected elsewhere, and the tests, can point at it.

use std::path::{Path, PathBuf};

use super::ClientError;

/// Where the kubelet mounts a Pod's ServiceAccount token, CA and namespace.
pub const DEFAULT_SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The environment in-cluster configuration is read from.
#[derive(Debug, Clone)]
pub struct InClusterEnv {
    /// `KUBERNETES_SERVICE_HOST`.
    pub host: String,
    /// `KUBERNETES_SERVICE_PORT`.
    pub port: String,
    /// The ServiceAccount mount (`token`, `ca.crt`, `namespace`).
    pub dir: PathBuf,
}

impl InClusterEnv {
    /// From the process environment and the default mount; `None` outside a cluster
    /// (client-go requires both variables).
    pub fn from_env() -> Option<Self> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST").ok()?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").ok()?;
        Some(Self {
            host,
            port,
            dir: PathBuf::from(DEFAULT_SERVICE_ACCOUNT_DIR),
        })
    }

    /// The API server's URL: `https://host:port`, IPv6 addresses bracketed.
    pub fn url(&self) -> Result<http::Uri, ClientError> {
        let port: u16 = self.port.trim().parse().map_err(|e| {
            ClientError::InCluster(format!("KUBERNETES_SERVICE_PORT {:?}: {e}", self.port))
        })?;
        let host = match self.host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]"),
            _ => self.host.clone(),
        };
        let url = format!("https://{host}:{port}");
        url.parse()
            .map_err(|e| ClientError::InCluster(format!("API server URL {url:?}: {e}")))
    }

    /// The configuration: the mount's CA as the only trust root, its token file, its
    /// namespace as the default.
    pub fn config(&self) -> Result<kube::Config, ClientError> {
        let read = |name: &str| -> Result<String, ClientError> {
            let path = self.dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| ClientError::Read { path, source })
        };
        let ca_path = self.dir.join("ca.crt");
        let ca = tidemark_tls::certificates_from_pem(&read("ca.crt")?)
            .map_err(|e| ClientError::InCluster(format!("{}: {e}", ca_path.display())))?;
        let token_path = self.dir.join("token");
        // The token must be readable now; BearerTokenFile reads it again as it rotates.
        read("token")?;
        let mut config = kube::Config::new(self.url()?);
        config.root_cert = Some(ca.into_iter().map(|c| c.as_ref().to_vec()).collect());
        config.default_namespace = read("namespace")
            .map(|ns| ns.trim().to_string())
            .ok()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_string());
        config.auth_info.token_file = Some(path_text(&token_path));
        Ok(config)
    }
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(host: &str, port: &str) -> InClusterEnv {
        InClusterEnv {
            host: host.into(),
            port: port.into(),
            dir: PathBuf::from("/nonexistent"),
        }
    }

    #[test]
    fn the_url_brackets_ipv6_and_refuses_a_bad_port() {
        assert_eq!(
            env("10.0.0.1", "443").url().expect("url").to_string(),
            "https://10.0.0.1:443/"
        );
        assert_eq!(
            env("fd00::1", "6443").url().expect("url").to_string(),
            "https://[fd00::1]:6443/"
        );
        assert!(env("10.0.0.1", "https").url().is_err());
    }

    #[test]
    fn a_missing_mount_names_the_file() {
        let err = env("10.0.0.1", "443").config().expect_err("no mount");
        assert!(err.to_string().contains("/nonexistent/ca.crt"), "{err}");
    }
}
