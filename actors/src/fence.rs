//! The write fence: until when this process may write as leader, read by every writer right
//! before it sends. Set by the leader election loop; always open when election is off.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Until when writes may go out, on the monotonic clock.
#[derive(Debug)]
pub struct Fence {
    base: Instant,
    /// Nanoseconds after `base` at which the fence closes; 0 means closed.
    open_until_nanos: AtomicU64,
    always_open: AtomicBool,
}

impl Fence {
    /// A fence that never closes (leader election off).
    pub fn open() -> Self {
        Self {
            base: Instant::now(),
            open_until_nanos: AtomicU64::new(0),
            always_open: AtomicBool::new(true),
        }
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
        let nanos = until.saturating_duration_since(self.base).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
        self.open_until_nanos.store(nanos, Ordering::SeqCst);
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
    fn an_open_fence_allows_until_it_is_closed() {
        let fence = Fence::open();
        assert!(fence.allows(Instant::now() + Duration::from_secs(3600)));
        fence.close();
        assert!(!fence.allows(Instant::now()));
    }
}
