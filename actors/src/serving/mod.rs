//! Serving `/metrics`, `/healthz`, `/readyz` and `/livez` as kube-controller-manager does:
//! HTTPS on `--bind-address:--secure-port` (10257), a self-signed certificate unless
//! `--tls-cert-file` / `--tls-private-key-file` are given, and delegated authentication and
//! authorization: a client certificate signed by `--client-ca-file` or a bearer token checked
//! with a TokenReview, then a SubjectAccessReview for `get` on the path, both cached for 10 s
//! as upstream's defaults. Paths in `--authorization-always-allow-paths` need neither.
//!
//! Both listeners (and the plain `--metrics-addr` of `--embedded`) have the limits of
//! [`scrape_serve_options`]: header-read and idle deadlines and a connection cap, so idle or
//! half-sent connections cannot exhaust the process' files.

mod delegated;
mod filter;

pub use delegated::{DelegatedAuth, DelegationError, Verdict};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::metrics::{MetricsState, scrape_serve_options};

/// How the secure port is served.
#[derive(Debug, Clone)]
pub struct SecureServing {
    /// `--bind-address` and `--secure-port`.
    pub addr: SocketAddr,
    /// `--tls-cert-file` and `--tls-private-key-file`; `None`: a self-signed certificate.
    pub cert: Option<(PathBuf, PathBuf)>,
    /// `--client-ca-file`: client certificates it signed authenticate their CN and O.
    pub client_ca: Option<PathBuf>,
    /// `--authorization-always-allow-paths`.
    pub always_allow_paths: Vec<String>,
}

/// Paths kube-controller-manager serves without authorization by default.
pub const DEFAULT_ALWAYS_ALLOW_PATHS: [&str; 3] = ["/healthz", "/readyz", "/livez"];

/// Why the secure port could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    /// Certificates could not be read or made.
    #[error("secure serving TLS: {0}")]
    Tls(#[from] tidemark_tls::TlsError),
    /// The port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// The secure port, bound and with its TLS configuration, not yet serving: bound before the
/// manager takes the Lease, so a port already taken ends the process before it leads.
pub struct BoundSecure {
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    client_certificates: bool,
    always_allow_paths: Vec<String>,
}

impl BoundSecure {
    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves on the current tokio runtime until `stop`, with [`scrape_serve_options`]; returns
    /// the bound address. `auth` asks the API server who a caller is and what it may do.
    pub fn serve(
        self,
        state: MetricsState,
        auth: Arc<DelegatedAuth>,
        stop: watch::Receiver<bool>,
    ) -> Result<SocketAddr, ServingError> {
        self.serve_with(state, auth, stop, scrape_serve_options())
    }

    /// [`serve`](Self::serve) with other limits.
    pub fn serve_with(
        self,
        state: MetricsState,
        auth: Arc<DelegatedAuth>,
        stop: watch::Receiver<bool>,
        options: tidemark_tls::ServeOptions,
    ) -> Result<SocketAddr, ServingError> {
        let bound = self.local_addr().map_err(|source| ServingError::Bind {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })?;
        let guard = Arc::new(filter::Guard {
            auth,
            always_allow: self.always_allow_paths,
            client_certificates: self.client_certificates,
        });
        let router = crate::metrics::router(state).layer(axum::middleware::from_fn_with_state(
            guard,
            filter::authenticate_and_authorize,
        ));
        tokio::spawn(tidemark_tls::serve(
            self.listener,
            router,
            Some(self.tls),
            options,
            stop,
        ));
        Ok(bound)
    }
}

/// Reads or makes the serving certificate and binds the secure port (on the current tokio
/// runtime); serves nothing yet.
pub async fn bind_secure(config: &SecureServing) -> Result<BoundSecure, ServingError> {
    let identity = match &config.cert {
        Some((cert, key)) => tidemark_tls::ServerIdentity {
            chain: tidemark_tls::read_certificates(cert)?,
            key: tidemark_tls::read_private_key(key)?,
        },
        None => {
            let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
            if !config.addr.ip().is_unspecified() {
                hosts.push(config.addr.ip().to_string());
            }
            tidemark_tls::ServerIdentity::from_issued(&tidemark_tls::self_signed(&hosts)?)?
        }
    };
    let client_ca = match &config.client_ca {
        Some(path) => Some(tidemark_tls::read_certificates(path)?),
        None => None,
    };
    let tls = tidemark_tls::server_config(identity, client_ca.as_deref())?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| ServingError::Bind {
            addr: config.addr,
            source,
        })?;
    Ok(BoundSecure {
        listener,
        tls,
        client_certificates: client_ca.is_some(),
        always_allow_paths: config.always_allow_paths.clone(),
    })
}

/// Binds the secure port and serves it on the current tokio runtime until `stop`; returns
/// the bound address. `auth` asks the API server who a caller is and what it may do.
pub async fn serve_secure(
    config: &SecureServing,
    state: MetricsState,
    auth: Arc<DelegatedAuth>,
    stop: watch::Receiver<bool>,
) -> Result<SocketAddr, ServingError> {
    bind_secure(config).await?.serve(state, auth, stop)
}
