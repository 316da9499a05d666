//! What the watches sent, per resource and `shardSelector` and per client: events and bytes, so
//! the saving of server-side sharding (KEP-5866) is measured where it happens, on the wire, and
//! each replica's share is told apart by its User-Agent.

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

/// The figures of the watches of one resource one client opened, whatever their selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientWatchFigures {
    /// The client's `User-Agent` (`""` when it sent none).
    pub user_agent: String,
    /// The resource watched.
    pub resource: Resource,
    /// Events sent (bookmarks not counted).
    pub events: u64,
    /// Bytes of those events.
    pub bytes: u64,
}

/// Every watch's counters of a server.
#[derive(Debug, Default)]
pub struct WatchTraffic {
    /// By resource, selector and User-Agent.
    counters: Mutex<BTreeMap<(Resource, String, String), Arc<WatchCounter>>>,
}

impl WatchTraffic {
    /// The counter a new watch of `resource` with `shard_selector` by the client `user_agent`
    /// adds to.
    pub fn counter(
        &self,
        resource: Resource,
        shard_selector: &str,
        user_agent: &str,
    ) -> Arc<WatchCounter> {
        self.counters
            .lock()
            .entry((resource, shard_selector.to_string(), user_agent.to_string()))
            .or_default()
            .clone()
    }

    /// The figures so far, by resource and selector.
    pub fn figures(&self) -> Vec<WatchFigures> {
        let mut summed: BTreeMap<(Resource, &str), (u64, u64)> = BTreeMap::new();
        let counters = self.counters.lock();
        for ((resource, selector, _), c) in counters.iter() {
            let sum = summed.entry((*resource, selector.as_str())).or_default();
            sum.0 += c.events.load(Ordering::Relaxed);
            sum.1 += c.bytes.load(Ordering::Relaxed);
        }
        summed
            .into_iter()
            .map(|((resource, selector), (events, bytes))| WatchFigures {
                resource,
                shard_selector: selector.to_string(),
                events,
                bytes,
            })
            .collect()
    }

    /// The figures so far, by client and resource.
    pub fn by_client(&self) -> Vec<ClientWatchFigures> {
        let mut summed: BTreeMap<(&str, Resource), (u64, u64)> = BTreeMap::new();
        let counters = self.counters.lock();
        for ((resource, _, agent), c) in counters.iter() {
            let sum = summed.entry((agent.as_str(), *resource)).or_default();
            sum.0 += c.events.load(Ordering::Relaxed);
            sum.1 += c.bytes.load(Ordering::Relaxed);
        }
        summed
            .into_iter()
            .map(|((agent, resource), (events, bytes))| ClientWatchFigures {
                user_agent: agent.to_string(),
                resource,
                events,
                bytes,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_sum_the_clients_of_a_selector_and_by_client_sums_the_selectors_of_a_client() {
        let traffic = WatchTraffic::default();
        traffic.counter(Resource::Pods, "low", "a").sent(10);
        traffic.counter(Resource::Pods, "low", "b").sent(20);
        traffic.counter(Resource::Pods, "high", "a").sent(5);
        let figures = traffic.figures();
        let low = figures.iter().find(|f| f.shard_selector == "low");
        assert_eq!(low.map(|f| (f.events, f.bytes)), Some((2, 30)));
        let clients = traffic.by_client();
        let a = clients.iter().find(|f| f.user_agent == "a");
        assert_eq!(a.map(|f| (f.events, f.bytes)), Some((2, 15)));
        assert_eq!(clients.len(), 2);
    }
}
