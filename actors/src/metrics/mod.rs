//! `/metrics` (Prometheus text, prometheus-client), `/healthz` and `/readyz`, served on
//! `--metrics-addr` from the I/O runtime ([`endpoints`]). Figures are collected from the shards
//! at most once a second, however many scrapes and probes ask ([`cache`]).

mod cache;
mod endpoints;
mod scale_out;
mod text_format;
mod upstream;

pub use endpoints::{router, scrape_serve_options, serve, serve_with};

use crate::manager::{ManagerStats, StatsSource};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tidemark_engine::Resource;

/// client-go's workqueue latency buckets: 10 ns to 10 s, by factors of ten.
const WORKQUEUE_BUCKETS: [f64; 10] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// Buckets for staleness durations (parked keys, cache lag): 1 ms to 2 min.
const STALENESS_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

/// The informer figures of one resource at a scrape.
#[derive(Clone, Debug)]
struct InformerFigures {
    resource: Resource,
    synced: bool,
    watermark: u64,
    events: u64,
    lists: u64,
    malformed: u64,
    stale_lists: u64,
    watch_bytes: u64,
    selector_fallback: bool,
    failure: Option<(u32, String)>,
}

#[derive(Debug, Default)]
struct Scrape {
    stats: Option<Arc<ManagerStats>>,
    informers: Vec<InformerFigures>,
    lease: String,
    ranges: Option<scale_out::RangeFigures>,
}

/// Encodes the last collected figures under the metric names operators' dashboards use.
#[derive(Debug, Default)]
struct TidemarkCollector {
    scrape: Mutex<Scrape>,
}

/// The two encodings every family here repeats, without exemplars.
trait EncodeFigures {
    fn count<V: EncodeCounterValue>(&mut self, value: &V) -> std::fmt::Result;
    /// A histogram in seconds from an HDR histogram in microseconds.
    fn seconds(&mut self, h: &Histogram<u64>, bounds: &[f64]) -> std::fmt::Result;
}

impl EncodeFigures for MetricEncoder<'_> {
    fn count<V: EncodeCounterValue>(&mut self, value: &V) -> std::fmt::Result {
        self.encode_counter::<NoLabelSet, _, u64>(value, None)
    }

    fn seconds(&mut self, h: &Histogram<u64>, bounds: &[f64]) -> std::fmt::Result {
        let (sum, count, buckets) = per_bucket_seconds(h, bounds);
        self.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }
}

/// The sum in seconds, the count, and the observations of each bucket alone (the encoder adds
/// them up), ending with `+Inf`: from an HDR histogram in microseconds and upper bounds in
/// seconds.
fn per_bucket_seconds(h: &Histogram<u64>, bounds: &[f64]) -> (f64, u64, Vec<(f64, u64)>) {
    let count = h.len();
    let sum = h.mean() * count as f64 / 1e6;
    let mut buckets = Vec::with_capacity(bounds.len() + 1);
    let mut below_previous = 0;
    for &le in bounds {
        let micros = (le * 1e6).floor() as u64;
        // HDR counts by equivalent ranges: clamp so the series never decreases nor passes the
        // count.
        let below = if micros == 0 {
            0
        } else {
            h.count_between(0, micros)
        }
        .clamp(below_previous, count);
        buckets.push((le, below - below_previous));
        below_previous = below;
    }
    buckets.push((f64::INFINITY, count - below_previous));
    (sum, count, buckets)
}

/// `tidemark_writes_total` by result, from the writers' counts of writes sent, failed, and
/// failed as conflicts (a subset of the failed).
fn write_results(sent: u64, failed: u64, conflicts: u64) -> [(&'static str, u64); 3] {
    let conflict = conflicts.min(failed);
    [
        ("success", sent.saturating_sub(failed)),
        ("conflict", conflict),
        ("error", failed - conflict),
    ]
}

/// Whether `controller` reads `resource`: only those get per-resource series, so a scrape has
/// no zeros for caches a controller never looks at. A controller the manager did not list
/// (none today) keeps every series.
fn reads(stats: &ManagerStats, controller: &str, resource: Resource) -> bool {
    stats
        .reads
        .iter()
        .find(|(name, _)| *name == controller)
        .is_none_or(|(_, r)| r.contains(&resource))
}

impl TidemarkCollector {
    fn encode_stats(
        stats: &ManagerStats,
        encoder: &mut DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        // client-go's workqueue families label the queue `name`; Tidemark's own, `controller`.
        macro_rules! family {
            ($name:expr, $help:expr, $ty:expr, |$c:ident, $m:ident| $body:expr) => {{
                let mut family = encoder.encode_descriptor($name, $help, None, $ty)?;
                let label = if $name.starts_with("workqueue_") {
                    "name"
                } else {
                    "controller"
                };
                for $c in &stats.controllers {
                    let name = [(label, $c.controller)];
                    let mut $m = family.encode_family(&name)?;
                    $body?;
                }
            }};
        }
        family!(
            "workqueue_depth",
            "Current depth of the workqueue",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&(c.depth as i64))
        );
        family!(
            "workqueue_adds",
            "Total number of adds handled by the workqueue",
            MetricType::Counter,
            |c, m| m.count(&c.queue.adds)
        );
        family!(
            "workqueue_retries",
            "Total number of retries handled by the workqueue",
            MetricType::Counter,
            |c, m| m.count(&c.queue.retries)
        );
        family!(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the workqueue before being requested",
            MetricType::Histogram,
            |c, m| m.seconds(&c.queue_latency_us, &WORKQUEUE_BUCKETS)
        );
        family!(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the workqueue takes (reconcile and its writes)",
            MetricType::Histogram,
            |c, m| m.seconds(&c.work_duration_us, &WORKQUEUE_BUCKETS)
        );
        family!(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&c.unfinished_work.as_secs_f64())
        );
        family!(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor been running",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&c.longest_running.as_secs_f64())
        );
        family!(
            "tidemark_unchanged_pod_events",
            "Pod events that queued nothing for the controller: nothing it reads of the Pod had changed",
            MetricType::Counter,
            |c, m| m.count(&c.unchanged_pod_events)
        );
        family!(
            "tidemark_parked_keys",
            "Keys parked until their cache catches up with their writes",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&(c.parked as i64))
        );
        family!(
            "tidemark_hot_key_skips_per_second",
            "Stale sync skips a second of the controller's most-skipped key lately (decaying, half-life 10 s); a warning log line names the key",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&c.hot_key.as_ref().map_or(0.0, |h| h.skips_per_second))
        );
        family!(
            "tidemark_hot_key_hot_seconds",
            "How long the controller's most-skipped key has been reported hot (0 while none is)",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&c.hot_key.as_ref().map_or(0.0, |h| h.hot_for.as_secs_f64()))
        );
        family!(
            "tidemark_hot_key_share",
            "The most-skipped key's share of the controller's stale sync skips lately (0 to 1)",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&c.hot_key_share())
        );
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_stale_sync_skips",
                "Reconciles skipped because the cache had not observed the key's own writes",
                None,
                MetricType::Counter,
            )?;
            for c in &stats.controllers {
                for (resource, n) in c.stale_sync_skips_by_resource.iter() {
                    if !reads(stats, c.controller, resource) {
                        continue;
                    }
                    let set = [
                        ("controller", c.controller),
                        ("group", resource.group()),
                        ("resource", resource.plural()),
                    ];
                    family.encode_family(&set)?.count(n)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_reconcile",
                "Reconciles by result",
                None,
                MetricType::Counter,
            )?;
            for c in &stats.controllers {
                let failed = c.reconcile_errors + c.plans_failed;
                for (result, n) in [
                    ("success", c.reconciles.saturating_sub(failed)),
                    ("error", failed),
                ] {
                    let set = [("controller", c.controller), ("result", result)];
                    family.encode_family(&set)?.count(&n)?;
                }
            }
        }
        family!(
            "tidemark_reconcile_duration_seconds",
            "Reconcile start to the last of its writes answered",
            MetricType::Histogram,
            |c, m| m.seconds(&c.work_duration_us, &WORKQUEUE_BUCKETS)
        );
        family!(
            "tidemark_wake_latency_seconds",
            "Watermark passing a parked key's target to its reconcile starting",
            MetricType::Histogram,
            |c, m| m.seconds(&c.wake_latency_us, &WORKQUEUE_BUCKETS)
        );
        family!(
            "tidemark_parked_duration_seconds",
            "How long keys stayed parked (stale cache, pending deletions, barriers) before they woke",
            MetricType::Histogram,
            |c, m| m.seconds(&c.parked_duration_us, &STALENESS_BUCKETS)
        );
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_cache_lag_seconds",
                "From a write acknowledged by the API server to the cache showing it",
                None,
                MetricType::Histogram,
            )?;
            for c in &stats.controllers {
                for (resource, h) in c.cache_lag_us.iter() {
                    if !reads(stats, c.controller, resource) {
                        continue;
                    }
                    let set = [
                        ("controller", c.controller),
                        ("group", resource.group()),
                        ("resource", resource.plural()),
                    ];
                    family.encode_family(&set)?.seconds(h, &STALENESS_BUCKETS)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_live_reads",
                "Live reads (barriers: one consistent read of the current revision) by result",
                None,
                MetricType::Counter,
            )?;
            for c in &stats.controllers {
                for (result, n) in [("success", c.live_reads_ok), ("error", c.live_reads_failed)] {
                    let set = [("controller", c.controller), ("result", result)];
                    family.encode_family(&set)?.count(&n)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_live_read_duration_seconds",
                "Barriers and live reads at the API server, sent (past the client's rate limit) to answered or failed",
                None,
                MetricType::Histogram,
            )?;
            let no_labels: [(&str, &str); 0] = [];
            upstream::encode_latency(
                &mut family.encode_family(&no_labels)?,
                &stats.live_read_latency,
            )?;
        }
        family!(
            "tidemark_reconcile_panics",
            "Reconciles that panicked: the shard caught each and retried its key with backoff",
            MetricType::Counter,
            |c, m| m.count(&c.reconcile_panics)
        );
        family!(
            "tidemark_destructive_held",
            "Destructive plans held back until their key was proven fresh",
            MetricType::Counter,
            |c, m| m.count(&c.destructive_held)
        );
        family!(
            "tidemark_writes_withdrawn",
            "Writes not sent: their plan was superseded while they waited for the client-side rate limit",
            MetricType::Counter,
            |c, m| m.count(&c.writes_withdrawn)
        );
        family!(
            "tidemark_proven_keys",
            "Keys whose destructive decisions are proven since start or leadership",
            MetricType::Gauge,
            |c, m| m.encode_gauge(&(c.proven_keys as i64))
        );
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_circuit_breaker_open",
                "1 while the live-read circuit breaker of the API group is open or half-open",
                None,
                MetricType::Gauge,
            )?;
            let mut groups: Vec<(&str, bool)> =
                Resource::all().map(|r| (r.group(), false)).collect();
            // One series per group: a group's resources are not neighbours in `ALL`.
            groups.sort_by_key(|(g, _)| *g);
            groups.dedup_by_key(|(g, _)| *g);
            for (group, open) in &stats.breakers_open {
                match groups.iter_mut().find(|(g, _)| g == group) {
                    Some(slot) => slot.1 = *open,
                    None => groups.push((group, *open)),
                }
            }
            for (group, open) in groups {
                family
                    .encode_family(&[("group", group)])?
                    .encode_gauge(&i64::from(open))?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_leader",
                "1 while this process acts as leader (always 1 without leader election)",
                None,
                MetricType::Gauge,
            )?;
            let enabled = if stats.leader_election {
                "true"
            } else {
                "false"
            };
            family
                .encode_family(&[("leader_election", enabled)])?
                .encode_gauge(&i64::from(stats.leader))?;
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_writes_fenced",
                "Writes not sent because this process was not (provably) leader",
                None,
                MetricType::Counter,
            )?;
            family
                .encode_family(&[("controller", "all")])?
                .count(&stats.writes_fenced)?;
        }
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_writes",
                "Writes sent to the API server, by result (conflict: refused with 409 or 404 because the object was not as the decision saw it)",
                None,
                MetricType::Counter,
            )?;
            for (result, n) in write_results(
                stats.writes_sent,
                stats.writes_failed,
                stats.writes_conflicted,
            ) {
                let set = [("result", result)];
                family.encode_family(&set)?.count(&n)?;
            }
        }
        Self::encode_shards(stats, encoder)
    }

    fn encode_shards(
        stats: &ManagerStats,
        encoder: &mut DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        {
            let mut family = encoder.encode_descriptor(
                "tidemark_shard_restarts",
                "Times a shard panicked and was replaced by a fresh one",
                None,
                MetricType::Counter,
            )?;
            for shard in &stats.shards {
                let id = shard.shard.to_string();
                family
                    .encode_family(&[("shard", id.as_str())])?
                    .count(&shard.restarts)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "tidemark_shard_down",
            "1 while a restarted shard waits for its caches to be listed again",
            None,
            MetricType::Gauge,
        )?;
        for shard in &stats.shards {
            let id = shard.shard.to_string();
            family
                .encode_family(&[("shard", id.as_str())])?
                .encode_gauge(&i64::from(shard.down.is_some()))?;
        }
        Ok(())
    }

    fn encode_informers(
        informers: &[InformerFigures],
        encoder: &mut DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        macro_rules! per_resource {
            ($name:expr, $help:expr, $ty:expr, |$i:ident, $m:ident| $body:expr) => {{
                let mut family = encoder.encode_descriptor($name, $help, None, $ty)?;
                for $i in informers {
                    let set = [
                        ("group", $i.resource.group()),
                        ("resource", $i.resource.plural()),
                    ];
                    let mut $m = family.encode_family(&set)?;
                    $body?;
                }
            }};
        }
        per_resource!(
            "tidemark_store_resource_version",
            "The last progress marker the shards have for the resource (LastStoreSyncResourceVersion)",
            MetricType::Gauge,
            |i, m| m.encode_gauge(&(i.watermark as i64))
        );
        per_resource!(
            "tidemark_informer_synced",
            "1 once the first consistent list is in every shard",
            MetricType::Gauge,
            |i, m| m.encode_gauge(&i64::from(i.synced))
        );
        per_resource!(
            "tidemark_watch_events",
            "Watch events delivered to the shards",
            MetricType::Counter,
            |i, m| m.count(&i.events)
        );
        per_resource!(
            "tidemark_watch_bytes",
            "Bytes of watch lines read (events and bookmarks)",
            MetricType::Counter,
            |i, m| m.count(&i.watch_bytes)
        );
        per_resource!(
            "tidemark_shard_selector_fallback",
            "1 when the API server ignored the shardSelector (KEP-5866 off) and this replica filters by range itself",
            MetricType::Gauge,
            |i, m| m.encode_gauge(&i64::from(i.selector_fallback))
        );
        per_resource!(
            "tidemark_lists",
            "Lists replaced into the shards (1 + relists)",
            MetricType::Counter,
            |i, m| m.count(&i.lists)
        );
        per_resource!(
            "tidemark_malformed_objects",
            "Objects that could not be decoded",
            MetricType::Counter,
            |i, m| m.count(&i.malformed)
        );
        per_resource!(
            "tidemark_stale_lists",
            "Lists refused because they were older than what the informer had seen",
            MetricType::Counter,
            |i, m| m.count(&i.stale_lists)
        );
        Ok(())
    }
}

impl Collector for TidemarkCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let scrape = self.scrape.lock();
        if let Some(stats) = &scrape.stats {
            Self::encode_stats(stats, &mut encoder)?;
            upstream::encode_stale_sync_skips(stats, &mut encoder)?;
            upstream::encode_leader(stats, &scrape.lease, &mut encoder)?;
            scale_out::encode_cached_objects(stats, &mut encoder)?;
        }
        if let Some(ranges) = &scrape.ranges {
            scale_out::encode_ranges(ranges, &mut encoder)?;
        }
        scale_out::encode_heap(&mut encoder)?;
        Self::encode_informers(&scrape.informers, &mut encoder)?;
        upstream::encode_store_resource_version(&scrape.informers, &mut encoder)?;
        upstream::encode_rest_client(&mut encoder)?;
        crate::process_metrics::encode(&mut encoder)
    }
}

/// The endpoint's state: where figures come from, the registry they are encoded with, and the
/// figures and scrape of the last second.
#[derive(Clone)]
pub struct MetricsState {
    source: StatsSource,
    collector: Arc<TidemarkCollector>,
    registry: Arc<Registry>,
    cache: Arc<cache::ScrapeCache>,
}

impl MetricsState {
    /// Metrics for the manager behind `source`.
    pub fn new(source: StatsSource) -> Self {
        let collector = Arc::new(TidemarkCollector::default());
        let mut registry = Registry::default();
        registry.register_collector(Box::new(collector.clone()));
        Self {
            source,
            collector,
            registry: Arc::new(registry),
            cache: Arc::default(),
        }
    }

    /// Collections from the shards and renders of the scrape so far (each at most once a
    /// second, whatever the number of requests).
    pub fn work_done(&self) -> (u64, u64) {
        self.cache.work_done()
    }

    fn informers(&self) -> Vec<InformerFigures> {
        self.source
            .informers()
            .iter()
            .map(|(resource, s)| InformerFigures {
                resource: *resource,
                synced: s.synced.load(Ordering::Relaxed),
                watermark: s.watermark.load(Ordering::Relaxed),
                events: s.events.load(Ordering::Relaxed),
                lists: s.lists.load(Ordering::Relaxed),
                malformed: s.malformed.load(Ordering::Relaxed),
                stale_lists: s.stale_lists.load(Ordering::Relaxed),
                watch_bytes: s.watch_bytes.load(Ordering::Relaxed),
                selector_fallback: s.selector_fallback.load(Ordering::Relaxed),
                failure: s.last_failure.lock().clone(),
            })
            .collect()
    }

    /// Renders `stats` (none: the shards did not answer) in the Prometheus text format.
    fn encode(&self, stats: Option<Arc<ManagerStats>>) -> Result<String, std::fmt::Error> {
        {
            let mut scrape = self.collector.scrape.lock();
            scrape.stats = stats;
            scrape.informers = self.informers();
            scrape.lease = self.source.leader().lease.clone();
            scrape.ranges = self.source.ranges().map(scale_out::RangeFigures::of);
        }
        let mut text = String::new();
        let encoded = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        self.collector.scrape.lock().stats = None;
        encoded.map(|()| text)
    }

    /// The figures of the last second, collected from the shards if they are older; `None`
    /// when the shards did not answer within [`HEALTH_TIMEOUT`].
    pub async fn stats(&self) -> Option<Arc<ManagerStats>> {
        self.cache.stats(&self.source).await
    }

    /// The scrape of the last second, rendered again if it is older.
    pub async fn render(&self) -> Result<bytes::Bytes, std::fmt::Error> {
        self.cache.scrape(self).await
    }
}

/// How long `/healthz`, `/readyz` and a scrape wait for every shard to answer.
pub const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::write_results;

    #[test]
    fn conflicts_are_counted_apart_from_the_errors_that_page() {
        assert_eq!(
            write_results(10, 4, 3),
            [("success", 6), ("conflict", 3), ("error", 1)]
        );
    }
}
