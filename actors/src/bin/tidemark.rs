//! The `tidemark` binary: `tidemark run` against a cluster or `--embedded`.

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use tidemark_actors::embedded::{DemoOptions, run_demo, summarize_cluster, with_user_agent};
use tidemark_actors::leader::{LeaderElectionConfig, default_identity};
use tidemark_actors::manager::{Manager, ManagerConfig, ONBOARDED};
use tidemark_engine::FeatureGates;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "tidemark",
    version,
    about = "A Kubernetes controller manager that stays correct when its cache lags"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controller manager.
    Run(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Kubeconfig file (default: in-cluster config or $KUBECONFIG / ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Run against an embedded simulated API server with a demo workload.
    #[arg(long)]
    embedded: bool,
    /// Controllers to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = ONBOARDED.iter().map(|s| s.to_string()).collect::<Vec<_>>())]
    controllers: Vec<String>,
    /// Number of shards (default: the number of cores).
    #[arg(long)]
    shards: Option<usize>,
    /// Feature gates, e.g. StaleControllerConsistency=false.
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// Client-side QPS to the API server.
    #[arg(long, default_value_t = 20.0)]
    kube_api_qps: f32,
    /// Client-side burst to the API server.
    #[arg(long, default_value_t = 30)]
    kube_api_burst: u32,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
    /// Serve /metrics, /healthz and /readyz here; `0` disables.
    #[arg(long, default_value = "127.0.0.1:9464")]
    metrics_addr: String,
    /// Write the summary as JSON here.
    #[arg(long)]
    summary_json: Option<PathBuf>,
    /// Embedded mode: how many ReplicaSets to seed.
    #[arg(long, default_value_t = 10)]
    demo_replicasets: usize,
    /// Embedded mode: the Pod watch delay of the simulated API server, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    demo_pod_watch_delay_ms: u64,
    /// Leader election through a Lease (default: on against a cluster, off with --embedded).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    leader_elect: Option<bool>,
    /// Namespace of the leader election Lease.
    #[arg(long, default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// Name of the leader election Lease.
    #[arg(long, default_value = "tidemark")]
    leader_elect_resource_name: String,
    /// This process's identity in the Lease (default: host name and a random suffix).
    #[arg(long)]
    leader_elect_identity: Option<String>,
    /// How long a non-leader waits on an unchanged Lease before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long a leader may act after sending its last successful renewal.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often the Lease is read and renewed.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// Writers check the leader fence before every write. Turning it off is unsafe and exists
    /// only to show, in the leader scenario, the double leadership it prevents.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect_fencing: bool,
    /// Log format: `text` for people, `json` for log pipelines.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Node lifecycle: how long a node Lease may stay unchanged before the Node is marked.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    node_monitor_grace_period: Duration,
    /// How long a graceful shutdown waits for the writes in flight.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    shutdown_grace_period: Duration,
}

/// Parses `1500ms`, `15s`, `2m` or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 15s, 500ms or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        other => return Err(format!("unknown unit {other:?} in {text:?} (ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

fn init_logs(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,tidemark_actors=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

fn main() -> anyhow::Result<()> {
    let Command::Run(args) = Cli::parse().command;
    init_logs(&args.log_format);
    let gates = FeatureGates::parse(
        &args.feature_gates,
        &[
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "Job",
            "NodeLifecycle",
        ],
    )
    .context("--feature-gates")?;
    let mut manager = ManagerConfig {
        controllers: args.controllers.clone(),
        gates,
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        node_monitor_grace_period: args.node_monitor_grace_period,
        ..ManagerConfig::default()
    };
    if args.leader_elect.unwrap_or(!args.embedded) {
        let mut le = LeaderElectionConfig::new(
            args.leader_elect_identity
                .clone()
                .unwrap_or_else(default_identity),
        );
        le.namespace = args.leader_elect_resource_namespace.clone();
        le.name = args.leader_elect_resource_name.clone();
        le.elector.lease_duration = args.leader_elect_lease_duration;
        le.elector.renew_deadline = args.leader_elect_renew_deadline;
        le.elector.retry_period = args.leader_elect_retry_period;
        le.fencing = args.leader_elect_fencing;
        le.elector
            .validate()
            .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
        manager.leader_election = Some(le);
    }
    if let Some(shards) = args.shards {
        if shards == 0 {
            bail!("--shards must be at least 1");
        }
        manager.shards = shards;
    }
    let metrics_addr = match args.metrics_addr.as_str() {
        "0" => None,
        text => Some(
            text.parse::<std::net::SocketAddr>()
                .with_context(|| format!("--metrics-addr {text:?}"))?,
        ),
    };
    if args.embedded {
        let summary = run_demo(DemoOptions {
            manager,
            metrics_addr,
            replicasets: args.demo_replicasets,
            pod_watch_delay: Duration::from_millis(args.demo_pod_watch_delay_ms),
            duration: Duration::from_secs(args.duration.unwrap_or(60)),
            ..DemoOptions::default()
        })?;
        println!("{}", summary.render());
        if let Some(path) = &args.summary_json {
            std::fs::write(path, serde_json::to_vec_pretty(&summary)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if summary.violations > 0 {
            std::process::exit(1);
        }
        return Ok(());
    }
    run_cluster(args, manager, metrics_addr)
}

/// Resolves on SIGTERM (how Kubernetes stops a Pod) or Ctrl-C.
async fn wait_for_stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn run_cluster(
    args: RunArgs,
    config: ManagerConfig,
    metrics_addr: Option<std::net::SocketAddr>,
) -> anyhow::Result<()> {
    let io = tidemark_actors::manager::io_runtime()?;
    let client = io.block_on(async {
        let kube_config = match &args.kubeconfig {
            Some(path) => {
                let kc = kube::config::Kubeconfig::read_from(path)?;
                kube::Config::from_custom_kubeconfig(
                    kc,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await?
            }
            None => kube::Config::infer().await?,
        };
        let identity = config
            .leader_election
            .as_ref()
            .map(|le| le.elector.identity.as_str());
        anyhow::Ok(kube::Client::try_from(with_user_agent(
            kube_config,
            identity,
        ))?)
    })?;
    let system = actix::System::new();
    let handle = io.handle().clone();
    system.block_on(async move {
        let manager = Manager::start(&config, client, &handle)?;
        if let Some(addr) = metrics_addr {
            let bound = tidemark_actors::embedded::start_metrics(&handle, addr, &manager).await?;
            tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
        }
        let started = std::time::Instant::now();
        let stop = wait_for_stop_signal();
        match args.duration {
            Some(secs) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(secs)) => {}
                    _ = stop => {}
                }
            }
            None => stop.await,
        }
        let stats = manager.stats().await;
        let mut summary = summarize_cluster(
            &stats,
            started.elapsed(),
            config.gates.consistency_for("ReplicaSet"),
        );
        tracing::info!("stopping: no new work; waiting for the writes in flight");
        let source = manager.source();
        let report = manager.shutdown(args.shutdown_grace_period).await;
        if report.unanswered > 0 {
            tracing::warn!(
                unanswered = report.unanswered,
                "writes still in flight at the end of the grace period"
            );
        }
        tracing::info!(released_lease = report.released_lease, "stopped");
        summary.unanswered_at_exit = report.unanswered;
        // Counted after the stop, so writes sent while it began are in.
        summary.writes = source
            .writes()
            .sent
            .load(std::sync::atomic::Ordering::Relaxed);
        summary.write_failures = source
            .writes()
            .failed
            .load(std::sync::atomic::Ordering::Relaxed);
        summary.released_lease = report.released_lease;
        println!("{}", summary.render());
        if let Some(path) = &args.summary_json {
            std::fs::write(path, serde_json::to_vec_pretty(&summary)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        anyhow::Ok(())
    })?;
    io.shutdown_timeout(Duration::from_secs(2));
    Ok(())
}
