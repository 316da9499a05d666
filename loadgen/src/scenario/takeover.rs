//! The `[takeover]` table of a scenario: a workload seeded as kube-controller-manager leaves it
//! (see [`crate::stress::left_by_kcm`]).

use serde::Deserialize;

/// The `[takeover]` table of a scenario: sets seeded as KCM leaves them besides the workload's
/// own (which are seeded the same way), and how long the user leaves everything alone.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Takeover {
    /// StatefulSets of 3 (`kcm-sts-N`) that nothing changes.
    #[serde(default)]
    pub statefulsets: usize,
    /// DaemonSets on every Node (`kcm-ds-N`) that nothing changes.
    #[serde(default)]
    pub daemonsets: usize,
    /// ReplicaSets of 3 (`kcm-rs-N`) that nothing changes.
    #[serde(default)]
    pub replicasets: usize,
    /// Jobs of 2 Pods at once and 2 completions (`kcm-job-N`), their Pods running with the
    /// tracking finalizer, that nothing changes.
    #[serde(default)]
    pub jobs: usize,
    /// From the managers' start, no Pod or ControllerRevision of any set may be written for this
    /// long (the workload's first event comes after it); the bystanders never.
    pub quiet_seconds: f64,
}
