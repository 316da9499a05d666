//! The JSON report of a `loadgen stress` run.

use std::collections::BTreeMap;

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
    /// What each manager slot received, slot by slot.
    pub replicas: Vec<ReplicaReport>,
    /// The watch traffic as the server counted it.
    pub watch_traffic: WatchTrafficReport,
}

/// Watch events and their bytes.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WatchCount {
    /// Events sent (bookmarks not counted).
    pub events: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
}

/// What one manager slot received over the run. The `server_*` figures are the simulator's,
/// summed over every process the slot ran (told apart by the identity in their User-Agent); the
/// others are what its last process served on `/metrics` at the end, `null` when it does not
/// serve that metric (or was not running then).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReplicaReport {
    /// The slot (`tidemark-<index>`).
    pub index: usize,
    /// The identities its processes ran under, first first (empty: never started).
    pub incarnations: Vec<String>,
    /// Whether a process of it ran (or was paused) when the run ended.
    pub running_at_end: bool,
    /// Watch events the server sent its processes.
    pub server_watch_events: u64,
    /// Their bytes.
    pub server_watch_bytes: u64,
    /// The same, by resource (plural).
    pub server_watch_by_resource: BTreeMap<String, WatchCount>,
    /// Watch events the server sent its processes while the scenario ran (from its first step,
    /// once the seeded workload had settled): its steady share, without the first lists.
    pub running_watch_events: u64,
    /// Their bytes.
    pub running_watch_bytes: u64,
    /// `tidemark_watch_events_total`, summed over resources.
    pub watch_events: Option<u64>,
    /// `tidemark_watch_bytes_total`, summed over resources.
    pub watch_bytes: Option<u64>,
    /// `tidemark_cached_objects`, summed over resources.
    pub cached_objects: Option<u64>,
    /// `tidemark_heap_allocated_bytes`.
    pub heap_allocated_bytes: Option<u64>,
    /// `tidemark_ranges_held`.
    pub ranges_held: Option<u64>,
    /// `tidemark_range_handovers_total` by `change` (`acquired`, `released`, `lost`).
    pub range_handovers: BTreeMap<String, u64>,
    /// The resources whose `tidemark_shard_selector_fallback` is 1: the server ignored the
    /// shardSelector and the manager filtered on its own side.
    pub shard_selector_fallback: Option<Vec<String>>,
}

/// The server's count of what its watches sent.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WatchTrafficReport {
    /// By resource and `shardSelector`.
    pub by_selector: Vec<SelectorWatchReport>,
    /// By client (`User-Agent`) and resource.
    pub by_client: Vec<ClientWatchReport>,
}

/// What the watches of one resource with one `shardSelector` sent.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SelectorWatchReport {
    /// The resource (plural).
    pub resource: String,
    /// The selector (`""`: unsharded).
    pub shard_selector: String,
    /// Events sent.
    pub events: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What one client's watches of one resource were sent.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ClientWatchReport {
    /// Its `User-Agent`.
    pub user_agent: String,
    /// The resource (plural).
    pub resource: String,
    /// Events sent.
    pub events: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl StressReport {
    /// Passed: no violation and converged.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.converged
    }
}
