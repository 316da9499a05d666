//! The controller manager: shard actors on arbiters spread over the cores, one informer per
//! resource and the writers on the I/O runtime, and a view of their figures.

use crate::informer::{Informer, InformerState};
use crate::rate_limit::TokenBucket;
use crate::shard_actor::{ConnectWriter, ProbeRoutes, ShardActor, ShardSnapshot, Snapshot};
use crate::writer::{WriteCounters, WriterPool};
use actix::{Actor, Addr, Arbiter};
use futures::future::join_all;
use kube::Client;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tidemark_engine::{
    ControllerSpec, ControllerStats, FeatureGates, Reconciler, ReplicaSetController, Resource,
    Shard, ShardId, ShardRouter,
};
use tokio::sync::{mpsc, watch};

/// The process-wide multi-thread tokio runtime for I/O (kube clients, informers, writers, the
/// metrics endpoint). Clients must be created on it: a client made inside an actix arbiter dies
/// with that arbiter and stalls while its thread is busy.
pub fn io_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tidemark-io")
        .enable_all()
        .build()
}

/// Controllers this build can run, by their `--controllers` name.
pub const ONBOARDED: &[&str] = &["replicaset"];

/// Why the manager could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `--controllers` names one this build does not have.
    #[error("unknown controller {0:?} (known: {known})", known = ONBOARDED.join(", "))]
    UnknownController(String),
    /// Nothing to run.
    #[error("no controllers selected")]
    NoControllers,
    /// No actix System is running on this thread.
    #[error("the manager must start inside an actix System")]
    NoSystem,
}

/// How to run.
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// Number of shards (one actor each).
    pub shards: usize,
    /// Controllers by name.
    pub controllers: Vec<String>,
    /// Feature gates.
    pub gates: FeatureGates,
    /// Client-side QPS (kube-controller-manager: 20).
    pub qps: f32,
    /// Client-side burst (kube-controller-manager: 30).
    pub burst: u32,
    /// Relists ask `resourceVersionMatch=NotOlderThan` the informer's watermark and refuse an
    /// older list (on by default). Off only to show the cache moving back in time.
    pub consistent_relists: bool,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            shards: std::thread::available_parallelism().map_or(2, |n| n.get()),
            controllers: ONBOARDED.iter().map(|s| s.to_string()).collect(),
            gates: FeatureGates::default(),
            qps: 20.0,
            burst: 30,
            consistent_relists: true,
        }
    }
}

fn reconciler(name: &str) -> Result<Box<dyn Reconciler>, StartError> {
    match name {
        "replicaset" => Ok(Box::new(ReplicaSetController)),
        other => Err(StartError::UnknownController(other.to_string())),
    }
}

/// A running manager.
pub struct Manager {
    source: StatsSource,
    arbiters: Vec<Arbiter>,
    shutdown: watch::Sender<bool>,
}

/// Collects the manager's figures from its shards, informers and writers.
#[derive(Clone)]
pub struct StatsSource {
    shards: Vec<Addr<ShardActor>>,
    informers: Vec<(Resource, Arc<InformerState>)>,
    writes: Arc<WriteCounters>,
}

impl StatsSource {
    /// The informers' states.
    pub fn informers(&self) -> &[(Resource, Arc<InformerState>)] {
        &self.informers
    }

    /// Asks every shard for its figures and merges them.
    pub async fn collect(&self) -> ManagerStats {
        let snapshots: Vec<ShardSnapshot> = join_all(self.shards.iter().map(|s| s.send(Snapshot)))
            .await
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        let mut controllers: Vec<ControllerStats> = Vec::new();
        for snap in &snapshots {
            for c in &snap.controllers {
                match controllers
                    .iter_mut()
                    .find(|m| m.controller == c.controller)
                {
                    Some(m) => m.merge(c),
                    None => controllers.push(c.clone()),
                }
            }
        }
        ManagerStats {
            controllers,
            synced: self
                .informers
                .iter()
                .all(|(_, s)| s.synced.load(Ordering::Relaxed)),
            writes_sent: self.writes.sent.load(Ordering::Relaxed),
            writes_failed: self.writes.failed.load(Ordering::Relaxed),
            shards: snapshots,
        }
    }
}

/// The manager's figures, merged over shards.
#[derive(Clone, Debug)]
pub struct ManagerStats {
    /// Per controller, summed over shards.
    pub controllers: Vec<ControllerStats>,
    /// Every informer has completed its first list.
    pub synced: bool,
    /// Writes sent.
    pub writes_sent: u64,
    /// Writes failed.
    pub writes_failed: u64,
    /// Per shard, as reported.
    pub shards: Vec<ShardSnapshot>,
}

impl ManagerStats {
    /// Reconciles of every controller.
    pub fn reconciles(&self) -> u64 {
        self.controllers.iter().map(|c| c.reconciles).sum()
    }
    /// Stale sync skips of every controller.
    pub fn stale_sync_skips(&self) -> u64 {
        self.controllers.iter().map(|c| c.stale_sync_skips).sum()
    }
    /// Keys parked now.
    pub fn parked(&self) -> usize {
        self.controllers.iter().map(|c| c.parked).sum()
    }
}

impl Manager {
    /// Starts shards, writers and informers. Call inside an actix `System`; `io` is the
    /// multi-thread tokio runtime `client` was created on.
    pub fn start(
        config: &ManagerConfig,
        client: Client,
        io: &tokio::runtime::Handle,
    ) -> Result<Self, StartError> {
        if config.controllers.is_empty() {
            return Err(StartError::NoControllers);
        }
        for name in &config.controllers {
            reconciler(name)?;
        }
        if actix::System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        let router = ShardRouter::new(config.shards);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arbiters: Vec<Arbiter> = (0..cores.min(router.shards()))
            .map(|_| Arbiter::new())
            .collect();
        let (probe_txs, probe_rxs): (Vec<_>, Vec<_>) = Resource::ALL
            .iter()
            .map(|_| mpsc::unbounded_channel())
            .unzip();
        let probes: ProbeRoutes = Arc::new(probe_txs);
        let mut shards = Vec::with_capacity(router.shards());
        for index in 0..router.shards() {
            let mut specs = Vec::new();
            for name in &config.controllers {
                let reconciler = reconciler(name)?;
                let consistency = config.gates.consistency_for(reconciler.gate_name());
                specs.push(ControllerSpec {
                    reconciler,
                    consistency,
                });
            }
            let shard = Shard::new(ShardId(index), specs);
            let probes = probes.clone();
            let arbiter = &arbiters[index % arbiters.len()];
            shards.push(ShardActor::start_in_arbiter(&arbiter.handle(), move |_| {
                ShardActor::new(shard, probes)
            }));
        }
        let pool = WriterPool::new(
            client.clone(),
            Arc::new(TokenBucket::new(config.qps, config.burst)),
            io.clone(),
        );
        for shard in &shards {
            shard.do_send(ConnectWriter(pool.spawn(shard.clone())));
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut informers = Vec::new();
        for (resource, probes) in Resource::ALL.into_iter().zip(probe_rxs) {
            let informer = Informer::new(
                client.clone(),
                resource,
                router.clone(),
                shards.clone(),
                probes,
            )
            .with_consistent_relists(config.consistent_relists);
            informers.push((resource, informer.state()));
            io.spawn(informer.run(shutdown_rx.clone()));
        }
        tracing::info!(shards = shards.len(), arbiters = arbiters.len(), controllers = ?config.controllers, "manager started");
        Ok(Self {
            source: StatsSource {
                shards,
                informers,
                writes: pool.counters(),
            },
            arbiters,
            shutdown,
        })
    }

    /// The informers' states.
    pub fn informers(&self) -> &[(Resource, Arc<InformerState>)] {
        self.source.informers()
    }

    /// Collects every shard's figures.
    pub async fn stats(&self) -> ManagerStats {
        self.source.collect().await
    }

    /// A cheap, cloneable handle that collects the figures (for the metrics endpoint).
    pub fn source(&self) -> StatsSource {
        self.source.clone()
    }

    /// Stops informers and shard arbiters: no new work starts. Writes already sent go on.
    pub fn stop(self) {
        let _ = self.shutdown.send(true);
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
    }

    /// Stops taking work, then waits up to `deadline` for the writes in flight to be answered.
    /// Returns how many were still unanswered.
    pub async fn shutdown(self, deadline: std::time::Duration) -> u64 {
        let writes = self.source.writes.clone();
        writes.stopping.store(true, Ordering::Relaxed);
        self.stop();
        let until = tokio::time::Instant::now() + deadline;
        while writes.in_flight() > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        writes.in_flight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(io: &tokio::runtime::Runtime) -> Client {
        let _guard = io.enter();
        let uri: http::Uri = "http://127.0.0.1:9".parse().expect("static uri");
        Client::try_from(kube::Config::new(uri)).expect("client")
    }

    #[test]
    fn starting_outside_an_actix_system_is_an_error_not_a_panic() {
        let io = io_runtime().expect("runtime");
        let result = Manager::start(&ManagerConfig::default(), client(&io), io.handle());
        assert!(matches!(result, Err(StartError::NoSystem)));
    }

    #[test]
    fn an_unknown_controller_is_rejected_before_anything_starts() {
        let io = io_runtime().expect("runtime");
        let config = ManagerConfig {
            controllers: vec!["cronjob".into()],
            ..ManagerConfig::default()
        };
        let result = Manager::start(&config, client(&io), io.handle());
        assert!(matches!(result, Err(StartError::UnknownController(name)) if name == "cronjob"));
    }
}
