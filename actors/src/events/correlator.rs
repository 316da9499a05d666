//! client-go's `EventCorrelator` (tools/record/events_cache.go), without I/O or clocks: an Event
//! about to be recorded is aggregated (the 10th distinct message of one source, object, type and
//! reason within 10 minutes becomes "(combined from similar events): ..."), counted (a repeat of
//! an Event already recorded is a PATCH of its `count` and `lastTimestamp`, not a new object) and
//! spam-filtered (a token bucket per source and object: a burst of 25, then one every 5 minutes).

use super::lru::Lru;
use ahash::AHashSet;
use serde_json::{Value, json};
use std::time::Duration;

/// Records kept per cache, as upstream's `maxLruCacheEntries`.
pub const LRU_ENTRIES: usize = 4096;
/// Distinct messages of one aggregate key before they are combined (`defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long an aggregate record lives without a new Event (`defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events one source may send about one object at once (`defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// The refill of that allowance, per second (`defaultSpamQPS`: one every five minutes).
pub const SPAM_QPS: f64 = 1.0 / 300.0;
/// The prefix of an aggregated Event's message (`EventAggregatorByReasonMessageFunc`).
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// `involvedObject` of a core/v1 Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// Kind (`ReplicaSet`).
    pub kind: &'static str,
    /// apiVersion (`apps/v1`).
    pub api_version: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, empty when unknown.
    pub uid: String,
}

/// `Normal` or `Warning`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Something went as it should.
    Normal,
    /// Something an operator may need to look at.
    Warning,
}

impl EventType {
    /// As the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// A core/v1 Event as the recorder keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// metadata.name: `<object>.<nanoseconds in hex>`, as upstream's `makeEvent`.
    pub name: String,
    /// metadata.resourceVersion, once the server returned one.
    pub resource_version: String,
    /// What it is about.
    pub involved: ObjectRef,
    /// `source.component` and `reportingComponent` (`replicaset-controller`).
    pub component: &'static str,
    /// Normal or Warning.
    pub event_type: EventType,
    /// CamelCase reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// How many times it happened.
    pub count: u32,
    /// First occurrence, Unix seconds.
    pub first_timestamp: i64,
    /// Last occurrence, Unix seconds.
    pub last_timestamp: i64,
}

impl Event {
    /// A new Event at `now` (since the Unix epoch), counted once.
    pub fn new(
        involved: ObjectRef,
        component: &'static str,
        event_type: EventType,
        reason: impl Into<String>,
        message: impl Into<String>,
        now: Duration,
    ) -> Self {
        let secs = now.as_secs() as i64;
        Self {
            name: event_name(&involved.name, now),
            resource_version: String::new(),
            involved,
            component,
            event_type,
            reason: reason.into(),
            message: message.into(),
            count: 1,
            first_timestamp: secs,
            last_timestamp: secs,
        }
    }

    /// The body to POST.
    pub fn to_json(&self) -> Value {
        let first = tidemark_engine::time::format_rfc3339(self.first_timestamp);
        let last = tidemark_engine::time::format_rfc3339(self.last_timestamp);
        let mut involved = json!({
            "kind": self.involved.kind,
            "apiVersion": self.involved.api_version,
            "namespace": self.involved.namespace,
            "name": self.involved.name,
        });
        if !self.involved.uid.is_empty() {
            involved["uid"] = json!(self.involved.uid);
        }
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.involved.namespace},
            "involvedObject": involved,
            "reason": self.reason,
            "message": self.message,
            "type": self.event_type.as_str(),
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": "",
            "firstTimestamp": first,
            "lastTimestamp": last,
            "count": self.count,
        })
    }

    /// The strategic merge patch that records a repeat, as upstream's `eventObserve` computes
    /// it (a two-way patch from a copy with no count, an epoch lastTimestamp and no message).
    pub fn repeat_patch(&self) -> Value {
        json!({
            "count": self.count,
            "lastTimestamp": tidemark_engine::time::format_rfc3339(self.last_timestamp),
            "message": self.message,
        })
    }
}

fn event_name(object: &str, now: Duration) -> String {
    format!("{object}.{:x}", now.as_nanos())
}

/// Upstream's `getEventKey`: source, object, type, reason and message.
fn event_key(e: &Event) -> String {
    [
        e.component,
        "",
        e.involved.kind,
        &e.involved.namespace,
        &e.involved.name,
        "",
        &e.involved.uid,
        e.involved.api_version,
        e.event_type.as_str(),
        &e.reason,
        &e.message,
    ]
    .join("\u{0}")
}

/// Upstream's `EventAggregatorByReasonFunc`: the key without the message (plus the reporting
/// controller and instance, which here are the component and empty).
fn aggregate_key(e: &Event) -> String {
    [
        e.component,
        "",
        e.involved.kind,
        &e.involved.namespace,
        &e.involved.name,
        &e.involved.uid,
        e.involved.api_version,
        e.event_type.as_str(),
        &e.reason,
        e.component,
        "",
    ]
    .join("\u{0}")
}

/// Upstream's `getSpamKey`: source and object only, so one object's reasons share a budget.
fn spam_key(e: &Event) -> String {
    [
        e.component,
        "",
        e.involved.kind,
        &e.involved.namespace,
        &e.involved.name,
        &e.involved.uid,
        e.involved.api_version,
    ]
    .join("\u{0}")
}

struct AggregateRecord {
    messages: AHashSet<String>,
    last: Duration,
}

struct EventLog {
    count: u32,
    first_timestamp: i64,
    name: String,
    resource_version: String,
}

struct Bucket {
    tokens: f64,
    at: Duration,
}

/// What to do with an Event.
#[derive(Clone, Debug, PartialEq)]
pub enum Correlated {
    /// POST it.
    Create(Event),
    /// PATCH the Event already recorded under `event.name` (POST it if that one is gone).
    Patch {
        /// The Event as it now stands.
        event: Event,
        /// The strategic merge patch.
        patch: Value,
    },
    /// Drop it: its source has spent its allowance for the object.
    Skip,
}

/// The correlator: aggregation, counting and spam filtering, each an LRU of [`LRU_ENTRIES`].
pub struct Correlator {
    aggregates: Lru<String, AggregateRecord>,
    logs: Lru<String, EventLog>,
    spam: Lru<String, Bucket>,
}

impl Default for Correlator {
    fn default() -> Self {
        Self {
            aggregates: Lru::new(LRU_ENTRIES),
            logs: Lru::new(LRU_ENTRIES),
            spam: Lru::new(LRU_ENTRIES),
        }
    }
}

impl Correlator {
    /// Decides how `event` is recorded at `now` (since the Unix epoch), as `EventCorrelate`.
    pub fn correlate(&mut self, event: Event, now: Duration) -> Correlated {
        let (event, key) = self.aggregate(event, now);
        let (event, patch) = self.observe(event, key);
        if self.spam_filtered(&event, now) {
            return Correlated::Skip;
        }
        match patch {
            Some(patch) => Correlated::Patch { event, patch },
            None => Correlated::Create(event),
        }
    }

    /// Remembers what the server stored (its name and resourceVersion), as `UpdateState`.
    pub fn recorded(&mut self, event: &Event) {
        self.logs.put(
            event_key(event),
            EventLog {
                count: event.count,
                first_timestamp: event.first_timestamp,
                name: event.name.clone(),
                resource_version: event.resource_version.clone(),
            },
        );
    }

    fn aggregate(&mut self, event: Event, now: Duration) -> (Event, String) {
        let key = aggregate_key(&event);
        let fresh = || AggregateRecord {
            messages: AHashSet::new(),
            last: now,
        };
        let mut record = self
            .aggregates
            .get_mut(&key)
            .map_or_else(fresh, |r| AggregateRecord {
                messages: std::mem::take(&mut r.messages),
                last: r.last,
            });
        if now.saturating_sub(record.last) > AGGREGATE_INTERVAL {
            record = fresh();
        }
        record.messages.insert(event.message.clone());
        record.last = now;
        let over = record.messages.len() >= AGGREGATE_MAX_EVENTS;
        if over {
            // Keep the set at most the maximum, as upstream's PopAny.
            if let Some(any) = record.messages.iter().next().cloned() {
                record.messages.remove(&any);
            }
        }
        self.aggregates.put(key.clone(), record);
        if !over {
            let own = event_key(&event);
            return (event, own);
        }
        let message = format!("{COMBINED_PREFIX}{}", event.message);
        let combined = Event::new(
            event.involved,
            event.component,
            event.event_type,
            event.reason,
            message,
            now,
        );
        (combined, key)
    }

    fn observe(&mut self, mut event: Event, key: String) -> (Event, Option<Value>) {
        let mut patch = None;
        if let Some(last) = self.logs.get_mut(&key).filter(|l| l.count > 0) {
            event.name = last.name.clone();
            event.resource_version = last.resource_version.clone();
            event.first_timestamp = last.first_timestamp;
            event.count = last.count.saturating_add(1);
            patch = Some(event.repeat_patch());
        }
        self.logs.put(
            key,
            EventLog {
                count: event.count,
                first_timestamp: event.first_timestamp,
                name: event.name.clone(),
                resource_version: event.resource_version.clone(),
            },
        );
        (event, patch)
    }

    fn spam_filtered(&mut self, event: &Event, now: Duration) -> bool {
        let key = spam_key(event);
        let mut bucket = self.spam.get_mut(&key).map_or(
            Bucket {
                tokens: SPAM_BURST,
                at: now,
            },
            |b| Bucket {
                tokens: b.tokens,
                at: b.at,
            },
        );
        let refill = now.saturating_sub(bucket.at).as_secs_f64() * SPAM_QPS;
        bucket.tokens = (bucket.tokens + refill).min(SPAM_BURST);
        bucket.at = now;
        let accepted = bucket.tokens >= 1.0;
        if accepted {
            bucket.tokens -= 1.0;
        }
        self.spam.put(key, bucket);
        !accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(name: &str) -> ObjectRef {
        ObjectRef {
            kind: "ReplicaSet",
            api_version: "apps/v1",
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        }
    }

    fn created(object: &str, pod: &str, now: Duration) -> Event {
        Event::new(
            rs(object),
            "replicaset-controller",
            EventType::Normal,
            "SuccessfulCreate",
            format!("Created pod: {pod}"),
            now,
        )
    }

    const T0: Duration = Duration::from_secs(1_700_000_000);

    #[test]
    fn a_first_event_is_created_and_its_repeat_patches_the_count() {
        let mut c = Correlator::default();
        let Correlated::Create(first) = c.correlate(created("web", "web-a", T0), T0) else {
            panic!("a new Event is created");
        };
        assert_eq!(first.count, 1);
        let mut stored = first.clone();
        stored.resource_version = "41".into();
        c.recorded(&stored);
        let later = T0 + Duration::from_secs(5);
        let Correlated::Patch { event, patch } = c.correlate(created("web", "web-a", later), later)
        else {
            panic!("a repeat is a PATCH");
        };
        assert_eq!(event.name, first.name, "the same Event object");
        assert_eq!(event.resource_version, "41");
        assert_eq!(event.count, 2);
        assert_eq!(event.first_timestamp, first.first_timestamp);
        assert_eq!(patch["count"], 2);
        assert_eq!(
            patch["lastTimestamp"],
            tidemark_engine::time::format_rfc3339(later.as_secs() as i64)
        );
    }

    #[test]
    fn the_tenth_distinct_message_of_one_reason_is_combined_and_then_counted() {
        let mut c = Correlator::default();
        let mut results = Vec::new();
        for i in 0..12u64 {
            let now = T0 + Duration::from_secs(i);
            results.push(c.correlate(created("web", &format!("web-{i}"), now), now));
        }
        for r in &results[..9] {
            assert!(matches!(r, Correlated::Create(e) if !e.message.starts_with(COMBINED_PREFIX)));
        }
        let Correlated::Create(combined) = &results[9] else {
            panic!("the 10th is a new, combined Event: {:?}", results[9]);
        };
        assert_eq!(
            combined.message,
            "(combined from similar events): Created pod: web-9"
        );
        let Correlated::Patch { event, patch } = &results[11] else {
            panic!("later ones count on the combined Event: {:?}", results[11]);
        };
        assert_eq!(event.name, combined.name);
        assert_eq!(event.count, 3);
        assert_eq!(
            patch["message"],
            "(combined from similar events): Created pod: web-11"
        );
    }

    #[test]
    fn a_source_may_burst_25_events_about_one_object_then_one_every_five_minutes() {
        let mut c = Correlator::default();
        let sent = (0..40u64)
            .filter(|i| {
                let now = T0 + Duration::from_millis(*i);
                let e = Event::new(
                    rs("web"),
                    "replicaset-controller",
                    EventType::Warning,
                    format!("Reason{i}"),
                    "m",
                    now,
                );
                c.correlate(e, now) != Correlated::Skip
            })
            .count();
        assert_eq!(sent, 25, "the burst, whatever the reasons");
        let other = c.correlate(created("api", "api-a", T0), T0);
        assert!(
            matches!(other, Correlated::Create(_)),
            "another object has its own budget"
        );
        let soon = T0 + Duration::from_secs(60);
        assert_eq!(
            c.correlate(created("web", "web-x", soon), soon),
            Correlated::Skip
        );
        let later = T0 + Duration::from_secs(301);
        assert!(matches!(
            c.correlate(created("web", "web-y", later), later),
            Correlated::Create(_)
        ));
    }

    #[test]
    fn an_event_body_has_what_kubectl_describe_selects_on() {
        let body = created("web", "web-a", T0).to_json();
        assert_eq!(body["involvedObject"]["uid"], "uid-web");
        assert_eq!(body["involvedObject"]["kind"], "ReplicaSet");
        assert_eq!(body["source"]["component"], "replicaset-controller");
        assert_eq!(body["type"], "Normal");
        assert_eq!(body["count"], 1);
        let name = body["metadata"]["name"].as_str().unwrap_or_default();
        assert!(name.starts_with("web."), "{name}");
    }
}
