//! The verdicts judged on the store rather than on a single commit: whether the workload has
//! converged, and whether node lifecycle marked a Node whose Lease was alive.

use super::World;
use crate::election::{LEASE_NAME, LEASE_NAMESPACE};
use crate::faults::MAX_CLOCK_DRIFT;
use crate::workload::NODE_GRACE;
use crate::writes::WRITE_DEADLINE;
use loadgen::WriteRecord;
use loadgen::node_oracle::live_nodes_marked_within;
use loadgen::oracle::leadership::split_leadership;
use loadgen::oracle::truth::truth_in;
use tidemark_engine::DECISION_PROOF_HOLDS;

impl World {
    /// What has not converged yet, one line each (empty: converged).
    pub(crate) fn not_converged(&self) -> Vec<String> {
        let Some(kind) = self.workload.set_kind() else {
            return self.dead_nodes_unmarked();
        };
        truth_in(&self.store, &self.oracle, kind)
            .into_iter()
            .filter(|t| !t.is_converged())
            .map(|t| {
                format!(
                    "{}/{}: {} live of {}, status {} (generation {} observed {}, {} outdated)",
                    t.namespace,
                    t.name,
                    t.live_pods,
                    t.spec_replicas,
                    t.status_replicas,
                    t.generation,
                    t.observed_generation,
                    t.outdated_pods
                )
            })
            .collect()
    }

    /// Nodes whose kubelet died for good and that are not marked yet.
    fn dead_nodes_unmarked(&self) -> Vec<String> {
        self.user
            .dead_nodes
            .iter()
            .filter(|name| {
                let Some(node) = self.store.get(loadgen::Resource::Nodes, "", name) else {
                    return false;
                };
                !node_is_marked(&node.value)
            })
            .map(|name| format!("{name}: silent for good and not marked"))
            .collect()
    }

    /// Every write a process made while the Lease named another, one line each.
    pub(crate) fn split_leadership(writes: &[WriteRecord]) -> Vec<String> {
        split_leadership(writes, LEASE_NAMESPACE, LEASE_NAME)
            .into_iter()
            .map(|s| {
                format!(
                    "{} wrote {} at revision {} while the Lease named {}",
                    s.writer,
                    s.object,
                    s.revision,
                    s.holder.as_deref().unwrap_or("nobody")
                )
            })
            .collect()
    }

    /// Every marking of a Node whose Lease was renewed within the grace period, one line each.
    /// A marking is judged as of its proof, which holds for `DECISION_PROOF_HOLDS`, and may
    /// commit up to the write deadline after it is sent: a Lease renewed within that window is
    /// not held against it (see `live_nodes_marked_within`); one renewed before it is.
    pub(crate) fn live_nodes_marked(&self, writes: &[WriteRecord]) -> Vec<String> {
        if self.workload.set_kind().is_some() {
            return Vec::new();
        }
        // A process clock running fast measures the grace period short by as much.
        let grace = NODE_GRACE.mul_f64(1.0 - MAX_CLOCK_DRIFT);
        live_nodes_marked_within(writes, grace, DECISION_PROOF_HOLDS + WRITE_DEADLINE)
            .into_iter()
            .map(|m| {
                format!(
                    "{} marked at revision {} by {} although its Lease was renewed {} ms before",
                    m.node,
                    m.revision,
                    m.writer.as_deref().unwrap_or("?"),
                    m.renewed_ago_ms
                )
            })
            .collect()
    }
}

/// Whether a Node carries both of node lifecycle's marks.
fn node_is_marked(node: &serde_json::Value) -> bool {
    let (unknown, tainted) = loadgen::oracle::node_marks(node);
    unknown && tainted
}
