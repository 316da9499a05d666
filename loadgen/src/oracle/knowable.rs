//! A set's desired size as a controller could know it: the one now, and the ones it replaced
//! while those changes may still be on their way to the controller.
//!
//! A watch takes time to bring a change to a controller, even a healthy one: a decision made
//! on the previous spec a few milliseconds after the user changed it is a race no controller
//! can avoid (kube-controller-manager has it too). The oracle gives every change a delivery
//! allowance, far below the lags the faults inject, and judges a decision fair when it is
//! right against either size within it. With no allowance (the deterministic simulation,
//! whose races are scheduled, not timed) only the size now counts.

use std::time::{Duration, Instant};

/// The allowance the loadgen API server gives: a healthy watch on loopback, the manager's
/// routing and a reconcile take a few milliseconds; the faults the scenarios inject lag by
/// seconds.
pub const DELIVERY_ALLOWANCE: Duration = Duration::from_millis(100);

/// How many replaced sizes a set remembers: a user who changes a set faster than this within
/// one allowance is judged on the last ones only.
const REMEMBERED: usize = 4;

/// A desired size and, while they may not have reached the controllers yet, the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desired {
    /// The size now.
    pub now: i64,
    /// The sizes it replaced and when each was replaced, the latest first.
    was: [Option<(i64, Instant)>; REMEMBERED],
}

impl Desired {
    /// A set first seen with size `now`.
    pub fn new(now: i64) -> Self {
        Self {
            now,
            was: [None; REMEMBERED],
        }
    }

    /// The size becomes `next` at `at`; the size before is remembered for the allowance.
    pub fn change(self, next: i64, at: Instant) -> Self {
        if next == self.now {
            return self;
        }
        let mut was = [None; REMEMBERED];
        was[0] = Some((self.now, at));
        was[1..].copy_from_slice(&self.was[..REMEMBERED - 1]);
        Self { now: next, was }
    }

    /// The size of a set first seen (`known` is `None`) or written again at `at`.
    pub fn follow(known: Option<Self>, size: i64, at: Instant) -> Self {
        match known {
            Some(known) => known.change(size, at),
            None => Self::new(size),
        }
    }

    /// The smallest and largest size a controller may fairly have decided on at `at`: the size
    /// now and every size replaced within `allowance` before `at` (each was current until then).
    pub fn range(&self, allowance: Duration, at: Instant) -> (i64, i64) {
        self.was
            .iter()
            .flatten()
            .filter(|(_, since)| {
                !allowance.is_zero() && at.saturating_duration_since(*since) < allowance
            })
            .fold((self.now, self.now), |(lo, hi), (size, _)| {
                (lo.min(*size), hi.max(*size))
            })
    }

    /// How long ago the size changed, while within `allowance` of `at` (for the log line of an
    /// excused race).
    pub fn changed_within(&self, allowance: Duration, at: Instant) -> Option<Duration> {
        let (_, since) = self.was[0]?;
        let ago = at.saturating_duration_since(since);
        (!allowance.is_zero() && ago < allowance).then_some(ago)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWANCE: Duration = Duration::from_millis(100);

    #[test]
    fn a_size_changed_just_now_leaves_both_sizes_fair() {
        let t = Instant::now();
        let d = Desired::new(1).change(3, t);
        assert_eq!(d.range(ALLOWANCE, t + Duration::from_millis(5)), (1, 3));
    }

    #[test]
    fn a_size_changed_longer_ago_than_the_allowance_is_the_only_fair_one() {
        let t = Instant::now();
        let d = Desired::new(1).change(3, t);
        assert_eq!(d.range(ALLOWANCE, t + Duration::from_secs(1)), (3, 3));
    }

    #[test]
    fn without_an_allowance_only_the_size_now_is_fair() {
        let t = Instant::now();
        let d = Desired::new(5).change(2, t);
        assert_eq!(d.range(Duration::ZERO, t), (2, 2));
        assert_eq!(d.changed_within(Duration::ZERO, t), None);
    }

    #[test]
    fn every_size_replaced_within_the_allowance_stays_fair_not_only_the_last() {
        let t = Instant::now();
        let d = Desired::new(3)
            .change(4, t)
            .change(6, t + Duration::from_millis(40));
        assert_eq!(d.range(ALLOWANCE, t + Duration::from_millis(60)), (3, 6));
        assert_eq!(
            d.range(ALLOWANCE, t + Duration::from_millis(120)),
            (4, 6),
            "3 was replaced longer ago than the allowance"
        );
    }

    #[test]
    fn writing_the_same_size_again_keeps_the_earlier_change() {
        let t = Instant::now();
        let d = Desired::new(1)
            .change(3, t)
            .change(3, t + Duration::from_millis(50));
        assert_eq!(d.range(ALLOWANCE, t + Duration::from_millis(60)), (1, 3));
    }
}
