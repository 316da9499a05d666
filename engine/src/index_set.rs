//! A set of completion indexes as Indexed Jobs write it (`1,3-5`): sorted, disjoint, inclusive
//! ranges, so a hostile `0-4294967295` costs one pair, not four billion entries.

use std::collections::BTreeSet;
use std::fmt;

/// Sorted, disjoint, non-adjacent inclusive ranges of indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexSet(Vec<(u32, u32)>);

fn number(text: &str) -> Option<u32> {
    (!text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

impl IndexSet {
    /// Parses `1,3-5`; `None` if a part is not a number or a range `a-b` with `a <= b`, or if the
    /// parts are not in ascending order without overlap (as upstream writes them).
    pub fn parse(text: &str) -> Option<Self> {
        let mut set = IndexSet::default();
        if text.is_empty() {
            return Some(set);
        }
        for part in text.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(part)?;
                    (n, n)
                }
            };
            if a > b || set.0.last().is_some_and(|&(_, end)| a <= end) {
                return None;
            }
            set.push(a, b);
        }
        Some(set)
    }

    fn push(&mut self, a: u32, b: u32) {
        match self.0.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(a) => *end = b,
            _ => self.0.push((a, b)),
        }
    }

    /// Whether `i` is in the set.
    pub fn contains(&self, i: u32) -> bool {
        self.range_of(i).is_some()
    }

    fn range_of(&self, i: u32) -> Option<(u32, u32)> {
        let at = self.0.partition_point(|&(_, end)| end < i);
        self.0.get(at).copied().filter(|&(start, _)| start <= i)
    }

    /// How many indexes the set holds.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|&(a, b)| u64::from(b - a) + 1).sum()
    }

    /// The largest index, if any.
    pub fn max(&self) -> Option<u32> {
        self.0.last().map(|&(_, end)| end)
    }

    /// Adds `i`.
    pub fn insert(&mut self, i: u32) {
        if self.contains(i) {
            return;
        }
        let at = self.0.partition_point(|&(_, end)| end < i);
        self.0.insert(at, (i, i));
        // Merge with the neighbours it now touches.
        if at + 1 < self.0.len() && self.0[at].1.checked_add(1) == Some(self.0[at + 1].0) {
            self.0[at].1 = self.0[at + 1].1;
            self.0.remove(at + 1);
        }
        if at > 0 && self.0[at - 1].1.checked_add(1) == Some(self.0[at].0) {
            self.0[at - 1].1 = self.0[at].1;
            self.0.remove(at);
        }
    }

    /// The indexes of either set.
    pub fn union(&self, other: &IndexSet) -> IndexSet {
        let mut ranges: Vec<(u32, u32)> = self.0.iter().chain(&other.0).copied().collect();
        ranges.sort_unstable();
        let mut out = IndexSet::default();
        for (a, b) in ranges {
            match out.0.last_mut() {
                Some((_, end)) if a <= end.saturating_add(1) => *end = (*end).max(b),
                _ => out.0.push((a, b)),
            }
        }
        out
    }

    /// The indexes below `limit`, as upstream's `parseIndexesFromString` cuts a set to
    /// `completions`.
    pub fn below(&self, limit: u32) -> IndexSet {
        let ranges = self
            .0
            .iter()
            .filter(|&&(a, _)| a < limit)
            .map(|&(a, b)| (a, b.min(limit - 1)))
            .collect();
        IndexSet(ranges)
    }

    /// How many indexes the two sets share, found by walking both range lists once.
    pub fn overlap(&self, other: &IndexSet) -> u64 {
        let (mut i, mut j, mut shared) = (0, 0, 0u64);
        while let (Some(&(a1, b1)), Some(&(a2, b2))) = (self.0.get(i), other.0.get(j)) {
            let (lo, hi) = (a1.max(a2), b1.min(b2));
            if lo <= hi {
                shared += u64::from(hi - lo) + 1;
            }
            if b1 < b2 {
                i += 1;
            } else if b2 < b1 {
                j += 1;
            } else {
                i += 1;
                j += 1;
            }
        }
        shared
    }

    /// The first `take` indexes below `limit` that are neither in the set nor in `busy`, found
    /// without walking the ranges index by index.
    pub fn first_missing(&self, limit: u32, busy: &BTreeSet<u32>, take: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = 0u32;
        while i < limit && out.len() < take {
            if let Some((_, end)) = self.range_of(i) {
                match end.checked_add(1) {
                    Some(next) => i = next,
                    None => break,
                }
                continue;
            }
            if !busy.contains(&i) {
                out.push(i);
            }
            i += 1;
        }
        out
    }
}

impl fmt::Display for IndexSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, &(a, b)) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            // As upstream's `orderedIntervals.String`: two neighbours are listed, not ranged.
            match b - a {
                0 => write!(f, "{a}")?,
                1 => write!(f, "{a},{b}")?,
                _ => write!(f, "{a}-{b}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_round_trip_through_their_compact_form() {
        let set = IndexSet::parse("0,2-4,7").expect("valid");
        assert_eq!(set.count(), 5);
        assert!(set.contains(3) && !set.contains(5));
        assert_eq!(set.to_string(), "0,2-4,7");
        assert_eq!(IndexSet::parse("").map(|s| s.count()), Some(0));
    }

    #[test]
    fn malformed_or_unordered_indexes_are_refused() {
        for bad in [
            "x,1",
            "3-1",
            "1,1",
            "2,1",
            "1-3,2",
            ",",
            "1-",
            "-1",
            "+1",
            "4294967296",
        ] {
            assert_eq!(IndexSet::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_huge_range_is_one_pair_and_missing_indexes_skip_it() {
        let mut set = IndexSet::parse("0-4294967294").expect("valid");
        assert_eq!(set.count(), 4_294_967_295);
        assert_eq!(
            set.first_missing(u32::MAX, &BTreeSet::new(), 3),
            Vec::<u32>::new()
        );
        set = IndexSet::parse("0-2000000000").expect("valid");
        let busy: BTreeSet<u32> = [2_000_000_001].into();
        assert_eq!(
            set.first_missing(2_000_000_005, &busy, 2),
            vec![2_000_000_002, 2_000_000_003]
        );
    }

    #[test]
    fn union_cut_and_overlap_work_on_ranges() {
        let a = IndexSet::parse("0-2,6").expect("valid");
        let b = IndexSet::parse("3,5-9").expect("valid");
        assert_eq!(a.union(&b).to_string(), "0-3,5-9");
        assert_eq!(a.union(&b).below(7).to_string(), "0-3,5,6");
        assert_eq!(a.overlap(&b), 1);
        assert_eq!(IndexSet::parse("1-8").expect("valid").overlap(&b), 5);
    }

    #[test]
    fn inserting_merges_neighbouring_ranges() {
        let mut set = IndexSet::parse("1,3").expect("valid");
        set.insert(2);
        assert_eq!(set.to_string(), "1-3");
        set.insert(0);
        set.insert(u32::MAX);
        assert_eq!(set.to_string(), "0-3,4294967295");
        assert_eq!(set.max(), Some(u32::MAX));
    }
}
