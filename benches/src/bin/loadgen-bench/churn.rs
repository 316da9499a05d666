//! Steady churn: Pod status updates (a container restart each) at increasing offered rates,
//! until the pipeline falls behind. A sampler thread watches the side's watermark (the highest
//! resourceVersion whose event is in the cache) and records every event's event-to-cache latency
//! (from just before the server publishes it); resolution is the sampler's period, ~0.1 ms.

use crate::seed::Seed;
use hdrhistogram::Histogram;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tidemark_loadgen::bench::schema::ChurnStep;
use tidemark_loadgen::bench::server::BenchServer;

/// Reads a side's watermark.
pub type Watermark = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Events the generator publishes per tick at most (about a millisecond's worth at 2M/s).
const MAX_BATCH: u64 = 4_000;

/// The ramp's settings.
#[derive(Debug, Clone)]
pub struct Ramp {
    /// Offered rates, in order.
    pub rates: Vec<f64>,
    /// Seconds per step.
    pub step_seconds: f64,
}

fn percentile(h: Option<&Histogram<u64>>, q: f64) -> f64 {
    h.filter(|h| !h.is_empty())
        .map_or(0.0, |h| h.value_at_quantile(q) as f64)
}

/// Runs the ramp against `server` and returns one step per offered rate (it stops after the
/// first step that fell behind). Changed Pods are rendered from `seed`'s templates, in
/// protobuf when it has protobuf templates (the server then holds Pods in protobuf).
pub fn ramp(
    server: &BenchServer,
    seed: &Seed,
    pods: u64,
    ramp: &Ramp,
    watermark: Watermark,
) -> Vec<ChurnStep> {
    let (templates, protobuf) = (&seed.templates, seed.protobuf.as_ref());
    let base = server.revision();
    let times: Arc<RwLock<Vec<Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<u32>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (times, latencies, stop, watermark) = (
            times.clone(),
            latencies.clone(),
            stop.clone(),
            watermark.clone(),
        );
        std::thread::spawn(move || {
            let mut covered = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let wm = watermark().saturating_sub(base) as usize;
                if wm > covered {
                    let now = Instant::now();
                    let t = times.read();
                    let upto = wm.min(t.len());
                    let mut l = latencies.lock();
                    for at in &t[covered.min(upto)..upto] {
                        let us = now.saturating_duration_since(*at).as_micros();
                        l.push(u32::try_from(us).unwrap_or(u32::MAX));
                    }
                    covered = covered.max(upto);
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    let mut steps = Vec::new();
    let mut cursor = 0u64;
    let pods = pods.max(1);
    for &rate in &ramp.rates {
        let start_rev = server.revision();
        let wm_start = watermark();
        let started = Instant::now();
        let length = Duration::from_secs_f64(ramp.step_seconds);
        let mut sent = 0u64;
        loop {
            let elapsed = started.elapsed();
            if elapsed >= length {
                break;
            }
            let due = ((rate * elapsed.as_secs_f64()) as u64)
                .saturating_sub(sent)
                .min(MAX_BATCH);
            if due == 0 {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            let rev0 = server.revision();
            let batch: Vec<(usize, bytes::Bytes)> = (0..due)
                .map(|k| {
                    let index = (cursor + k) % pods;
                    let restarts = (cursor + k) / pods + 1;
                    let rv = rev0 + 1 + k;
                    let object = match protobuf {
                        Some(t) => t.render(index, rv, restarts),
                        None => templates.render(index, rv, restarts),
                    };
                    (index as usize, bytes::Bytes::from(object))
                })
                .collect();
            cursor += due;
            {
                let now = Instant::now();
                times.write().extend(std::iter::repeat_n(now, due as usize));
            }
            server.modify_pods(batch);
            sent += due;
        }
        let seconds = started.elapsed().as_secs_f64();
        let wm_end = watermark();
        let end_rev = server.revision();
        let offered = sent as f64 / seconds;
        let delivered = wm_end.saturating_sub(wm_start) as f64 / seconds;
        let backlog = end_rev.saturating_sub(wm_end) as f64;
        let kept_up = delivered >= 0.9 * offered && backlog <= offered * 0.25;
        let deadline = Instant::now() + Duration::from_secs(10);
        while watermark() < end_rev && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(5));
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).ok();
        if let Some(h) = h.as_mut() {
            let l = latencies.lock();
            let from = (start_rev - base) as usize;
            let to = ((end_rev - base) as usize).min(l.len());
            for &us in l.get(from.min(to)..to).unwrap_or_default() {
                let _ = h.record(u64::from(us).max(1));
            }
        }
        tracing::info!(rate, offered, delivered, backlog, kept_up, "churn step");
        steps.push(ChurnStep {
            offered_per_second: offered,
            events_per_second: delivered,
            p50_us: percentile(h.as_ref(), 0.5),
            p99_us: percentile(h.as_ref(), 0.99),
            p999_us: percentile(h.as_ref(), 0.999),
            kept_up,
        });
        if !kept_up {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    steps
}

/// The highest offered rate kept up with, and the steps' peak delivery rate.
pub fn summary(steps: &[ChurnStep]) -> (Option<&ChurnStep>, f64) {
    let sustained = steps
        .iter()
        .filter(|s| s.kept_up)
        .max_by(|a, b| a.offered_per_second.total_cmp(&b.offered_per_second));
    let peak = steps
        .iter()
        .map(|s| s.events_per_second)
        .fold(0.0, f64::max);
    (sustained, peak)
}
