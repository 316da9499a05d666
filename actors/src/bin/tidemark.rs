//! The `tidemark` binary: `tidemark run` against a cluster or `--embedded`.

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use tidemark_actors::embedded::{DemoOptions, run_demo, summarize_cluster, with_user_agent};
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
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,tidemark_actors=info")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let Command::Run(args) = Cli::parse().command;
    let gates =
        FeatureGates::parse(&args.feature_gates, &["ReplicaSet"]).context("--feature-gates")?;
    let mut manager = ManagerConfig {
        controllers: args.controllers.clone(),
        gates,
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        ..ManagerConfig::default()
    };
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
        anyhow::Ok(kube::Client::try_from(with_user_agent(kube_config))?)
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
        let summary = summarize_cluster(
            &stats,
            started.elapsed(),
            config.gates.consistency_for("ReplicaSet"),
        );
        let unanswered = manager.shutdown(Duration::from_secs(5)).await;
        if unanswered > 0 {
            tracing::warn!(unanswered, "writes still in flight at shutdown");
        }
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
