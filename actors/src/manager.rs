//! The controller manager: shard actors on arbiters spread over the cores, one informer per
//! resource and the writers on the I/O runtime, and a view of their figures.

use crate::barrier::{BarrierReads, ReadAnswers, spawn_reader};
use crate::client::rest_metrics::Latency;
use crate::events::{EventOptions, EventRecorder};
use crate::fence::Fence;
use crate::informer::{Informer, InformerState};
use crate::leader::{LeaderElection, LeaderState};
pub use crate::manager_config::{ManagerConfig, ONBOARDED};
use crate::ranges::{RangeConfig, RangeLeases, RangeState};
use crate::rate_limit::TokenBucket;
use crate::server_revision::ServerRevision;
use crate::shard_actor::{
    ConnectWriter, ProbeRoutes, ShardActor, ShardFactory, ShardSnapshot, Snapshot,
};
use crate::writer::{WriteCounters, WriterPool};
use actix::{Actor, Addr, Arbiter};
use futures::future::join_all;
use kube::Client;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tidemark_engine::{
    ConsistencyMode, ControllerSpec, ControllerStats, Reconciler, Resource, Shard, ShardId,
    ShardRouter,
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

fn reconciler(name: &str, config: &ManagerConfig) -> Result<Box<dyn Reconciler>, StartError> {
    config
        .registration(name)
        .map(|r| r.make())
        .ok_or_else(|| StartError::UnknownController(name.to_string()))
}

/// A fresh shard `index` running the configured controllers (names already checked).
fn build_shard(index: usize, config: &ManagerConfig, router: &ShardRouter) -> Shard {
    let specs = config
        .controllers
        .iter()
        .filter_map(|name| reconciler(name, config).ok())
        .map(|reconciler| {
            let mode = if config.gates.consistency_for(reconciler.gate_name()) {
                config.mode
            } else {
                ConsistencyMode::Naive
            };
            ControllerSpec::new(reconciler, mode)
        })
        .collect();
    let mut shard = Shard::new(ShardId(index), specs).with_router(router.clone());
    if config.scale_out {
        // Cluster-scoped keys wait for the manager-wide leader election to name this process.
        shard.lead_cluster(false, std::time::Instant::now());
    }
    shard
}

/// A running manager.
pub struct Manager {
    source: StatsSource,
    arbiters: Vec<Arbiter>,
    shutdown: watch::Sender<bool>,
    election: Option<tokio::task::JoinHandle<LeaderElection>>,
    ranges: Option<tokio::task::JoinHandle<RangeLeases>>,
}

/// What a graceful shutdown achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Writes still unanswered at the deadline.
    pub unanswered: u64,
    /// The grace period ended before every write in flight was answered.
    pub grace_period_ended: bool,
    /// The Lease was released (leader election on and this process held it).
    pub released_lease: bool,
}

/// Collects the manager's figures from its shards, informers and writers.
#[derive(Clone)]
pub struct StatsSource {
    shards: Vec<Addr<ShardActor>>,
    informers: Vec<(Resource, Arc<InformerState>)>,
    writes: Arc<WriteCounters>,
    barriers: Arc<BarrierReads>,
    leader: Arc<LeaderState>,
    ranges: Option<Arc<RangeState>>,
    reads: Arc<[ControllerReads]>,
}

/// A controller and the resources it reads (its metrics have series for these only).
pub type ControllerReads = (&'static str, Vec<Resource>);

impl StatsSource {
    /// The informers' states.
    pub fn informers(&self) -> &[(Resource, Arc<InformerState>)] {
        &self.informers
    }

    /// The leader election's state.
    pub fn leader(&self) -> &LeaderState {
        &self.leader
    }

    /// Scale-out's ranges, when on.
    pub fn ranges(&self) -> Option<&RangeState> {
        self.ranges.as_deref()
    }

    /// The write counters.
    pub fn writes(&self) -> &WriteCounters {
        &self.writes
    }

    /// The barrier reads: counters and circuit breakers.
    pub fn barriers(&self) -> &BarrierReads {
        &self.barriers
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
            writes_conflicted: self.writes.conflicts.load(Ordering::Relaxed),
            writes_fenced: self.writes.fenced.load(Ordering::Relaxed),
            leader_election: self.leader.enabled,
            leader: self.leader.acting(),
            breakers_open: self.barriers.breakers_open(),
            barrier_reads_refused: self.barriers.counters().refused.load(Ordering::Relaxed),
            live_read_latency: self.barriers.latency(),
            shards_answering: snapshots.len(),
            shards_total: self.shards.len(),
            shards: snapshots,
            reads: self.reads.clone(),
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
    /// Writes failed (conflicts among them).
    pub writes_failed: u64,
    /// Writes refused as conflicts (409, 404): see `WriteErrorKind::is_conflict`.
    pub writes_conflicted: u64,
    /// Writes refused by the leader fence.
    pub writes_fenced: u64,
    /// Leader election is on.
    pub leader_election: bool,
    /// This process acts as leader (always, without leader election).
    pub leader: bool,
    /// Per API group, whether its live-read breaker is open.
    pub breakers_open: Vec<(&'static str, bool)>,
    /// Barrier reads an open breaker refused.
    pub barrier_reads_refused: u64,
    /// How long barriers and live reads took at the API server (sent to answered).
    pub live_read_latency: Latency,
    /// Shards that answered the collection.
    pub shards_answering: usize,
    /// Shards running.
    pub shards_total: usize,
    /// Per shard, as reported.
    pub shards: Vec<ShardSnapshot>,
    /// Per controller, the resources it reads.
    pub reads: Arc<[ControllerReads]>,
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
    /// Barrier (live) reads answered, over every controller.
    pub fn live_reads(&self) -> u64 {
        self.controllers
            .iter()
            .map(|c| c.live_reads_ok + c.live_reads_failed)
            .sum()
    }
    /// Why this manager is degraded, if it is: an open breaker, failing live reads.
    pub fn degraded(&self) -> Vec<String> {
        let mut why = Vec::new();
        for (group, open) in &self.breakers_open {
            if *open {
                let group = if group.is_empty() { "core" } else { group };
                why.push(format!(
                    "live-read circuit breaker open for API group {group}: destructive work paused"
                ));
            }
        }
        for c in &self.controllers {
            if c.awaiting_barrier > 0 && c.live_reads_failed > 0 {
                why.push(format!(
                    "{}: {} keys wait for proof of freshness ({} live reads failed)",
                    c.controller, c.awaiting_barrier, c.live_reads_failed
                ));
            }
        }
        why
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
        let mut read = Vec::new();
        for name in &config.controllers {
            for resource in reconciler(name, config)?.reads() {
                if !read.contains(resource) {
                    read.push(*resource);
                }
            }
        }
        if actix::System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        let router = ShardRouter::new(config.shards);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arbiters: Vec<Arbiter> = (0..cores.min(router.shards()))
            .map(|_| Arbiter::new())
            .collect();
        let (probe_txs, probe_rxs): (Vec<_>, Vec<_>) =
            Resource::all().map(|_| mpsc::unbounded_channel()).unzip();
        let probes: ProbeRoutes = Arc::new(probe_txs);
        // Bumped by a restarted shard: every informer relists into it.
        let (resync, resync_rx) = watch::channel(0u64);
        let resync = Arc::new(resync);
        let mut shards = Vec::with_capacity(router.shards());
        for index in 0..router.shards() {
            let mut shard = build_shard(index, config, &router);
            if config.leader_election.is_some() {
                shard.follow();
            }
            let probes = probes.clone();
            let arbiter = &arbiters[index % arbiters.len()];
            let factory_config = config.clone();
            let factory_router = router.clone();
            let factory: ShardFactory =
                Box::new(move || build_shard(index, &factory_config, &factory_router));
            let reads = read.clone();
            let resync = resync.clone();
            let backoff = config.shard_restart_backoff.clone();
            shards.push(ShardActor::start_in_arbiter(&arbiter.handle(), move |_| {
                ShardActor::new(shard, probes).supervised(factory, reads, resync, backoff)
            }));
        }
        let limiter = Arc::new(TokenBucket::new(config.qps, config.burst));
        let informer_limiter = Arc::new(TokenBucket::new(config.qps, config.burst));
        let fence = match &config.leader_election {
            Some(le) if le.fencing => Fence::closed(),
            _ => Fence::open(),
        };
        let fence = Arc::new(if config.scale_out {
            fence.with_ranges()
        } else {
            fence
        });
        let write_deadline = config
            .leader_election
            .as_ref()
            .filter(|le| le.fencing)
            .map(|le| le.elector.write_deadline());
        let events = Arc::new(EventRecorder::with_options(
            client.clone(),
            io.clone(),
            fence.clone(),
            // A bucket of their own, as large as the writers': Events never delay a write, and
            // never cost the API server more than the writes they describe.
            EventOptions {
                qps: config.qps,
                burst: config.burst,
                write_deadline,
                ..EventOptions::default()
            },
        ));
        let server_revision = Arc::new(ServerRevision::default());
        let pool = WriterPool::new(client.clone(), limiter.clone(), fence.clone(), io.clone())
            .with_deadline(write_deadline)
            .with_events(events.clone())
            .with_server_revision(server_revision.clone());
        let barrier_reads = Arc::new(
            BarrierReads::new(client.clone(), limiter.clone(), config.breaker)
                .with_server_revision(server_revision.clone()),
        );
        for shard in &shards {
            shard.do_send(ConnectWriter {
                events: events.clone(),
                server_revision: server_revision.clone(),
                writes: pool.spawn(shard.clone()),
                barriers: spawn_reader(
                    barrier_reads.clone(),
                    io,
                    ReadAnswers {
                        barrier: shard.clone().recipient(),
                        live_read: shard.clone().recipient(),
                    },
                ),
            });
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let leader = Arc::new(match &config.leader_election {
            Some(le) => LeaderState {
                enabled: true,
                identity: le.elector.identity.clone(),
                lease: le.name.clone(),
                ..LeaderState::default()
            },
            None => LeaderState::disabled(),
        });
        let election = config.leader_election.as_ref().map(|le| {
            let election = LeaderElection::new(
                client.clone(),
                le.clone(),
                fence.clone(),
                shards.clone(),
                leader.clone(),
            );
            let election = if config.scale_out {
                election.cluster_scoped_only()
            } else {
                election
            };
            io.spawn(election.run(shutdown_rx.clone()))
        });
        let range_leases = config
            .leader_election
            .as_ref()
            .filter(|_| config.scale_out)
            .map(|le| {
                RangeLeases::new(
                    client.clone(),
                    RangeConfig {
                        namespace: config.scale_out_namespace.clone(),
                        prefix: le.name.clone(),
                        elector: le.elector.clone(),
                        fencing: le.fencing,
                    },
                    fence.clone(),
                    shards.clone(),
                    read.iter()
                        .copied()
                        .filter(|r| crate::ranges::sharded(*r))
                        .collect(),
                )
            });
        let held = range_leases.as_ref().map(RangeLeases::held);
        let range_state = range_leases.as_ref().map(RangeLeases::state);
        let ranges = range_leases.map(|r| io.spawn(r.run(shutdown_rx.clone())));
        let mut informers = Vec::new();
        for (resource, probes) in Resource::all().zip(probe_rxs) {
            // Only what the selected controllers read is listed and watched.
            if !read.contains(&resource) {
                continue;
            }
            let informer = Informer::new(
                client.clone(),
                resource,
                router.clone(),
                shards.clone(),
                probes,
            )
            .with_consistent_relists(config.consistent_relists)
            .with_protobuf(config.protobuf)
            .with_server(&config.api_server)
            .with_rate_limit(informer_limiter.clone())
            .with_server_revision(server_revision.clone())
            .with_limits(config.informer_limits)
            .with_backoff(config.relist_backoff.clone())
            .with_resync(resync_rx.clone());
            let informer = match &held {
                Some(held) if crate::ranges::sharded(resource) => {
                    informer.with_ranges(held.clone())
                }
                _ => informer,
            };
            informers.push((resource, informer.state()));
            io.spawn(informer.run(shutdown_rx.clone()));
        }
        tracing::info!(shards = shards.len(), arbiters = arbiters.len(), controllers = ?config.controllers, "manager started");
        Ok(Self {
            source: StatsSource {
                shards,
                informers,
                writes: pool.counters(),
                barriers: barrier_reads,
                leader,
                ranges: range_state,
                reads: config
                    .controllers
                    .iter()
                    .filter_map(|name| reconciler(name, config).ok())
                    .map(|r| (r.name(), r.reads().to_vec()))
                    .collect(),
            },
            arbiters,
            shutdown,
            election,
            ranges,
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

    /// Stops informers, the election loop and shard arbiters: no new work starts. Writes already
    /// sent go on; the Lease is not released (it expires).
    pub fn stop(self) {
        let _ = self.shutdown.send(true);
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
    }

    /// Graceful shutdown: stop taking work, wait up to `deadline` for the writes in flight to be
    /// answered (none is cut halfway), then release the Lease if this process holds it.
    pub async fn shutdown(mut self, deadline: std::time::Duration) -> ShutdownReport {
        let writes = self.source.writes.clone();
        writes.stopping.store(true, Ordering::Relaxed);
        let election = self.election.take();
        let ranges = self.ranges.take();
        self.stop();
        let started = tokio::time::Instant::now();
        let until = started + deadline;
        let at_stop = writes.in_flight();
        while writes.in_flight() > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let unanswered = writes.in_flight();
        let waited_ms = started.elapsed().as_millis() as u64;
        let lease = if election.is_some() {
            "releasing the Lease"
        } else {
            "no Lease to release"
        };
        if unanswered == 0 {
            tracing::info!(
                writes = at_stop,
                waited_ms,
                "every write in flight was answered; {lease}"
            );
        } else {
            tracing::warn!(
                unanswered,
                grace_period_ms = deadline.as_millis() as u64,
                "the grace period ended with writes still unanswered; {lease} anyway"
            );
        }
        let released_lease = match election {
            Some(handle) => match handle.await {
                Ok(election) => election.release().await,
                Err(e) => {
                    tracing::warn!(error = %e, "leader election task ended abnormally");
                    false
                }
            },
            None => false,
        };
        if let Some(handle) = ranges {
            match handle.await {
                Ok(ranges) => {
                    ranges.release().await;
                }
                Err(e) => tracing::warn!(error = %e, "range election task ended abnormally"),
            }
        }
        ShutdownReport {
            unanswered,
            grace_period_ended: unanswered > 0,
            released_lease,
        }
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
