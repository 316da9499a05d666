//! A shard: its slice of the cache, its watermarks, and per controller a version map, a queue
//! and the write plans in flight. Plain data: events, time and write results go in, writes and
//! probes come out.
//!
//! Its rooms: [`messages`] (what goes in and out), [`controller`] (the state kept per
//! controller: plans, pending writes), [`gate`] (the freshness decision, pure), `watch` (changes,
//! relists and watermarks fanned out to the queues), `poll` (ready keys through the gate and the
//! reconciler), `results` (the runtime's answers) and `settle` (a failed reconcile).

mod controller;
pub mod gate;
mod messages;
mod poll;
mod results;
mod settle;
mod watch;

pub use controller::ControllerSpec;
pub use gate::{DECISION_PROOF_HOLDS, QUIET_WATERMARK};
pub use messages::{Change, Output, STARVING_AFTER_SKIPS};

use crate::cache::ShardCache;
use crate::key::ObjectKey;
use crate::lag::{KnownRevisions, LAG_THRESHOLD};
use crate::live_read::LiveReads;
use crate::proof::Barriers;
use crate::queue::Fired;
use crate::resource::{PerResource, Resource};
use crate::router::{ShardId, ShardRouter};
use crate::rv::ResourceVersion;
use crate::seeded_bug::SeededBug;
use crate::stats::ControllerStats;
use controller::{Controller, PendingWrites};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One shard of the engine.
pub struct Shard {
    id: ShardId,
    cache: ShardCache,
    watermarks: PerResource<Option<ResourceVersion>>,
    synced: PerResource<bool>,
    /// Since when each cache whose watch ended for a relist has waited for it: it misses
    /// events for certain until the list lands (the reflector's backoff among it).
    relisting: PerResource<Option<Instant>>,
    /// Since when each cache has waited for its relist, kept past the hold until the list
    /// lands: a cache with no watch for the lag threshold is known to lag.
    relist_pending: PerResource<Option<Instant>>,
    controllers: Vec<Controller>,
    writes: PendingWrites,
    outbox: Vec<Output>,
    fired: Vec<Fired>,
    barriers: Barriers,
    leading: bool,
    /// Under scale-out, whether this process is the manager-wide leader, which alone reconciles
    /// cluster-scoped keys (Nodes) while `leading` follows the ranges held; `None` otherwise
    /// (`leading` covers every key).
    cluster_leading: Option<bool>,
    hold: Option<ResourceVersion>,
    acked: PerResource<BTreeMap<(ResourceVersion, u64), (usize, Instant)>>,
    router: Option<ShardRouter>,
    moved_at: PerResource<Option<Instant>>,
    known: KnownRevisions,
    /// Per resource, how long after the process knew a revision the watch delivered it, and
    /// when that was measured: a watch late by more than the threshold is lagging even while the
    /// changes it has not delivered yet are recent. A measure holds for a lag threshold unless a
    /// larger one comes: a bookmark right behind late events delivers a revision the process
    /// learned only lately, and must not make the watch look prompt.
    delay: PerResource<(Duration, Option<Instant>)>,
    /// Per resource, the lowest version applied since the watermark last moved: the first
    /// event a batch delivers is the one whose lateness says how late the watch is.
    first_unmeasured: PerResource<Option<ResourceVersion>>,
    lag_threshold: Duration,
    live_reads: LiveReads,
    /// Destructive work waits until then after a takeover: the previous leader's writes may
    /// still commit until its write deadline has passed.
    destructive_from: Option<Instant>,
    /// An old bug this shard was told to have (only with the `seeded-bugs` feature).
    bug: Option<SeededBug>,
}

impl Shard {
    /// A shard running `controllers`.
    pub fn new(id: ShardId, controllers: Vec<ControllerSpec>) -> Self {
        Self {
            id,
            cache: ShardCache::default(),
            watermarks: PerResource::default(),
            synced: PerResource::default(),
            relisting: PerResource::default(),
            relist_pending: PerResource::default(),
            controllers: controllers
                .into_iter()
                .enumerate()
                .map(|(index, spec)| Controller::new(index, spec))
                .collect(),
            writes: PendingWrites::default(),
            outbox: Vec::new(),
            fired: Vec::new(),
            barriers: Barriers::default(),
            leading: true,
            cluster_leading: None,
            hold: None,
            acked: PerResource::default(),
            router: None,
            moved_at: PerResource::default(),
            known: KnownRevisions::default(),
            delay: PerResource::default(),
            first_unmeasured: PerResource::default(),
            lag_threshold: LAG_THRESHOLD,
            live_reads: LiveReads::default(),
            destructive_from: None,
            bug: None,
        }
    }

    /// Gives this shard an old bug back, for the simulation to find.
    #[cfg(feature = "seeded-bugs")]
    pub fn with_seeded_bug(mut self, bug: SeededBug) -> Self {
        self.bug = Some(bug);
        for c in &mut self.controllers {
            c.proofs.never_expire(bug == SeededBug::ProofNeverExpires);
        }
        self
    }

    /// How long a cache may trail what the process knows of the server before destructive
    /// decisions that read it need a live read (default [`LAG_THRESHOLD`]).
    pub fn with_lag_threshold(mut self, threshold: Duration) -> Self {
        self.lag_threshold = threshold;
        self
    }

    /// Reconciles only the keys `router` gives this shard: needed once broadcast resources
    /// (Nodes) reach every shard, so a Node's own key is reconciled in exactly one.
    pub fn with_router(mut self, router: ShardRouter) -> Self {
        self.router = Some(router);
        self
    }

    fn owns(router: Option<&ShardRouter>, id: ShardId, key: &ObjectKey) -> bool {
        router.is_none_or(|r| r.shard_of(key) == id)
    }

    /// This shard now acts for the leader: it reconciles again, but not before every watermark
    /// it reads has reached `revision` (the takeover's own write, after every write of the
    /// previous leader), and every key it has cached is queued so nothing waits for an event.
    pub fn lead(&mut self, revision: Option<ResourceVersion>, now: Instant) {
        self.leading = true;
        self.hold = revision;
        for c in &mut self.controllers {
            for key in self.cache.keys(c.reconciler.primary()) {
                if Self::owns(self.router.as_ref(), self.id, &key) {
                    c.queue.add(&key, now);
                }
            }
        }
    }

    /// No destructive decision is carried out before `at`: after a takeover, the previous
    /// leader's writes already sent may commit until their deadline has passed.
    pub fn hold_destructive_until(&mut self, at: Instant) {
        self.destructive_from = Some(self.destructive_from.map_or(at, |t| t.max(at)));
    }

    /// The server has reached at least `revision` (learned elsewhere in the process, for
    /// example by another shard's write): caches that trail it for long are known to lag.
    pub fn observe_revision(&mut self, revision: ResourceVersion, now: Instant) {
        self.known.learn(revision, now);
    }

    /// The watch of `resource` ended at `now` and its cache waits for a relist
    /// ([`replace`](Self::replace)): until then it misses events for certain. A controller in
    /// the `tidemark` mode that reads it starts no reconcile and sends no further step of a
    /// running plan; a plan held this way is never resumed (the key decides again through the
    /// gate). The hold lasts at most the lag threshold: a relist that takes longer (the
    /// reflector's backoff grows to 30 s in a storm of `410`s) leaves a cache that is known to
    /// lag like any other, whose destructive decisions need a live read, and the controller goes
    /// on.
    pub fn relisting(&mut self, resource: Resource, now: Instant) {
        if self.bug == Some(SeededBug::RelistKeepsPlans) {
            return;
        }
        let since = self.relisting.get_mut(resource);
        if since.is_none() {
            *since = Some(now);
        }
        let pending = self.relist_pending.get_mut(resource);
        if pending.is_none() {
            *pending = Some(now);
        }
    }

    /// Whether `c` must wait for a relist at `now`: it runs in the `tidemark` mode and a cache
    /// it reads has waited for its relist for less than `hold`.
    fn waits_for_relist(
        relisting: &PerResource<Option<Instant>>,
        hold: Duration,
        c: &Controller,
        now: Instant,
    ) -> bool {
        c.mode.is_tidemark()
            && c.reconciler.reads().iter().any(|r| {
                relisting
                    .get(*r)
                    .is_some_and(|since| now.saturating_duration_since(since) < hold)
            })
    }

    /// Whether a cache `c` reads is held for its relist (holds that are over were forgotten by
    /// [`forget_finished_holds`](Self::forget_finished_holds) at the start of the poll).
    fn relisting_for(&self, c: &Controller) -> bool {
        c.reconciler
            .reads()
            .iter()
            .any(|r| self.relisting.get(*r).is_some())
    }

    /// Forgets relist holds that have lasted the lag threshold: the cache now counts as lagging
    /// by what it misses.
    fn forget_finished_holds(&mut self, now: Instant) {
        for (_, since) in self.relisting.iter_mut() {
            if since.is_some_and(|t| now.saturating_duration_since(t) >= self.lag_threshold) {
                *since = None;
            }
        }
    }

    /// Whether the cache of `resource` is known to lag at `now`: it misses a revision the process
    /// learned `lag_threshold` ago or longer, its watch last delivered a revision that long
    /// after the process knew of it, or it has waited that long for a relist (it has no watch).
    pub fn is_lagging(&self, resource: Resource, now: Instant) -> bool {
        if self.bug == Some(SeededBug::ProofNeverExpires) {
            return false;
        }
        self.delay.get(resource).0 >= self.lag_threshold
            || self
                .relist_pending
                .get(resource)
                .is_some_and(|since| now.saturating_duration_since(since) >= self.lag_threshold)
            || self
                .known
                .lagging(*self.watermarks.get(resource), now, self.lag_threshold)
    }

    /// Leadership is lost: no reconcile starts (the cache stays warm), and no key stays proven,
    /// since another manager may write from now on.
    pub fn follow(&mut self) {
        self.leading = false;
        for c in &mut self.controllers {
            c.proofs.revoke_all();
        }
    }

    /// Under scale-out: whether this process is the manager-wide leader, the only one that
    /// reconciles cluster-scoped keys. Becoming it queues those keys; ceasing revokes their
    /// proofs, since the next leader may write from now on.
    pub fn lead_cluster(&mut self, leading: bool, now: Instant) {
        self.cluster_leading = Some(leading);
        for c in &mut self.controllers {
            if c.reconciler.primary().namespaced() {
                continue;
            }
            if !leading {
                c.proofs.revoke_all();
                continue;
            }
            for key in self.cache.keys(c.reconciler.primary()) {
                if Self::owns(self.router.as_ref(), self.id, &key) {
                    c.queue.add(&key, now);
                }
            }
        }
    }

    /// Whether `c` may reconcile: by the shard's leadership, or for a cluster-scoped primary
    /// under scale-out, by the manager-wide one.
    fn leads(&self, c: &Controller) -> bool {
        match self.cluster_leading {
            Some(cluster) if !c.reconciler.primary().namespaced() => cluster,
            _ => self.leading,
        }
    }

    /// Whether this shard reconciles (it is leading, or leader election is off).
    pub fn is_leading(&self) -> bool {
        self.leading
    }

    /// This shard's id.
    pub fn id(&self) -> ShardId {
        self.id
    }

    /// The cache, read-only.
    pub fn cache(&self) -> &ShardCache {
        &self.cache
    }

    /// The watermark of `resource`: every event up to it that belongs here has been applied.
    pub fn watermark(&self, resource: Resource) -> Option<ResourceVersion> {
        *self.watermarks.get(resource)
    }

    /// Whether `resource` has had its first list.
    pub fn is_synced(&self, resource: Resource) -> bool {
        *self.synced.get(resource)
    }

    /// The earliest timer of any controller.
    pub fn next_deadline(&self) -> Option<Instant> {
        // A relist's hold ends on its own: the shard must poll then (`poll` forgets holds that
        // are over, so none of these is in the past).
        let holds = self
            .relisting
            .iter()
            .filter_map(|(_, since)| *since)
            .map(|since| since + self.lag_threshold);
        self.controllers
            .iter()
            .filter_map(|c| c.queue.next_deadline())
            .chain(holds)
            .min()
    }

    /// Per-controller counters and gauges, with in-flight work measured at `now`.
    pub fn stats(&self, now: Instant) -> Vec<ControllerStats> {
        self.controllers
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let mut s = c.stats.clone();
                for plan in c.plans.values() {
                    let running = now.saturating_duration_since(plan.started);
                    s.unfinished_work += running;
                    s.longest_running = s.longest_running.max(running);
                }
                s.queue = c.queue.stats();
                s.depth = c.queue.depth();
                s.parked = c.queue.parked();
                s.in_flight = c.plans.len();
                s.tracked_keys = c.versions.len();
                s.proven_keys = c.proofs.len();
                s.awaiting_barrier = self.barriers.pending_for(index);
                s.skips_per_second = c.hot_keys.skips_per_second(now);
                s.hot_key = c.hot_keys.hottest(now);
                s
            })
            .collect()
    }

    /// Writes sent and not yet answered.
    pub fn writes_in_flight(&self) -> usize {
        self.writes.len()
    }
}

#[cfg(test)]
mod tests;
