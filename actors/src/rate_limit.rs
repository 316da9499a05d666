//! Client-side rate limiting as client-go's token bucket does it (`--kube-api-qps`/`-burst`).

use parking_lot::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A token bucket: `burst` tokens, refilled at `qps` per second. Waiters are served in the order
/// they reserve, because each reservation moves the bucket's debt forward.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket. A `qps` of 0 or less disables limiting.
    pub fn new(qps: f32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps: f64::from(qps),
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// How long the caller must wait for its token; the token is taken now.
    pub fn reserve(&self) -> Duration {
        if self.qps <= 0.0 {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        let (tokens, last) = *state;
        let refilled =
            (tokens + now.saturating_duration_since(last).as_secs_f64() * self.qps).min(self.burst);
        let left = refilled - 1.0;
        *state = (left, now);
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.qps)
        }
    }

    /// Waits for a token.
    pub async fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn burst_is_free_and_then_qps_paces_requests() {
        let bucket = TokenBucket::new(20.0, 30);
        for _ in 0..30 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        let waits: Vec<_> = (0..3).map(|_| bucket.reserve()).collect();
        assert_eq!(waits[0], Duration::from_millis(50));
        assert_eq!(waits[2], Duration::from_millis(150));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(bucket.reserve(), Duration::ZERO, "refilled after idling");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_means_unlimited() {
        let bucket = TokenBucket::new(0.0, 1);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
    }
}
