//! Stale-key wake latency in Tidemark's own queue, two strategies side by side on one thread in
//! real time. Keys are written one after another (every 50 us); each write's event reaches the
//! cache after a lag of 1 to 30 ms (pseudo-random, the same for both strategies), so the
//! watermark passes each key's target at a known instant. A key that finds its cache stale
//! either parks until the watermark passes its target (Tidemark), or fails and is requeued with
//! exponential backoff from 5 ms (upstream), re-checking at each retry. The latency is from the
//! instant the watermark passed the target to the reconcile that finds the key fresh.

use hdrhistogram::Histogram;
use std::time::{Duration, Instant};
use tidemark_engine::queue::{Outcome, ParkTarget, WorkQueue};
use tidemark_engine::{ObjectKey, Resource, ResourceVersion};

/// Which strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Park with the target; the watermark wakes it.
    Park,
    /// Requeue with the error backoff (5 ms doubling), as upstream controllers do.
    Backoff,
}

/// Percentiles reported for the plots.
pub const PERCENTILES: [f64; 10] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9];

fn lags(keys: u64) -> Vec<Duration> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..keys)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Duration::from_micros(1_000 + x % 29_000)
        })
        .collect()
}

/// Wake latencies (nanoseconds) of `keys` keys under `strategy`.
pub fn measure(keys: u64, strategy: Strategy) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .unwrap_or_else(|e| panic!("static histogram bounds: {e}"));
    let names: Vec<ObjectKey> = (0..keys)
        .map(|i| ObjectKey::new("bench", format!("key-{i}")))
        .collect();
    let write_every = Duration::from_micros(50);
    let lags = lags(keys);
    // The watermark passes version v (key v-1's write) once every earlier write is visible.
    let mut pass = Vec::with_capacity(keys as usize);
    let mut latest = Duration::ZERO;
    for (i, lag) in lags.iter().enumerate() {
        latest = latest.max(write_every * i as u32 + *lag);
        pass.push(latest);
    }
    let index_of = |k: &ObjectKey| -> usize {
        k.name()
            .strip_prefix("key-")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let mut q = WorkQueue::default();
    let mut fired = Vec::new();
    let mut written = 0usize;
    let mut watermark = 0usize; // versions 1..=watermark are visible
    let mut stale_once = vec![false; keys as usize];
    let mut done = 0usize;
    let start = Instant::now();
    while done < keys as usize {
        let now = Instant::now();
        let elapsed = now - start;
        while written < keys as usize && write_every * written as u32 <= elapsed {
            q.add(&names[written], now);
            written += 1;
        }
        let before = watermark;
        while watermark < keys as usize && pass[watermark] <= elapsed {
            watermark += 1;
        }
        if watermark > before
            && strategy == Strategy::Park
            && let Some(v) = ResourceVersion::new(watermark as u64)
        {
            q.watermark(Resource::Pods, v, now);
        }
        q.fire(now, &mut fired);
        fired.clear();
        while let Some(popped) = q.pop() {
            let i = index_of(&popped.key);
            let target = i + 1;
            let now = Instant::now();
            if watermark >= target {
                if stale_once[i] {
                    let passed = start + pass[i];
                    let _ =
                        h.record(now.saturating_duration_since(passed).as_nanos().max(1) as u64);
                }
                q.start(&popped.key);
                q.finish(&popped.key, Outcome::Done, now);
                done += 1;
                continue;
            }
            stale_once[i] = true;
            match strategy {
                Strategy::Park => {
                    if let Some(v) = ResourceVersion::new(target as u64) {
                        q.park(
                            &popped.key,
                            ParkTarget::Watermark {
                                resource: Resource::Pods,
                                version: v,
                            },
                            now,
                        );
                    }
                }
                Strategy::Backoff => {
                    q.start(&popped.key);
                    q.finish(&popped.key, Outcome::Failed, now);
                }
            }
        }
    }
    h
}

/// (percentile, microseconds) pairs of a histogram of nanoseconds.
pub fn distribution(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    PERCENTILES
        .iter()
        .map(|&p| (p, h.value_at_quantile(p / 100.0) as f64 / 1000.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_key_wakes_sooner_than_a_backed_off_one() {
        let park = measure(200, Strategy::Park);
        let backoff = measure(200, Strategy::Backoff);
        assert!(!park.is_empty() && !backoff.is_empty());
        assert!(park.value_at_quantile(0.5) < backoff.value_at_quantile(0.5));
    }
}
