//! Zones as node lifecycle sees them: the key upstream derives from a Node's region and zone
//! labels, and a zone's state from how many of its Nodes are not Ready, which sets how fast
//! its Nodes may be tainted `NoExecute` (`--unhealthy-zone-threshold`,
//! `--large-cluster-size-threshold`, `--node-eviction-rate`, `--secondary-node-eviction-rate`).

use crate::labels::Labels;
use crate::views::nodes::{ConditionStatus, NodeView};

/// A Node with this label is left out of its zone's count (upstream's
/// `labelNodeDisruptionExclusion`).
pub const EXCLUDE_DISRUPTION_LABEL: &str = "node.kubernetes.io/exclude-disruption";

/// The zone of a Node: `region + ":\0:" + zone` from the topology labels (the deprecated
/// `failure-domain.beta` ones first, as upstream reads them); empty when it has neither.
pub fn zone_key(labels: &Labels) -> String {
    let zone = labels
        .get("failure-domain.beta.kubernetes.io/zone")
        .or_else(|| labels.get("topology.kubernetes.io/zone"))
        .unwrap_or("");
    let region = labels
        .get("failure-domain.beta.kubernetes.io/region")
        .or_else(|| labels.get("topology.kubernetes.io/region"))
        .unwrap_or("");
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\0:{zone}")
    }
}

/// Whether `node` counts towards its zone's health.
pub fn counts_for_disruption(node: &NodeView) -> bool {
    node.labels.get(EXCLUDE_DISRUPTION_LABEL).is_none()
}

/// A zone's state, upstream's `ZoneState`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// First seen, not judged yet.
    Initial,
    /// Fewer than the threshold of its Nodes are not Ready (or at most two).
    Normal,
    /// At least `--unhealthy-zone-threshold` of its Nodes, and more than two, are not Ready.
    PartialDisruption,
    /// None of its Nodes is Ready.
    FullDisruption,
}

impl ZoneState {
    /// The name upstream logs and exposes.
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::PartialDisruption => "PartialDisruption",
            ZoneState::FullDisruption => "FullDisruption",
        }
    }
}

/// The flags that pace `NoExecute` tainting, with kube-controller-manager's defaults.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EvictionRates {
    /// `--node-eviction-rate`: Nodes per second per zone, in a healthy zone.
    pub eviction_rate: f64,
    /// `--secondary-node-eviction-rate`: in a partially disrupted zone of a large cluster.
    pub secondary_eviction_rate: f64,
    /// `--unhealthy-zone-threshold`: the fraction of not Ready Nodes that disrupts a zone.
    pub unhealthy_zone_threshold: f64,
    /// `--large-cluster-size-threshold`: a partially disrupted zone of at most this many Nodes
    /// stops tainting altogether.
    pub large_cluster_size_threshold: usize,
}

impl Default for EvictionRates {
    fn default() -> Self {
        Self {
            eviction_rate: 0.1,
            secondary_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
        }
    }
}

impl EvictionRates {
    /// A zone's state from the `Ready` statuses of its Nodes (a Node without one is not
    /// Ready), upstream's `ComputeZoneState`; with the number not Ready.
    pub fn zone_state(
        &self,
        ready: impl IntoIterator<Item = Option<ConditionStatus>>,
    ) -> (usize, ZoneState) {
        let (mut ready_nodes, mut not_ready) = (0usize, 0usize);
        for status in ready {
            if status == Some(ConditionStatus::True) {
                ready_nodes += 1;
            } else {
                not_ready += 1;
            }
        }
        let state = if ready_nodes == 0 && not_ready > 0 {
            ZoneState::FullDisruption
        } else if not_ready > 2
            && not_ready as f64 / (not_ready + ready_nodes) as f64 >= self.unhealthy_zone_threshold
        {
            ZoneState::PartialDisruption
        } else {
            ZoneState::Normal
        };
        (not_ready, state)
    }

    /// How many Nodes per second a zone of `size` Nodes in `state` may have tainted; zero
    /// stops it (upstream's `setLimiterInZone` with `ReducedQPSFunc` and `HealthyQPSFunc`).
    pub fn rate_in(&self, state: ZoneState, size: usize) -> f64 {
        match state {
            ZoneState::Initial | ZoneState::Normal | ZoneState::FullDisruption => {
                self.eviction_rate
            }
            ZoneState::PartialDisruption if size > self.large_cluster_size_threshold => {
                self.secondary_eviction_rate
            }
            ZoneState::PartialDisruption => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConditionStatus::{False, True, Unknown};

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn the_zone_key_joins_region_and_zone_and_prefers_the_beta_labels() {
        assert_eq!(zone_key(&labels(&[])), "");
        assert_eq!(
            zone_key(&labels(&[
                ("topology.kubernetes.io/region", "eu"),
                ("topology.kubernetes.io/zone", "eu-1a"),
            ])),
            "eu:\0:eu-1a"
        );
        assert_eq!(
            zone_key(&labels(&[
                ("topology.kubernetes.io/zone", "new"),
                ("failure-domain.beta.kubernetes.io/zone", "old"),
            ])),
            ":\0:old"
        );
    }

    #[test]
    fn a_zone_is_fully_disrupted_when_none_is_ready_and_partially_past_the_threshold() {
        let rates = EvictionRates::default();
        assert_eq!(rates.zone_state([]), (0, ZoneState::Normal));
        assert_eq!(
            rates.zone_state([Some(Unknown), None]),
            (2, ZoneState::FullDisruption)
        );
        // Two of three not Ready is past 55%, but two are never a disruption.
        assert_eq!(
            rates.zone_state([Some(True), Some(False), Some(Unknown)]),
            (2, ZoneState::Normal)
        );
        assert_eq!(
            rates.zone_state([Some(True), Some(True), Some(False), Some(Unknown), None]),
            (3, ZoneState::PartialDisruption)
        );
        assert_eq!(
            rates.zone_state([
                Some(True),
                Some(True),
                Some(True),
                Some(False),
                Some(Unknown),
                None
            ]),
            (3, ZoneState::Normal),
            "half is under the threshold"
        );
    }

    #[test]
    fn a_partially_disrupted_zone_slows_down_when_large_and_stops_when_small() {
        let rates = EvictionRates::default();
        assert_eq!(rates.rate_in(ZoneState::Normal, 10), 0.1);
        assert_eq!(rates.rate_in(ZoneState::FullDisruption, 10), 0.1);
        assert_eq!(rates.rate_in(ZoneState::PartialDisruption, 51), 0.01);
        assert_eq!(rates.rate_in(ZoneState::PartialDisruption, 50), 0.0);
    }
}
