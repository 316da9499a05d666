//! The JSON report of a `loadgen stress` run.

use serde::Serialize;

/// One broken invariant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReportedViolation {
    /// Which invariant (`replicaset-no-over-create`, `replicaset-no-wanted-pod-deleted`,
    /// `liveness`).
    pub invariant: String,
    /// The object it is about (`namespace/name`).
    pub object: String,
    /// The revision of the offending write (for liveness: the revision at the deadline).
    pub revision: u64,
    /// What happened.
    pub detail: String,
}

/// Writes the manager made, by verb.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WriteCounts {
    /// POST.
    pub create: u64,
    /// PUT of a resource or a subresource.
    pub update: u64,
    /// PATCH.
    pub patch: u64,
    /// DELETE.
    pub delete: u64,
}

/// A Node tainted `NoExecute`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeTaintingReport {
    /// Seconds since the workload started.
    pub at_seconds: f64,
    /// The Node.
    pub node: String,
    /// Its zone.
    pub zone: String,
    /// The revision of the write.
    pub revision: u64,
}

/// A fault's start or stop, with the revision it happened at.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FaultEvent {
    /// Seconds since the workload started.
    pub at_seconds: f64,
    /// The store's revision at that moment.
    pub revision: u64,
    /// What changed.
    pub what: String,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct StressReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The managers' protection: `on`, `off`, or a consistency mode (`naive`, `upstream-1.35`,
    /// `upstream-1.36`, `tidemark`).
    pub gate: String,
    /// Broken invariants.
    pub violations: Vec<ReportedViolation>,
    /// Every ReplicaSet converged within the bound after the faults stopped.
    pub converged: bool,
    /// Seconds from the end of steps and faults until convergence (the bound if it never came).
    pub convergence_seconds: f64,
    /// The manager's writes, as the server recorded them.
    pub writes: WriteCounts,
    /// The manager's stale sync skips (from its summary).
    pub stale_sync_skips: u64,
    /// Live (barrier) reads the managers made (from their summaries).
    pub live_reads: u64,
    /// Reconciles the managers ran (from their summaries).
    pub reconciles: u64,
    /// Seconds the whole run took.
    pub duration_seconds: f64,
    /// Faults started and stopped, with revisions.
    pub faults: Vec<FaultEvent>,
    /// Where the manager's log is.
    pub manager_log: String,
    /// Nodes tainted `NoExecute` by node lifecycle, with seconds since the workload started
    /// (only in runs with node lifecycle).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub node_taintings: Vec<NodeTaintingReport>,
    /// Every request the managers' ServiceAccount made, with RBAC's decision: the evidence
    /// behind `deploy/rbac.yaml` (`loadgen rbac-audit`).
    pub requests: Vec<crate::rbac::RequestLogEntry>,
}

impl StressReport {
    /// Passed: no violation and converged.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.converged
    }
}
