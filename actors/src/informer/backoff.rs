//! The relist backoff of client-go's reflector (`wait.NewExponentialBackoffManager(800ms, 30s,
//! 2m, 2.0, 1.0)`): every relist, and every retried watch, waits a delay that starts at 800 ms
//! and doubles up to 30 s, plus up to as much again at random (jitter 1.0, so the last step is
//! 30 to 60 s); after 2 minutes without a backoff it starts over at 800 ms.

use std::time::{Duration, Instant};

/// The reflector's backoff, sans-IO: time and the random draw are passed in.
#[derive(Clone, Debug)]
pub struct ReflectorBackoff {
    initial: Duration,
    cap: Duration,
    reset_after: Duration,
    next: Duration,
    last_start: Option<Instant>,
}

impl Default for ReflectorBackoff {
    fn default() -> Self {
        Self::client_go()
    }
}

impl ReflectorBackoff {
    /// client-go's reflector: 800 ms doubling to 30 s, jitter 1.0, reset after 2 minutes.
    pub fn client_go() -> Self {
        Self::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            Duration::from_secs(120),
        )
    }

    /// A backoff from `initial` doubling up to `cap`, reset after `reset_after` of quiet.
    pub fn new(initial: Duration, cap: Duration, reset_after: Duration) -> Self {
        Self {
            initial,
            cap,
            reset_after,
            next: initial,
            last_start: None,
        }
    }

    /// The delay to wait now, with `unit` a uniform draw from `[0, 1)` for the jitter.
    pub fn next_delay(&mut self, now: Instant, unit: f64) -> Duration {
        let quiet = self
            .last_start
            .is_none_or(|last| now.saturating_duration_since(last) > self.reset_after);
        if quiet {
            self.next = self.initial;
        }
        self.last_start = Some(now);
        let base = self.next;
        self.next = base.saturating_mul(2).min(self.cap);
        base + base.mul_f64(unit.clamp(0.0, 1.0))
    }

    /// [`next_delay`](Self::next_delay) with a random jitter.
    pub fn next_jittered(&mut self, now: Instant) -> Duration {
        self.next_delay(now, fastrand::f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_800_ms_up_to_30_s_before_jitter() {
        let mut backoff = ReflectorBackoff::client_go();
        let now = Instant::now();
        let bases: Vec<u128> = (0..9)
            .map(|i| {
                backoff
                    .next_delay(now + Duration::from_secs(i), 0.0)
                    .as_millis()
            })
            .collect();
        assert_eq!(
            bases,
            [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
    }

    #[test]
    fn jitter_adds_up_to_as_much_again() {
        let mut backoff = ReflectorBackoff::client_go();
        let now = Instant::now();
        assert_eq!(backoff.next_delay(now, 0.999_999).as_millis(), 1599);
        let mut capped = ReflectorBackoff::client_go();
        for _ in 0..10 {
            capped.next_delay(now, 0.0);
        }
        let last = capped.next_delay(now, 0.5);
        assert_eq!(last, Duration::from_secs(45), "30 s plus half again");
    }

    #[test]
    fn two_quiet_minutes_start_it_over() {
        let mut backoff = ReflectorBackoff::client_go();
        let start = Instant::now();
        for _ in 0..5 {
            backoff.next_delay(start, 0.0);
        }
        let soon = backoff.next_delay(start + Duration::from_secs(60), 0.0);
        assert_eq!(
            soon,
            Duration::from_millis(25600),
            "a minute is not quiet enough"
        );
        let later = backoff.next_delay(start + Duration::from_secs(60 + 121), 0.0);
        assert_eq!(later, Duration::from_millis(800));
    }
}
