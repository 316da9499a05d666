//! The names a scenario may list under `[invariants] check`, each one a stress run reports
//! violations under, and the settings some of them need.

/// Every invariant a stress run can report.
pub const KNOWN: &[&str] = &[
    "replicaset-no-over-create",
    "replicaset-no-wanted-pod-deleted",
    "statefulset-ordinal-after-ready-predecessor",
    "statefulset-scale-down-highest-ordinals",
    "statefulset-rollout-within-max-unavailable",
    "statefulset-claims-match-retention-policy",
    "job-at-most-parallelism-active",
    "job-one-active-pod-per-index",
    "job-at-most-completions-counted",
    "job-no-pod-while-suspended",
    "job-failure-policy-ignores-its-failures",
    "daemonset-one-pod-per-node",
    "daemonset-no-needed-pod-deleted",
    "no-action-on-malformed-owner",
    "adoption-no-over-create",
    "adoption-one-controller",
    "adoption-owner-not-being-deleted",
    "adoption-orphans-adopted",
    "leader-single-writer",
    RANGE_SINGLE_WRITER,
    "nodelifecycle-no-live-node-marked",
    "nodelifecycle-eviction-rate",
    "takeover-no-disruption",
    "takeover-job-finished",
    "rbac-forbidden",
    "metrics-scrape",
    "liveness",
];

/// Scale-out's: every write to a namespace's object is made by the holder of its range Lease.
pub const RANGE_SINGLE_WRITER: &str = "range-single-writer";
