//! The `tidemark` binary: `tidemark run` against a cluster or `--embedded`.

use anyhow::{Context as _, bail};
use clap::Parser;
use std::time::Duration;
use tidemark_actors::cli::{Cli, Command, RunArgs, client_config, init_logs, resolve_controllers};
use tidemark_actors::embedded::{DemoOptions, run_demo, summarize_cluster, with_user_agent};
use tidemark_actors::leader::{LeaderElectionConfig, default_identity};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let Command::Run(args) = Cli::parse().command;
    init_logs(args.logging_format, args.v);
    for warning in args.warnings() {
        tracing::warn!("{warning}");
    }
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
        controllers: resolve_controllers(&args.controllers).context("--controllers")?,
        gates,
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        node_monitor_grace_period: args.node_monitor_grace_period,
        ..ManagerConfig::default()
    };
    if args.leader_elect_on() {
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
            duration: args.duration.unwrap_or(Duration::from_secs(60)),
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
        let kube_config = client_config(&args).await?;
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
            Some(duration) => {
                tokio::select! {
                    _ = tokio::time::sleep(duration) => {}
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
