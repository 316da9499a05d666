//! The informer of one resource: a consistent paged list, then a watch with bookmarks, routed to
//! the shards. After each batch every shard gets the batch's progress marker (its watermark);
//! on `410 Gone`, a malformed event, a stuck watch or a restarted shard, an atomic relist.
//!
//! Every request is bounded: relists back off as client-go's reflector does ([`backoff`]), list
//! pages, watches and probes take a token of the informers' rate limit, list pages have the
//! client's read deadline, a watch that sends nothing (not even a bookmark) for
//! [`InformerLimits::watch_idle`] is renewed, and a watch line is at most
//! [`InformerLimits::watch_line`] bytes ([`lines`]). Pages are split into objects before they
//! are decoded ([`page`]): one bad object is counted and skipped, the others are cached. No
//! response body reaches a log line.

pub mod backoff;
mod decode;
pub mod lines;
pub mod page;

pub use decode::{decode, describe};

use crate::client::response::{ResponseError, fetch, json_error_site, read_at_most, status_error};
use crate::paths::collection;
use crate::rate_limit::TokenBucket;
use crate::shard_actor::{Batch, ProbeRequest, Replace, ShardActor};
use actix::Addr;
use backoff::ReflectorBackoff;
use futures::future::join_all;
use kube::Client;
use kube::api::{ListParams, VersionMatch, WatchEvent, WatchParams};
use kube::core::Request;
use lines::{LineError, LineReader};
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tidemark_engine::{Change, Object, Placements, Resource, ResourceVersion, ShardRouter};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// List page size, as kube-rs' watcher defaults it.
pub const PAGE_SIZE: u32 = 500;
/// Server-side watch timeout; the watch is renewed from the last version after it.
pub const WATCH_TIMEOUT_SECS: u32 = 290;
/// Events taken from the stream at most per batch.
pub const MAX_BATCH: usize = 1024;
/// A watch silent this long while the server is ahead of the watermark is restarted.
pub const STALLED_AFTER: Duration = Duration::from_secs(30);
/// How long the body of a failed watch request may take to arrive.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest error body (a Status) read.
const ERROR_BODY_LIMIT: usize = 1 << 20;
/// The largest probe answer read (a list of one object).
const PROBE_BODY_LIMIT: usize = 16 << 20;
/// A watch that ends sooner than this without a single line is not a watch: client-go's
/// reflector calls it a "very short watch" and relists after its backoff.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// The bounds of the informers' watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InformerLimits {
    /// The longest watch line (one event) read: past it the stream is dropped and the informer
    /// relists. kube-apiserver refuses request bodies over 3 MiB and etcd values over 1.5 MiB,
    /// so an event over 16 MiB is not one.
    pub watch_line: usize,
    /// The largest list page read: 500 objects at etcd's 1.5 MiB limit take less in JSON.
    pub list_page: usize,
    /// A watch that sends nothing for this long is renewed. kube-apiserver sends a watch that
    /// asked for bookmarks one about every minute, so this is twice that.
    pub watch_idle: Duration,
}

impl Default for InformerLimits {
    fn default() -> Self {
        Self {
            watch_line: 16 << 20,
            list_page: 1 << 30,
            watch_idle: Duration::from_secs(120),
        }
    }
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
    /// Objects that could not be decoded (skipped in a list; a relist in a watch), and watch
    /// lines that were not events.
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
    Request(#[from] ResponseError),
    /// The request could not be built.
    #[error("building the list request: {0}")]
    Build(#[from] kube::core::request::Error),
    /// The page is not a list.
    #[error(transparent)]
    Page(#[from] page::PageError),
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
    /// Server closed it (timeout), or it went idle: renew from the last version.
    Renew,
    /// The version is gone, a malformed event arrived, or the watch stalled: relist, after the
    /// reflector's backoff unless a shard asked for it.
    Relist { why: &'static str, backoff: bool },
    /// A transient failure: back off, then renew.
    Failed(String),
    /// The manager stops.
    Shutdown,
}

impl WatchEnd {
    fn relist(why: &'static str) -> Self {
        Self::Relist { why, backoff: true }
    }
}

/// One resource's list/watch loop.
pub struct Informer {
    client: Client,
    resource: Resource,
    router: ShardRouter,
    placements: Placements,
    shards: Vec<Addr<ShardActor>>,
    state: Arc<InformerState>,
    probes: mpsc::UnboundedReceiver<ProbeRequest>,
    consistent_relists: bool,
    /// The API server's URL, for logs and `/readyz`.
    server: Arc<str>,
    limiter: Arc<TokenBucket>,
    limits: InformerLimits,
    backoff: ReflectorBackoff,
    /// Bumped when a restarted shard needs its slice again.
    resync: Option<watch::Receiver<u64>>,
    /// The resync request the current list answers.
    epoch: u64,
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
            placements: Placements::new(&router),
            router,
            shards,
            state: Arc::default(),
            probes,
            consistent_relists: true,
            server: Arc::from("the API server"),
            limiter: Arc::new(TokenBucket::new(0.0, 1)),
            limits: InformerLimits::default(),
            backoff: ReflectorBackoff::client_go(),
            resync: None,
            epoch: 0,
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

    /// Takes a token of `limiter` before every list page, watch and probe (default: none).
    pub fn with_rate_limit(mut self, limiter: Arc<TokenBucket>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Bounds the watches by `limits`.
    pub fn with_limits(mut self, limits: InformerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Relists (at once, without backoff) whenever `resync` changes: a restarted shard needs its
    /// slice again. Each list tells the shards which request it answers.
    pub fn with_resync(mut self, resync: watch::Receiver<u64>) -> Self {
        self.resync = Some(resync);
        self
    }

    /// The informer's state, shared.
    pub fn state(&self) -> Arc<InformerState> {
        self.state.clone()
    }

    fn fail(&self, failures: u32, what: &str, error: &dyn std::fmt::Display) {
        *self.state.last_failure.lock() = Some((
            failures,
            format!("{what} against {} failed: {error}", self.server),
        ));
    }

    /// Runs until `shutdown` fires.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let shutdown = &mut shutdown;
        let mut failures = 0u32;
        let mut wait = false;
        'relist: loop {
            if wait {
                let delay = self.backoff.next_jittered(std::time::Instant::now());
                tracing::info!(resource = %self.resource, delay_ms = delay.as_millis() as u64, "relisting after backoff");
                if sleep_or_shutdown(delay, shutdown).await {
                    return;
                }
            }
            if *shutdown.borrow() {
                return;
            }
            // Every relist but one a restarted shard asked for waits the reflector's backoff.
            wait = true;
            let version = match self.list().await {
                Ok(v) => v,
                Err(e) => {
                    failures += 1;
                    tracing::warn!(resource = %self.resource, server = %self.server, error = %e,
                        failures, "list failed; retrying");
                    self.fail(failures, "list", &e);
                    continue 'relist;
                }
            };
            failures = 0;
            *self.state.last_failure.lock() = None;
            let mut from = version;
            loop {
                match self.watch(&mut from, shutdown).await {
                    WatchEnd::Renew => {}
                    WatchEnd::Relist { why, backoff } => {
                        tracing::warn!(resource = %self.resource, why, "relisting");
                        wait = backoff;
                        continue 'relist;
                    }
                    WatchEnd::Failed(e) => {
                        failures += 1;
                        tracing::warn!(resource = %self.resource, server = %self.server, error = %e, failures, "watch failed; renewing");
                        self.fail(failures, "watch", &e);
                        let delay = self.backoff.next_jittered(std::time::Instant::now());
                        if sleep_or_shutdown(delay, shutdown).await {
                            return;
                        }
                    }
                    WatchEnd::Shutdown => return,
                }
            }
        }
    }

    /// One page of the list, rate limited, its body read in full within the client's deadline.
    async fn page(&self, params: &ListParams) -> Result<bytes::Bytes, ListError> {
        let request = Request::new(collection(self.resource, None)).list(params)?;
        self.limiter.acquire().await;
        Ok(fetch(&self.client, request, self.limits.list_page).await?)
    }

    /// A consistent paged list (`resourceVersion` unset), replaced into every shard at once.
    ///
    /// A relist asks for `resourceVersionMatch=NotOlderThan` the highest version this informer
    /// has seen, and a list older than that is refused: replacing the cache with it would move
    /// the cache back in time (the "time travel" of a lagging API server replica), and keys whose
    /// records were cleared as caught up would then act on a past state.
    async fn list(&mut self) -> Result<String, ListError> {
        if let Some(resync) = &mut self.resync {
            self.epoch = *resync.borrow_and_update();
        }
        let mut per_shard: Vec<Vec<Object>> = vec![Vec::new(); self.shards.len()];
        let mut placements = Placements::new(&self.router);
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
            let body = self.page(&params).await?;
            let text = page::LossyText::new(&body);
            let page = page::split(&text)?;
            for item in &page.items {
                let Some(object) = self.decode_item(item) else {
                    continue;
                };
                if self.resource.broadcast() {
                    for slot in per_shard.iter_mut() {
                        slot.push(object.clone());
                    }
                } else {
                    let shard = self.router.route(&object);
                    placements.listed(&object, shard);
                    per_shard[shard.0].push(object);
                }
            }
            match page.continue_token {
                Some(next) => token = Some(next),
                None => break page.resource_version.unwrap_or_default(),
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
                epoch: self.epoch,
            })
        });
        join_all(sends).await;
        self.placements = placements;
        self.state.lists.fetch_add(1, Ordering::Relaxed);
        if let Some(v) = parsed {
            self.state.watermark.store(v.get(), Ordering::Relaxed);
        }
        self.state.synced.store(true, Ordering::Relaxed);
        tracing::info!(resource = %self.resource, %version, "list replaced in every shard");
        Ok(version)
    }

    fn decode_item(&self, item: &page::Item<'_>) -> Option<Object> {
        match item {
            page::Item::Json(raw) => self.decode_or_report(raw),
            page::Item::InvalidUtf8(raw) => {
                self.state.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(resource = %self.resource, object = %describe(raw.get()),
                    "object skipped: it holds bytes that are not UTF-8");
                None
            }
        }
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
                tracing::error!(resource = %self.resource, object = %describe(raw.get()), error = %e, "object cannot be decoded");
                None
            }
        }
    }

    /// Opens a watch from `from`: its lines, or how it ended before it began.
    async fn open_watch(&self, from: &str) -> Result<LineReader<kube::client::Body>, WatchEnd> {
        let params = WatchParams {
            bookmarks: true,
            timeout: Some(WATCH_TIMEOUT_SECS),
            ..WatchParams::default()
        };
        let request = Request::new(collection(self.resource, None))
            .watch(&params, from)
            .map_err(|e| WatchEnd::Failed(format!("building the watch request: {e}")))?;
        self.limiter.acquire().await;
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(|e| WatchEnd::Failed(crate::errors::describe(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(LineReader::new(
                response.into_body(),
                self.limits.watch_line,
            ));
        }
        if status.as_u16() == 410 {
            return Err(WatchEnd::relist("410 Gone"));
        }
        let body = tokio::time::timeout(
            ERROR_BODY_TIMEOUT,
            read_at_most(response.into_body(), ERROR_BODY_LIMIT),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
        Err(WatchEnd::Failed(
            status_error(status.as_u16(), &body).to_string(),
        ))
    }

    async fn watch(&mut self, from: &mut String, shutdown: &mut watch::Receiver<bool>) -> WatchEnd {
        let idle = self.limits.watch_idle;
        let mut lines = match tokio::time::timeout(idle, self.open_watch(from)).await {
            Ok(Ok(lines)) => lines,
            Ok(Err(end)) => return end,
            Err(_) => {
                return WatchEnd::Failed(format!("the watch was not answered within {idle:?}"));
            }
        };
        let opened = Instant::now();
        let mut lines_seen = false;
        let mut last_progress = Instant::now();
        let mut per_shard: Vec<Vec<Change>> = vec![Vec::new(); self.shards.len()];
        loop {
            let resync_rx = self.resync.as_mut();
            let resync = async move {
                match resync_rx {
                    Some(r) => r.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let batch = tokio::select! {
                batch = tokio::time::timeout(idle, lines.next_batch(MAX_BATCH)) => batch,
                probe = self.probes.recv() => {
                    if let Some(probe) = probe
                        && self.answer_probe(probe, last_progress).await
                    {
                        return WatchEnd::relist("watch stalled behind the server");
                    }
                    continue;
                }
                true = resync => return WatchEnd::Relist { why: "a restarted shard needs its slice", backoff: false },
                _ = shutdown.changed() => return WatchEnd::Shutdown,
            };
            let batch = match batch {
                Err(_) => {
                    tracing::warn!(resource = %self.resource, server = %self.server, idle_ms = idle.as_millis() as u64,
                        "watch sent nothing, not even a bookmark; renewing it");
                    return WatchEnd::Renew;
                }
                Ok(Err(LineError::TooLong { limit })) => {
                    self.state.malformed.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(resource = %self.resource, server = %self.server, limit,
                        "watch line longer than the limit: malformed event, dropping the stream");
                    return WatchEnd::relist("watch line over the limit");
                }
                Ok(Err(LineError::Body(e))) => return WatchEnd::Failed(e.to_string()),
                Ok(Ok(batch)) if batch.is_empty() => {
                    if !lines_seen && opened.elapsed() < VERY_SHORT_WATCH {
                        return WatchEnd::relist(
                            "very short watch: closed within a second with no event",
                        );
                    }
                    return WatchEnd::Renew;
                }
                Ok(Ok(batch)) => batch,
            };
            lines_seen = true;
            let mut progress: Option<ResourceVersion> = None;
            let mut end = None;
            for line in batch {
                let (change, version) =
                    match serde_json::from_slice::<WatchEvent<Box<RawValue>>>(&line) {
                        Ok(WatchEvent::Added(raw) | WatchEvent::Modified(raw)) => {
                            match self.decode_or_report(&raw) {
                                Some(object) => {
                                    let v = object.resource_version();
                                    (Some(Change::Applied(object)), v)
                                }
                                None => {
                                    end = Some(WatchEnd::relist("undecodable watch event"));
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
                                end = Some(WatchEnd::relist("undecodable watch event"));
                                break;
                            }
                        },
                        Ok(WatchEvent::Bookmark(b)) => {
                            (None, version_of(Some(&b.metadata.resource_version)))
                        }
                        Ok(WatchEvent::Error(status)) if status.code == 410 => {
                            end = Some(WatchEnd::relist("410 Gone"));
                            break;
                        }
                        Ok(WatchEvent::Error(status)) => {
                            end = Some(WatchEnd::Failed(format!(
                                "{} ({} {})",
                                status.message, status.code, status.reason
                            )));
                            break;
                        }
                        Err(e) => {
                            self.state.malformed.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(resource = %self.resource, error = %json_error_site(&e),
                            bytes = line.len(), "malformed watch event");
                            end = Some(WatchEnd::relist("malformed watch event"));
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
                        let placement = self.placements.place(&self.router, &change);
                        if let (Some(left), Change::Applied(object)) = (placement.left, &change) {
                            per_shard[left.0].push(Change::Departed(object.clone()));
                        }
                        per_shard[placement.shard.0].push(change);
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
        #[derive(serde::Deserialize)]
        struct ListMeta {
            #[serde(default)]
            metadata: Version,
        }
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            #[serde(default)]
            resource_version: Option<String>,
        }
        self.state.probes.fetch_add(1, Ordering::Relaxed);
        let params = ListParams {
            limit: Some(1),
            ..ListParams::default()
        };
        let Ok(request) = Request::new(collection(self.resource, None)).list(&params) else {
            return false;
        };
        self.limiter.acquire().await;
        let current = match fetch(&self.client, request, PROBE_BODY_LIMIT).await {
            Ok(body) => match serde_json::from_slice::<ListMeta>(&body) {
                Ok(list) => version_of(list.metadata.resource_version.as_deref()),
                Err(e) => {
                    tracing::warn!(resource = %self.resource, error = %json_error_site(&e), "probe answer does not decode");
                    return false;
                }
            },
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

async fn sleep_or_shutdown(delay: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => *shutdown.borrow(),
        _ = shutdown.changed() => true,
    }
}
