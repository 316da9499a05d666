//! Scale-out's keyspace, sans-IO: the ring of 64-bit FNV-1a hashes of a namespace cut into
//! [`RANGES`] fixed ranges, and the `shardSelector` (KEP-5866) that asks the API server for some
//! of them. [`plan`] decides which ranges a replica contends for; [`RangeElection`] holds them
//! through one Lease each, elected as the manager's own Lease is. Hashing by namespace keeps a
//! Pod and its owner on one replica.

use std::collections::BTreeSet;

mod election;
mod plan;

pub use election::{LeaseWrite, RangeChanges, RangeElection, WritePurpose};
pub use plan::{RangeHolder, RangePlan, plan};

/// How many ranges the ring is cut into: enough that 1, 2, 3, 4, 8 or 16 replicas each get an
/// even or nearly even share, few enough that a replica renews its Leases cheaply.
pub const RANGES: u16 = 64;

/// How many replicas can count as members: each holds one membership slot Lease
/// (`<prefix>-member-NN`), so every Lease the replicas write has a name RBAC can list. Past 16
/// replicas a share is four ranges or fewer.
pub const MEMBER_SLOTS: u16 = 16;

/// The name of membership slot `slot`'s Lease: `<prefix>-member-03`.
pub fn member_lease_name(prefix: &str, slot: u16) -> String {
    format!("{prefix}-member-{slot:02}")
}

/// One of the [`RANGES`] equal ranges of the hash ring.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RangeId(pub u16);

/// The width of one range in hashes.
const WIDTH: u128 = (1u128 << 64) / RANGES as u128;

impl RangeId {
    /// The range a hash falls in.
    pub fn of(hash: u64) -> Self {
        Self((u128::from(hash) / WIDTH) as u16)
    }

    /// The range of a namespace (its FNV-1a 64 hash, as the API server computes it).
    pub fn of_namespace(namespace: &str) -> Self {
        Self::of(fnv1a64(namespace))
    }

    /// The first hash in the range and the first past it (2^64 for the last).
    pub fn bounds(self) -> (u64, u128) {
        let start = u128::from(self.0) * WIDTH;
        (start as u64, start + WIDTH)
    }

    /// The name of the range's Lease: `<prefix>-range-07`.
    pub fn lease_name(self, prefix: &str) -> String {
        format!("{prefix}-range-{:02}", self.0)
    }
}

/// 64-bit FNV-1a, the hash KEP-5866 shards by.
pub fn fnv1a64(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The `shardSelector` asking for `ranges` by namespace, neighbours merged into one
/// `shardRange`; `None` for no range (a replica holding nothing lists nothing).
///
/// ```
/// use tidemark_engine::ranges::{RangeId, shard_selector};
///
/// let first_half: Vec<RangeId> = (0..32).map(RangeId).collect();
/// assert_eq!(
///     shard_selector(&first_half).as_deref(),
///     Some("shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')")
/// );
/// ```
pub fn shard_selector(ranges: &[RangeId]) -> Option<String> {
    let sorted: BTreeSet<RangeId> = ranges.iter().copied().collect();
    let mut spans: Vec<(u64, u128)> = Vec::new();
    for range in sorted {
        let (start, end) = range.bounds();
        match spans.last_mut() {
            Some(last) if last.1 == u128::from(start) => last.1 = end,
            _ => spans.push((start, end)),
        }
    }
    let terms: Vec<String> = spans
        .iter()
        .map(|(start, end)| {
            format!("shardRange(object.metadata.namespace, '0x{start:016x}', '0x{end:016x}')")
        })
        .collect();
    (!terms.is_empty()).then(|| terms.join(" || "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranges_cover_the_ring_end_to_end_and_a_hash_falls_in_its_own() {
        assert_eq!(RangeId(0).bounds().0, 0);
        assert_eq!(RangeId(RANGES - 1).bounds().1, 1u128 << 64);
        for i in 1..RANGES {
            assert_eq!(u128::from(RangeId(i).bounds().0), RangeId(i - 1).bounds().1);
        }
        for ns in ["default", "kube-system", "team-a", ""] {
            let hash = fnv1a64(ns);
            let (start, end) = RangeId::of(hash).bounds();
            assert!(start <= hash && u128::from(hash) < end, "{ns}");
        }
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_selector_merges_neighbours_and_ors_the_rest() {
        let picked = [RangeId(0), RangeId(1), RangeId(63)];
        assert_eq!(
            shard_selector(&picked).as_deref(),
            Some(
                "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0800000000000000') || \
                 shardRange(object.metadata.namespace, '0xfc00000000000000', '0x10000000000000000')"
            )
        );
        assert_eq!(shard_selector(&[]), None);
    }
}
