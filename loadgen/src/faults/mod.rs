//! Fault injection settings that can change while the server runs: per-resource watch delay,
//! dropped watch connections, and a forced `410 Gone` on the next watches.

pub mod corrupt;
pub mod hostile;
pub mod request_faults;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::faults::request_faults::RequestFaults;
use crate::resource::Resource;

/// A watch delay for the objects of one resource carrying one label.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectDelay {
    /// The resource (plural).
    pub resource: String,
    /// The label key.
    pub label: String,
    /// The label value.
    pub value: String,
    /// The delay, in milliseconds.
    pub millis: u64,
}

/// A fixed pseudo-random value per revision, so every watcher sees the same jitter for an event.
fn mix(revision: u64) -> u64 {
    let mut z = revision.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Run-time fault settings, shared by every connection. Cheap to read.
#[derive(Debug)]
pub struct Faults {
    watch_delay_micros: [AtomicU64; Resource::SLOTS],
    expire_next_watches: [AtomicU64; Resource::SLOTS],
    stalled: [AtomicBool; Resource::SLOTS],
    drop_after_events: [AtomicU64; Resource::SLOTS],
    drop_epoch: AtomicU64,
    requests: RequestFaults,
    lagging_replica_micros: [AtomicU64; Resource::SLOTS],
    jitter_micros: [AtomicU64; Resource::SLOTS],
    object_delays: parking_lot::RwLock<Vec<ObjectDelay>>,
    changed: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            watch_delay_micros: std::array::from_fn(|_| AtomicU64::new(0)),
            expire_next_watches: std::array::from_fn(|_| AtomicU64::new(0)),
            stalled: std::array::from_fn(|_| AtomicBool::new(false)),
            drop_after_events: std::array::from_fn(|_| AtomicU64::new(0)),
            drop_epoch: AtomicU64::new(0),
            requests: RequestFaults::default(),
            lagging_replica_micros: std::array::from_fn(|_| AtomicU64::new(0)),
            jitter_micros: std::array::from_fn(|_| AtomicU64::new(0)),
            object_delays: parking_lot::RwLock::new(Vec::new()),
            changed: watch::Sender::new(0),
        }
    }
}

impl Faults {
    /// Sets how long after its commit each watch event of `resource` is delivered, at the earliest.
    pub fn set_watch_delay(&self, resource: Resource, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.watch_delay_micros[resource.index()].store(micros, Ordering::Relaxed);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// The current watch delay for `resource`.
    pub fn watch_delay(&self, resource: Resource) -> Duration {
        Duration::from_micros(self.watch_delay_micros[resource.index()].load(Ordering::Relaxed))
    }

    /// Stalls (or resumes) every watch of `resource`: while stalled a watch sends nothing, no
    /// events and no bookmarks, though its connection stays open; on resume it catches up.
    pub fn set_watch_stall(&self, resource: Resource, stalled: bool) {
        self.stalled[resource.index()].store(stalled, Ordering::Relaxed);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Whether watches of `resource` are stalled.
    pub fn is_stalled(&self, resource: Resource) -> bool {
        self.stalled[resource.index()].load(Ordering::Relaxed)
    }

    /// Every watch of `resource` is closed after it has sent `events` events (0: never), as a
    /// flaky proxy would; the client reconnects from its last version.
    pub fn set_drop_watches_after(&self, resource: Resource, events: u64) {
        self.drop_after_events[resource.index()].store(events, Ordering::Relaxed);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// After how many events watches of `resource` are closed (0: never).
    pub fn drop_watches_after(&self, resource: Resource) -> u64 {
        self.drop_after_events[resource.index()].load(Ordering::Relaxed)
    }

    /// Closes every open watch connection (of every resource), as a restarted API server or a
    /// broken load balancer would. Clients reconnect from their last resourceVersion.
    pub fn drop_watches(&self) {
        self.drop_epoch.fetch_add(1, Ordering::Relaxed);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// How many times watches were dropped; a watch closes when this moves past what it saw.
    pub fn drop_epoch(&self) -> u64 {
        self.drop_epoch.load(Ordering::Relaxed)
    }

    /// The next `count` watches of `resource` that start from a resourceVersion get `410 Gone`
    /// (reason `Expired`), as after a compaction: the client must relist.
    pub fn expire_next_watches(&self, resource: Resource, count: u64) {
        self.expire_next_watches[resource.index()].store(count, Ordering::Relaxed);
    }

    /// Takes one forced expiry for a watch of `resource`, if any is left.
    pub fn take_forced_expiry(&self, resource: Resource) -> bool {
        self.expire_next_watches[resource.index()]
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// The "time travel" fault of the Sieve paper (OSDI '22): clients are redirected to a second
    /// replica whose watch cache of `resource` lags `lag` behind the store (kube-apiserver keeps
    /// one cache per resource, each fed by its own etcd watch). Its watches of `resource`
    /// deliver events `lag` late, and its reads that may come from a cache (`resourceVersion`
    /// unset, `"0"`, or `NotOlderThan` an older version) show the state of `lag` ago. Turning it
    /// on drops every open watch, as a redirect would; `Duration::ZERO` turns it off.
    pub fn set_lagging_replica(&self, resource: Resource, lag: Duration) {
        let micros = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
        self.lagging_replica_micros[resource.index()].store(micros, Ordering::Relaxed);
        if !lag.is_zero() {
            self.drop_epoch.fetch_add(1, Ordering::Relaxed);
        }
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// The lag of `resource` on the replica clients are on (zero: the primary).
    pub fn lagging_replica(&self, resource: Resource) -> Duration {
        Duration::from_micros(self.lagging_replica_micros[resource.index()].load(Ordering::Relaxed))
    }

    /// Adds a uniformly distributed extra delay of 0..=`max` to each watch event of `resource`
    /// (the same for every watcher; events still leave in revision order, so a long one holds
    /// back those behind it, as on a real stream).
    pub fn set_watch_jitter(&self, resource: Resource, max: Duration) {
        let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self.jitter_micros[resource.index()].store(micros, Ordering::Relaxed);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Delays the watch events of the objects of `delay.resource` labelled `label=value`
    /// (replacing an earlier delay for the same label; 0 ms removes it). Order is kept: events
    /// behind a delayed one wait for it.
    pub fn set_object_watch_delay(&self, delay: ObjectDelay) {
        let mut delays = self.object_delays.write();
        delays.retain(|d| {
            !(d.resource == delay.resource && d.label == delay.label && d.value == delay.value)
        });
        if delay.millis > 0 {
            delays.push(delay);
        }
        drop(delays);
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// How long after its commit the event at `revision` of `resource`, about `object`, may be
    /// delivered: the resource's delay and lag, the largest matching object delay, the jitter.
    pub fn event_delay(
        &self,
        resource: Resource,
        revision: u64,
        object: &serde_json::Value,
    ) -> Duration {
        let base = self.watch_delay(resource) + self.lagging_replica(resource);
        let jitter_max = self.jitter_micros[resource.index()].load(Ordering::Relaxed);
        let jitter = if jitter_max == 0 {
            0
        } else {
            mix(revision) % (jitter_max + 1)
        };
        let delays = self.object_delays.read();
        let object_delay = delays
            .iter()
            .filter(|d| d.resource == resource.plural())
            .filter(|d| object["metadata"]["labels"][&d.label].as_str() == Some(d.value.as_str()))
            .map(|d| Duration::from_millis(d.millis))
            .max()
            .unwrap_or_default();
        base.max(object_delay) + Duration::from_micros(jitter)
    }

    /// Request faults (errors, latency, lost write responses).
    pub fn requests(&self) -> &RequestFaults {
        &self.requests
    }

    /// A receiver that is notified whenever a setting changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A JSON summary of the current settings (served by the admin endpoint).
    pub fn to_json(&self) -> serde_json::Value {
        let mut delays = serde_json::Map::new();
        for r in Resource::ALL {
            let millis = u64::try_from(self.watch_delay(r).as_millis()).unwrap_or(u64::MAX);
            delays.insert(r.plural().to_string(), serde_json::Value::from(millis));
        }
        let mut expiries = serde_json::Map::new();
        for r in Resource::ALL {
            let left = self.expire_next_watches[r.index()].load(Ordering::Relaxed);
            expiries.insert(r.plural().to_string(), serde_json::Value::from(left));
        }
        let stalled: serde_json::Map<_, _> = Resource::ALL
            .iter()
            .map(|r| {
                (
                    r.plural().to_string(),
                    serde_json::Value::from(self.is_stalled(*r)),
                )
            })
            .collect();
        serde_json::json!({
            "watchDelayMillis": delays,
            "watchStalled": stalled,
            "dropWatchesAfterEvents": Resource::ALL
                .iter()
                .map(|r| (r.plural().to_string(), serde_json::Value::from(self.drop_watches_after(*r))))
                .collect::<serde_json::Map<_, _>>(),
            "expireNextWatches": expiries,
            "watchDropEpoch": self.drop_epoch(),
            "requests": self.requests.to_json(),
            "objectWatchDelays": serde_json::to_value(&*self.object_delays.read()).unwrap_or_default(),
            "watchJitterMillis": Resource::ALL
                .iter()
                .map(|r| (r.plural().to_string(), serde_json::Value::from(self.jitter_micros[r.index()].load(Ordering::Relaxed) / 1000)))
                .collect::<serde_json::Map<_, _>>(),
            "laggingReplicaMillis": Resource::ALL
                .iter()
                .map(|r| (r.plural().to_string(), serde_json::Value::from(u64::try_from(self.lagging_replica(*r).as_millis()).unwrap_or(u64::MAX))))
                .collect::<serde_json::Map<_, _>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_delay_is_per_resource_and_notifies_subscribers() {
        let f = Faults::default();
        let rx = f.subscribe();
        f.set_watch_delay(Resource::Pods, Duration::from_millis(250));
        assert_eq!(f.watch_delay(Resource::Pods), Duration::from_millis(250));
        assert_eq!(f.watch_delay(Resource::ReplicaSets), Duration::ZERO);
        assert!(rx.has_changed().unwrap_or(false));
        assert_eq!(f.to_json()["watchDelayMillis"]["pods"], 250);
    }

    #[test]
    fn forced_expiries_are_counted_down_per_resource() {
        let f = Faults::default();
        f.expire_next_watches(Resource::Pods, 2);
        assert!(f.take_forced_expiry(Resource::Pods));
        assert!(!f.take_forced_expiry(Resource::ReplicaSets));
        assert!(f.take_forced_expiry(Resource::Pods));
        assert!(!f.take_forced_expiry(Resource::Pods));
    }

    #[test]
    fn an_object_delay_applies_to_labelled_objects_and_jitter_is_bounded() {
        let f = Faults::default();
        f.set_object_watch_delay(ObjectDelay {
            resource: "pods".into(),
            label: "app".into(),
            value: "hot".into(),
            millis: 500,
        });
        let hot = serde_json::json!({"metadata": {"labels": {"app": "hot"}}});
        let cold = serde_json::json!({"metadata": {"labels": {"app": "cold"}}});
        assert_eq!(
            f.event_delay(Resource::Pods, 1, &hot),
            Duration::from_millis(500)
        );
        assert_eq!(f.event_delay(Resource::Pods, 1, &cold), Duration::ZERO);
        assert_eq!(
            f.event_delay(Resource::ReplicaSets, 1, &hot),
            Duration::ZERO
        );
        f.set_watch_jitter(Resource::Pods, Duration::from_millis(100));
        let delays: Vec<_> = (0..200)
            .map(|rev| f.event_delay(Resource::Pods, rev, &cold))
            .collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(100)));
        assert!(
            delays.iter().any(|d| *d > Duration::from_millis(50)),
            "spread over the range"
        );
        assert_eq!(
            f.event_delay(Resource::Pods, 7, &cold),
            f.event_delay(Resource::Pods, 7, &cold)
        );
    }

    #[test]
    fn a_stall_is_per_resource() {
        let f = Faults::default();
        f.set_watch_stall(Resource::Pods, true);
        assert!(f.is_stalled(Resource::Pods));
        assert!(!f.is_stalled(Resource::ReplicaSets));
        f.set_watch_stall(Resource::Pods, false);
        assert!(!f.is_stalled(Resource::Pods));
    }

    #[test]
    fn dropping_watches_moves_the_epoch_and_notifies() {
        let f = Faults::default();
        let rx = f.subscribe();
        f.drop_watches();
        assert_eq!(f.drop_epoch(), 1);
        assert!(rx.has_changed().unwrap_or(false));
    }
}
