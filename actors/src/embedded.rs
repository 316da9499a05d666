//! `tidemark run --embedded`: the simulated API server in-process, a demo workload of
//! ReplicaSets scaling up and down under a Pod watch delay, a live status line and a summary.
//! Built with the `embedded` feature (on by default); the only module that reaches the simulator.

use crate::manager::{Manager, ManagerConfig, ManagerStats};
use crate::startup::{StartupError, client_for_kubeconfig, start_metrics};
use crate::summary::Summary;
use serde_json::Value;
use std::io::IsTerminal;
use std::time::Duration;
use tidemark_loadgen::{ApiServer, ReplicaSetTruth, Resource, ServerConfig};
use tokio::time::Instant;

/// The namespace the demo works in.
pub const DEMO_NAMESPACE: &str = "demo";

/// Why the embedded run failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The I/O runtime could not be built.
    #[error("I/O runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// The simulated API server did not start.
    #[error("simulated API server: {0}")]
    Server(String),
    /// Connecting or serving failed.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The manager did not start.
    #[error(transparent)]
    Start(#[from] crate::manager::StartError),
    /// Seeding the workload failed.
    #[error("seeding: {0}")]
    Seed(String),
}

/// The demo's knobs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The manager's configuration.
    pub manager: ManagerConfig,
    /// How many ReplicaSets.
    pub replicasets: usize,
    /// The Pod watch delay of the simulated server.
    pub pod_watch_delay: Duration,
    /// How long to run; scaling stops at 60% of it so the rest shows convergence.
    pub duration: Duration,
    /// Time between scaling steps.
    pub step_every: Duration,
    /// Print a live status line.
    pub status_line: bool,
    /// Serve `/metrics`, `/healthz` and `/readyz` here.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            manager: ManagerConfig::default(),
            replicasets: 10,
            pod_watch_delay: Duration::from_secs(3),
            duration: Duration::from_secs(60),
            step_every: Duration::from_secs(4),
            status_line: true,
            metrics_addr: None,
        }
    }
}

/// A ReplicaSet manifest in the demo namespace (see [`tidemark_loadgen::workload`]).
pub fn replicaset_manifest(name: &str, replicas: i32) -> Value {
    tidemark_loadgen::workload::replicaset_manifest(DEMO_NAMESPACE, name, replicas)
}

/// Every ReplicaSet has converged.
pub fn converged(truth: &[ReplicaSetTruth]) -> bool {
    truth.iter().all(ReplicaSetTruth::is_converged)
}

/// Builds a kube client for the simulated server `server` as its admin, on the I/O runtime
/// (its worker must live there).
pub async fn client_for(
    server: &tidemark_loadgen::ApiServer,
    io: &tokio::runtime::Handle,
) -> Result<kube::Client, EmbeddedError> {
    Ok(client_for_kubeconfig(&server.kubeconfig_yaml(), io).await?)
}

/// A fresh directory for the demo's kubeconfig and serving certificate.
fn tempdir_for_demo() -> Result<std::path::PathBuf, EmbeddedError> {
    let dir = std::env::temp_dir().join(format!("tidemark-embedded-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Starts the simulated API server on the I/O runtime.
pub async fn start_server(
    io: &tokio::runtime::Handle,
    config: ServerConfig,
) -> Result<ApiServer, EmbeddedError> {
    io.spawn(tidemark_loadgen::start(config))
        .await
        .map_err(|e| EmbeddedError::Server(e.to_string()))?
        .map_err(|e| EmbeddedError::Server(e.to_string()))
}

/// Builds the summary from the manager's figures and the oracle.
pub fn summarize(
    stats: &ManagerStats,
    server: &ApiServer,
    elapsed: Duration,
    consistency: bool,
) -> Summary {
    let violations = server.violations();
    Summary {
        violations: violations.len(),
        violation_examples: violations
            .iter()
            .take(5)
            .map(|v| format!("{v:?}"))
            .collect(),
        converged: converged(&server.replicaset_truth()),
        ..crate::startup::summarize(stats, elapsed, consistency)
    }
}

/// The scale targets the demo cycles through.
const SCALE_CYCLE: [i32; 6] = [4, 1, 6, 2, 5, 3];

/// Runs the demo inside an actix System; returns its summary.
pub fn run_demo(options: DemoOptions) -> Result<Summary, EmbeddedError> {
    let io = crate::manager::io_runtime()?;
    let system = actix::System::new();
    let handle = io.handle().clone();
    let result = system.block_on(demo(options, handle));
    io.shutdown_timeout(Duration::from_secs(2));
    result
}

async fn demo(options: DemoOptions, io: tokio::runtime::Handle) -> Result<Summary, EmbeddedError> {
    let server = start_server(
        &io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, options.pod_watch_delay)],
            ..ServerConfig::default()
        },
    )
    .await?;
    let names: Vec<String> = (0..options.replicasets)
        .map(|i| format!("web-{i}"))
        .collect();
    for name in &names {
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(name, 2),
            )
            .map_err(|e| EmbeddedError::Seed(e.to_string()))?;
    }
    // One of every other onboarded kind, so every controller has work in the demo.
    let others = [
        (
            Resource::StatefulSets,
            tidemark_loadgen::workload::statefulset_manifest(DEMO_NAMESPACE, "db", 3, false),
        ),
        (
            Resource::DaemonSets,
            tidemark_loadgen::workload::daemonset_manifest(DEMO_NAMESPACE, "agent"),
        ),
        (
            Resource::Jobs,
            tidemark_loadgen::workload::job_manifest(DEMO_NAMESPACE, "batch", 2, 6, false),
        ),
    ];
    for (resource, manifest) in others {
        server
            .create(resource, DEMO_NAMESPACE, manifest)
            .map_err(|e| EmbeddedError::Seed(e.to_string()))?;
    }
    // The manager runs as an operator would run it on a cluster: as deploy/rbac.yaml's
    // ServiceAccount, over HTTPS, with that RBAC enforced.
    let identity = tempdir_for_demo()?;
    let run_as = tidemark_loadgen::run_as::set_up(&server, &identity)
        .map_err(|e| EmbeddedError::Server(e.to_string()))?;
    let kubeconfig = std::fs::read_to_string(&run_as.kubeconfig)?;
    let client = client_for_kubeconfig(&kubeconfig, &io).await?;
    let consistency = options.manager.gates.consistency_for("ReplicaSet");
    let manager = Manager::start(&options.manager, client, &io)?;
    if let Some(addr) = options.metrics_addr {
        let bound = start_metrics(&io, addr, &manager).await?;
        tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
    }
    tracing::info!(url = %server.url(), admin = %server.admin_addr(), replicasets = names.len(),
        pod_watch_delay_ms = options.pod_watch_delay.as_millis() as u64, "embedded API server seeded");
    let started = Instant::now();
    let scaling_until = started + options.duration.mul_f64(0.6);
    let deadline = started + options.duration;
    let mut next_step = started + options.step_every;
    let mut step = 0usize;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let tty = std::io::stderr().is_terminal();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = &mut ctrl_c => break,
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if now >= next_step && now < scaling_until {
            for (i, name) in names.iter().enumerate() {
                if (i + step).is_multiple_of(2) {
                    let replicas = SCALE_CYCLE[(i + step) % SCALE_CYCLE.len()];
                    if let Err(e) = server.scale_replicaset(DEMO_NAMESPACE, name, replicas) {
                        tracing::warn!(%name, error = %e, "scaling failed");
                    }
                }
            }
            step += 1;
            next_step = now + options.step_every;
        }
        if options.status_line {
            let stats = manager.stats().await;
            let elapsed = now - started;
            if tty || elapsed.as_secs().is_multiple_of(5) {
                let line = format!(
                    "[{:>4}s] synced={} reconciles={} stale_skips={} parked={} writes={} violations={}",
                    elapsed.as_secs(),
                    stats.synced,
                    stats.reconciles(),
                    stats.stale_sync_skips(),
                    stats.parked(),
                    stats.writes_sent,
                    server.violations().len()
                );
                if tty {
                    eprint!("\r{line}   ")
                } else {
                    eprintln!("{line}")
                }
            }
        }
    }
    if tty && options.status_line {
        eprintln!();
    }
    let stats = manager.stats().await;
    let mut summary = summarize(&stats, &server, started.elapsed(), consistency);
    let unanswered = manager.shutdown(Duration::from_secs(5)).await.unanswered;
    if unanswered > 0 {
        tracing::warn!(unanswered, "writes still in flight at shutdown");
    }
    let (_, forbidden) = tidemark_loadgen::run_as::requests_of(&server, &run_as);
    for f in &forbidden {
        tracing::error!(request = %f.object, detail = %f.detail, "RBAC refused the manager");
    }
    summary.violations += forbidden.len();
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&identity);
    Ok(summary)
}
