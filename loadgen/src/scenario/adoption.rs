//! The `[adoption]` table of a scenario: orphan Pods seeded before any set exists, and the sets
//! (whose selectors match them) created later, while the managers run (see
//! [`crate::stress::orphans`]).

use crate::scenario::Scenario;
use serde::Deserialize;

/// The `[adoption]` table of a scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adoption {
    /// Orphan Pods seeded for each set of the workload before the managers start, labelled so
    /// its selector matches them and named apart from it (their own keys hash to any shard).
    pub orphans: usize,
    /// When, after the scenario starts, the workload's sets are created: they are not seeded,
    /// and the scaling steps count from here.
    pub owners_at_seconds: f64,
}

impl Scenario {
    /// When the workload's sets are created: zero unless an `[adoption]` table says later.
    pub fn owners_at_seconds(&self) -> f64 {
        self.adoption
            .as_ref()
            .map_or(0.0, |a| a.owners_at_seconds.max(0.0))
    }
}
