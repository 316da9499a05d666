//! The controllers a manager can run: each registered by name with a factory for its
//! reconciler, the five built in and a user's own the same way.

use std::sync::Arc;
use std::time::Duration;
use tidemark_engine::{
    DaemonSetController, JobController, NodeLifecycleController, Reconciler, ReplicaSetController,
    StatefulSetController, controllers::nodelifecycle::Evictions, labels::LabelSelector,
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

/// The five built-in controllers; node lifecycle's grace period is
/// `--node-monitor-grace-period`, its Nodes those `--node-selector` selects, and every shard's
/// copy paces its zones with the one `evictions`.
pub fn built_in(
    node_monitor_grace_period: Duration,
    node_selector: &Arc<LabelSelector>,
    evictions: &Arc<Evictions>,
) -> [Registration; 5] {
    let node_lifecycle = NodeLifecycleController {
        grace_period: node_monitor_grace_period,
        node_selector: node_selector.clone(),
        evictions: evictions.clone(),
    };
    [
        Registration::new(|| ReplicaSetController),
        Registration::new(|| StatefulSetController),
        Registration::new(|| DaemonSetController),
        Registration::new(|| JobController),
        Registration::new(move || node_lifecycle.clone()),
    ]
}
