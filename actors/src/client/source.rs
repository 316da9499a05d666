//! Which configuration to connect with, in kube-controller-manager's order
//! (`clientcmd.BuildConfigFromFlags`): `--kubeconfig` if given, its server replaced by
//! `--master` if that is given too; `--master` alone is that URL without credentials; neither
//! is the in-cluster environment. Where upstream then gives up, Tidemark also tries kube-rs'
//! default loading rules (`$KUBECONFIG`, `~/.kube/config`), so a laptop run needs no flag.

use std::path::PathBuf;

use super::{ClientError, InClusterEnv};

/// Where the configuration comes from.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// The flags: `--kubeconfig` and `--master`.
    Flags {
        /// `--kubeconfig`.
        kubeconfig: Option<PathBuf>,
        /// `--master`.
        master: Option<String>,
    },
    /// A kubeconfig held in memory (the embedded server's).
    Yaml(String),
    /// An in-cluster environment given explicitly.
    InCluster(InClusterEnv),
}

fn master_uri(master: &str) -> Result<http::Uri, ClientError> {
    master.parse().map_err(|source| ClientError::Master {
        url: master.to_string(),
        source,
    })
}

async fn from_kubeconfig(kc: kube::config::Kubeconfig) -> Result<kube::Config, ClientError> {
    Ok(
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?,
    )
}

/// Loads the configuration `source` names.
pub async fn load_config(source: &ConfigSource) -> Result<kube::Config, ClientError> {
    match source {
        ConfigSource::Yaml(yaml) => {
            let kc = kube::config::Kubeconfig::from_yaml(yaml)?;
            from_kubeconfig(kc).await
        }
        ConfigSource::InCluster(env) => env.config(),
        ConfigSource::Flags { kubeconfig, master } => {
            let mut config = match (kubeconfig, master) {
                (Some(path), _) => {
                    from_kubeconfig(kube::config::Kubeconfig::read_from(path)?).await?
                }
                (None, None) => match InClusterEnv::from_env() {
                    Some(env) => env.config()?,
                    None => kube::Config::from_kubeconfig(&Default::default())
                        .await
                        .map_err(|e| ClientError::NoConfiguration(e.to_string()))?,
                },
                (None, Some(m)) => kube::Config::new(master_uri(m)?),
            };
            if let Some(m) = master {
                config.cluster_url = master_uri(m)?;
            }
            Ok(config)
        }
    }
}
