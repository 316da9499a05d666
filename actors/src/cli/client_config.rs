//! The kube client configuration `--kubeconfig` and `--master` describe, read as upstream's
//! `clientcmd.BuildConfigFromFlags` reads them.

use super::run_args::RunArgs;

/// Why no client configuration could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientConfigError {
    /// `--kubeconfig` could not be read or used.
    #[error("--kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// Why.
        source: kube::config::KubeconfigError,
    },
    /// Neither flag given and no in-cluster or default kubeconfig found.
    #[error("no --kubeconfig or --master, and {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// `--master` is not a URL.
    #[error("--master {url:?} is not a URL: {source}")]
    Master {
        /// As given.
        url: String,
        /// Why.
        source: http::uri::InvalidUri,
    },
}

/// `--kubeconfig` with its server replaced by `--master` if given; `--master` alone (no
/// credentials, as upstream); neither: in-cluster config or the default kubeconfig.
pub async fn client_config(args: &RunArgs) -> Result<kube::Config, ClientConfigError> {
    let master = args
        .master
        .as_deref()
        .map(|url| {
            url.parse::<http::Uri>()
                .map_err(|source| ClientConfigError::Master {
                    url: url.to_string(),
                    source,
                })
        })
        .transpose()?;
    let mut config = match (&args.kubeconfig, &master) {
        (Some(path), _) => {
            let kubeconfig_error = |source| ClientConfigError::Kubeconfig {
                path: path.display().to_string(),
                source,
            };
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(kubeconfig_error)?
        }
        (None, Some(url)) => kube::Config::new(url.clone()),
        (None, None) => kube::Config::infer().await?,
    };
    if let Some(url) = master {
        config.cluster_url = url;
    }
    Ok(config)
}
