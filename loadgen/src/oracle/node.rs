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
    live_nodes_marked_within(writes, grace, Duration::ZERO)
}

/// As [`live_nodes_marked`], for writers whose requests may commit up to `in_flight` after
/// they were decided (a write's deadline): a marking is fair when at some moment of that
/// window before its commit the Lease had been silent for the grace period, so a renewal
/// that lands while a fair marking travels is not held against it.
pub fn live_nodes_marked_within(
    writes: &[WriteRecord],
    grace: Duration,
    in_flight: Duration,
) -> Vec<LiveNodeMarked> {
    let mut ordered: Vec<&WriteRecord> = writes.iter().collect();
    ordered.sort_by_key(|w| w.revision);
    let mut renewals: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut marked: HashMap<&str, bool> = HashMap::new();
    let mut found = Vec::new();
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let (grace_micros, in_flight_micros) = (micros(grace), micros(in_flight));
    for w in ordered {
        match w.resource {
            Resource::Leases if w.namespace == NODE_LEASES => {
                renewals
                    .entry(w.name.as_str())
                    .or_default()
                    .push(w.at_micros);
            }
            Resource::Nodes => {
                let was = marked
                    .insert(w.name.as_str(), w.node_marked)
                    .unwrap_or(false);
                if !w.node_marked || was {
                    continue;
                }
                let Some(times) = renewals.get(w.name.as_str()) else {
                    continue;
                };
                let decided_from = w.at_micros.saturating_sub(in_flight_micros);
                if !silent_long_enough(times, decided_from, w.at_micros, grace_micros)
                    && let Some(last) = times.last()
                {
                    found.push(LiveNodeMarked {
                        revision: w.revision,
                        node: w.name.clone(),
                        renewed_ago_ms: w.at_micros.saturating_sub(*last) / 1000,
                        writer: w.user_agent.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    found
}

/// Whether, at some moment in `[from, to]`, the last renewal in `times` (ascending) was at
/// least `grace` old. The age of the last renewal peaks just before each renewal and at `to`,
/// so only those moments are looked at.
fn silent_long_enough(times: &[u64], from: u64, to: u64, grace: u64) -> bool {
    let before = |t: u64| times.iter().rev().find(|r| **r <= t).copied();
    if before(to).is_none_or(|last| to - last >= grace) {
        return true;
    }
    times.windows(2).any(|pair| {
        let (previous, renewal) = (pair[0], pair[1]);
        renewal > from && renewal <= to && renewal - previous >= grace
    })
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

    #[test]
    fn a_renewal_landing_while_a_fair_marking_travels_is_not_held_against_it() {
        let writes = vec![
            write(1, 0, Resource::Leases, "n1", false),
            write(2, 5_000, Resource::Leases, "n1", false),
            write(3, 5_500, Resource::Nodes, "n1", true),
        ];
        let grace = Duration::from_secs(4);
        assert_eq!(live_nodes_marked(&writes, grace).len(), 1);
        assert!(live_nodes_marked_within(&writes, grace, Duration::from_secs(1)).is_empty());
    }

    #[test]
    fn a_marking_with_no_silence_in_its_window_is_caught_whatever_the_window() {
        let writes = vec![
            write(1, 0, Resource::Leases, "n1", false),
            write(2, 1_000, Resource::Leases, "n1", false),
            write(3, 2_000, Resource::Leases, "n1", false),
            write(4, 3_500, Resource::Nodes, "n1", true),
        ];
        let found =
            live_nodes_marked_within(&writes, Duration::from_secs(4), Duration::from_secs(2));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].renewed_ago_ms, 1_500);
    }
}
