//! Scale-out's keyspace, sans-IO: the ring of 64-bit FNV-1a hashes of a namespace cut into
//! [`RANGES`] fixed ranges, the `shardSelector` (KEP-5866) that asks the API server for some of
//! them, and the plan that spreads them over the replicas that hold range Leases.
//!
//! Each range has a Lease of its own, elected as leader election elects the manager's (an
//! [`crate::leader_election::Elector`] per range, so a replica stops writing for a range before
//! its Lease can expire). This module decides only *which* ranges a replica contends for: about
//! `RANGES / replicas` each, where the replicas are the holders of live range Leases and of the
//! live membership Leases (a replica that holds no range yet still counts). Hashing by namespace
//! keeps a Pod and its owner on one replica.

use std::collections::BTreeSet;

/// How many ranges the ring is cut into: enough that 1, 2, 3, 4, 8 or 16 replicas each get an
/// even or nearly even share, few enough that a replica renews its Leases cheaply.
pub const RANGES: u16 = 64;

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

/// What a replica sees of one range's Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeHolder {
    /// Nobody holds it, or its holder stopped renewing for a lease duration.
    Free,
    /// This holder renews it.
    Live(String),
}

/// What a replica should do about its ranges now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangePlan {
    /// Ranges to contend for (free ones; the Lease write decides).
    pub acquire: Vec<RangeId>,
    /// Ranges this replica holds and should release for a replica with fewer.
    pub release: Vec<RangeId>,
    /// The share each replica should hold at most.
    pub target: usize,
}

/// The plan for replica `me`, given every range's holder (indexed by range) and the replicas
/// whose membership Leases are live. It takes free ranges up to its share (`RANGES / replicas`
/// rounded up), lowest first, and gives back the highest of those above the floor share only
/// while another replica is below the floor, so a join moves about one share and a steady state
/// moves none.
pub fn plan(me: &str, holders: &[RangeHolder], members: &BTreeSet<String>) -> RangePlan {
    let mut replicas: BTreeSet<&str> = members.iter().map(String::as_str).collect();
    replicas.insert(me);
    for holder in holders {
        if let RangeHolder::Live(h) = holder {
            replicas.insert(h);
        }
    }
    let count = replicas.len().max(1);
    let target = holders.len().div_ceil(count);
    let held = |who: &str| {
        holders
            .iter()
            .filter(|h| matches!(h, RangeHolder::Live(x) if x == who))
            .count()
    };
    let mine: Vec<RangeId> = holders
        .iter()
        .enumerate()
        .filter(|(_, h)| matches!(h, RangeHolder::Live(x) if x == me))
        .map(|(i, _)| RangeId(i as u16))
        .collect();
    let mut result = RangePlan {
        target,
        ..RangePlan::default()
    };
    let free = holders
        .iter()
        .enumerate()
        .filter(|(_, h)| **h == RangeHolder::Free)
        .map(|(i, _)| RangeId(i as u16));
    result.acquire = free.take(target.saturating_sub(mine.len())).collect();
    // Replicas below the floor share, with not enough free to fill them: give back the excess
    // above the floor (the highest ranges first). Counting against the floor, not the target,
    // lets uneven shares (22, 21, 21 of 64) rest instead of passing a range round.
    let floor = holders.len() / count;
    let free_count = holders.iter().filter(|h| **h == RangeHolder::Free).count();
    let short: usize = replicas
        .iter()
        .filter(|r| **r != me)
        .map(|r| floor.saturating_sub(held(r)))
        .sum();
    if short > free_count && mine.len() > floor {
        let excess = (mine.len() - floor).min(short - free_count);
        result.release = mine.iter().rev().take(excess).copied().collect();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn all_free() -> Vec<RangeHolder> {
        vec![RangeHolder::Free; RANGES as usize]
    }

    /// Runs the plans of `replicas` in turn until nothing changes: releases free a range,
    /// acquisitions take it (the first asker wins, as a Lease write does).
    fn settle(holders: &mut [RangeHolder], replicas: &[&str]) -> usize {
        let alive = members(replicas);
        let mut moves = 0;
        for _ in 0..20 {
            let mut changed = false;
            for me in replicas {
                let p = plan(me, holders, &alive);
                for r in p.release {
                    holders[r.0 as usize] = RangeHolder::Free;
                    changed = true;
                }
                for r in p.acquire {
                    if holders[r.0 as usize] == RangeHolder::Free {
                        holders[r.0 as usize] = RangeHolder::Live(me.to_string());
                        moves += 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                return moves;
            }
        }
        panic!("the plans did not settle: {holders:?}");
    }

    fn share(holders: &[RangeHolder], who: &str) -> usize {
        holders
            .iter()
            .filter(|h| matches!(h, RangeHolder::Live(x) if x == who))
            .count()
    }

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

    #[test]
    fn one_replica_takes_every_range() {
        let mut holders = all_free();
        settle(&mut holders, &["a"]);
        assert_eq!(share(&holders, "a"), RANGES as usize);
    }

    #[test]
    fn a_replica_that_joins_gets_half_and_only_half_moves() {
        let mut holders = all_free();
        settle(&mut holders, &["a"]);
        let moves = settle(&mut holders, &["a", "b"]);
        assert_eq!(share(&holders, "a"), 32);
        assert_eq!(share(&holders, "b"), 32);
        assert_eq!(moves, 32, "a join moves one share");
        assert_eq!(
            settle(&mut holders, &["a", "b"]),
            0,
            "a steady state moves nothing"
        );
    }

    #[test]
    fn three_replicas_hold_about_a_third_each() {
        let mut holders = all_free();
        settle(&mut holders, &["a", "b", "c"]);
        for who in ["a", "b", "c"] {
            let n = share(&holders, who);
            assert!((21..=22).contains(&n), "{who}: {n}");
        }
        assert!(holders.iter().all(|h| *h != RangeHolder::Free));
    }

    #[test]
    fn the_ranges_of_a_replica_whose_leases_expired_go_to_the_others() {
        let mut holders = all_free();
        settle(&mut holders, &["a", "b", "c"]);
        // c stopped renewing: its Leases expire and its membership with them.
        for h in holders.iter_mut() {
            if *h == RangeHolder::Live("c".into()) {
                *h = RangeHolder::Free;
            }
        }
        settle(&mut holders, &["a", "b"]);
        assert_eq!(share(&holders, "a"), 32);
        assert_eq!(share(&holders, "b"), 32);
    }

    #[test]
    fn a_live_range_of_another_replica_is_never_asked_for() {
        let mut holders = all_free();
        settle(&mut holders, &["a", "b"]);
        let p = plan("c", &holders, &members(&["a", "b", "c"]));
        assert!(p.acquire.is_empty(), "nothing free: {p:?}");
        assert_eq!(p.target, 22);
    }
}
