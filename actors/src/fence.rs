//! The write fence: until when this process may write as leader, read by every writer right
//! before it sends. Set by the leader election loop; always open when election is off. Under
//! scale-out a write to a namespaced object is fenced by its namespace's range instead, each
//! range open until its own Lease's renew deadline (set by the range election loop).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use tidemark_engine::ranges::{RANGES, RangeId};

/// Until when writes may go out, on the monotonic clock.
#[derive(Debug)]
pub struct Fence {
    base: Instant,
    /// Nanoseconds after `base` at which the fence closes; 0 means closed.
    open_until_nanos: AtomicU64,
    always_open: AtomicBool,
    /// Under scale-out, per range: nanoseconds after `base` at which it closes (0: closed).
    ranges: Option<Box<[AtomicU64]>>,
}

impl Fence {
    /// A fence that never closes (leader election off).
    pub fn open() -> Self {
        Self {
            base: Instant::now(),
            open_until_nanos: AtomicU64::new(0),
            always_open: AtomicBool::new(true),
            ranges: None,
        }
    }

    /// This fence with every range closed: writes to namespaced objects go out only for the
    /// ranges [`open_range_until`](Self::open_range_until) opens. A fence that is always open
    /// stays so (fencing off).
    pub fn with_ranges(mut self) -> Self {
        self.ranges = Some((0..RANGES).map(|_| AtomicU64::new(0)).collect());
        self
    }

    /// A closed fence, opened only by [`open_until`](Self::open_until).
    pub fn closed() -> Self {
        Self {
            always_open: AtomicBool::new(false),
            ..Self::open()
        }
    }

    /// Writes may go out until `until`.
    pub fn open_until(&self, until: Instant) {
        self.open_until_nanos
            .store(self.nanos(until), Ordering::SeqCst);
    }

    fn nanos(&self, until: Instant) -> u64 {
        let nanos = until.saturating_duration_since(self.base).as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX).max(1)
    }

    /// Writes for `range` may go out until `until`.
    pub fn open_range_until(&self, range: RangeId, until: Instant) {
        if let Some(slot) = self.range_slot(range) {
            slot.store(self.nanos(until), Ordering::SeqCst);
        }
    }

    /// No write for `range` goes out from now on.
    pub fn close_range(&self, range: RangeId) {
        if let Some(slot) = self.range_slot(range) {
            slot.store(0, Ordering::SeqCst);
        }
    }

    fn range_slot(&self, range: RangeId) -> Option<&AtomicU64> {
        self.ranges.as_ref()?.get(usize::from(range.0))
    }

    /// Whether a write to an object of `namespace` (empty: cluster-scoped) may be sent at
    /// `now`: by its range under scale-out, by the leader's fence otherwise.
    pub fn allows_in(&self, namespace: &str, now: Instant) -> bool {
        if self.always_open.load(Ordering::SeqCst) {
            return true;
        }
        if namespace.is_empty() {
            return self.allows(now);
        }
        match self.range_slot(RangeId::of_namespace(namespace)) {
            Some(slot) => {
                let until = slot.load(Ordering::SeqCst);
                until != 0
                    && now.saturating_duration_since(self.base).as_nanos() < u128::from(until)
            }
            None => self.allows(now),
        }
    }

    /// No write goes out from now on.
    pub fn close(&self) {
        self.always_open.store(false, Ordering::SeqCst);
        self.open_until_nanos.store(0, Ordering::SeqCst);
    }

    /// Whether a write may be sent at `now`.
    pub fn allows(&self, now: Instant) -> bool {
        if self.always_open.load(Ordering::SeqCst) {
            return true;
        }
        let until = self.open_until_nanos.load(Ordering::SeqCst);
        until != 0 && now.saturating_duration_since(self.base).as_nanos() < u128::from(until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_closed_fence_opens_until_its_deadline_and_no_longer() {
        let fence = Fence::closed();
        let now = Instant::now();
        assert!(!fence.allows(now));
        fence.open_until(now + Duration::from_secs(10));
        assert!(fence.allows(now + Duration::from_secs(9)));
        assert!(!fence.allows(now + Duration::from_secs(10)));
        fence.close();
        assert!(!fence.allows(now));
    }

    #[test]
    fn under_scale_out_a_namespace_is_fenced_by_its_range_and_a_node_by_the_leader() {
        let fence = Fence::closed().with_ranges();
        let now = Instant::now();
        let team = RangeId::of_namespace("team-a");
        fence.open_range_until(team, now + Duration::from_secs(10));
        assert!(fence.allows_in("team-a", now));
        let elsewhere = (0..RANGES)
            .map(|i| format!("ns-{i}"))
            .find(|ns| RangeId::of_namespace(ns) != team)
            .expect("another range");
        assert!(!fence.allows_in(&elsewhere, now), "a range not held");
        assert!(!fence.allows_in("", now), "a Node needs the leader's fence");
        fence.open_until(now + Duration::from_secs(10));
        assert!(fence.allows_in("", now));
        fence.close_range(team);
        assert!(!fence.allows_in("team-a", now));
        assert!(
            Fence::open().with_ranges().allows_in("team-a", now),
            "fencing off"
        );
    }

    #[test]
    fn an_open_fence_allows_until_it_is_closed() {
        let fence = Fence::open();
        assert!(fence.allows(Instant::now() + Duration::from_secs(3600)));
        fence.close();
        assert!(!fence.allows(Instant::now()));
    }
}
