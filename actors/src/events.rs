//! Warning Events on the objects a controller manages when it is degraded (its destructive work
//! cannot be proven fresh), as upstream controllers report trouble: at most one Event per object
//! and reason every [`EVENT_INTERVAL`], so a failing API server is not flooded with them.

use crate::fence::Fence;
use ahash::AHashMap;
use kube::Client;
use kube::api::PostParams;
use kube::core::Request;
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tidemark_engine::{ObjectKey, Resource, Uid};

/// The shortest time between two Events for one object and reason.
pub const EVENT_INTERVAL: Duration = Duration::from_secs(30);

/// One Warning Event to record.
#[derive(Clone, Debug)]
pub struct Warning {
    /// The controller reporting.
    pub controller: &'static str,
    /// The object it is about.
    pub key: ObjectKey,
    /// Its resource.
    pub resource: Resource,
    /// Its UID, if known.
    pub uid: Option<Uid>,
    /// A CamelCase reason.
    pub reason: &'static str,
    /// The message.
    pub message: String,
}

/// Posts Warning Events through the API server, throttled per object and reason.
pub struct EventRecorder {
    client: Client,
    io: tokio::runtime::Handle,
    fence: Arc<Fence>,
    last: Mutex<AHashMap<(ObjectKey, &'static str), Instant>>,
}

impl EventRecorder {
    /// A recorder writing through `client` on `io`, only while `fence` allows writes.
    pub fn new(client: Client, io: tokio::runtime::Handle, fence: Arc<Fence>) -> Self {
        Self {
            client,
            io,
            fence,
            last: Mutex::new(AHashMap::new()),
        }
    }

    /// Records `warning` unless one like it went out within [`EVENT_INTERVAL`].
    pub fn warn(&self, warning: Warning) {
        let now = Instant::now();
        {
            let mut last = self.last.lock();
            let slot = (warning.key.clone(), warning.reason);
            if last
                .get(&slot)
                .is_some_and(|at| now.saturating_duration_since(*at) < EVENT_INTERVAL)
            {
                return;
            }
            last.insert(slot, now);
        }
        if !self.fence.allows(now) {
            return;
        }
        let client = self.client.clone();
        self.io.spawn(async move {
            let body = event_body(&warning);
            let path = format!("/api/v1/namespaces/{}/events", warning.key.namespace());
            let request = serde_json::to_vec(&body)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    Request::new(path)
                        .create(&PostParams::default(), bytes)
                        .map_err(|e| e.to_string())
                });
            let result = match request {
                Ok(r) => client
                    .request::<serde_json::Value>(r)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => tracing::info!(controller = warning.controller, key = %warning.key, reason = warning.reason, "Warning Event recorded"),
                Err(e) => tracing::warn!(controller = warning.controller, key = %warning.key, error = %e, "could not record a Warning Event"),
            }
        });
    }
}

fn event_body(w: &Warning) -> serde_json::Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let stamp = tidemark_engine::time::format_rfc3339(now);
    let mut involved = json!({
        "apiVersion": w.resource.api_version(),
        "kind": w.resource.kind(),
        "namespace": w.key.namespace(),
        "name": w.key.name(),
    });
    if let Some(uid) = &w.uid {
        involved["uid"] = json!(uid.to_string());
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "generateName": format!("{}.", w.key.name()),
            "namespace": w.key.namespace(),
        },
        "involvedObject": involved,
        "reason": w.reason,
        "message": w.message,
        "type": "Warning",
        "source": {"component": format!("tidemark-{}", w.controller)},
        "reportingComponent": format!("tidemark-{}", w.controller),
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_names_the_object_it_is_about() {
        let body = event_body(&Warning {
            controller: "replicaset",
            key: ObjectKey::new("ns", "web"),
            resource: Resource::ReplicaSets,
            uid: Some(Uid::new("u-1")),
            reason: "FreshnessUnproven",
            message: "paused".into(),
        });
        assert_eq!(body["involvedObject"]["kind"], "ReplicaSet");
        assert_eq!(body["involvedObject"]["apiVersion"], "apps/v1");
        assert_eq!(body["involvedObject"]["uid"], "u-1");
        assert_eq!(body["type"], "Warning");
        assert_eq!(body["metadata"]["namespace"], "ns");
    }
}
