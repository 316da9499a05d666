//! The figures and the rendered scrape of the last second, shared by every request: a burst of
//! scrapes and probes (2,000 at once) costs one collection from the shards and one render, and
//! every response shares one body, so memory does not grow with the number of callers.

use super::{HEALTH_TIMEOUT, MetricsState};
use crate::manager::{ManagerStats, StatsSource};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long collected figures and a rendered scrape are served again.
pub const CACHE_FOR: Duration = Duration::from_secs(1);

/// Figures collected at an instant; `None` when the shards did not answer in time.
type Collected = (Instant, Option<Arc<ManagerStats>>);

/// The cache. Callers that find it stale wait on its lock while one of them refreshes it.
#[derive(Default)]
pub struct ScrapeCache {
    stats: Mutex<Option<Collected>>,
    text: Mutex<Option<(Instant, Bytes)>>,
    collections: AtomicU64,
    renders: AtomicU64,
}

fn fresh(at: Instant) -> bool {
    at.elapsed() < CACHE_FOR
}

impl ScrapeCache {
    /// Collections and renders done so far.
    pub fn work_done(&self) -> (u64, u64) {
        (
            self.collections.load(Ordering::Relaxed),
            self.renders.load(Ordering::Relaxed),
        )
    }

    /// The figures of the last second.
    pub async fn stats(&self, source: &StatsSource) -> Option<Arc<ManagerStats>> {
        let mut slot = self.stats.lock().await;
        if let Some((at, stats)) = &*slot
            && fresh(*at)
        {
            return stats.clone();
        }
        self.collections.fetch_add(1, Ordering::Relaxed);
        let stats = tokio::time::timeout(HEALTH_TIMEOUT, source.collect())
            .await
            .ok()
            .map(Arc::new);
        *slot = Some((Instant::now(), stats.clone()));
        stats
    }

    /// The scrape of the last second.
    pub async fn scrape(&self, state: &MetricsState) -> Result<Bytes, std::fmt::Error> {
        let mut slot = self.text.lock().await;
        if let Some((at, text)) = &*slot
            && fresh(*at)
        {
            return Ok(text.clone());
        }
        let stats = self.stats(&state.source).await;
        self.renders.fetch_add(1, Ordering::Relaxed);
        let text = Bytes::from(state.encode(stats)?);
        *slot = Some((Instant::now(), text.clone()));
        Ok(text)
    }
}
