//! Which of the five controllers a run drives, and what that controller reads, is given by the
//! user and is judged on. One controller per run: the faults and the oracle's verdict then
//! belong to it alone, and a failing seed names the controller that failed.

use crate::error::SimError;
use loadgen::scenario::WorkloadKind;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tidemark_engine::controllers::nodelifecycle::Evictions;
use tidemark_engine::{
    DaemonSetController, JobController, NodeLifecycleController, Reconciler, ReplicaSetController,
    Resource, StatefulSetController,
};

/// The node lifecycle controller's grace period in the simulation: short, so that a run of
/// 30 virtual seconds sees Nodes go silent, get marked, and come back.
pub const NODE_GRACE: Duration = Duration::from_secs(4);

/// The controller a run drives, with the objects its user makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// ReplicaSets, rescaled.
    ReplicaSet,
    /// StatefulSets, rescaled and given a new image.
    StatefulSet,
    /// DaemonSets on Nodes that come and go, given a new image.
    DaemonSet,
    /// Jobs whose Pods run to completion.
    Job,
    /// Nodes whose Leases go silent and come back.
    NodeLifecycle,
}

impl Workload {
    /// Every workload, in the order a budget runs them.
    pub const ALL: [Workload; 5] = [
        Workload::ReplicaSet,
        Workload::StatefulSet,
        Workload::DaemonSet,
        Workload::Job,
        Workload::NodeLifecycle,
    ];

    /// The name `--workload` takes.
    pub fn name(self) -> &'static str {
        match self {
            Workload::ReplicaSet => "replicaset",
            Workload::StatefulSet => "statefulset",
            Workload::DaemonSet => "daemonset",
            Workload::Job => "job",
            Workload::NodeLifecycle => "nodelifecycle",
        }
    }

    /// The resources the controller reads, each with its informer (in the order their
    /// faults are drawn).
    pub fn watched(self) -> &'static [Resource] {
        match self {
            Workload::ReplicaSet => &[Resource::ReplicaSets, Resource::Pods],
            Workload::StatefulSet => &[
                Resource::StatefulSets,
                Resource::Pods,
                Resource::ControllerRevisions,
                Resource::PersistentVolumeClaims,
            ],
            Workload::DaemonSet => &[
                Resource::DaemonSets,
                Resource::Pods,
                Resource::Nodes,
                Resource::ControllerRevisions,
            ],
            Workload::Job => &[Resource::Jobs, Resource::Pods],
            Workload::NodeLifecycle => &[Resource::Nodes, Resource::Leases],
        }
    }

    /// The controller, as the manager builds it (node lifecycle pacing its zones with the
    /// process's `evictions`).
    pub fn controller(self, evictions: &Arc<Evictions>) -> Box<dyn Reconciler> {
        match self {
            Workload::ReplicaSet => Box::new(ReplicaSetController),
            Workload::StatefulSet => Box::new(StatefulSetController),
            Workload::DaemonSet => Box::new(DaemonSetController),
            Workload::Job => Box::new(JobController),
            Workload::NodeLifecycle => Box::new(NodeLifecycleController {
                grace_period: NODE_GRACE,
                evictions: evictions.clone(),
                ..NodeLifecycleController::default()
            }),
        }
    }

    /// The stress workload whose ground truth convergence is judged on (`None`: node
    /// lifecycle, judged on its Nodes instead).
    pub fn set_kind(self) -> Option<WorkloadKind> {
        match self {
            Workload::ReplicaSet => Some(WorkloadKind::Replicaset),
            Workload::StatefulSet => Some(WorkloadKind::Statefulset),
            Workload::DaemonSet => Some(WorkloadKind::Daemonset),
            Workload::Job => Some(WorkloadKind::Job),
            Workload::NodeLifecycle => None,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| SimError::UnknownWorkload(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_parses_from_its_name_and_an_unknown_one_is_an_error() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().ok(), Some(w));
        }
        assert!("cronjob".parse::<Workload>().is_err());
    }

    #[test]
    fn each_workload_watches_what_its_controller_reads() {
        for w in Workload::ALL {
            let mut reads = w.controller(&Arc::default()).reads().to_vec();
            reads.sort_by_key(|r| r.to_string());
            let mut watched = w.watched().to_vec();
            watched.sort_by_key(|r| r.to_string());
            assert_eq!(reads, watched, "{w}");
        }
    }
}
