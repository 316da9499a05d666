//! The node lifecycle invariants: no Node is marked (`Ready=Unknown` or the unreachable taint)
//! while its Lease was renewed within the grace period, and no zone has its Nodes tainted
//! `NoExecute` faster than `--node-eviction-rate`. Checked after the run over the recorded
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

/// A Node tainted `NoExecute` sooner after its zone's previous one than the zone's pace allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EvictionTooFast {
    /// The revision of the tainting write.
    pub revision: u64,
    /// The Node.
    pub node: String,
    /// Its zone.
    pub zone: String,
    /// The Node tainted before it in that zone.
    pub previous: String,
    /// How long after that one, in milliseconds.
    pub after_ms: u64,
    /// Who tainted both.
    pub writer: Option<String>,
}

/// A Node that started to carry node lifecycle's `NoExecute` taint: its Pods are evicted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoExecuteTainting {
    /// The revision of the tainting write.
    pub revision: u64,
    /// The Node.
    pub node: String,
    /// Its zone.
    pub zone: String,
    /// When it committed, microseconds since the Unix epoch (server clock).
    pub at_micros: u64,
    /// Who tainted it.
    pub writer: Option<String>,
}

/// Every `NoExecute` tainting, in revision order (a Node untainted and tainted again counts
/// again).
pub fn no_execute_taintings(writes: &[WriteRecord]) -> Vec<NoExecuteTainting> {
    let mut ordered: Vec<&WriteRecord> = writes
        .iter()
        .filter(|w| w.resource == Resource::Nodes)
        .collect();
    ordered.sort_by_key(|w| w.revision);
    let mut evicting: HashMap<&str, bool> = HashMap::new();
    let mut found = Vec::new();
    for w in ordered {
        let was = evicting
            .insert(w.name.as_str(), w.node_evicting_zone.is_some())
            .unwrap_or(false);
        if let Some(zone) = &w.node_evicting_zone
            && !was
        {
            found.push(NoExecuteTainting {
                revision: w.revision,
                node: w.name.clone(),
                zone: zone.clone(),
                at_micros: w.at_micros,
                writer: w.user_agent.clone(),
            });
        }
    }
    found
}

/// Every `NoExecute` tainting that follows the previous one in its zone by the same writer by
/// less than `1 / rate`, less `in_flight` (decisions take their token when made and commit up
/// to that much later). A zone's bucket holds one token, so a writer's first tainting in a
/// zone is free, and no change of the zone's state makes tokens faster than `rate`, the
/// highest rate a zone has.
pub fn evictions_too_fast(
    writes: &[WriteRecord],
    rate: f64,
    in_flight: Duration,
) -> Vec<EvictionTooFast> {
    let min_gap_micros = if rate > 0.0 {
        let gap = Duration::from_secs_f64(1.0 / rate).saturating_sub(in_flight);
        u64::try_from(gap.as_micros()).unwrap_or(u64::MAX)
    } else {
        u64::MAX
    };
    let taintings = no_execute_taintings(writes);
    let mut last: HashMap<(&str, Option<&str>), &NoExecuteTainting> = HashMap::new();
    let mut found = Vec::new();
    for t in &taintings {
        let slot = (t.zone.as_str(), t.writer.as_deref());
        if let Some(previous) = last.get(&slot) {
            let gap = t.at_micros.saturating_sub(previous.at_micros);
            if gap < min_gap_micros {
                found.push(EvictionTooFast {
                    revision: t.revision,
                    node: t.node.clone(),
                    zone: t.zone.clone(),
                    previous: previous.node.clone(),
                    after_ms: gap / 1000,
                    writer: t.writer.clone(),
                });
            }
        }
        last.insert(slot, t);
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
            node_evicting_zone: None,
            at_micros: at_ms * 1000,
        }
    }

    fn tainting(revision: u64, at_ms: u64, name: &str, zone: Option<&str>) -> WriteRecord {
        WriteRecord {
            node_evicting_zone: zone.map(str::to_string),
            ..write(revision, at_ms, Resource::Nodes, name, true)
        }
    }

    #[test]
    fn two_nodes_of_a_zone_tainted_faster_than_its_rate_are_caught_and_other_zones_are_not() {
        let writes = vec![
            tainting(1, 0, "a", Some("z1")),
            tainting(2, 100, "c", Some("z2")),
            tainting(3, 1_000, "b", Some("z1")),
            tainting(4, 1_100, "b", Some("z1")),
            tainting(5, 12_000, "d", Some("z1")),
        ];
        let found = evictions_too_fast(&writes, 0.1, Duration::from_millis(500));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].node.as_str(), found[0].after_ms), ("b", 1_000));
        assert_eq!(found[0].previous, "a");
    }

    #[test]
    fn a_node_untainted_and_tainted_again_counts_again() {
        let writes = vec![
            tainting(1, 0, "a", Some("z1")),
            tainting(2, 500, "a", None),
            tainting(3, 1_000, "a", Some("z1")),
        ];
        assert_eq!(evictions_too_fast(&writes, 0.1, Duration::ZERO).len(), 1);
        assert!(evictions_too_fast(&writes, 2.0, Duration::ZERO).is_empty());
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
