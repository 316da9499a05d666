//! Counters and latency histograms a shard keeps per controller; the runtime exports them.

use crate::hot_keys::HotKey;
use crate::queue::QueueStats;
use crate::resource::{PerResource, Resource};
use hdrhistogram::Histogram;
use std::time::Duration;

/// One controller's figures in one shard.
#[derive(Clone, Debug)]
pub struct ControllerStats {
    /// The controller.
    pub controller: &'static str,
    /// Reconciles run.
    pub reconciles: u64,
    /// Pod events that queued nothing for this controller: nothing it reads had changed.
    pub unchanged_pod_events: u64,
    /// Reconciles that returned an error.
    pub reconcile_errors: u64,
    /// Reconciles that panicked (caught by the shard: counted in `reconcile_errors` too).
    pub reconcile_panics: u64,
    /// Reconciles that took no action because an object they read is malformed
    /// (`tidemark_malformed_skips_total`).
    pub malformed_skips: u64,
    /// Reconciles skipped because the cache had not caught up (`stale_sync_skips_total`).
    pub stale_sync_skips: u64,
    /// The same, by the resource whose cache was behind (pending deletions count as Pods).
    pub stale_sync_skips_by_resource: PerResource<u64>,
    /// Reconciles whose plan of writes failed part-way.
    pub plans_failed: u64,
    /// Reconciles run on a cache known to be stale, because the gate is off.
    pub stale_reconciles: u64,
    /// Gate checks that met a non-comparable version and failed open.
    pub unknown_freshness: u64,
    /// Writes that succeeded.
    pub writes: u64,
    /// Writes that failed.
    pub write_failures: u64,
    /// Writes withdrawn before they were sent: their plan was superseded while they waited
    /// for the client-side rate limit (`tidemark_writes_withdrawn_total`).
    pub writes_withdrawn: u64,
    /// Probes asked for by parked keys whose safety timer ran out.
    pub probes: u64,
    /// Starvation reports.
    pub starving: u64,
    /// Queue counters.
    pub queue: QueueStats,
    /// Keys ready now.
    pub depth: usize,
    /// Keys parked now.
    pub parked: usize,
    /// Keys reconciling now (their writes in flight).
    pub in_flight: usize,
    /// Keys with a version-map record.
    pub tracked_keys: usize,
    /// Watermark-to-reconcile latency of woken keys, in microseconds.
    pub wake_latency_us: Histogram<u64>,
    /// Ready-to-reconcile latency of every key, in microseconds.
    pub queue_latency_us: Histogram<u64>,
    /// Reconcile start to the last write answered, in microseconds (`workqueue_work_duration`).
    pub work_duration_us: Histogram<u64>,
    /// Reconciles whose destructive plan was held back for a barrier (the key was unproven).
    pub destructive_held: u64,
    /// Reconciles that waited for a barrier because a write of the key had an unknown outcome
    /// or was refused with a conflict.
    pub unknown_outcome_barriers: u64,
    /// Destructive and creating decisions that waited for a live read because a cache they read was known
    /// to lag.
    pub lag_live_reads: u64,
    /// Syncs skipped because the key's expected creates or deletes were not yet observed
    /// (the upstream baselines' `ControllerExpectations`).
    pub expectation_skips: u64,
    /// Barrier reads answered, counted for each controller that had keys waiting on them.
    pub live_reads_ok: u64,
    /// Barrier reads that failed, likewise.
    pub live_reads_failed: u64,
    /// Keys whose destructive decisions are proven now.
    pub proven_keys: usize,
    /// Keys waiting for a barrier now.
    pub awaiting_barrier: usize,
    /// How long keys stayed parked, in microseconds (`tidemark_parked_duration_seconds`).
    pub parked_duration_us: Histogram<u64>,
    /// From a write's acknowledgement to the cache showing it, per resource, in microseconds
    /// (`tidemark_cache_lag_seconds`).
    pub cache_lag_us: PerResource<Histogram<u64>>,
    /// Sum of how long the reconciles in flight have run (`workqueue_unfinished_work_seconds`).
    pub unfinished_work: Duration,
    /// The longest-running reconcile in flight (`workqueue_longest_running_processor_seconds`).
    pub longest_running: Duration,
    /// Stale sync skips a second lately, every key together (decaying, see [`crate::hot_keys`]).
    pub skips_per_second: f64,
    /// The key skipped most lately, and its own rate.
    pub hot_key: Option<HotKey>,
}

fn histogram() -> Histogram<u64> {
    // Three significant digits from 1 us to an hour; the bounds are constants, so this holds.
    Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable!()))
}

impl ControllerStats {
    /// Empty figures for `controller`.
    pub fn new(controller: &'static str) -> Self {
        Self {
            controller,
            reconciles: 0,
            unchanged_pod_events: 0,
            reconcile_errors: 0,
            reconcile_panics: 0,
            malformed_skips: 0,
            stale_sync_skips: 0,
            stale_sync_skips_by_resource: PerResource::default(),
            plans_failed: 0,
            stale_reconciles: 0,
            unknown_freshness: 0,
            writes: 0,
            write_failures: 0,
            writes_withdrawn: 0,
            probes: 0,
            starving: 0,
            queue: QueueStats::default(),
            depth: 0,
            parked: 0,
            in_flight: 0,
            tracked_keys: 0,
            wake_latency_us: histogram(),
            queue_latency_us: histogram(),
            work_duration_us: histogram(),
            destructive_held: 0,
            unknown_outcome_barriers: 0,
            lag_live_reads: 0,
            expectation_skips: 0,
            live_reads_ok: 0,
            live_reads_failed: 0,
            proven_keys: 0,
            awaiting_barrier: 0,
            parked_duration_us: histogram(),
            cache_lag_us: PerResource::filled(histogram()),
            unfinished_work: Duration::ZERO,
            longest_running: Duration::ZERO,
            skips_per_second: 0.0,
            hot_key: None,
        }
    }

    pub(crate) fn record_wake(&mut self, latency: Duration) {
        self.wake_latency_us
            .saturating_record(latency.as_micros().max(1) as u64);
    }

    pub(crate) fn record_work(&mut self, duration: Duration) {
        self.work_duration_us
            .saturating_record(duration.as_micros().max(1) as u64);
    }

    pub(crate) fn record_parked(&mut self, duration: Duration) {
        self.parked_duration_us
            .saturating_record(duration.as_micros().max(1) as u64);
    }

    pub(crate) fn record_cache_lag(&mut self, resource: Resource, lag: Duration) {
        self.cache_lag_us
            .get_mut(resource)
            .saturating_record(lag.as_micros().max(1) as u64);
    }

    pub(crate) fn record_queue_latency(&mut self, latency: Duration) {
        self.queue_latency_us
            .saturating_record(latency.as_micros().max(1) as u64);
    }

    /// Adds `other`'s figures (from another shard) to these.
    pub fn merge(&mut self, other: &ControllerStats) {
        self.reconciles += other.reconciles;
        self.unchanged_pod_events += other.unchanged_pod_events;
        self.reconcile_errors += other.reconcile_errors;
        self.reconcile_panics += other.reconcile_panics;
        self.stale_sync_skips += other.stale_sync_skips;
        for (resource, n) in other.stale_sync_skips_by_resource.iter() {
            *self.stale_sync_skips_by_resource.get_mut(resource) += n;
        }
        self.plans_failed += other.plans_failed;
        self.unfinished_work += other.unfinished_work;
        self.longest_running = self.longest_running.max(other.longest_running);
        self.stale_reconciles += other.stale_reconciles;
        self.unknown_freshness += other.unknown_freshness;
        self.writes += other.writes;
        self.write_failures += other.write_failures;
        self.writes_withdrawn += other.writes_withdrawn;
        self.probes += other.probes;
        self.starving += other.starving;
        self.queue.adds += other.queue.adds;
        self.queue.retries += other.queue.retries;
        self.queue.parks += other.queue.parks;
        self.queue.wakes += other.queue.wakes;
        self.queue.park_timeouts += other.queue.park_timeouts;
        self.depth += other.depth;
        self.parked += other.parked;
        self.in_flight += other.in_flight;
        self.tracked_keys += other.tracked_keys;
        let _ = self.wake_latency_us.add(&other.wake_latency_us);
        let _ = self.queue_latency_us.add(&other.queue_latency_us);
        let _ = self.work_duration_us.add(&other.work_duration_us);
        self.destructive_held += other.destructive_held;
        self.unknown_outcome_barriers += other.unknown_outcome_barriers;
        self.lag_live_reads += other.lag_live_reads;
        self.expectation_skips += other.expectation_skips;
        self.live_reads_ok += other.live_reads_ok;
        self.live_reads_failed += other.live_reads_failed;
        self.proven_keys += other.proven_keys;
        self.awaiting_barrier += other.awaiting_barrier;
        let _ = self.parked_duration_us.add(&other.parked_duration_us);
        for (resource, h) in other.cache_lag_us.iter() {
            let _ = self.cache_lag_us.get_mut(resource).add(h);
        }
        self.skips_per_second += other.skips_per_second;
        // Keys live in one shard each: the hottest of all is the hottest of the hottest.
        if let Some(theirs) = &other.hot_key
            && self
                .hot_key
                .as_ref()
                .is_none_or(|ours| theirs.skips_per_second > ours.skips_per_second)
        {
            self.hot_key = Some(theirs.clone());
        }
    }

    /// The hot key's share of the controller's skips lately (0 when none were skipped).
    pub fn hot_key_share(&self) -> f64 {
        match &self.hot_key {
            Some(hot) if self.skips_per_second > 0.0 => {
                (hot.skips_per_second / self.skips_per_second).min(1.0)
            }
            _ => 0.0,
        }
    }
}
