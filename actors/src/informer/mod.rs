//! The informer of one resource: a consistent paged list, then a watch with bookmarks, routed to
//! the shards. After each batch every shard gets the batch's progress marker (its watermark);
//! on `410 Gone`, a malformed event or a stuck watch, an atomic relist.

use crate::paths::collection;
use crate::shard_actor::{Batch, ProbeRequest, Replace, ShardActor};
use actix::Addr;
use futures::{StreamExt, future::join_all};
use kube::Client;
use kube::api::{ListParams, VersionMatch, WatchEvent, WatchParams};
use kube::core::{ObjectList, Request};
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tidemark_engine::{
    Change, DaemonSetView, DecodeError, JobView, LeaseView, NodeView, Object, PodView,
    ReplicaSetView, Resource, ResourceVersion, ShardRouter, StatefulSetView,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// List page size, as kube-rs' watcher defaults it.
pub const PAGE_SIZE: u32 = 500;
/// Server-side watch timeout; the watch is renewed from the last version after it.
pub const WATCH_TIMEOUT_SECS: u32 = 290;
/// Events taken from the stream at most per batch.
pub const MAX_BATCH: usize = 1024;
/// A watch silent this long while the server is ahead of the watermark is restarted.
pub const STALLED_AFTER: Duration = Duration::from_secs(30);

/// Decodes one object of `resource` from its JSON. The flag is true when it had to be read
/// leniently (a field of the wrong type).
pub fn decode(resource: Resource, raw: &RawValue) -> Result<(Object, bool), DecodeError> {
    let bytes = raw.get().as_bytes();
    match resource {
        Resource::Pods => PodView::decode(bytes).map(|(p, lenient)| (Object::Pod(p), lenient)),
        Resource::ReplicaSets => {
            ReplicaSetView::from_json(bytes).map(|r| (Object::ReplicaSet(r), false))
        }
        Resource::Nodes => NodeView::from_json(bytes).map(|n| (Object::Node(n), false)),
        Resource::Leases => LeaseView::from_json(bytes).map(|l| (Object::Lease(l), false)),
        Resource::StatefulSets => {
            StatefulSetView::from_json(bytes).map(|s| (Object::StatefulSet(s), false))
        }
        Resource::Jobs => JobView::from_json(bytes).map(|j| (Object::Job(j), false)),
        Resource::DaemonSets => {
            DaemonSetView::from_json(bytes).map(|d| (Object::DaemonSet(d), false))
        }
        Resource::PersistentVolumeClaims | Resource::ControllerRevisions => Err(
            DecodeError::Malformed(format!("{resource} are written, never cached")),
        ),
    }
}

/// The namespace/name of an object that could not be decoded, for the error log.
fn describe(raw: &RawValue) -> String {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        metadata: serde_json::Map<String, serde_json::Value>,
    }
    serde_json::from_str::<Meta>(raw.get()).map_or_else(
        |_| "<unreadable>".to_string(),
        |m| {
            let get = |k: &str| {
                m.metadata
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_string()
            };
            format!("{}/{}", get("namespace"), get("name"))
        },
    )
}

/// What an informer reports about itself.
#[derive(Debug, Default)]
pub struct InformerState {
    /// The first list completed.
    pub synced: AtomicBool,
    /// The last progress marker sent to the shards.
    pub watermark: AtomicU64,
    /// Lists done (1 + relists).
    pub lists: AtomicU64,
    /// Events delivered.
    pub events: AtomicU64,
    /// Objects that could not be decoded (skipped in a list; a relist in a watch).
    pub malformed: AtomicU64,
    /// Objects read leniently because a field had the wrong type.
    pub lenient: AtomicU64,
    /// Probes answered.
    pub probes: AtomicU64,
    /// Lists refused because they were older than what the informer had already seen.
    pub stale_lists: AtomicU64,
    /// Why the last list or watch failed, and how many times in a row; cleared by a list
    /// that succeeds. `/readyz` shows it.
    pub last_failure: parking_lot::Mutex<Option<(u32, String)>>,
}

/// Why a list did not replace the shards' slices.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The server answered with a list older than what this informer has already seen.
    #[error(
        "list at {listed} is older than the {seen} already seen: refusing to move the cache back in time"
    )]
    OlderThanSeen {
        /// The list's version.
        listed: ResourceVersion,
        /// The highest version seen before.
        seen: ResourceVersion,
    },
}

/// Why a watch ended.
enum WatchEnd {
    /// Server closed it (timeout): renew from the last version.
    Renew,
    /// The version is gone, a malformed event arrived, or the watch stalled: relist.
    Relist(&'static str),
    /// A transient failure: back off, then renew.
    Failed(kube::Error),
    /// The manager stops.
    Shutdown,
}

/// One resource's list/watch loop.
pub struct Informer {
    client: Client,
    resource: Resource,
    router: ShardRouter,
    shards: Vec<Addr<ShardActor>>,
    state: Arc<InformerState>,
    probes: mpsc::UnboundedReceiver<ProbeRequest>,
    consistent_relists: bool,
    /// The API server's URL, for logs and `/readyz`.
    server: Arc<str>,
}

fn version_of(text: Option<&str>) -> Option<ResourceVersion> {
    text.and_then(|t| ResourceVersion::parse(t).ok())
}

impl Informer {
    /// An informer of `resource` feeding `shards`; parked keys' probes arrive on `probes`.
    pub fn new(
        client: Client,
        resource: Resource,
        router: ShardRouter,
        shards: Vec<Addr<ShardActor>>,
        probes: mpsc::UnboundedReceiver<ProbeRequest>,
    ) -> Self {
        Self {
            client,
            resource,
            router,
            shards,
            state: Arc::default(),
            probes,
            consistent_relists: true,
            server: Arc::from("the API server"),
        }
    }

    /// Names the API server (its URL) in logs and `/readyz`.
    pub fn with_server(mut self, url: &str) -> Self {
        self.server = Arc::from(url);
        self
    }

    /// Whether relists ask `NotOlderThan` the watermark and refuse older lists (default on).
    /// Off only to show what it prevents.
    pub fn with_consistent_relists(mut self, on: bool) -> Self {
        self.consistent_relists = on;
        self
    }

    /// The informer's state, shared.
    pub fn state(&self) -> Arc<InformerState> {
        self.state.clone()
    }

    /// Runs until `shutdown` fires.
    pub async fn run(mut self, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let shutdown = &mut shutdown;
        let mut failures = 0u32;
        'relist: loop {
            let version = loop {
                if *shutdown.borrow() {
                    return;
                }
                match self.list().await {
                    Ok(v) => break v,
                    Err(e) => {
                        failures += 1;
                        let delay = backoff(failures);
                        tracing::warn!(resource = %self.resource, server = %self.server, error = %e,
                            failures, retry_in_ms = delay.as_millis() as u64, "list failed; retrying");
                        *self.state.last_failure.lock() = Some((
                            failures,
                            format!("list against {} failed: {e}", self.server),
                        ));
                        if sleep_or_shutdown(delay, shutdown).await {
                            return;
                        }
                    }
                }
            };
            failures = 0;
            *self.state.last_failure.lock() = None;
            let mut from = version;
            loop {
                match self.watch(&mut from, shutdown).await {
                    WatchEnd::Renew => failures = 0,
                    WatchEnd::Relist(why) => {
                        tracing::warn!(resource = %self.resource, why, "relisting");
                        continue 'relist;
                    }
                    WatchEnd::Failed(e) => {
                        failures += 1;
                        tracing::warn!(resource = %self.resource, server = %self.server, error = %e, failures, "watch failed; renewing");
                        *self.state.last_failure.lock() = Some((
                            failures,
                            format!("watch against {} failed: {e}", self.server),
                        ));
                        if sleep_or_shutdown(backoff(failures), shutdown).await {
                            return;
                        }
                    }
                    WatchEnd::Shutdown => return,
                }
            }
        }
    }

    /// A consistent paged list (`resourceVersion` unset), replaced into every shard at once.
    ///
    /// A relist asks for `resourceVersionMatch=NotOlderThan` the highest version this informer
    /// has seen, and a list older than that is refused: replacing the cache with it would move
    /// the cache back in time (the "time travel" of a lagging API server replica), and keys whose
    /// records were cleared as caught up would then act on a past state.
    async fn list(&mut self) -> Result<String, ListError> {
        let path = collection(self.resource, None);
        let mut per_shard: Vec<Vec<Object>> = vec![Vec::new(); self.shards.len()];
        let mut token: Option<String> = None;
        let seen = ResourceVersion::new(self.state.watermark.load(Ordering::Relaxed))
            .filter(|_| self.consistent_relists);
        let version = loop {
            let (resource_version, version_match) = match (&token, seen) {
                (None, Some(seen)) => (Some(seen.to_string()), Some(VersionMatch::NotOlderThan)),
                _ => (None, None),
            };
            let params = ListParams {
                limit: Some(PAGE_SIZE),
                continue_token: token.clone(),
                resource_version,
                version_match,
                ..ListParams::default()
            };
            let request = Request::new(&path)
                .list(&params)
                .map_err(kube::Error::BuildRequest)?;
            let page: ObjectList<Box<RawValue>> = self.client.request(request).await?;
            for item in page.items {
                if let Some(object) = self.decode_or_report(&item) {
                    if self.resource.broadcast() {
                        for slot in per_shard.iter_mut() {
                            slot.push(object.clone());
                        }
                    } else {
                        per_shard[self.router.route(&object).0].push(object);
                    }
                }
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => token = Some(next),
                None => break page.metadata.resource_version.unwrap_or_default(),
            }
        };
        let parsed = version_of(Some(&version));
        if let (Some(seen), Some(listed)) = (seen, parsed)
            && listed < seen
        {
            self.state.stale_lists.fetch_add(1, Ordering::Relaxed);
            return Err(ListError::OlderThanSeen { listed, seen });
        }
        let sends = self.shards.iter().zip(per_shard).map(|(shard, objects)| {
            shard.send(Replace {
                resource: self.resource,
                objects,
                version: parsed,
            })
        });
        join_all(sends).await;
        self.state.lists.fetch_add(1, Ordering::Relaxed);
        if let Some(v) = parsed {
            self.state.watermark.store(v.get(), Ordering::Relaxed);
        }
        self.state.synced.store(true, Ordering::Relaxed);
        tracing::info!(resource = %self.resource, %version, "list replaced in every shard");
        Ok(version)
    }

    fn decode_or_report(&self, raw: &RawValue) -> Option<Object> {
        match decode(self.resource, raw) {
            Ok((object, lenient)) => {
                if lenient {
                    self.state.lenient.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(resource = %self.resource, key = %object.key(), "object read leniently: a field has the wrong type");
                }
                Some(object)
            }
            Err(e) => {
                self.state.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(resource = %self.resource, object = %describe(raw), error = %e, "object cannot be decoded");
                None
            }
        }
    }

    async fn watch(
        &mut self,
        from: &mut String,
        shutdown: &mut tokio::sync::watch::Receiver<bool>,
    ) -> WatchEnd {
        let params = WatchParams {
            bookmarks: true,
            timeout: Some(WATCH_TIMEOUT_SECS),
            ..WatchParams::default()
        };
        let request = match Request::new(collection(self.resource, None)).watch(&params, from) {
            Ok(r) => r,
            Err(e) => return WatchEnd::Failed(kube::Error::BuildRequest(e)),
        };
        let stream = match self.client.request_events::<Box<RawValue>>(request).await {
            Ok(s) => s,
            Err(kube::Error::Api(status)) if status.code == 410 => {
                return WatchEnd::Relist("410 Gone");
            }
            Err(e) => return WatchEnd::Failed(e),
        };
        let mut chunks = std::pin::pin!(stream.ready_chunks(MAX_BATCH));
        let mut last_progress = Instant::now();
        let mut per_shard: Vec<Vec<Change>> = vec![Vec::new(); self.shards.len()];
        loop {
            let chunk = tokio::select! {
                chunk = chunks.next() => chunk,
                probe = self.probes.recv() => {
                    if let Some(probe) = probe
                        && self.answer_probe(probe, last_progress).await
                    {
                        return WatchEnd::Relist("watch stalled behind the server");
                    }
                    continue;
                }
                _ = shutdown.changed() => return WatchEnd::Shutdown,
            };
            let Some(chunk) = chunk else {
                return WatchEnd::Renew;
            };
            let mut progress: Option<ResourceVersion> = None;
            let mut end = None;
            for item in chunk {
                let (change, version) = match item {
                    Ok(WatchEvent::Added(raw) | WatchEvent::Modified(raw)) => {
                        match self.decode_or_report(&raw) {
                            Some(object) => {
                                let v = object.resource_version();
                                (Some(Change::Applied(object)), v)
                            }
                            None => {
                                end = Some(WatchEnd::Relist("undecodable watch event"));
                                break;
                            }
                        }
                    }
                    Ok(WatchEvent::Deleted(raw)) => match self.decode_or_report(&raw) {
                        Some(object) => {
                            let v = object.resource_version();
                            (Some(Change::Deleted(object)), v)
                        }
                        None => {
                            end = Some(WatchEnd::Relist("undecodable watch event"));
                            break;
                        }
                    },
                    Ok(WatchEvent::Bookmark(b)) => {
                        (None, version_of(Some(&b.metadata.resource_version)))
                    }
                    Ok(WatchEvent::Error(status)) if status.code == 410 => {
                        end = Some(WatchEnd::Relist("410 Gone"));
                        break;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        end = Some(WatchEnd::Failed(kube::Error::Api(status)));
                        break;
                    }
                    Err(kube::Error::SerdeError(e)) => {
                        self.state.malformed.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(resource = %self.resource, error = %e, "malformed watch event");
                        end = Some(WatchEnd::Relist("malformed watch event"));
                        break;
                    }
                    Err(kube::Error::Api(status)) if status.code == 410 => {
                        end = Some(WatchEnd::Relist("410 Gone"));
                        break;
                    }
                    Err(e) => {
                        end = Some(WatchEnd::Failed(e));
                        break;
                    }
                };
                if let Some(v) = version {
                    progress = Some(progress.map_or(v, |p| p.max(v)));
                    *from = v.to_string();
                }
                if let Some(change) = change {
                    if self.resource.broadcast() {
                        for slot in per_shard.iter_mut() {
                            slot.push(change.clone());
                        }
                    } else {
                        let shard = match &change {
                            Change::Applied(o) | Change::Deleted(o) => self.router.route(o),
                        };
                        per_shard[shard.0].push(change);
                    }
                    self.state.events.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.deliver(&mut per_shard, progress).await;
            if progress.is_some() {
                last_progress = Instant::now();
            }
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// Sends each shard its events and the batch's progress marker, and waits until every shard
    /// has taken them: at most one batch per shard is in flight (backpressure).
    async fn deliver(&self, per_shard: &mut [Vec<Change>], progress: Option<ResourceVersion>) {
        if progress.is_none() && per_shard.iter().all(Vec::is_empty) {
            return;
        }
        let sends = self
            .shards
            .iter()
            .zip(per_shard.iter_mut())
            .map(|(shard, changes)| {
                shard.send(Batch {
                    resource: self.resource,
                    changes: std::mem::take(changes),
                    progress,
                })
            });
        join_all(sends).await;
        if let Some(v) = progress {
            self.state.watermark.fetch_max(v.get(), Ordering::Relaxed);
        }
    }

    /// A cheap consistent read (`limit=1`) of the current revision. Returns true when the watch
    /// looks stalled: the server is past the probe's target and no progress came for a while.
    async fn answer_probe(&self, probe: ProbeRequest, last_progress: Instant) -> bool {
        self.state.probes.fetch_add(1, Ordering::Relaxed);
        let params = ListParams {
            limit: Some(1),
            ..ListParams::default()
        };
        let Ok(request) = Request::new(collection(self.resource, None)).list(&params) else {
            return false;
        };
        let current = match self
            .client
            .request::<ObjectList<serde_json::Value>>(request)
            .await
        {
            Ok(list) => version_of(list.metadata.resource_version.as_deref()),
            Err(e) => {
                tracing::warn!(resource = %self.resource, error = %e, "probe read failed");
                return false;
            }
        };
        let stalled =
            current.is_some_and(|c| c >= probe.target) && last_progress.elapsed() >= STALLED_AFTER;
        tracing::warn!(resource = %self.resource, target = %probe.target, watermark = ?probe.watermark.map(|w| w.get()),
            current = ?current.map(|c| c.get()), stalled, "probe");
        stalled
    }
}

fn backoff(failures: u32) -> Duration {
    Duration::from_millis(200u64.saturating_mul(1 << failures.min(8))).min(Duration::from_secs(30))
}

async fn sleep_or_shutdown(
    delay: Duration,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => *shutdown.borrow(),
        _ = shutdown.changed() => true,
    }
}
