//! What the watches sent, per resource and `shardSelector`: events and bytes, so the saving of
//! server-side sharding (KEP-5866) is measured where it happens, on the wire.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::resource::Resource;

/// One stream's counters (shared by every stream of the same resource and selector).
#[derive(Debug, Default)]
pub struct WatchCounter {
    events: AtomicU64,
    bytes: AtomicU64,
}

impl WatchCounter {
    /// One event of `bytes` bytes sent.
    pub fn sent(&self, bytes: usize) {
        self.events.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// The figures of the watches of one resource with one selector (`""`: unsharded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchFigures {
    /// The resource watched.
    pub resource: Resource,
    /// The `shardSelector` the watches asked for (`""` for none).
    pub shard_selector: String,
    /// Events sent (bookmarks not counted).
    pub events: u64,
    /// Bytes of those events.
    pub bytes: u64,
}

/// Every watch's counters of a server.
#[derive(Debug, Default)]
pub struct WatchTraffic {
    counters: Mutex<BTreeMap<(Resource, String), Arc<WatchCounter>>>,
}

impl WatchTraffic {
    /// The counter a new watch of `resource` with `shard_selector` adds to.
    pub fn counter(&self, resource: Resource, shard_selector: &str) -> Arc<WatchCounter> {
        self.counters
            .lock()
            .entry((resource, shard_selector.to_string()))
            .or_default()
            .clone()
    }

    /// The figures so far, by resource and selector.
    pub fn figures(&self) -> Vec<WatchFigures> {
        self.counters
            .lock()
            .iter()
            .map(|((resource, selector), c)| WatchFigures {
                resource: *resource,
                shard_selector: selector.clone(),
                events: c.events.load(Ordering::Relaxed),
                bytes: c.bytes.load(Ordering::Relaxed),
            })
            .collect()
    }
}
