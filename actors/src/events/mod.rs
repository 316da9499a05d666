//! Events as kube-controller-manager records them: the Normal and Warning Events of each write
//! ([`kcm`]: `SuccessfulCreate`, `FailedDelete`, ... with upstream's components, reasons and
//! messages) and Tidemark's own Warning `FreshnessUnproven`, passed through client-go's
//! correlator ([`correlator`]: aggregation, counting by PATCH, a spam filter per source and
//! object), a bounded queue that drops when full (client-go's broadcaster keeps 1000), and a
//! token bucket of its own, so an Event storm can neither flood the API server nor delay writes.

pub mod correlator;
pub mod kcm;
mod lru;

use crate::fence::Fence;
use crate::rate_limit::TokenBucket;
use ahash::AHashMap;
use correlator::{Correlated, Correlator, Event, EventType, ObjectRef};
use kube::Client;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Request;
use parking_lot::Mutex;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tidemark_engine::{Action, ObjectKey, Resource, Uid};
use tokio::sync::mpsc;

/// The shortest time between two Tidemark Warnings for one object and reason: a held key is
/// reconciled often, and each repeat would spend the object's spam allowance, which its
/// `SuccessfulCreate`/`SuccessfulDelete` Events share.
pub const EVENT_INTERVAL: Duration = Duration::from_secs(30);

/// How the recorder paces itself; [`EventOptions::default`] is client-go's.
#[derive(Clone, Debug)]
pub struct EventOptions {
    /// Events waiting to be correlated and sent; more are dropped (`maxQueuedEvents`).
    pub queue: usize,
    /// Tries per Event when the API server cannot be reached (`maxTriesPerEvent`).
    pub max_tries: u32,
    /// The wait between tries (`defaultSleepDuration`).
    pub retry_sleep: Duration,
    /// Event writes per second, in a budget of their own beside the controllers' (the manager
    /// gives them `--kube-api-qps` and `--kube-api-burst`).
    pub qps: f32,
    /// Event writes at once.
    pub burst: u32,
    /// With leader election's fencing, the writers' deadline: an Event write not answered
    /// within it is abandoned (and the server told to give up), so a deposed leader's late
    /// Event cannot land after a successor took over.
    pub write_deadline: Option<Duration>,
}

impl Default for EventOptions {
    fn default() -> Self {
        Self {
            queue: 1000,
            max_tries: 12,
            retry_sleep: Duration::from_secs(10),
            qps: 20.0,
            burst: 30,
            write_deadline: None,
        }
    }
}

/// What the recorder did, for tests and the summary.
#[derive(Debug, Default)]
pub struct EventCounts {
    /// Events POSTed.
    pub created: AtomicU64,
    /// Repeats PATCHed onto an Event already recorded.
    pub patched: AtomicU64,
    /// Events the spam filter dropped.
    pub filtered: AtomicU64,
    /// Events dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Events given up on (refused, or unreachable server after every try).
    pub failed: AtomicU64,
}

/// One Tidemark Warning to record.
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

/// Records Events through the API server from a task on the I/O runtime.
pub struct EventRecorder {
    queue: mpsc::Sender<Event>,
    counts: Arc<EventCounts>,
    last_warning: Mutex<AHashMap<(ObjectKey, &'static str), Instant>>,
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn object_ref(resource: Resource, key: &ObjectKey, uid: Option<&Uid>) -> ObjectRef {
    ObjectRef {
        kind: resource.kind(),
        api_version: resource.api_version(),
        namespace: key.namespace().to_string(),
        name: key.name().to_string(),
        uid: uid.map(ToString::to_string).unwrap_or_default(),
    }
}

impl EventRecorder {
    /// A recorder writing through `client` on `io` with client-go's pacing, only while `fence`
    /// allows writes.
    pub fn new(client: Client, io: tokio::runtime::Handle, fence: Arc<Fence>) -> Self {
        Self::with_options(client, io, fence, EventOptions::default())
    }

    /// A recorder with `options`.
    pub fn with_options(
        client: Client,
        io: tokio::runtime::Handle,
        fence: Arc<Fence>,
        options: EventOptions,
    ) -> Self {
        let (queue, rx) = mpsc::channel(options.queue.max(1));
        let counts = Arc::new(EventCounts::default());
        let sink = Sink {
            client,
            fence,
            limiter: TokenBucket::new(options.qps, options.burst),
            options,
            counts: counts.clone(),
            correlator: Correlator::default(),
        };
        io.spawn(sink.run(rx));
        Self {
            queue,
            counts,
            last_warning: Mutex::new(AHashMap::new()),
        }
    }

    /// What the recorder did so far.
    pub fn counts(&self) -> Arc<EventCounts> {
        self.counts.clone()
    }

    /// Queues `event`; drops it when the queue is full, as client-go's broadcaster does.
    pub fn record(&self, event: Event) {
        if self.queue.try_send(event).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records the Event upstream records for `action`, done by `controller` for `owner` (whose
    /// UID `kubectl describe` selects on), that ended as `outcome`.
    pub fn write_outcome(
        &self,
        controller: &str,
        owner: &ObjectKey,
        owner_uid: Option<&Uid>,
        action: &Action,
        outcome: kcm::Outcome<'_>,
    ) {
        let Some(source) = kcm::source(controller) else {
            return;
        };
        let Some(d) = kcm::describe(controller, owner, action, outcome) else {
            return;
        };
        self.record(Event::new(
            object_ref(source.primary, owner, owner_uid),
            source.component,
            d.event_type,
            d.reason,
            d.message,
            unix_now(),
        ));
    }

    /// Records `warning` unless one like it went out within [`EVENT_INTERVAL`].
    pub fn warn(&self, warning: Warning) {
        let now = Instant::now();
        {
            let mut last = self.last_warning.lock();
            let slot = (warning.key.clone(), warning.reason);
            if last
                .get(&slot)
                .is_some_and(|at| now.saturating_duration_since(*at) < EVENT_INTERVAL)
            {
                return;
            }
            last.insert(slot, now);
        }
        let component = kcm::source(warning.controller).map_or("tidemark", |s| s.component);
        self.record(Event::new(
            object_ref(warning.resource, &warning.key, warning.uid.as_ref()),
            component,
            EventType::Warning,
            warning.reason,
            warning.message,
            unix_now(),
        ));
    }
}

/// What the server answers to an Event write: the name, version and count it stored.
#[derive(Deserialize)]
struct Stored {
    metadata: StoredMeta,
    #[serde(default)]
    count: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    resource_version: String,
}

/// Why a write did not record the Event.
enum SendError {
    /// The API server answered with a Status: trying the same write again will not help.
    Refused(String),
    /// It could not be reached: try again later.
    Unreachable(String),
}

fn send_error(e: kube::Error) -> SendError {
    match e {
        kube::Error::Api(status) if status.code == 404 => SendError::Refused("404".into()),
        kube::Error::Api(_) => SendError::Refused(crate::errors::describe(&e)),
        other => SendError::Unreachable(crate::errors::describe(&other)),
    }
}

struct Sink {
    client: Client,
    fence: Arc<Fence>,
    limiter: TokenBucket,
    options: EventOptions,
    counts: Arc<EventCounts>,
    correlator: Correlator,
}

impl Sink {
    async fn run(mut self, mut rx: mpsc::Receiver<Event>) {
        while let Some(event) = rx.recv().await {
            match self.correlator.correlate(event, unix_now()) {
                Correlated::Skip => {
                    self.counts.filtered.fetch_add(1, Ordering::Relaxed);
                }
                Correlated::Create(event) => self.send(event, None).await,
                Correlated::Patch { event, patch } => self.send(event, Some(patch)).await,
            }
        }
    }

    /// Sends one Event, trying again while the server cannot be reached, as `recordToSink`.
    async fn send(&mut self, mut event: Event, patch: Option<serde_json::Value>) {
        for attempt in 1..=self.options.max_tries.max(1) {
            if !self
                .fence
                .allows_in(&event.involved.namespace, Instant::now())
            {
                return;
            }
            self.limiter.acquire().await;
            match self.write(&event, patch.as_ref()).await {
                Ok(stored) => {
                    if !stored.metadata.name.is_empty() {
                        event.name = stored.metadata.name;
                    }
                    event.resource_version = stored.metadata.resource_version;
                    event.count = stored.count.unwrap_or(event.count);
                    self.correlator.recorded(&event);
                    return;
                }
                Err(SendError::Refused(why)) => {
                    self.counts.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(object = %event.involved.name, reason = %event.reason, error = %why, "the API server refused an Event");
                    return;
                }
                Err(SendError::Unreachable(why)) => {
                    tracing::debug!(object = %event.involved.name, attempt, error = %why, "could not record an Event; trying again");
                    tokio::time::sleep(self.options.retry_sleep).await;
                }
            }
        }
        self.counts.failed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(object = %event.involved.name, reason = %event.reason, "gave up recording an Event: the API server could not be reached");
    }

    /// Sends `request` under the write deadline, if any.
    async fn send_request(&self, request: http::Request<Vec<u8>>) -> Result<Stored, kube::Error> {
        let deadline = self.options.write_deadline;
        let request = crate::paths::with_server_timeout(request, deadline);
        match deadline {
            None => self.client.request::<Stored>(request).await,
            Some(d) => tokio::time::timeout(
                d + Duration::from_millis(250),
                self.client.request::<Stored>(request),
            )
            .await
            .unwrap_or_else(|_| {
                Err(kube::Error::Service(
                    format!("no answer within the write deadline of {d:?}").into(),
                ))
            }),
        }
    }

    /// A PATCH of the counted Event, or a POST when it is new or the server no longer has it.
    async fn write(
        &self,
        event: &Event,
        patch: Option<&serde_json::Value>,
    ) -> Result<Stored, SendError> {
        let path = format!("/api/v1/namespaces/{}/events", event.involved.namespace);
        if let Some(patch) = patch {
            let request = Request::new(&path)
                .patch(
                    &event.name,
                    &PatchParams::default(),
                    &Patch::Strategic(patch),
                )
                .map_err(|e| SendError::Refused(e.to_string()))?;
            match self.send_request(request).await {
                Ok(stored) => {
                    self.counts.patched.fetch_add(1, Ordering::Relaxed);
                    return Ok(stored);
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(send_error(e)),
            }
        }
        let mut body = event.to_json();
        if let Some(meta) = body["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| SendError::Refused(e.to_string()))?;
        let request = Request::new(&path)
            .create(&PostParams::default(), bytes)
            .map_err(|e| SendError::Refused(e.to_string()))?;
        let stored = self.send_request(request).await.map_err(send_error)?;
        self.counts.created.fetch_add(1, Ordering::Relaxed);
        Ok(stored)
    }
}
