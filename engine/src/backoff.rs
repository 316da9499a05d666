//! Capped exponential backoff, as client-go's `ItemExponentialFailureRateLimiter` computes it.

use std::time::Duration;

/// `base * 2^attempt`, never more than `cap`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay.
    pub base: Duration,
    /// The largest delay.
    pub cap: Duration,
}

impl Backoff {
    /// The error backoff of kube-controller-manager's workqueues: 5 ms doubling to 1000 s.
    pub const ERRORS: Backoff = Backoff {
        base: Duration::from_millis(5),
        cap: Duration::from_secs(1000),
    };

    /// The safety timer of a parked key: a parked key wakes on the watermark, this only catches a
    /// watermark that stopped moving (no bookmarks, a broken watch).
    pub const PARKED: Backoff = Backoff {
        base: Duration::from_secs(5),
        cap: Duration::from_secs(60),
    };

    /// The delay before attempt number `attempt` (0-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_and_stop_at_the_cap() {
        let b = Backoff::ERRORS;
        assert_eq!(b.delay(0), Duration::from_millis(5));
        assert_eq!(b.delay(1), Duration::from_millis(10));
        assert_eq!(b.delay(10), Duration::from_millis(5120));
        assert_eq!(b.delay(40), Duration::from_secs(1000));
        assert_eq!(Backoff::PARKED.delay(4), Duration::from_secs(60));
    }
}
