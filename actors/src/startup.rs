//! Start-up shared by `tidemark run` against a cluster and `--embedded`: a kube client from a
//! kubeconfig, the plain metrics endpoint, and the summary printed at the end.

use crate::manager::{Manager, ManagerStats};
use crate::summary::Summary;
use std::time::Duration;

/// Why start-up failed.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The client configuration could not be loaded or the client not built.
    #[error(transparent)]
    Connect(#[from] crate::client::ClientError),
    /// The metrics endpoint could not bind.
    #[error("metrics endpoint: {0}")]
    Metrics(std::io::Error),
}

/// Builds a kube client from kubeconfig YAML, on the I/O runtime (its worker must live there).
pub async fn client_for_kubeconfig(
    yaml: &str,
    io: &tokio::runtime::Handle,
) -> Result<kube::Client, StartupError> {
    let source = crate::client::ConfigSource::Yaml(yaml.to_string());
    let config = crate::client::load_config(&source).await?;
    Ok(crate::client::build_client(config, None, io)?)
}

/// Serves the metrics endpoint of `manager` on the I/O runtime; returns the bound address.
pub async fn start_metrics(
    io: &tokio::runtime::Handle,
    addr: std::net::SocketAddr,
    manager: &Manager,
) -> Result<std::net::SocketAddr, StartupError> {
    let state = crate::metrics::MetricsState::new(manager.source());
    io.spawn(crate::metrics::serve(addr, state))
        .await
        .map_err(|e| StartupError::Metrics(std::io::Error::other(e.to_string())))?
        .map_err(StartupError::Metrics)
}

/// The summary of a run from the manager's figures: no oracle, so no violations and no
/// convergence verdict of its own (the embedded run adds them).
pub fn summarize(stats: &ManagerStats, elapsed: Duration, consistency: bool) -> Summary {
    let wake_p99 = stats
        .controllers
        .iter()
        .map(|c| c.wake_latency_us.value_at_quantile(0.99))
        .max()
        .unwrap_or(0);
    Summary {
        duration_seconds: elapsed.as_secs_f64(),
        reconciles: stats.reconciles(),
        stale_sync_skips: stats.stale_sync_skips(),
        stale_reconciles: stats.controllers.iter().map(|c| c.stale_reconciles).sum(),
        writes: stats.writes_sent,
        write_failures: stats.writes_failed,
        wakes: stats.controllers.iter().map(|c| c.queue.wakes).sum(),
        wake_p99_us: wake_p99,
        parked_at_end: stats.parked(),
        consistency,
        live_reads: stats.live_reads(),
        destructive_held: stats.controllers.iter().map(|c| c.destructive_held).sum(),
        writes_fenced: stats.writes_fenced,
        controllers: stats
            .controllers
            .iter()
            .map(|c| crate::summary::ControllerSummary {
                controller: c.controller.to_string(),
                reconciles: c.reconciles,
                stale_sync_skips: c.stale_sync_skips,
                writes: c.writes,
                live_reads: c.live_reads_ok + c.live_reads_failed,
                destructive_held: c.destructive_held,
                parked_at_end: c.parked,
            })
            .collect(),
        ..Summary::default()
    }
}
