//! Connecting to an API server as kube-controller-manager does: which configuration
//! (`--kubeconfig`, `--master`, in-cluster), TLS through rustls, every kubeconfig way to
//! authenticate (client certificates, tokens, token files re-read when they rotate, exec
//! plugins), and Tidemark's own client settings (user agent, no blind retries, a deadline on
//! every request but watches, response bodies kept out of the logs).

mod deadline;
mod in_cluster;
pub mod response;
pub mod rest_metrics;
mod source;
mod token_file;
mod user_agent;

pub use deadline::{DeadlineLayer, RequestTimeouts, TimedOut};
pub use in_cluster::{DEFAULT_SERVICE_ACCOUNT_DIR, InClusterEnv};
pub use source::{ConfigSource, load_config};
pub use token_file::{BearerTokenFile, TOKEN_FILE_CHECK_INTERVAL};
pub use user_agent::with_user_agent;

use std::path::PathBuf;

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// The in-cluster environment is incomplete.
    #[error("in-cluster config: {0}")]
    InCluster(String),
    /// Neither a kubeconfig nor an in-cluster environment was found.
    #[error(
        "no configuration: not in a cluster (KUBERNETES_SERVICE_HOST unset) and no kubeconfig ({0}); pass --kubeconfig or --master"
    )]
    NoConfiguration(String),
    /// `--master` is not a URL.
    #[error("--master {url:?}: {source}")]
    Master {
        /// What was given.
        url: String,
        /// The cause.
        source: http::uri::InvalidUri,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// kube-rs refused the configuration (TLS, credentials).
    #[error("kube client: {0}")]
    Kube(#[from] kube::Error),
}

/// The log target under which kube-rs logs response bodies: one that fails to decode (WARN),
/// an error body that is not a Status (DEBUG), Status bodies and headers (TRACE).
pub const KUBE_RESPONSE_BODY_TARGET: &str = "kube_client::client";

/// Whether an event may be logged: never one of [`KUBE_RESPONSE_BODY_TARGET`], whatever
/// `RUST_LOG` says (Tidemark logs those failures itself, with the URL and without the body).
/// kube-rs' request spans (`kube_client::client::builder`) stay.
pub fn loggable(meta: &tracing::Metadata<'_>) -> bool {
    meta.target() != KUBE_RESPONSE_BODY_TARGET
}

/// A kube client for `config`, created on the I/O runtime `io` (its request worker lives
/// there). `identity` names this process in the user agent. A `tokenFile` (kubeconfig or
/// in-cluster) is served by [`BearerTokenFile`], which re-reads the file when it changes.
/// Requests have the default [`RequestTimeouts`].
pub fn build_client(
    config: kube::Config,
    identity: Option<&str>,
    io: &tokio::runtime::Handle,
) -> Result<kube::Client, ClientError> {
    build_client_with(config, identity, io, RequestTimeouts::default())
}

/// [`build_client`] with its own request deadlines.
pub fn build_client_with(
    config: kube::Config,
    identity: Option<&str>,
    io: &tokio::runtime::Handle,
    timeouts: RequestTimeouts,
) -> Result<kube::Client, ClientError> {
    tidemark_tls::install_crypto_provider();
    let deadlines = DeadlineLayer::new(timeouts, &config.cluster_url.to_string());
    let mut config = with_user_agent(config, identity);
    let token_file = if config.auth_info.token.is_none() {
        config.auth_info.token_file.take()
    } else {
        None
    };
    let _guard = io.enter();
    let counted = rest_metrics::RestMetricsLayer::new(&config.cluster_url);
    let builder = kube::client::ClientBuilder::try_from(config)?
        .with_layer(&deadlines)
        .with_layer(&counted);
    Ok(match token_file {
        Some(path) => {
            let layer = BearerTokenFile::open(PathBuf::from(path))?;
            builder.with_layer(&layer).build()
        }
        None => builder.build(),
    })
}
