//! A set's desired size as a controller could know it: the one now, and the one it replaced
//! while that change may still be on its way to the controller.
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

/// A desired size and, while it may not have reached the controllers yet, the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desired {
    /// The size now.
    pub now: i64,
    /// The size it replaced and when.
    was: Option<(i64, Instant)>,
}

impl Desired {
    /// A set first seen with size `now`.
    pub fn new(now: i64) -> Self {
        Self { now, was: None }
    }

    /// The size becomes `next` at `at`; the size before is remembered for the allowance.
    pub fn change(self, next: i64, at: Instant) -> Self {
        if next == self.now {
            return self;
        }
        Self {
            now: next,
            was: Some((self.now, at)),
        }
    }

    /// The size of a set first seen (`known` is `None`) or written again at `at`.
    pub fn follow(known: Option<Self>, size: i64, at: Instant) -> Self {
        match known {
            Some(known) => known.change(size, at),
            None => Self::new(size),
        }
    }

    /// The smallest and largest size a controller may fairly have decided on at `at`.
    pub fn range(&self, allowance: Duration, at: Instant) -> (i64, i64) {
        match (self.was, self.changed_within(allowance, at)) {
            (Some((before, _)), Some(_)) => (before.min(self.now), before.max(self.now)),
            _ => (self.now, self.now),
        }
    }

    /// How long ago the size changed, while within `allowance` of `at` (for the log line of an
    /// excused race).
    pub fn changed_within(&self, allowance: Duration, at: Instant) -> Option<Duration> {
        let (_, since) = self.was?;
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
    fn writing_the_same_size_again_keeps_the_earlier_change() {
        let t = Instant::now();
        let d = Desired::new(1)
            .change(3, t)
            .change(3, t + Duration::from_millis(50));
        assert_eq!(d.range(ALLOWANCE, t + Duration::from_millis(60)), (1, 3));
    }
}
