//! Which ranges a replica contends for: about `RANGES / replicas`, moving as few as a join or
//! a leave needs.

use crate::ranges::RangeId;
use std::collections::BTreeSet;

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
    use crate::ranges::RANGES;

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
