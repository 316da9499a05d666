//! How a manager runs: shards, controllers, gates and mode, client budgets, leader election,
//! breakers and backoffs, and the registrations its controllers are found in.

use crate::informer::InformerLimits;
use crate::informer::backoff::ReflectorBackoff;
use crate::leader::LeaderElectionConfig;
use crate::registration::{self, Registration};
use std::sync::Arc;
use tidemark_engine::controllers::nodelifecycle::Evictions;
use tidemark_engine::labels::LabelSelector;
use tidemark_engine::{BreakerConfig, ConsistencyMode, FeatureGates};

/// Controllers this build can run, by their `--controllers` name.
pub const ONBOARDED: &[&str] = &[
    "replicaset",
    "statefulset",
    "daemonset",
    "job",
    "nodelifecycle",
];

/// How to run.
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// Number of shards (one actor each).
    pub shards: usize,
    /// Controllers by name.
    pub controllers: Vec<String>,
    /// Feature gates.
    pub gates: FeatureGates,
    /// The protection of every controller whose gate is on (`--consistency-mode`); a
    /// controller whose gate is off runs naive.
    pub mode: ConsistencyMode,
    /// Client-side QPS (kube-controller-manager: 20). Two budgets of this size: one for the
    /// writes and barrier reads, one for the informers' list pages, watches and probes (as
    /// kube-controller-manager gives its shared informers a client of their own with the same
    /// `--kube-api-qps`/`--kube-api-burst`), so a relisting informer cannot starve the writes
    /// and a burst of writes cannot hold a relist back.
    pub qps: f32,
    /// Client-side burst (kube-controller-manager: 30), per budget.
    pub burst: u32,
    /// Relists ask `resourceVersionMatch=NotOlderThan` the informer's watermark and refuse an
    /// older list (on by default). Off only to show the cache moving back in time.
    pub consistent_relists: bool,
    /// Pods are listed and watched in protobuf (`--kube-api-content-type`, upstream's default),
    /// falling back to JSON when the server answers in JSON; everything else is read as JSON.
    pub protobuf: bool,
    /// Leader election (`--leader-elect`); `None` runs as the only manager.
    pub leader_election: Option<LeaderElectionConfig>,
    /// Scale-out (`--scale-out`, needs leader election): the namespaces are split into ranges,
    /// each held through a Lease beside the leader's (`<name>-range-NN`), and this replica
    /// lists, watches and writes only the namespaced objects of the ranges it holds; the
    /// manager-wide leader alone reconciles cluster-scoped keys.
    pub scale_out: bool,
    /// Where the range and membership Leases live (`--scale-out-lease-namespace`): a namespace
    /// of their own, so RBAC can let the replicas replace any Lease there and none elsewhere.
    pub scale_out_namespace: String,
    /// The live-read circuit breakers.
    pub breaker: BreakerConfig,
    /// Node lifecycle's `--node-monitor-grace-period`.
    pub node_monitor_grace_period: std::time::Duration,
    /// Node lifecycle's `--node-selector`: the Nodes it manages (empty: all).
    pub node_selector: Arc<LabelSelector>,
    /// Node lifecycle's zones and their `NoExecute` pace (`--node-eviction-rate` and its
    /// fellows), one for every shard: the zones' buckets are the manager's, not a shard's.
    pub node_evictions: Arc<Evictions>,
    /// The API server's URL, named in logs and `/readyz` when it cannot be reached.
    pub api_server: String,
    /// The informers' watch bounds.
    pub informer_limits: InformerLimits,
    /// The informers' relist backoff (default client-go's reflector's).
    pub relist_backoff: ReflectorBackoff,
    /// The backoff between restarts of a shard that panics (default 1 s doubling to 60 s).
    pub shard_restart_backoff: ReflectorBackoff,
    /// Controllers besides the built-in ones, found by name from [`ManagerConfig::controllers`]
    /// (a user's registration of a built-in name replaces it).
    pub registrations: Vec<Registration>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            shards: std::thread::available_parallelism().map_or(2, |n| n.get()),
            controllers: ONBOARDED.iter().map(|s| s.to_string()).collect(),
            gates: FeatureGates::default(),
            mode: ConsistencyMode::Tidemark,
            qps: 20.0,
            burst: 30,
            consistent_relists: true,
            protobuf: true,
            leader_election: None,
            scale_out: false,
            scale_out_namespace: "tidemark-ranges".into(),
            breaker: BreakerConfig::default(),
            node_monitor_grace_period:
                tidemark_engine::controllers::nodelifecycle::DEFAULT_GRACE_PERIOD,
            node_selector: Arc::default(),
            node_evictions: Arc::default(),
            api_server: String::from("the API server"),
            informer_limits: InformerLimits::default(),
            relist_backoff: ReflectorBackoff::client_go(),
            shard_restart_backoff: ReflectorBackoff::new(
                std::time::Duration::from_secs(1),
                std::time::Duration::from_secs(60),
                std::time::Duration::from_secs(300),
            ),
            registrations: Vec::new(),
        }
    }
}

impl ManagerConfig {
    /// The registration named `name`: a user's first (it may replace a built-in), then the
    /// built-in ones.
    pub fn registration(&self, name: &str) -> Option<Registration> {
        self.registrations
            .iter()
            .find(|r| r.name() == name)
            .cloned()
            .or_else(|| {
                registration::built_in(
                    self.node_monitor_grace_period,
                    &self.node_selector,
                    &self.node_evictions,
                )
                .into_iter()
                .find(|r| r.name() == name)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_engine::{Reconciler, ReplicaSetController};

    #[test]
    fn the_built_in_registrations_are_the_onboarded_controllers_in_order() {
        let names: Vec<_> =
            registration::built_in(std::time::Duration::ZERO, &Arc::default(), &Arc::default())
                .iter()
                .map(Registration::name)
                .collect();
        assert_eq!(names, ONBOARDED);
    }

    #[test]
    fn a_users_registration_is_found_before_a_built_in_of_the_same_name() {
        /// A user's own ReplicaSet controller: the built-in's logic under another gate.
        struct MyReplicaSets;
        impl Reconciler for MyReplicaSets {
            fn name(&self) -> &'static str {
                "replicaset"
            }
            fn gate_name(&self) -> &'static str {
                "MyReplicaSet"
            }
            fn primary(&self) -> tidemark_engine::Resource {
                ReplicaSetController.primary()
            }
            fn reads(&self) -> &[tidemark_engine::Resource] {
                ReplicaSetController.reads()
            }
            fn keys_for(
                &self,
                object: &tidemark_engine::Object,
                keys: &mut smallvec::SmallVec<[tidemark_engine::ObjectKey; 2]>,
            ) {
                ReplicaSetController.keys_for(object, keys)
            }
            fn reconcile(
                &self,
                key: &tidemark_engine::ObjectKey,
                cache: &tidemark_engine::ShardCache,
                ctx: &tidemark_engine::Context,
            ) -> Result<tidemark_engine::Plan, tidemark_engine::ReconcileError> {
                ReplicaSetController.reconcile(key, cache, ctx)
            }
        }
        let built_in_only = ManagerConfig::default();
        let with_mine = ManagerConfig {
            registrations: vec![Registration::new(|| MyReplicaSets)],
            ..ManagerConfig::default()
        };
        let gate = |config: &ManagerConfig| {
            config
                .registration("replicaset")
                .map(|r| r.make().gate_name())
        };
        assert_eq!(gate(&built_in_only), Some("ReplicaSet"));
        assert_eq!(gate(&with_mine), Some("MyReplicaSet"));
        assert!(with_mine.registration("no-such-controller").is_none());
    }
}
