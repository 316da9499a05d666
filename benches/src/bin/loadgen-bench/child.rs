//! One phase in a child process: the parent runs `loadgen-bench phase ...` and reads the
//! phase's figures as JSON from its stdout, so each side's RSS is its own and a side that runs
//! out of memory cannot take the run down.

use crate::churn::{self, Ramp};
use crate::sync::SyncOut;
use crate::{gate, null_client, peer, reconcile, seed, sync};
use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tidemark_loadgen::bench::schema::ChurnStep;

/// Which phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum PhaseKind {
    /// Initial sync.
    Sync,
    /// Sync, then the churn ramp.
    Churn,
    /// Reconcile throughput.
    Reconcile,
    /// Gate overhead: on and off interleaved in this process (Tidemark only).
    Gate,
}

/// Which side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum Side {
    /// Tidemark.
    Tidemark,
    /// kube-rs.
    Peer,
    /// The null client: the same reads, thrown away.
    Null,
}

/// The child's command line.
#[derive(Debug, Clone, Args)]
pub struct PhaseArgs {
    /// The phase.
    #[arg(long, value_enum)]
    pub kind: PhaseKind,
    /// The side.
    #[arg(long, value_enum)]
    pub side: Side,
    /// Pods to seed.
    #[arg(long)]
    pub pods: u64,
    /// ReplicaSets to seed.
    #[arg(long)]
    pub replicasets: u64,
    /// Gate off (Tidemark only).
    #[arg(long)]
    pub gate_off: bool,
    /// Churn rates, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000")]
    pub rates: Vec<f64>,
    /// Seconds per churn step.
    #[arg(long, default_value_t = 1.0)]
    pub step_seconds: f64,
}

impl PhaseArgs {
    fn to_args(&self) -> Vec<String> {
        let kind = match self.kind {
            PhaseKind::Sync => "sync",
            PhaseKind::Churn => "churn",
            PhaseKind::Reconcile => "reconcile",
            PhaseKind::Gate => "gate",
        };
        let side = match self.side {
            Side::Tidemark => "tidemark",
            Side::Peer => "peer",
            Side::Null => "null",
        };
        let mut args = vec![
            "phase".to_string(),
            "--kind".into(),
            kind.into(),
            "--side".into(),
            side.into(),
            "--pods".into(),
            self.pods.to_string(),
            "--replicasets".into(),
            self.replicasets.to_string(),
            "--rates".into(),
            self.rates
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(","),
            "--step-seconds".into(),
            self.step_seconds.to_string(),
        ];
        if self.gate_off {
            args.push("--gate-off".into());
        }
        args
    }
}

/// What a phase reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseOut {
    /// The sync (every phase but Tidemark's reconcile syncs first).
    pub sync: Option<SyncOut>,
    /// The churn ramp.
    pub churn: Vec<ChurnStep>,
    /// Reconciles per second.
    pub reconciles_per_second: Option<f64>,
    /// The gate's on/off pairs.
    #[serde(default)]
    pub gate_pairs: Vec<tidemark_loadgen::bench::schema::GatePair>,
}

/// Runs `args` in a child process, its server holding Pods in protobuf when `protobuf` (see
/// [`seed::protobuf`]).
pub fn spawn(args: &PhaseArgs, protobuf: bool) -> anyhow::Result<PhaseOut> {
    let exe = std::env::current_exe().context("own executable")?;
    let output = std::process::Command::new(exe)
        .args(args.to_args())
        .env("TIDEMARK_BENCH_PROTOBUF", if protobuf { "1" } else { "0" })
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running a phase")?;
    anyhow::ensure!(
        output.status.success(),
        "phase {:?} of {:?} at {} Pods failed: {}",
        args.kind,
        args.side,
        args.pods,
        output.status
    );
    serde_json::from_slice(&output.stdout).context("phase output")
}

/// The child's side: runs the phase here and returns its figures.
pub fn run(args: &PhaseArgs) -> anyhow::Result<PhaseOut> {
    let seed = seed::render(args.pods, args.replicasets).context("protobuf templates")?;
    let ramp = Ramp {
        rates: args.rates.clone(),
        step_seconds: args.step_seconds,
    };
    let window = 400_000;
    match (args.kind, args.side) {
        (PhaseKind::Gate, Side::Tidemark) => {
            let shards = std::thread::available_parallelism().map_or(2, |n| n.get());
            Ok(PhaseOut {
                gate_pairs: gate::measure(&seed, shards)?,
                ..PhaseOut::default()
            })
        }
        (PhaseKind::Gate, side) => anyhow::bail!("only Tidemark has a gate, not {side:?}"),
        (PhaseKind::Reconcile, Side::Tidemark) => {
            let _slow = crate::slowdown::Slowdown::from_env();
            let shards = std::thread::available_parallelism().map_or(2, |n| n.get());
            Ok(PhaseOut {
                reconciles_per_second: Some(reconcile::tidemark(&seed, shards, !args.gate_off)?),
                ..PhaseOut::default()
            })
        }
        (kind, Side::Tidemark) => {
            let io = tidemark_actors::manager::io_runtime().context("io runtime")?;
            let server = io
                .block_on(seed::serve(&seed, window))
                .context("bench server")?;
            let system = actix::System::new();
            system.block_on(async {
                let (manager, sync_out) =
                    sync::tidemark(&io, &server, &seed, !args.gate_off).await?;
                let mut out = PhaseOut {
                    sync: Some(sync_out),
                    ..PhaseOut::default()
                };
                if kind == PhaseKind::Churn {
                    let state = manager
                        .informers()
                        .iter()
                        .find(|(r, _)| *r == tidemark_engine::Resource::Pods)
                        .map(|(_, s)| s.clone())
                        .context("no Pod informer")?;
                    let watermark: churn::Watermark =
                        Arc::new(move || state.watermark.load(Ordering::Acquire));
                    let _slow = crate::slowdown::Slowdown::from_env();
                    out.churn = churn::ramp(&server, &seed, args.pods, &ramp, watermark);
                }
                manager.stop();
                server.shutdown();
                Ok(out)
            })
        }
        (PhaseKind::Reconcile, Side::Null) => {
            anyhow::bail!("the null client does not reconcile")
        }
        (kind, Side::Null) => {
            let io = tidemark_actors::manager::io_runtime().context("io runtime")?;
            let server = io
                .block_on(seed::serve(&seed, window))
                .context("bench server")?;
            let client = io.block_on(sync::client(&io, &server))?;
            let (pods, owners, sync_out) =
                io.block_on(null_client::sync(io.handle(), &client, &seed))?;
            let mut out = PhaseOut {
                sync: Some(sync_out),
                ..PhaseOut::default()
            };
            if kind == PhaseKind::Churn {
                let watched = null_client::follow(io.handle(), client.clone(), &pods);
                null_client::follow(io.handle(), client, &owners);
                let listed_at = watched.watermark.load(Ordering::Acquire);
                let mark = watched.clone();
                let watermark: churn::Watermark =
                    Arc::new(move || mark.watermark.load(Ordering::Acquire));
                out.churn = churn::ramp(&server, &seed, args.pods, &ramp, watermark);
                // Every version the watermark passed is a line read: only Pods change.
                let passed = watched
                    .watermark
                    .load(Ordering::Acquire)
                    .saturating_sub(listed_at);
                let lines = watched.lines.load(Ordering::Relaxed);
                anyhow::ensure!(
                    lines >= passed,
                    "the null client's watermark passed {passed} versions in {lines} lines"
                );
            }
            server.shutdown();
            Ok(out)
        }
        (kind, Side::Peer) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("runtime")?;
            rt.block_on(async {
                let server = seed::serve(&seed, window).await.context("bench server")?;
                let url = server.kubeconfig_yaml();
                let mut out = PhaseOut::default();
                match kind {
                    PhaseKind::Reconcile => {
                        out.reconciles_per_second =
                            Some(peer::controller(&url, seed.replicasets.len() as u64, 2).await?);
                    }
                    PhaseKind::Gate => anyhow::bail!("the peer has no gate"),
                    PhaseKind::Sync | PhaseKind::Churn => {
                        let (store, stream, sync_out) = peer::sync(&url, &seed).await?;
                        out.sync = Some(sync_out);
                        if kind == PhaseKind::Churn {
                            let mark = Arc::new(AtomicU64::new(seed.revision));
                            peer::follow(stream, mark.clone());
                            let watermark: churn::Watermark =
                                Arc::new(move || mark.load(Ordering::Acquire));
                            let pods = args.pods;
                            out.churn = tokio::task::block_in_place(|| {
                                churn::ramp(&server, &seed, pods, &ramp, watermark)
                            });
                        }
                        drop(store);
                    }
                }
                server.shutdown();
                Ok(out)
            })
        }
    }
}
