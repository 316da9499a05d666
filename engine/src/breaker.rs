//! A circuit breaker for live reads (barriers), one per API group: when reads fail above a
//! threshold it opens, destructive work that needs a read pauses instead of hammering a failing
//! API server, and it half-opens on a timer to let one trial read through. Time is passed in.

use std::time::{Duration, Instant};

/// Breaker settings.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive failures that open it.
    pub threshold: u32,
    /// How long it stays open the first time; doubled after each failed trial.
    pub open_for: Duration,
    /// The longest it stays open.
    pub max_open_for: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            threshold: 3,
            open_for: Duration::from_secs(2),
            max_open_for: Duration::from_secs(60),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant, open_for: Duration },
    HalfOpen { open_for: Duration },
}

/// A change of the breaker's state, to log and export.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BreakerChange {
    /// Reads failed too often: it opened for this long.
    Opened(Duration),
    /// A trial read succeeded: it closed.
    Closed,
}

/// The read was refused without being sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("circuit breaker open: live reads paused for {retry_in:?}")]
pub struct BreakerOpen {
    /// When a trial read will be let through.
    pub retry_in: Duration,
}

/// The breaker.
#[derive(Clone, Debug)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: State,
}

impl CircuitBreaker {
    /// A closed breaker.
    pub fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            state: State::Closed { failures: 0 },
        }
    }

    /// Asks to send one read at `now`. While open it is refused; once the open time is over one
    /// trial read is let through and the others wait for its outcome.
    pub fn try_acquire(&mut self, now: Instant) -> Result<(), BreakerOpen> {
        match self.state {
            State::Closed { .. } => Ok(()),
            State::Open { until, open_for } if now >= until => {
                self.state = State::HalfOpen { open_for };
                Ok(())
            }
            State::Open { until, .. } => Err(BreakerOpen {
                retry_in: until - now,
            }),
            State::HalfOpen { .. } => Err(BreakerOpen {
                retry_in: Duration::ZERO,
            }),
        }
    }

    /// The outcome of a read that [`try_acquire`](Self::try_acquire) let through.
    pub fn record(&mut self, success: bool, now: Instant) -> Option<BreakerChange> {
        match (self.state, success) {
            (State::Closed { .. }, true) => {
                self.state = State::Closed { failures: 0 };
                None
            }
            (State::Closed { failures }, false) => {
                let failures = failures + 1;
                if failures >= self.config.threshold {
                    self.open(self.config.open_for, now)
                } else {
                    self.state = State::Closed { failures };
                    None
                }
            }
            (State::HalfOpen { .. }, true) | (State::Open { .. }, true) => {
                self.state = State::Closed { failures: 0 };
                Some(BreakerChange::Closed)
            }
            (State::HalfOpen { open_for }, false) => {
                let next = (open_for * 2).min(self.config.max_open_for);
                self.open(next, now)
            }
            (State::Open { .. }, false) => None,
        }
    }

    fn open(&mut self, open_for: Duration, now: Instant) -> Option<BreakerChange> {
        self.state = State::Open {
            until: now + open_for,
            open_for,
        };
        Some(BreakerChange::Opened(open_for))
    }

    /// Whether it is open or half-open (reads not flowing freely).
    pub fn is_open(&self) -> bool {
        !matches!(self.state, State::Closed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig::default())
    }

    #[test]
    fn it_opens_after_the_threshold_of_consecutive_failures() {
        let now = Instant::now();
        let mut b = breaker();
        assert_eq!(b.record(false, now), None);
        assert_eq!(b.record(true, now), None, "a success resets the count");
        assert_eq!(b.record(false, now), None);
        assert_eq!(b.record(false, now), None);
        assert_eq!(
            b.record(false, now),
            Some(BreakerChange::Opened(Duration::from_secs(2)))
        );
        assert!(b.is_open());
        assert!(b.try_acquire(now + Duration::from_secs(1)).is_err());
    }

    #[test]
    fn it_half_opens_on_its_timer_and_lets_one_trial_through() {
        let now = Instant::now();
        let mut b = breaker();
        for _ in 0..3 {
            b.record(false, now);
        }
        let later = now + Duration::from_secs(2);
        assert!(b.try_acquire(later).is_ok(), "the trial read");
        assert!(b.try_acquire(later).is_err(), "only one trial at a time");
        assert_eq!(b.record(true, later), Some(BreakerChange::Closed));
        assert!(!b.is_open());
        assert!(b.try_acquire(later).is_ok());
    }

    #[test]
    fn a_failed_trial_reopens_for_twice_as_long_up_to_the_cap() {
        let mut now = Instant::now();
        let mut b = breaker();
        for _ in 0..3 {
            b.record(false, now);
        }
        let mut open_for = Duration::from_secs(2);
        for _ in 0..8 {
            now += open_for;
            assert!(b.try_acquire(now).is_ok());
            let Some(BreakerChange::Opened(next)) = b.record(false, now) else {
                panic!("a failed trial reopens");
            };
            assert!(next == (open_for * 2).min(Duration::from_secs(60)));
            open_for = next;
        }
        assert_eq!(open_for, Duration::from_secs(60));
    }
}
