//! The `tidemark` binary: `tidemark run` against a cluster or `--embedded`.

use anyhow::{Context as _, bail};
use clap::Parser;
use std::time::Duration;
use tidemark_actors::cli::{Cli, Command, RunArgs, init_logs, resolve_controllers};
use tidemark_actors::client::{ConfigSource, build_client, load_config};
use tidemark_actors::leader::{LeaderElectionConfig, default_identity};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_actors::serving::{DelegatedAuth, SecureServing, bind_secure};
use tidemark_actors::startup::summarize;
use tidemark_engine::FeatureGates;
use tidemark_engine::controllers::nodelifecycle::{EvictionRates, Evictions};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Exit code of a configuration or start-up error (clap's usage errors exit 2 as well).
const CONFIG_ERROR: u8 = 2;

fn main() -> std::process::ExitCode {
    let Command::Run(args) = Cli::parse().command;
    init_logs(args.logging_format, args.v);
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            // One line an operator can read; the backtrace only when asked for.
            if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
                eprintln!("tidemark: {e:?}");
            } else {
                eprintln!("tidemark: {e:#}");
            }
            std::process::ExitCode::from(CONFIG_ERROR)
        }
    }
}

fn run(args: RunArgs) -> anyhow::Result<std::process::ExitCode> {
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
        mode: args.consistency_mode,
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        protobuf: args.kube_api_content_type == tidemark_actors::cli::PROTOBUF,
        node_monitor_grace_period: args.node_monitor_grace_period,
        node_selector: std::sync::Arc::new(args.node_selector.clone()),
        node_evictions: std::sync::Arc::new(Evictions::new(EvictionRates {
            eviction_rate: args.node_eviction_rate,
            secondary_eviction_rate: args.secondary_node_eviction_rate,
            unhealthy_zone_threshold: args.unhealthy_zone_threshold,
            large_cluster_size_threshold: args.large_cluster_size_threshold as usize,
        })),
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
    if args.scale_out && manager.leader_election.is_none() {
        bail!(
            "--scale-out needs --leader-elect: the ranges are held through Leases as the leader's is"
        );
    }
    manager.scale_out = args.scale_out;
    manager.scale_out_namespace = args.scale_out_lease_namespace.clone();
    if let Some(shards) = args.shards {
        if shards == 0 {
            bail!("--shards must be at least 1");
        }
        manager.shards = shards;
    }
    let metrics_addr = match (args.metrics_addr.as_deref(), args.embedded) {
        (Some("0"), _) | (None, false) => None,
        (None, true) => Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9464))),
        (Some(text), true) => Some(
            text.parse::<std::net::SocketAddr>()
                .with_context(|| format!("--metrics-addr {text:?}"))?,
        ),
        (Some(text), false) => bail!(
            "--metrics-addr {text} serves plain HTTP without authentication and is for --embedded only; against a cluster /metrics is on the secure port (--bind-address, --secure-port)"
        ),
    };
    if args.embedded {
        return run_embedded(&args, manager, metrics_addr);
    }
    run_cluster(args, manager)
}

/// `--embedded`: the demo against the simulated API server in-process.
#[cfg(feature = "embedded")]
fn run_embedded(
    args: &RunArgs,
    manager: ManagerConfig,
    metrics_addr: Option<std::net::SocketAddr>,
) -> anyhow::Result<std::process::ExitCode> {
    use tidemark_actors::embedded::{DemoOptions, run_demo};
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
    Ok(std::process::ExitCode::from(u8::from(
        summary.violations > 0,
    )))
}

/// `--embedded` in a binary built without the simulator.
#[cfg(not(feature = "embedded"))]
fn run_embedded(
    _: &RunArgs,
    _: ManagerConfig,
    _: Option<std::net::SocketAddr>,
) -> anyhow::Result<std::process::ExitCode> {
    bail!(
        "--embedded: this tidemark was built without the simulated API server (cargo feature `embedded`)"
    )
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

/// A client from a kubeconfig path (or the flags' default source), on the I/O runtime.
async fn client_from(
    source: &ConfigSource,
    identity: Option<&str>,
    io: &tokio::runtime::Handle,
) -> anyhow::Result<(kube::Client, String)> {
    let config = load_config(source).await?;
    let url = config.cluster_url.to_string();
    Ok((build_client(config, identity, io)?, url))
}

fn secure_serving(args: &RunArgs) -> anyhow::Result<Option<SecureServing>> {
    let Some(addr) = args.secure_serving_addr() else {
        return Ok(None);
    };
    let cert = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(c), Some(k)) => Some((c.clone(), k.clone())),
        (None, None) => None,
        _ => bail!("--tls-cert-file and --tls-private-key-file go together"),
    };
    Ok(Some(SecureServing {
        addr,
        cert,
        client_ca: args.client_ca_file.clone(),
        always_allow_paths: args.authorization_always_allow_paths.clone(),
    }))
}

fn run_cluster(args: RunArgs, mut config: ManagerConfig) -> anyhow::Result<std::process::ExitCode> {
    let serving = secure_serving(&args)?;
    let io = tidemark_actors::manager::io_runtime()?;
    let identity = config
        .leader_election
        .as_ref()
        .map(|le| le.elector.identity.clone());
    let source = ConfigSource::Flags {
        kubeconfig: args.kubeconfig.clone(),
        master: args.master.clone(),
    };
    let (client, url) = io
        .block_on(client_from(&source, identity.as_deref(), io.handle()))
        .context("connecting to the API server")?;
    // TokenReviews and SubjectAccessReviews go out as --authentication-kubeconfig's identity.
    let auth_client = match args.effective_authentication_kubeconfig() {
        Some(path) if Some(path) != args.kubeconfig.as_deref() => {
            let source = ConfigSource::Flags {
                kubeconfig: Some(path.to_path_buf()),
                master: args.master.clone(),
            };
            io.block_on(client_from(&source, identity.as_deref(), io.handle()))
                .context("--authentication-kubeconfig")?
                .0
        }
        _ => client.clone(),
    };
    tracing::info!(server = %url, "API server");
    config.api_server = url.clone();
    let system = actix::System::new();
    let handle = io.handle().clone();
    let (stop_serving, serving_stopped) = tokio::sync::watch::channel(false);
    let code = system.block_on(async move {
        // The port first: a process that cannot serve exits before it takes the Lease.
        let secure = match serving {
            Some(serving) => {
                match handle
                    .spawn(async move { bind_secure(&serving).await })
                    .await
                    .context("secure serving")?
                {
                    Ok(bound) => Some(bound),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot serve the secure port; exiting without taking the Lease");
                        return anyhow::Ok(std::process::ExitCode::from(1));
                    }
                }
            }
            None => None,
        };
        let manager = Manager::start(&config, client, &handle)?;
        if let Some(secure) = secure {
            let state = tidemark_actors::metrics::MetricsState::new(manager.source());
            let auth = std::sync::Arc::new(DelegatedAuth::new(auth_client));
            let bound = handle
                .spawn(async move { secure.serve(state, auth, serving_stopped) })
                .await
                .context("secure serving")??;
            tracing::info!(%bound, "serving /metrics, /healthz, /readyz and /livez over HTTPS");
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
        let never_synced: Vec<String> = manager
            .informers()
            .iter()
            .filter(|(_, s)| !s.synced.load(std::sync::atomic::Ordering::Relaxed))
            .map(|(r, _)| r.to_string())
            .collect();
        let stats = manager.stats().await;
        let mut summary = summarize(
            &stats,
            started.elapsed(),
            config.gates.consistency_for("ReplicaSet"),
        );
        tracing::info!("stopping: no new work; waiting for the writes in flight");
        let source = manager.source();
        let report = manager.shutdown(args.shutdown_grace_period).await;
        stop_serving.send_replace(true);
        tracing::info!(
            released_lease = report.released_lease,
            unanswered = report.unanswered,
            grace_period_ended = report.grace_period_ended,
            "stopped"
        );
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
        if !never_synced.is_empty() {
            // Stopping having done nothing is a failure, not a success.
            tracing::error!(server = %url, informers = ?never_synced, "stopped before these caches ever synced from the API server");
            return anyhow::Ok(std::process::ExitCode::from(1));
        }
        anyhow::Ok(std::process::ExitCode::SUCCESS)
    })?;
    io.shutdown_timeout(Duration::from_secs(2));
    Ok(code)
}
