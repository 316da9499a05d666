//! What a stress run reports of the server's record: the oracle's violations named as
//! scenarios name their invariants, writes made while another manager led or held the range,
//! the managers' writes.

use crate::apiserver::server::ApiServer;
use crate::oracle::leadership::{same_manager, split_leadership};
use crate::oracle::range_writers::range_splits;
use crate::oracle::{Verb, ViolationKind, WriteRecord};
use crate::scenario::invariants::RANGE_SINGLE_WRITER;
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
    leader_violations_in(&server.writes())
}

/// With scale-out, the writes to cluster-scoped objects made while the Lease named another
/// manager: the ranges, not the leader, decide who writes a namespace's objects.
pub fn leader_violations_cluster_scoped(server: &ApiServer) -> Vec<ReportedViolation> {
    let writes: Vec<WriteRecord> = server
        .writes()
        .into_iter()
        .filter(answers_to_the_leader)
        .collect();
    leader_violations_in(&writes)
}

/// A write to a cluster-scoped object, or to the leader's Lease itself.
fn answers_to_the_leader(w: &WriteRecord) -> bool {
    w.namespace.is_empty() || (w.namespace == LEASE.0 && w.name == LEASE.1)
}

/// The namespace of the range Leases and the prefix of their names
/// (`tidemark-ranges/tidemark-range-NN`, the manager's defaults).
pub const RANGE_LEASES: (&str, &str) = ("tidemark-ranges", "tidemark");

/// Writes made to a namespace's object while its range Lease named another manager, or nobody.
pub fn range_violations(server: &ApiServer) -> Vec<ReportedViolation> {
    range_violations_in(&server.writes())
}

/// Who a Lease named when `writer` wrote: `nobody`, or the holder, said to be a later
/// incarnation of the writer when it is one.
fn holder_named(holder: Option<&str>, writer: &str) -> String {
    match holder {
        None => "nobody".into(),
        Some(h) if same_manager(h, writer) => {
            format!("{h} (a later incarnation of the same manager)")
        }
        Some(h) => h.into(),
    }
}

fn range_violations_in(writes: &[WriteRecord]) -> Vec<ReportedViolation> {
    // The leader's own Lease is how the managers compete for leadership: no range guards it.
    let ranged: Vec<WriteRecord> = writes
        .iter()
        .filter(|w| !answers_to_the_leader(w))
        .cloned()
        .collect();
    range_splits(&ranged, RANGE_LEASES.0, RANGE_LEASES.1)
        .into_iter()
        .map(|v| ReportedViolation {
            invariant: RANGE_SINGLE_WRITER.into(),
            object: v.object,
            revision: v.revision,
            detail: format!(
                "written by {} while the Lease of range {:02} named {}",
                v.writer,
                v.range,
                holder_named(v.holder.as_deref(), &v.writer)
            ),
        })
        .collect()
}

fn leader_violations_in(writes: &[WriteRecord]) -> Vec<ReportedViolation> {
    split_leadership(writes, LEASE.0, LEASE.1)
        .into_iter()
        .map(|v| ReportedViolation {
            invariant: "leader-single-writer".into(),
            object: v.object,
            revision: v.revision,
            detail: format!(
                "written by {} while the Lease named {}",
                v.writer,
                holder_named(v.holder.as_deref(), &v.writer)
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::range_writers::range_of;
    use crate::resource::Resource;

    fn write(revision: u64, resource: Resource, ns: &str, name: &str, who: &str) -> WriteRecord {
        WriteRecord {
            revision,
            verb: Verb::Update,
            resource,
            namespace: ns.into(),
            name: name.into(),
            uid: String::new(),
            user_agent: Some(format!("tidemark/0.1.0 ({who})")),
            lease_holder: None,
            node_marked: false,
            node_evicting_zone: None,
            at_micros: revision * 1000,
        }
    }

    fn range_lease(revision: u64, ns: &str, holder: &str) -> WriteRecord {
        WriteRecord {
            lease_holder: Some(holder.into()),
            ..write(
                revision,
                Resource::Leases,
                RANGE_LEASES.0,
                &format!("tidemark-range-{:02}", range_of(ns)),
                holder,
            )
        }
    }

    #[test]
    fn a_paused_replica_writing_for_a_range_it_lost_is_a_range_single_writer_violation() {
        let writes = vec![
            range_lease(1, "stress-3", "tidemark-1.1"),
            write(2, Resource::Pods, "stress-3", "rs-3-a", "tidemark-1.1"),
            range_lease(3, "stress-3", "tidemark-2.1"),
            write(4, Resource::Pods, "stress-3", "rs-3-b", "tidemark-2.1"),
            write(5, Resource::Pods, "stress-3", "rs-3-c", "tidemark-1.1"),
        ];
        let found = range_violations_in(&writes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].invariant, "range-single-writer");
        assert_eq!(found[0].revision, 5);
        assert!(
            found[0].detail.contains("tidemark-1.1") && found[0].detail.contains("tidemark-2.1"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn the_leader_lease_is_no_range_s_write() {
        let writes = vec![
            range_lease(1, "kube-system", "tidemark-1.1"),
            WriteRecord {
                lease_holder: Some("tidemark-2.1".into()),
                ..write(2, Resource::Leases, LEASE.0, LEASE.1, "tidemark-2.1")
            },
        ];
        assert!(range_violations_in(&writes).is_empty());
    }

    #[test]
    fn with_scale_out_only_cluster_scoped_writes_answer_to_the_leader_lease() {
        let lease = WriteRecord {
            lease_holder: Some("tidemark-0.1".into()),
            ..write(1, Resource::Leases, LEASE.0, LEASE.1, "tidemark-0.1")
        };
        let writes = vec![
            lease,
            write(2, Resource::Pods, "stress-1", "p", "tidemark-1.1"),
            write(3, Resource::Nodes, "", "node-0", "tidemark-1.1"),
        ];
        let scoped: Vec<WriteRecord> = writes
            .iter()
            .filter(|w| answers_to_the_leader(w))
            .cloned()
            .collect();
        assert_eq!(leader_violations_in(&writes).len(), 2);
        let found = leader_violations_in(&scoped);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].object.contains("nodes"), "{}", found[0].object);
    }
}
