//! What a stress run reports of the server's record: the oracle's violations named as
//! scenarios name their invariants, writes made while another manager led, the managers' writes.

use crate::apiserver::server::ApiServer;
use crate::oracle::leadership::{same_manager, split_leadership};
use crate::oracle::{Verb, ViolationKind};
use crate::stress::LEASE;
use crate::stress::report::{ReportedViolation, WriteCounts};

/// The oracle's violations, named as scenarios name their invariants.
pub fn reported(server: &ApiServer) -> Vec<ReportedViolation> {
    server
        .violations()
        .into_iter()
        .map(|v| ReportedViolation {
            invariant: match v.kind {
                ViolationKind::OverCreate => "replicaset-no-over-create",
                ViolationKind::WantedPodDeleted => "replicaset-no-wanted-pod-deleted",
                ViolationKind::OrdinalBeforePredecessorReady => {
                    "statefulset-ordinal-after-ready-predecessor"
                }
                ViolationKind::WantedOrdinalDeleted => "statefulset-scale-down-highest-ordinals",
                ViolationKind::RolloutBeyondMaxUnavailable => {
                    "statefulset-rollout-within-max-unavailable"
                }
                ViolationKind::JobOverParallelism => "job-at-most-parallelism-active",
                ViolationKind::JobDuplicateIndex => "job-one-active-pod-per-index",
                ViolationKind::JobOverCounted => "job-at-most-completions-counted",
                ViolationKind::JobPodWhileSuspended => "job-no-pod-while-suspended",
                ViolationKind::JobFailedDespiteIgnoredFailures => {
                    "job-failure-policy-ignores-its-failures"
                }
                ViolationKind::DaemonSetTwoPodsOnANode => "daemonset-one-pod-per-node",
                ViolationKind::DaemonSetNeededPodDeleted => "daemonset-no-needed-pod-deleted",
                ViolationKind::ActionOnMalformedOwner => "no-action-on-malformed-owner",
                ViolationKind::AdoptionOverCreate => "adoption-no-over-create",
                ViolationKind::TwoControllers => "adoption-one-controller",
                ViolationKind::AdoptedByOwnerBeingDeleted => "adoption-owner-not-being-deleted",
            }
            .to_string(),
            object: format!("{}/{}", v.namespace, v.replicaset),
            revision: v.revision,
            detail: format!(
                "pod {} written by {} with {} live and {} more in flight of {} desired at its {}",
                v.pod,
                v.user_agent.as_deref().unwrap_or("unknown client"),
                v.live,
                v.in_flight,
                v.desired,
                if v.at_arrival { "arrival" } else { "commit" }
            ),
        })
        .collect()
}

/// The writes the managers made, by verb.
pub fn manager_writes(server: &ApiServer) -> WriteCounts {
    let mut counts = WriteCounts::default();
    for w in server.writes() {
        if !w
            .user_agent
            .as_deref()
            .is_some_and(|a| a.starts_with("tidemark"))
        {
            continue;
        }
        match w.verb {
            Verb::Create => counts.create += 1,
            Verb::Update | Verb::UpdateStatus => counts.update += 1,
            Verb::Delete => counts.delete += 1,
        }
    }
    counts
}

/// Writes made while the Lease named another manager.
pub fn leader_violations(server: &ApiServer) -> Vec<ReportedViolation> {
    split_leadership(&server.writes(), LEASE.0, LEASE.1)
        .into_iter()
        .map(|v| ReportedViolation {
            invariant: "leader-single-writer".into(),
            object: v.object,
            revision: v.revision,
            detail: format!(
                "written by {} while the Lease named {}{}",
                v.writer,
                v.holder.as_deref().unwrap_or("nobody"),
                if v.holder
                    .as_deref()
                    .is_some_and(|h| same_manager(h, &v.writer))
                {
                    " (a later incarnation of the same manager)"
                } else {
                    ""
                }
            ),
        })
        .collect()
}
