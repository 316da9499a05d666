//! The `loadgen` command: runs the simulated API server until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tidemark_loadgen::{Resource, ServerConfig};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Simulated Kubernetes API server with fault injection and an invariant oracle.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the simulated API server until Ctrl-C.
    Apiserver {
        /// Address of the API listener.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Address of the admin (fault injection) listener.
        #[arg(long, default_value = "127.0.0.1:0")]
        admin_listen: SocketAddr,
        /// Where to write a kubeconfig for the server.
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// Watch delay for pods, in milliseconds.
        #[arg(long, default_value_t = 0)]
        pod_watch_delay_ms: u64,
        /// Do not emulate the kubelet (Pods stay Pending).
        #[arg(long)]
        no_kubelet: bool,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Apiserver {
            listen,
            admin_listen,
            kubeconfig_out,
            pod_watch_delay_ms,
            no_kubelet,
        } => {
            let config = ServerConfig {
                listen,
                admin_listen,
                kubelet_enabled: !no_kubelet,
                watch_delays: vec![(Resource::Pods, Duration::from_millis(pod_watch_delay_ms))],
                ..ServerConfig::default()
            };
            let server = tidemark_loadgen::start(config).await?;
            println!("api: {}", server.url());
            println!("admin: http://{}", server.admin_addr());
            if let Some(path) = kubeconfig_out {
                server
                    .write_kubeconfig(&path)
                    .with_context(|| format!("writing kubeconfig to {}", path.display()))?;
                println!("kubeconfig: {}", path.display());
            }
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            server.shutdown().await;
            Ok(())
        }
    }
}
