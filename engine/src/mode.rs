//! How much stale-cache protection a controller runs with: Tidemark's, or one of the baselines it
//! is measured against (what kube-controller-manager did before and after KEP-5647, and none).

use std::fmt;
use std::str::FromStr;

/// The protection a controller runs with. Every mode is a real implementation, so scenarios can
/// show side by side which class of staleness each one survives.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConsistencyMode {
    /// No protection: the controller trusts its cache.
    Naive,
    /// kube-controller-manager before v1.36: `ControllerExpectations` only. A key whose creates
    /// or deletes have not all been observed in the cache is not synced again (until they are,
    /// or the expectations expire after five minutes).
    Upstream135,
    /// kube-controller-manager v1.36 (KEP-5647): expectations, plus `ConsistencyStore`: the
    /// resourceVersion of every write that returns one (creates, updates), checked against the
    /// store's `LastStoreSyncResourceVersion`; a stale key is skipped and requeued with the
    /// workqueue's rate limiter (5 ms doubling to 1000 s). Deletes are covered by expectations
    /// only, and nothing proves a destructive decision.
    Upstream136,
    /// Tidemark: written versions and deletions tracked per key, stale keys parked until the
    /// watermark passes, destructive decisions proven by a barrier (also whenever a cache is
    /// known to lag), plans cancelled when the spec they were made for is gone.
    #[default]
    Tidemark,
}

/// A mode name that is not one of the four.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown consistency mode {0:?}: expected naive, upstream-1.35, upstream-1.36 or tidemark")]
pub struct UnknownMode(pub String);

impl ConsistencyMode {
    /// Every mode, weakest first.
    pub const ALL: [ConsistencyMode; 4] = [
        ConsistencyMode::Naive,
        ConsistencyMode::Upstream135,
        ConsistencyMode::Upstream136,
        ConsistencyMode::Tidemark,
    ];

    /// The mode a feature gate selects: on is Tidemark, off is naive.
    pub fn from_gate(on: bool) -> Self {
        if on { Self::Tidemark } else { Self::Naive }
    }

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Upstream135 => "upstream-1.35",
            Self::Upstream136 => "upstream-1.36",
            Self::Tidemark => "tidemark",
        }
    }

    /// Whether creates and deletes are counted until the cache shows them
    /// (`ControllerExpectations`).
    pub fn expectations(self) -> bool {
        matches!(self, Self::Upstream135 | Self::Upstream136)
    }

    /// Whether the resourceVersions of a key's writes gate its next sync.
    pub fn tracks_writes(self) -> bool {
        matches!(self, Self::Upstream136 | Self::Tidemark)
    }

    /// Whether Tidemark's own protections run: deletions tracked by UID, stale keys parked on the
    /// watermark, barriers for destructive decisions, lag detection, unknown write outcomes.
    pub fn is_tidemark(self) -> bool {
        self == Self::Tidemark
    }
}

impl fmt::Display for ConsistencyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ConsistencyMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_back_from_its_name() {
        for mode in ConsistencyMode::ALL {
            assert_eq!(mode.name().parse::<ConsistencyMode>(), Ok(mode));
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        let err = "upstream"
            .parse::<ConsistencyMode>()
            .expect_err("not a mode");
        assert!(err.to_string().contains("upstream-1.36"), "{err}");
    }

    #[test]
    fn the_gate_selects_tidemark_or_naive() {
        assert_eq!(ConsistencyMode::from_gate(true), ConsistencyMode::Tidemark);
        assert_eq!(ConsistencyMode::from_gate(false), ConsistencyMode::Naive);
    }

    #[test]
    fn only_the_upstream_modes_keep_expectations() {
        let with: Vec<_> = ConsistencyMode::ALL
            .into_iter()
            .filter(|m| m.expectations())
            .collect();
        assert_eq!(
            with,
            [ConsistencyMode::Upstream135, ConsistencyMode::Upstream136]
        );
    }
}
