//! Fault injection settings that can change while the server runs (per-resource watch delay).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::resource::Resource;

/// Run-time fault settings, shared by every connection. Cheap to read.
#[derive(Debug)]
pub struct Faults {
    watch_delay_micros: [AtomicU64; Resource::ALL.len()],
    changed: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            watch_delay_micros: std::array::from_fn(|_| AtomicU64::new(0)),
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
        serde_json::json!({ "watchDelayMillis": delays })
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
}
