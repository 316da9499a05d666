//! The controllers a manager can run: each registered by name with a factory for its
//! reconciler, the five built in and a user's own the same way.

use crate::manager::ManagerConfig;
use std::sync::Arc;
use tidemark_engine::{
    DaemonSetController, JobController, NodeLifecycleController, Reconciler, ReplicaSetController,
    StatefulSetController,
};

/// A controller the manager can run: its `--controllers` name (the reconciler's
/// [`Reconciler::name`]) and a factory that makes its reconciler once per shard, and again for a
/// shard that restarts.
///
/// ```
/// use tidemark_actors::registration::Registration;
/// use tidemark_engine::ReplicaSetController;
///
/// let replicasets = Registration::new(|| ReplicaSetController);
/// assert_eq!(replicasets.name(), "replicaset");
/// assert_eq!(replicasets.make().gate_name(), "ReplicaSet");
/// ```
#[derive(Clone)]
pub struct Registration {
    name: &'static str,
    make: Arc<dyn Fn() -> Box<dyn Reconciler> + Send + Sync>,
}

impl Registration {
    /// Registers the reconciler `make` builds.
    pub fn new<R: Reconciler>(make: impl Fn() -> R + Send + Sync + 'static) -> Self {
        Self {
            name: make().name(),
            make: Arc::new(move || Box::new(make())),
        }
    }

    /// Its `--controllers` name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A fresh reconciler.
    pub fn make(&self) -> Box<dyn Reconciler> {
        (self.make)()
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The five built-in controllers, set up from `config` (node lifecycle's grace period).
pub fn built_in(config: &ManagerConfig) -> [Registration; 5] {
    let grace_period = config.node_monitor_grace_period;
    [
        Registration::new(|| ReplicaSetController),
        Registration::new(|| StatefulSetController),
        Registration::new(|| DaemonSetController),
        Registration::new(|| JobController),
        Registration::new(move || NodeLifecycleController { grace_period }),
    ]
}

/// The registration named `name`: a user's first (it may replace a built-in), then the
/// built-in ones.
pub fn find(config: &ManagerConfig, name: &str) -> Option<Registration> {
    config
        .registrations
        .iter()
        .find(|r| r.name() == name)
        .cloned()
        .or_else(|| built_in(config).into_iter().find(|r| r.name() == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::ONBOARDED;

    #[test]
    fn the_built_in_registrations_are_the_onboarded_controllers_in_order() {
        let names: Vec<_> = built_in(&ManagerConfig::default())
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
        let gate =
            |config: &ManagerConfig| find(config, "replicaset").map(|r| r.make().gate_name());
        assert_eq!(gate(&built_in_only), Some("ReplicaSet"));
        assert_eq!(gate(&with_mine), Some("MyReplicaSet"));
        assert!(find(&with_mine, "no-such-controller").is_none());
    }
}
