//! The virtual clock: a fixed base `Instant` plus a virtual offset, and a wall clock that starts
//! at a fixed date, so nothing a run decides depends on when or how fast it runs.

use std::time::{Duration, Instant};

/// 2026-01-01T00:00:00Z: the wall clock every run starts at.
pub const WALL_START_UNIX: i64 = 1_767_225_600;

/// Time as the simulated process and the simulated server see it.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    base: Instant,
    offset: Duration,
}

impl VirtualClock {
    /// A clock at offset zero.
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            offset: Duration::ZERO,
        }
    }

    /// Time since the run began.
    pub fn elapsed(&self) -> Duration {
        self.offset
    }

    /// Moves the clock to `offset`; never backwards.
    pub fn advance_to(&mut self, offset: Duration) {
        self.offset = self.offset.max(offset);
        loadgen::clock::set_wall_clock_micros(Some(self.unix_micros()));
        loadgen::clock::set_monotonic_clock(Some(self.now()));
    }

    /// The server's monotonic reading (the oracle's), and a process's whose clock keeps time.
    pub fn now(&self) -> Instant {
        self.base + self.offset
    }

    /// The monotonic reading of a process started at `started` whose clock runs at `rate`
    /// (1.0: in step with the server's; 0.95: 5% slow).
    pub fn process_now(&self, started: Duration, rate: f64) -> Instant {
        let run = self.offset.saturating_sub(started).mul_f64(rate);
        self.base + started + run
    }

    /// The wall clock in Unix microseconds.
    pub fn unix_micros(&self) -> i64 {
        WALL_START_UNIX * 1_000_000 + self.offset.as_micros() as i64
    }

    /// The wall clock in Unix seconds, for the engine's `Context` and the store's timestamps.
    pub fn unix_secs(&self) -> i64 {
        WALL_START_UNIX + self.offset.as_secs() as i64
    }
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Puts the store's timestamps back on the system clock when a run ends (the thread may run
/// other tests afterwards).
pub struct WallClockGuard;

impl Drop for WallClockGuard {
    fn drop(&mut self) {
        loadgen::clock::set_wall_clock(None);
        loadgen::clock::set_monotonic_clock(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_clock_runs_at_its_rate_from_its_start_and_never_goes_back() {
        let mut clock = VirtualClock::new();
        let started = Duration::from_secs(10);
        clock.advance_to(started);
        let at_start = clock.process_now(started, 0.98);
        assert_eq!(at_start, clock.now(), "in step when it starts");
        clock.advance_to(Duration::from_secs(20));
        let later = clock.process_now(started, 0.98);
        assert_eq!(later - at_start, Duration::from_millis(9_800));
        clock.advance_to(Duration::from_secs(15));
        assert_eq!(
            clock.process_now(started, 0.98),
            later,
            "virtual time never goes back"
        );
        drop(WallClockGuard);
    }
}
