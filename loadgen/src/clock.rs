//! The server's clocks: the system's, or virtual ones a thread sets (the deterministic simulation
//! runs the store on virtual time), for the timestamps it writes and the oracle's monotonic reads.

thread_local! {
    /// A wall clock this thread's writes and the oracle's records stamp instead of the
    /// system's (Unix microseconds): the deterministic simulation (`sim/`) runs the store on
    /// virtual time.
    static WALL_CLOCK: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
    /// A monotonic clock the oracle reads on this thread instead of the system's, for the
    /// same reason.
    static MONOTONIC_CLOCK: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Makes the oracle on this thread read `now` as the monotonic time (`None`: the system's).
pub fn set_monotonic_clock(now: Option<std::time::Instant>) {
    MONOTONIC_CLOCK.with(|c| c.set(now));
}

/// The monotonic time as the oracle reads it: the system's, or the one
/// [`set_monotonic_clock`] set.
pub fn monotonic_now() -> std::time::Instant {
    MONOTONIC_CLOCK
        .with(std::cell::Cell::get)
        .unwrap_or_else(std::time::Instant::now)
}

/// Stamps timestamps written on this thread with `unix_secs` instead of the system clock
/// (`None`: the system clock again). For a simulation that runs the store on virtual time, so
/// that decisions reading timestamps (a Pod's age, how long it has been ready) replay exactly.
pub fn set_wall_clock(unix_secs: Option<i64>) {
    set_wall_clock_micros(unix_secs.map(|s| s.saturating_mul(1_000_000)));
}

/// [`set_wall_clock`] to the microsecond: the oracle's commit records read it too, so that
/// judgements on how long ago something happened (a node Lease's renewal) follow virtual time.
pub fn set_wall_clock_micros(unix_micros: Option<i64>) {
    WALL_CLOCK.with(|c| c.set(unix_micros));
}

/// Now, as timestamps are written: the system clock, or the one [`set_wall_clock`] set.
pub fn now_timestamp() -> jiff::Timestamp {
    WALL_CLOCK
        .with(std::cell::Cell::get)
        .and_then(|micros| jiff::Timestamp::from_microsecond(micros).ok())
        .unwrap_or_else(jiff::Timestamp::now)
}

/// The current UTC time as an RFC 3339 timestamp with seconds precision, e.g. `2026-01-01T00:00:00Z`.
pub fn now_rfc3339() -> String {
    now_timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The wall clock in microseconds since the Unix epoch, as the oracle stamps commits: the
/// system's (it orders a run's records against its managers' logs), or the virtual one a
/// simulation set.
pub fn wall_micros() -> u64 {
    if let Some(micros) = WALL_CLOCK.with(std::cell::Cell::get) {
        return u64::try_from(micros).unwrap_or(0);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z'));
    }

    #[test]
    fn a_thread_reads_the_wall_clock_it_set_until_it_clears_it() {
        set_wall_clock(Some(1_700_000_000));
        assert_eq!(now_rfc3339(), "2023-11-14T22:13:20Z");
        set_wall_clock(None);
        assert_ne!(now_rfc3339(), "2023-11-14T22:13:20Z");
    }
}
