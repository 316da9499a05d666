//! Barrier reads: one consistent list with `limit=1` (no `resourceVersion`, so the API server
//! answers from its quorum, not a cache) to learn the current revision, bounded in time, under
//! the client's rate limit and a circuit breaker per API group; the answer goes back to the shard
//! that asked.

use crate::client::rest_metrics::Latency;
use crate::paths::collection;
use crate::rate_limit::TokenBucket;
use crate::server_revision::ServerRevision;
use actix::{Message, Recipient};
use kube::Client;
use kube::api::ListParams;
use kube::core::Request;
use parking_lot::Mutex;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tidemark_engine::{
    BarrierId, BreakerChange, BreakerConfig, CircuitBreaker, LiveReadId, ObjectKey, Resource,
    ResourceVersion,
};
use tokio::sync::mpsc;

/// How long one barrier read may take before it counts as failed.
pub const BARRIER_TIMEOUT: Duration = Duration::from_secs(5);

/// A shard's request for a barrier.
#[derive(Clone, Copy, Debug)]
pub struct BarrierRequest {
    /// Names the read.
    pub id: BarrierId,
    /// What to list.
    pub resource: Resource,
}

/// A shard's request for a live read of the objects a destructive decision rests on.
#[derive(Clone, Debug)]
pub struct LiveReadRequest {
    /// Names the read.
    pub id: LiveReadId,
    /// What to read, in order.
    pub objects: Vec<(Resource, ObjectKey)>,
}

/// What a shard's reader is asked to do.
#[derive(Clone, Debug)]
pub enum ReadRequest {
    /// Learn the current revision.
    Barrier(BarrierRequest),
    /// Read each object's current version.
    Objects(LiveReadRequest),
}

/// The answer to a barrier read.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BarrierDone {
    /// Which read.
    pub id: BarrierId,
    /// The current revision, or why it could not be read.
    pub result: Result<ResourceVersion, String>,
}

/// The answer to a live read.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LiveReadDone {
    /// Which read.
    pub id: LiveReadId,
    /// Each object's current version (`None`: not found), or why the read failed.
    pub result: Result<Vec<Option<ResourceVersion>>, String>,
}

/// Counts of barrier reads, for metrics.
#[derive(Debug, Default)]
pub struct BarrierCounters {
    /// Answered with a revision.
    pub ok: AtomicU64,
    /// Failed or timed out.
    pub failed: AtomicU64,
    /// Refused by an open circuit breaker, never sent.
    pub refused: AtomicU64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    metadata: ListVersion,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListVersion {
    #[serde(default)]
    resource_version: String,
}

/// Reads the current revision with one consistent `limit=1` list of `resource`.
pub async fn read_revision(client: &Client, resource: Resource) -> Result<ResourceVersion, String> {
    let params = ListParams::default().limit(1);
    let request = Request::new(collection(resource, None))
        .list(&params)
        .map_err(|e| e.to_string())?;
    let list = tokio::time::timeout(BARRIER_TIMEOUT, client.request::<ListMeta>(request))
        .await
        .map_err(|_| format!("no answer within {BARRIER_TIMEOUT:?}"))?
        .map_err(|e| crate::errors::classify(&e).to_string())?;
    ResourceVersion::parse(&list.metadata.resource_version).map_err(|e| {
        format!(
            "the list's resourceVersion {:?} is not comparable: {e}",
            list.metadata.resource_version
        )
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemVersions {
    #[serde(default)]
    items: Vec<ListMeta>,
}

/// Reads the current resourceVersion of one object; `None` when it does not exist. A consistent
/// list with `fieldSelector=metadata.name=NAME` rather than a GET: the same answer from the same
/// quorum read, under the `list` permission every controller already has.
pub async fn read_object_version(
    client: &Client,
    resource: Resource,
    key: &ObjectKey,
) -> Result<Option<ResourceVersion>, String> {
    let namespace = (!key.namespace().is_empty()).then(|| key.namespace());
    let params = ListParams::default().fields(&format!("metadata.name={}", key.name()));
    let request = Request::new(collection(resource, namespace))
        .list(&params)
        .map_err(|e| e.to_string())?;
    let list = tokio::time::timeout(BARRIER_TIMEOUT, client.request::<ItemVersions>(request))
        .await
        .map_err(|_| format!("no answer within {BARRIER_TIMEOUT:?}"))?
        .map_err(|e| crate::errors::classify(&e).to_string())?;
    match list.items.first() {
        None => Ok(None),
        Some(item) => ResourceVersion::parse(&item.metadata.resource_version)
            .map(Some)
            .map_err(|e| {
                format!(
                    "{resource} {key}: resourceVersion {:?} is not comparable: {e}",
                    item.metadata.resource_version
                )
            }),
    }
}

/// What every shard's barrier reader shares: the client, the rate limit, the counters and one
/// circuit breaker per API group.
pub struct BarrierReads {
    client: Client,
    limiter: Arc<TokenBucket>,
    counters: BarrierCounters,
    breakers: Mutex<Vec<(&'static str, CircuitBreaker)>>,
    config: BreakerConfig,
    server_revision: Arc<ServerRevision>,
    latency: Mutex<Latency>,
}

impl BarrierReads {
    /// Reads through `client` under `limiter`, with breakers configured by `config`.
    pub fn new(client: Client, limiter: Arc<TokenBucket>, config: BreakerConfig) -> Self {
        Self {
            client,
            limiter,
            counters: BarrierCounters::default(),
            breakers: Mutex::new(Vec::new()),
            config,
            server_revision: Arc::default(),
            latency: Mutex::default(),
        }
    }

    /// Every revision a barrier reads is also learned into `server_revision`, for every shard.
    pub fn with_server_revision(mut self, server_revision: Arc<ServerRevision>) -> Self {
        self.server_revision = server_revision;
        self
    }

    /// The counters.
    pub fn counters(&self) -> &BarrierCounters {
        &self.counters
    }

    /// How long the reads took, from sent (past the rate limit) to answered or failed: the API
    /// server's share of a barrier's wait.
    pub fn latency(&self) -> Latency {
        self.latency.lock().clone()
    }

    /// Per API group (`""` is the core group), whether its breaker is open.
    pub fn breakers_open(&self) -> Vec<(&'static str, bool)> {
        self.breakers
            .lock()
            .iter()
            .map(|(group, b)| (*group, b.is_open()))
            .collect()
    }

    fn with_breaker<T>(&self, group: &'static str, f: impl FnOnce(&mut CircuitBreaker) -> T) -> T {
        let mut breakers = self.breakers.lock();
        let index = match breakers.iter().position(|(g, _)| *g == group) {
            Some(i) => i,
            None => {
                breakers.push((group, CircuitBreaker::new(self.config)));
                breakers.len() - 1
            }
        };
        f(&mut breakers[index].1)
    }

    /// One barrier read through the breaker of `resource`'s group.
    pub async fn read(&self, resource: Resource) -> Result<ResourceVersion, String> {
        self.guarded(resource.group(), read_revision(&self.client, resource))
            .await
    }

    /// One live read of `objects` (in order), each through its group's breaker.
    pub async fn read_objects(
        &self,
        objects: &[(Resource, ObjectKey)],
    ) -> Result<Vec<Option<ResourceVersion>>, String> {
        let mut versions = Vec::with_capacity(objects.len());
        for (resource, key) in objects {
            let version = self
                .guarded(
                    resource.group(),
                    read_object_version(&self.client, *resource, key),
                )
                .await?;
            versions.push(version);
        }
        Ok(versions)
    }

    /// Runs `read` under the breaker of `group` and the rate limit, and counts it.
    async fn guarded<T>(
        &self,
        group: &'static str,
        read: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        if let Err(open) = self.with_breaker(group, |b| b.try_acquire(Instant::now())) {
            self.counters.refused.fetch_add(1, Ordering::Relaxed);
            return Err(open.to_string());
        }
        self.limiter.acquire().await;
        let sent = Instant::now();
        let result = read.await;
        self.latency.lock().observe(sent.elapsed().as_secs_f64());
        let change = self.with_breaker(group, |b| b.record(result.is_ok(), Instant::now()));
        match &result {
            Ok(_) => self.counters.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.counters.failed.fetch_add(1, Ordering::Relaxed),
        };
        match change {
            Some(BreakerChange::Opened(open_for)) => tracing::error!(
                group = if group.is_empty() { "core" } else { group },
                open_for_ms = open_for.as_millis() as u64,
                "circuit breaker opened: live reads failing, destructive work paused"
            ),
            Some(BreakerChange::Closed) => tracing::info!(
                group = if group.is_empty() { "core" } else { group },
                "circuit breaker closed: live reads succeed again"
            ),
            None => {}
        }
        result
    }
}

/// Where a shard's reader sends its answers (the shard's actor).
#[derive(Clone)]
pub struct ReadAnswers {
    /// Barrier answers.
    pub barrier: Recipient<BarrierDone>,
    /// Live read answers.
    pub live_read: Recipient<LiveReadDone>,
}

/// Starts the barrier reader of one shard; the returned sender takes its requests.
pub fn spawn_reader(
    reads: Arc<BarrierReads>,
    io: &tokio::runtime::Handle,
    answers: ReadAnswers,
) -> mpsc::UnboundedSender<ReadRequest> {
    let (tx, mut rx) = mpsc::unbounded_channel::<ReadRequest>();
    io.spawn(async move {
        while let Some(request) = rx.recv().await {
            match request {
                ReadRequest::Barrier(request) => {
                    let result = reads.read(request.resource).await;
                    match &result {
                        Ok(revision) => {
                            reads.server_revision.learn(*revision);
                            tracing::debug!(resource = %request.resource, %revision, "barrier read")
                        }
                        Err(error) => {
                            tracing::warn!(resource = %request.resource, %error, "barrier read failed")
                        }
                    }
                    answers.barrier.do_send(BarrierDone {
                        id: request.id,
                        result,
                    });
                }
                ReadRequest::Objects(request) => {
                    let result = reads.read_objects(&request.objects).await;
                    if let Err(error) = &result {
                        tracing::warn!(%error, "live read failed");
                    }
                    answers.live_read.do_send(LiveReadDone {
                        id: request.id,
                        result,
                    });
                }
            }
        }
    });
    tx
}
