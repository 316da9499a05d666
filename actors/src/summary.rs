//! The run summary `tidemark run` prints and writes with `--summary-json`.

use serde::Serialize;

/// One controller's part of a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ControllerSummary {
    /// The controller.
    pub controller: String,
    /// Reconciles run.
    pub reconciles: u64,
    /// Reconciles skipped on a stale cache.
    pub stale_sync_skips: u64,
    /// Writes acknowledged.
    pub writes: u64,
    /// Live (barrier) reads.
    pub live_reads: u64,
    /// Destructive plans held for proof.
    pub destructive_held: u64,
    /// Keys parked at the end.
    pub parked_at_end: usize,
}

/// What a run did. `violations` counts the oracle's findings (embedded mode only).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Seconds the manager ran.
    pub duration_seconds: f64,
    /// Reconciles run, all controllers.
    pub reconciles: u64,
    /// Reconciles skipped because the cache had not seen the key's own writes.
    pub stale_sync_skips: u64,
    /// Reconciles run on a cache known to be stale (protection off).
    pub stale_reconciles: u64,
    /// Writes the manager sent.
    pub writes: u64,
    /// Writes that failed.
    pub write_failures: u64,
    /// Parked keys woken by a watermark.
    pub wakes: u64,
    /// Watermark-to-reconcile latency of woken keys, p99, microseconds.
    pub wake_p99_us: u64,
    /// Keys parked at the end.
    pub parked_at_end: usize,
    /// Invariant violations the oracle found.
    pub violations: usize,
    /// The first violations, described.
    pub violation_examples: Vec<String>,
    /// Every ReplicaSet had its desired Pods and status at the end.
    pub converged: bool,
    /// Whether stale-cache protection was on.
    pub consistency: bool,
    /// Live (barrier) reads answered or failed.
    pub live_reads: u64,
    /// Destructive plans held until their key was proven fresh.
    pub destructive_held: u64,
    /// Writes refused by the leader fence.
    pub writes_fenced: u64,
    /// Writes still unanswered when the process stopped (a graceful stop waits for them).
    pub unanswered_at_exit: u64,
    /// The Lease was released at a graceful stop.
    pub released_lease: bool,
    /// Per controller.
    pub controllers: Vec<ControllerSummary>,
}

impl Summary {
    /// The summary as a human reads it: the totals, then one line per controller.
    pub fn render(&self) -> String {
        let mut text = self.totals();
        for c in &self.controllers {
            text.push_str(&format!(
                "\n  {:<14} reconciles={} stale_sync_skips={} writes={} live_reads={} destructive_held={} parked={}",
                c.controller, c.reconciles, c.stale_sync_skips, c.writes, c.live_reads, c.destructive_held, c.parked_at_end
            ));
        }
        text
    }

    fn totals(&self) -> String {
        format!(
            "tidemark summary: {:.1}s, reconciles={} stale_sync_skips={} stale_reconciles={} writes={} (failed {}) \
             wakes={} wake_p99={}us parked={} live_reads={} destructive_held={} fenced={} violations={} converged={} consistency={}",
            self.duration_seconds,
            self.reconciles,
            self.stale_sync_skips,
            self.stale_reconciles,
            self.writes,
            self.write_failures,
            self.wakes,
            self.wake_p99_us,
            self.parked_at_end,
            self.live_reads,
            self.destructive_held,
            self.writes_fenced,
            self.violations,
            self.converged,
            self.consistency
        )
    }
}
