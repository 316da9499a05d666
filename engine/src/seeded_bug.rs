//! Bugs Tidemark once had, seeded back on purpose behind the `seeded-bugs` feature, so the
//! deterministic simulation can show how many seeds it needs to find each one again.

use std::fmt;
use std::str::FromStr;

/// An old bug, as a shard can be told to have it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SeededBug {
    /// A relist does not touch the plans already running: no hold while the watch waits for
    /// its list, and a relisted cache that shows another spec does not supersede the plan (the
    /// next slow-start batch goes out on the old spec).
    RelistKeepsPlans,
    /// A key proven once stays proven: its proof survives its object's replacement, a relist
    /// and a lost leadership, and a cache known to lag asks for no new proof (no live read) —
    /// the lag-triggered live read is how a proof expires today.
    ProofNeverExpires,
    /// The write fence is checked only before a write is sent: writes carry no deadline, so
    /// one sent by a leader just before it lost the Lease (paused, partitioned, slow) may
    /// commit after its successor took over. Carried out by the writer, not the shard: the
    /// simulation's model of `actors/src/writer.rs` sends without `timeout`.
    FenceOnlyBeforeSending,
}

/// A name that is not one of the seeded bugs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown seeded bug {0:?}: expected relist-keeps-plans, proof-never-expires or fence-only-before-sending"
)]
pub struct UnknownBug(pub String);

impl SeededBug {
    /// Every seeded bug.
    pub const ALL: [SeededBug; 3] = [
        SeededBug::RelistKeepsPlans,
        SeededBug::ProofNeverExpires,
        SeededBug::FenceOnlyBeforeSending,
    ];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::RelistKeepsPlans => "relist-keeps-plans",
            Self::ProofNeverExpires => "proof-never-expires",
            Self::FenceOnlyBeforeSending => "fence-only-before-sending",
        }
    }
}

impl fmt::Display for SeededBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SeededBug {
    type Err = UnknownBug;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| UnknownBug(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_parses_from_its_name() {
        for bug in SeededBug::ALL {
            assert_eq!(bug.name().parse::<SeededBug>(), Ok(bug));
        }
        assert!("no-such-bug".parse::<SeededBug>().is_err());
    }
}
