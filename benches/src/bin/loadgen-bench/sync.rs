//! Initial sync, Tidemark's side: the manager (its informers, shards and the ReplicaSet
//! controller) started against the seeded server, timed from the first list request until every
//! informer has replaced its list into every shard. Memory is read just before the manager
//! starts (server already seeded) and just after the sync.

use crate::machine::{Memory, memory};
use crate::seed::Seed;
use crate::slowdown::Slowdown;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tidemark_actors::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::bench::server::BenchServer;

/// Initial sync figures of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncOut {
    /// Seconds.
    pub seconds: f64,
    /// Objects cached per second.
    pub objects_per_second: f64,
    /// RSS delta per Pod.
    pub bytes_per_object: f64,
    /// jemalloc allocated delta per Pod.
    pub jemalloc_bytes_per_object: f64,
}

impl SyncOut {
    /// From the memory before and after.
    pub fn new(seconds: f64, pods: u64, objects: u64, before: Memory, after: Memory) -> Self {
        let per = |a: u64, b: u64| (a as f64 - b as f64) / pods.max(1) as f64;
        Self {
            seconds,
            objects_per_second: objects as f64 / seconds,
            bytes_per_object: per(after.rss, before.rss),
            jemalloc_bytes_per_object: per(after.allocated, before.allocated),
        }
    }
}

/// A kube client for `server` (its kubeconfig: HTTPS, its CA, a bearer token), made as the
/// `tidemark` binary makes its own, on the I/O runtime `io`.
pub async fn client(
    io: &tokio::runtime::Runtime,
    server: &BenchServer,
) -> anyhow::Result<kube::Client> {
    let source = tidemark_actors::client::ConfigSource::Yaml(server.kubeconfig_yaml());
    let config = tidemark_actors::client::load_config(&source)
        .await
        .context("kubeconfig")?;
    tidemark_actors::client::build_client(config, None, io.handle()).context("kube client")
}

/// The manager's config for the bench: the ReplicaSet controller only (the bench server serves
/// Pods and ReplicaSets, and the peer caches Pods), the default shards (one per core), gates on
/// or off, and no client-side rate limit, as the peer has none: with `--kube-api-qps` 20 and
/// burst 30, as kube-controller-manager and Tidemark run by default, 30,000 Pods in pages of 500
/// take 1.8 s of the limiter's waiting alone.
pub fn config(gate: bool) -> anyhow::Result<ManagerConfig> {
    let gates = if gate {
        FeatureGates::default()
    } else {
        FeatureGates::parse("StaleControllerConsistency=false", &["ReplicaSet"])
            .context("feature gates")?
    };
    Ok(ManagerConfig {
        gates,
        controllers: vec!["replicaset".into()],
        qps: 0.0,
        ..ManagerConfig::default()
    })
}

/// Starts the manager against `server` and waits for its caches. Call inside an actix System.
pub async fn tidemark(
    io: &tokio::runtime::Runtime,
    server: &BenchServer,
    seed: &Seed,
    gate: bool,
) -> anyhow::Result<(Manager, SyncOut)> {
    let client = client(io, server).await?;
    let config = config(gate)?;
    let slow = Slowdown::from_env();
    let before = memory();
    let started = Instant::now();
    let manager = Manager::start(&config, client, io.handle()).context("manager")?;
    let deadline = started + Duration::from_secs(600);
    while !manager
        .informers()
        .iter()
        .all(|(_, s)| s.synced.load(Ordering::Acquire))
    {
        anyhow::ensure!(Instant::now() < deadline, "Tidemark did not sync in 600 s");
        actix_rt::time::sleep(Duration::from_millis(1)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = memory();
    drop(slow);
    let stats = manager.stats().await;
    let cached: usize = stats
        .shards
        .iter()
        .flat_map(|s| s.resources.iter().map(|r| r.3))
        .sum();
    let objects = (seed.pods.len() + seed.replicasets.len()) as u64;
    anyhow::ensure!(
        cached as u64 == objects,
        "Tidemark cached {cached} objects of {objects}"
    );
    Ok((
        manager,
        SyncOut::new(seconds, seed.pods.len() as u64, objects, before, after),
    ))
}
