//! The node lifecycle invariant: no Node is marked (`Ready=Unknown` or the unreachable taint)
//! while its Lease was renewed within the grace period. Checked after the run over the recorded
//! writes, in revision order, with the server's commit times.

use crate::oracle::WriteRecord;
use crate::resource::Resource;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

/// The namespace of node Leases.
const NODE_LEASES: &str = "kube-node-lease";

/// A Node marked although its Lease had been renewed recently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveNodeMarked {
    /// The revision of the marking write.
    pub revision: u64,
    /// The Node.
    pub node: String,
    /// How long before the marking its Lease was last renewed.
    pub renewed_ago_ms: u64,
    /// Who marked it.
    pub writer: Option<String>,
}

/// Every write that marked a Node whose Lease was renewed less than `grace` before it.
pub fn live_nodes_marked(writes: &[WriteRecord], grace: Duration) -> Vec<LiveNodeMarked> {
    let mut ordered: Vec<&WriteRecord> = writes.iter().collect();
    ordered.sort_by_key(|w| w.revision);
    let mut renewed: HashMap<&str, u64> = HashMap::new();
    let mut marked: HashMap<&str, bool> = HashMap::new();
    let mut found = Vec::new();
    let grace_micros = u64::try_from(grace.as_micros()).unwrap_or(u64::MAX);
    for w in ordered {
        match w.resource {
            Resource::Leases if w.namespace == NODE_LEASES => {
                renewed.insert(w.name.as_str(), w.at_micros);
            }
            Resource::Nodes => {
                let was = marked
                    .insert(w.name.as_str(), w.node_marked)
                    .unwrap_or(false);
                if w.node_marked && !was {
                    let ago = renewed
                        .get(w.name.as_str())
                        .map(|at| w.at_micros.saturating_sub(*at));
                    if ago.is_some_and(|ago| ago < grace_micros) {
                        found.push(LiveNodeMarked {
                            revision: w.revision,
                            node: w.name.clone(),
                            renewed_ago_ms: ago.unwrap_or(0) / 1000,
                            writer: w.user_agent.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Verb;

    fn write(
        revision: u64,
        at_ms: u64,
        resource: Resource,
        name: &str,
        marked: bool,
    ) -> WriteRecord {
        WriteRecord {
            revision,
            verb: Verb::Update,
            resource,
            namespace: if resource == Resource::Leases {
                NODE_LEASES
            } else {
                ""
            }
            .into(),
            name: name.into(),
            uid: String::new(),
            user_agent: Some("tidemark/0.1.0".into()),
            lease_holder: None,
            node_marked: marked,
            at_micros: at_ms * 1000,
        }
    }

    #[test]
    fn marking_a_node_renewed_within_the_grace_period_is_caught() {
        let writes = vec![
            write(1, 0, Resource::Leases, "n1", false),
            write(2, 1_000, Resource::Leases, "n1", false),
            write(3, 3_000, Resource::Nodes, "n1", true),
        ];
        let found = live_nodes_marked(&writes, Duration::from_secs(4));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].renewed_ago_ms, 2_000);
    }

    #[test]
    fn marking_a_silent_node_passes_and_a_second_write_of_a_marked_node_is_not_a_new_marking() {
        let writes = vec![
            write(1, 0, Resource::Leases, "n1", false),
            write(2, 5_000, Resource::Nodes, "n1", true),
            write(3, 5_100, Resource::Leases, "n1", false),
            write(4, 5_200, Resource::Nodes, "n1", true),
        ];
        assert!(live_nodes_marked(&writes, Duration::from_secs(4)).is_empty());
    }
}
