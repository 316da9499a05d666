//! The informer of one resource: a consistent paged list, then a watch with bookmarks, routed to
//! the shards. After each batch every shard gets the batch's progress marker (its watermark);
//! on `410 Gone`, a malformed event, a stuck watch or a restarted shard, an atomic relist.
//!
//! Every request is bounded: relists back off as client-go's reflector does ([`backoff`]), list
//! pages, watches and probes take a token of the informers' rate limit, list pages have the
//! client's read deadline, a watch that sends nothing (not even a bookmark) for
//! [`InformerLimits::watch_idle`] is renewed, and a watch line is at most
//! [`InformerLimits::watch_line`] bytes ([`lines`]). Pages are split into objects before they
//! are decoded ([`page`]): one bad object is counted and skipped, the others are cached. Pages
//! and large watch batches decode on every core while the I/O task fetches the next page
//! ([`offload`]). No response body reaches a log line.

pub mod backoff;
mod decode;
pub mod event;
pub mod event_proto;
pub mod frames;
pub mod head;
pub mod lines;
mod list;
pub mod offload;
pub mod page;
mod probe;
mod stream;

pub use decode::{decode, describe};

use crate::client::response::ResponseError;
use crate::ranges::HeldRanges;
use crate::rate_limit::TokenBucket;
use crate::shard_actor::{ProbeRequest, Relisting, ShardActor};
use actix::Addr;
use backoff::ReflectorBackoff;
use futures::future::join_all;
use kube::Client;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tidemark_engine::{Object, Placements, Resource, ResourceVersion, ShardRouter};
use tokio::sync::{mpsc, watch};

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
    /// Bytes of watch lines read (events and bookmarks).
    pub watch_bytes: AtomicU64,
    /// Objects and watch events read from protobuf (the rest were JSON).
    pub protobuf_reads: AtomicU64,
    /// Under scale-out: the server ignored the `shardSelector` (no `shardInfo` in its list), so
    /// this informer filters by range on its own side, having received every object.
    pub selector_fallback: AtomicBool,
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
    /// A page's decode did not finish (it panicked or was cancelled).
    #[error("decoding a list page failed: {0}")]
    Decode(#[from] tokio::task::JoinError),
    /// A page's decode ended without saying how.
    #[error("decoding a list page ended without its result")]
    DecodeVanished,
    /// A page's metadata read before its items differs from the whole page's.
    #[error("a list page's metadata before its items differs from the page's own")]
    HeadDisagrees,
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
    /// Every revision a probe reads is learned here, for every shard.
    server_revision: Arc<crate::server_revision::ServerRevision>,
    /// Under scale-out, the ranges this replica holds: the informer lists and watches only
    /// their objects, and relists when they change.
    ranges: Option<watch::Receiver<HeldRanges>>,
    /// The ranges the current list and watch are for.
    held: Option<HeldRanges>,
    /// Ask for protobuf before JSON (`--kube-api-content-type`), for a resource read from it.
    protobuf: bool,
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
            server_revision: Arc::default(),
            limits: InformerLimits::default(),
            backoff: ReflectorBackoff::client_go(),
            resync: None,
            epoch: 0,
            ranges: None,
            held: None,
            protobuf: false,
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

    /// Every revision a probe reads is also learned into `server_revision`, for every shard: a
    /// probe is a consistent read, and a cache trailing it for long is known to lag.
    pub fn with_server_revision(
        mut self,
        server_revision: Arc<crate::server_revision::ServerRevision>,
    ) -> Self {
        self.server_revision = server_revision;
        self
    }

    /// Takes a token of `limiter` before every list page, watch and probe (default: none).
    pub fn with_rate_limit(mut self, limiter: Arc<TokenBucket>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Waits `backoff` before relists and retried watches (default client-go's reflector's).
    pub fn with_backoff(mut self, backoff: ReflectorBackoff) -> Self {
        self.backoff = backoff;
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

    /// Lists and watches only the objects of the ranges `ranges` holds (with their
    /// `shardSelector`, and filtered here too in case the server ignores it), and relists
    /// whenever they change.
    pub fn with_ranges(mut self, ranges: watch::Receiver<HeldRanges>) -> Self {
        self.ranges = Some(ranges);
        self
    }

    /// Asks the API server for protobuf before JSON, as kube-controller-manager does, when
    /// `on` and this resource is read from protobuf ([`Object::reads_protobuf`]).
    pub fn with_protobuf(mut self, on: bool) -> Self {
        self.protobuf = on && Object::reads_protobuf(self.resource);
        self
    }

    /// `request` with the `Accept` header of this informer's wire format. A list with a
    /// `shardSelector` asks for JSON: whether the server honoured it is read from the list's
    /// `metadata.shardInfo`, which the protobuf `ListMeta` this client reads does not carry.
    fn accepting(&self, mut request: http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
        let accept = if self.protobuf && self.selector().is_none() {
            "application/vnd.kubernetes.protobuf, application/json"
        } else {
            "application/json"
        };
        request
            .headers_mut()
            .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        request
    }

    /// Whether `object` belongs to this replica (always, without scale-out).
    fn keeps(&self, object: &Object) -> bool {
        self.held
            .as_ref()
            .is_none_or(|held| held.contains_namespace(object.key().namespace()))
    }

    /// The `shardSelector` of the ranges held, under scale-out.
    fn selector(&self) -> Option<&str> {
        self.held.as_ref().and_then(|held| held.selector.as_deref())
    }

    /// Under scale-out: the ranges held changed since the current list.
    fn ranges_moved(&self) -> bool {
        self.ranges
            .as_ref()
            .is_some_and(|r| r.has_changed().unwrap_or(false))
    }

    /// Under scale-out with no range held: nothing of this resource belongs here.
    fn holds_nothing(&self) -> bool {
        self.held
            .as_ref()
            .is_some_and(|held| held.ranges.is_empty())
    }

    /// Notes whether the server honoured the `shardSelector` of a list (it answers with
    /// `shardInfo`), saying so when that changes.
    fn note_sharding(&self, honoured: bool) {
        let was = self
            .state
            .selector_fallback
            .swap(!honoured, Ordering::Relaxed);
        if !honoured && !was {
            tracing::warn!(resource = %self.resource, server = %self.server,
                "the API server ignored the shardSelector (no shardInfo in its list: KEP-5866's ShardedListAndWatch is off); filtering by range here, so every replica receives every object");
        } else if honoured && was {
            tracing::info!(resource = %self.resource, "the API server honours the shardSelector again");
        }
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
                        // The shards hold decisions that read this cache until the list lands,
                        // the reflector's backoff included.
                        join_all(self.shards.iter().map(|shard| {
                            shard.send(Relisting {
                                resource: self.resource,
                            })
                        }))
                        .await;
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
}

async fn sleep_or_shutdown(delay: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => *shutdown.borrow(),
        _ = shutdown.changed() => true,
    }
}
