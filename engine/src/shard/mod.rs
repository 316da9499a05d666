//! A shard: its slice of the cache, its watermarks, and per controller a version map, a queue
//! and the write plans in flight. Plain data: events, time and write results go in, writes and
//! probes come out.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::expectations::Expectations;
use crate::key::{ObjectKey, Uid};
use crate::lag::{KnownRevisions, LAG_THRESHOLD};
use crate::live_read::{Expected, LiveReadId, LiveReads, Verdict, judge};
use crate::mode::ConsistencyMode;
use crate::object::Object;
use crate::proof::{BarrierId, Barriers, Proofs};
use crate::queue::{Fired, Outcome, ParkTarget, WorkQueue};
use crate::reconciler::{Context, Reconciler};
use crate::resource::{PerResource, Resource};
use crate::router::ShardId;
use crate::rv::ResourceVersion;
use crate::stats::ControllerStats;
use crate::version_map::{Freshness, VersionMap};
use crate::write::{WriteErrorKind, WriteId, WriteRequest, WriteResult};
use ahash::AHashMap;
use smallvec::SmallVec;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// A watermark that has not moved for this long proves nothing about now: a destructive decision
/// that reads it needs a fresh barrier even for a proven key.
pub const QUIET_WATERMARK: Duration = Duration::from_secs(90);

/// Consecutive skips after which a parked key is reported as starving.
pub const STARVING_AFTER_SKIPS: u32 = 5;

/// A change to one object, from a watch.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// ADDED or MODIFIED.
    Applied(Object),
    /// DELETED, with the object's last state.
    Deleted(Object),
    /// The object now belongs to another shard (its controlling owner changed): this shard
    /// drops its copy, and its old owner no longer counts it. Not a deletion.
    Departed(Object),
}

impl Change {
    /// The object the change carries.
    pub fn object(&self) -> &Object {
        match self {
            Change::Applied(o) | Change::Deleted(o) | Change::Departed(o) => o,
        }
    }
}

/// Something the shard asks its runtime to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Perform a write and answer with [`Shard::write_done`].
    Write(WriteRequest),
    /// A parked key's safety timer ran out: the watermark of `resource` has not reached `target`.
    /// The runtime should check the watch (a cheap consistent read of the current revision).
    Probe {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// The resource whose watermark is stuck.
        resource: Resource,
        /// What it waits for.
        target: ResourceVersion,
        /// Current watermark.
        watermark: Option<ResourceVersion>,
    },
    /// Read the current revision with one cheap consistent read (a list of `resource` with
    /// `limit=1`) and answer with [`Shard::barrier_done`]. Keys whose destructive decisions need
    /// proof wait for it.
    Barrier {
        /// Names the read.
        id: BarrierId,
        /// A resource to list (any works: the revision is global).
        resource: Resource,
    },
    /// A key's destructive work cannot be proven fresh (its barrier read failed): tell the
    /// owner of the object (upstream does it with a Warning Event on it).
    Degraded {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// Its resource.
        resource: Resource,
        /// Its UID, if cached.
        uid: Option<Uid>,
        /// A CamelCase reason.
        reason: &'static str,
        /// What happened.
        message: String,
    },
    /// A destructive decision read a cache known to lag: read these objects live (one
    /// consistent read each) and answer with [`Shard::live_read_done`]; the decision is carried out only if
    /// the cache holds their current versions.
    LiveRead {
        /// Names the read.
        id: LiveReadId,
        /// The controller.
        controller: &'static str,
        /// The key whose decision waits.
        key: ObjectKey,
        /// What to read: the key's primary object first, then what the decision rests on.
        objects: Vec<(Resource, ObjectKey)>,
    },
    /// A key has been skipped [`STARVING_AFTER_SKIPS`] times or more in a row.
    Starving {
        /// The controller.
        controller: &'static str,
        /// The key.
        key: ObjectKey,
        /// Consecutive skips.
        skips: u32,
    },
}

/// A controller registered with a shard.
pub struct ControllerSpec {
    /// The logic.
    pub reconciler: Box<dyn Reconciler>,
    /// The protection it runs with (`StaleControllerConsistency<Name>=false` is naive).
    pub mode: ConsistencyMode,
}

impl ControllerSpec {
    /// `reconciler` under `mode`.
    pub fn new(reconciler: Box<dyn Reconciler>, mode: ConsistencyMode) -> Self {
        Self { reconciler, mode }
    }
}

struct PlanProgress {
    owner_uid: Option<Uid>,
    /// The primary object's generation the plan was made for.
    generation: Option<i64>,
    /// Creates of the plan not yet sent (expectations are lowered by them if it stops early).
    unsent_creates: i64,
    steps: VecDeque<Vec<Action>>,
    outstanding: usize,
    failed: bool,
    superseded: bool,
    /// The next step waits: a cache the controller reads is being relisted, and the relisted
    /// state may cancel the plan.
    held: bool,
    requeue_after: Option<Duration>,
    started: Instant,
}

struct Controller {
    reconciler: Box<dyn Reconciler>,
    mode: ConsistencyMode,
    expectations: Expectations,
    /// Keys whose last live read matched the cache, with the versions it matched: their next
    /// destructive decision may go ahead once, lag or not, if it rests on exactly those
    /// versions (an event that arrived since makes it another decision, which needs its own).
    verified: AHashMap<ObjectKey, Vec<Expected>>,
    queue: WorkQueue,
    versions: VersionMap,
    plans: AHashMap<ObjectKey, PlanProgress>,
    proofs: Proofs,
    unknown_outcome: ahash::AHashSet<ObjectKey>,
    stats: ControllerStats,
}

struct PendingWrite {
    controller: usize,
    owner: ObjectKey,
    resource: Resource,
    deleted: Option<(ObjectKey, Uid)>,
    creates: bool,
}

/// One shard of the engine.
pub struct Shard {
    id: ShardId,
    cache: ShardCache,
    watermarks: PerResource<Option<ResourceVersion>>,
    synced: PerResource<bool>,
    /// Caches whose watch ended for a relist that has not been replaced yet: they are known to
    /// miss events, for as long as the relist takes (the reflector's backoff among it).
    relisting: PerResource<bool>,
    controllers: Vec<Controller>,
    writes: AHashMap<WriteId, PendingWrite>,
    next_write: u64,
    outbox: Vec<Output>,
    fired: Vec<Fired>,
    barriers: Barriers,
    leading: bool,
    hold: Option<ResourceVersion>,
    acked: PerResource<BTreeMap<(ResourceVersion, u64), (usize, Instant)>>,
    router: Option<crate::router::ShardRouter>,
    moved_at: PerResource<Option<Instant>>,
    known: KnownRevisions,
    /// Per resource, how long after the process knew a revision the watch delivered it, as last
    /// measured when the watermark moved: a watch late by more than the threshold is lagging
    /// even while the changes it has not delivered yet are recent.
    delay: PerResource<Duration>,
    lag_threshold: Duration,
    live_reads: LiveReads,
    /// Destructive work waits until then after a takeover: the previous leader's writes may
    /// still commit until its write deadline has passed.
    destructive_from: Option<Instant>,
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
            controllers: controllers
                .into_iter()
                .map(|spec| Controller {
                    stats: ControllerStats::new(spec.reconciler.name()),
                    reconciler: spec.reconciler,
                    mode: spec.mode,
                    expectations: Expectations::default(),
                    verified: AHashMap::new(),
                    queue: WorkQueue::default(),
                    versions: VersionMap::default(),
                    plans: AHashMap::new(),
                    proofs: Proofs::default(),
                    unknown_outcome: ahash::AHashSet::new(),
                })
                .collect(),
            writes: AHashMap::new(),
            next_write: 0,
            outbox: Vec::new(),
            fired: Vec::new(),
            barriers: Barriers::default(),
            leading: true,
            hold: None,
            acked: PerResource::default(),
            router: None,
            moved_at: PerResource::default(),
            known: KnownRevisions::default(),
            delay: PerResource::default(),
            lag_threshold: LAG_THRESHOLD,
            live_reads: LiveReads::default(),
            destructive_from: None,
        }
    }

    /// How long a cache may trail what the process knows of the server before destructive
    /// decisions that read it need a live read (default [`LAG_THRESHOLD`]).
    pub fn with_lag_threshold(mut self, threshold: Duration) -> Self {
        self.lag_threshold = threshold;
        self
    }

    /// Reconciles only the keys `router` gives this shard: needed once broadcast resources
    /// (Nodes) reach every shard, so a Node's own key is reconciled in exactly one.
    pub fn with_router(mut self, router: crate::router::ShardRouter) -> Self {
        self.router = Some(router);
        self
    }

    fn owns(router: Option<&crate::router::ShardRouter>, id: ShardId, key: &ObjectKey) -> bool {
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

    /// The watch of `resource` ended and its cache waits for a relist ([`replace`](Self::replace)):
    /// until then it misses events for certain. A controller in the `tidemark` mode that reads it
    /// starts no reconcile and sends no further step of a running plan, so a plan the relisted
    /// state makes obsolete is cancelled before its next step rather than after.
    pub fn relisting(&mut self, resource: Resource) {
        *self.relisting.get_mut(resource) = true;
    }

    /// Whether a controller of `mode` reading `reads` must wait for a relist to finish.
    fn waits_for_relist(
        relisting: &PerResource<bool>,
        mode: ConsistencyMode,
        reads: &[Resource],
    ) -> bool {
        mode.is_tidemark() && reads.iter().any(|r| *relisting.get(*r))
    }

    /// Whether the cache of `resource` is known to lag at `now`: it misses a revision the process
    /// learned `lag_threshold` ago or longer, or its watch last delivered a revision that long
    /// after the process knew of it.
    pub fn is_lagging(&self, resource: Resource, now: Instant) -> bool {
        Self::lags(
            &self.known,
            &self.delay,
            &self.watermarks,
            self.lag_threshold,
            resource,
            now,
        )
    }

    fn lags(
        known: &KnownRevisions,
        delay: &PerResource<Duration>,
        watermarks: &PerResource<Option<ResourceVersion>>,
        threshold: Duration,
        resource: Resource,
        now: Instant,
    ) -> bool {
        *delay.get(resource) >= threshold
            || known.lagging(*watermarks.get(resource), now, threshold)
    }

    /// Leadership is lost: no reconcile starts (the cache stays warm), and no key stays proven,
    /// since another manager may write from now on.
    pub fn follow(&mut self) {
        self.leading = false;
        for c in &mut self.controllers {
            c.proofs.revoke_all();
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

    fn enqueue_for(&mut self, object: &Object, now: Instant) {
        let mut keys: SmallVec<[ObjectKey; 2]> = SmallVec::new();
        for c in &mut self.controllers {
            keys.clear();
            c.reconciler.keys_for(object, &mut keys);
            for key in &keys {
                if Self::owns(self.router.as_ref(), self.id, key) {
                    c.queue.add(key, now);
                }
            }
            let mut wide = Vec::new();
            c.reconciler.keys_for_cache(object, &self.cache, &mut wide);
            for key in &wide {
                if Self::owns(self.router.as_ref(), self.id, key) {
                    c.queue.add(key, now);
                }
            }
        }
    }

    /// The cache no longer shows `uid` live: release deletions waiting for it, and forget what
    /// was recorded for a deleted primary object.
    fn observe_gone(&mut self, object: &Object, removed: bool, now: Instant) {
        let resource = object.resource();
        let owner = Self::controlling_key(object);
        for c in &mut self.controllers {
            if let Some((owner, 0)) = c.versions.observe_gone(object.uid()) {
                c.queue.wake(&owner, now);
            }
            if let Some(owner) = &owner
                && c.expectations.deletion_observed(owner, object.uid())
            {
                c.queue.wake(owner, now);
            }
            if removed && c.reconciler.primary() == resource {
                c.versions.forget(object.key());
                c.proofs.forget(object.key());
                c.expectations.forget(object.key());
                c.verified.remove(object.key());
                c.queue.wake(object.key(), now);
            }
        }
    }

    /// The key of an object's controlling owner (same namespace), if it has one.
    fn controlling_key(object: &Object) -> Option<ObjectKey> {
        object
            .controller_ref()
            .map(|owner| ObjectKey::new(object.key().namespace_arc().clone(), owner.name.clone()))
    }

    /// A new object showed up: its controlling owner's expected create is observed.
    fn observe_created(&mut self, object: &Object, now: Instant) {
        let Some(owner) = Self::controlling_key(object) else {
            return;
        };
        for c in &mut self.controllers {
            if c.reconciler.primary() != object.resource()
                && c.expectations.creation_observed(&owner)
            {
                c.queue.wake(&owner, now);
            }
        }
    }

    /// The primary object at `key` is now `object` (`None`: gone). A plan made for another
    /// spec or another object finishes the step in flight and starts no further one: the key
    /// decides again on what is there now.
    fn supersede_if_respecced(c: &mut Controller, key: &ObjectKey, object: Option<&Object>) {
        if !c.mode.is_tidemark() {
            return;
        }
        let Some(plan) = c.plans.get_mut(key) else {
            return;
        };
        let same = object.is_some_and(|o| {
            plan.owner_uid.as_ref().is_none_or(|uid| uid == o.uid())
                && (o.generation().is_none() || o.generation() == plan.generation)
        });
        if !same {
            plan.superseded = true;
        }
    }

    /// Applies one watch event. The watermark moves only with [`advance`](Self::advance).
    pub fn apply(&mut self, change: Change, now: Instant) {
        match change {
            Change::Applied(object) => {
                let resource = object.resource();
                let replaced = self
                    .cache
                    .uid_of(resource, object.key())
                    .is_some_and(|uid| uid != object.uid());
                for c in &mut self.controllers {
                    if c.reconciler.primary() == resource {
                        Self::supersede_if_respecced(c, object.key(), Some(&object));
                        c.versions.forget_if_replaced(object.key(), object.uid());
                        if replaced {
                            c.proofs.forget(object.key());
                        }
                    }
                }
                if object.is_terminating() {
                    self.observe_gone(&object, false, now);
                }
                let created = self.cache.uid_of(resource, object.key()).is_none();
                if created {
                    self.observe_created(&object, now);
                }
                self.enqueue_for(&object, now);
                let previous = self.cache.apply(object.clone());
                if resource == Resource::Leases
                    && previous.as_ref().map(Object::resource_version)
                        != Some(object.resource_version())
                {
                    self.cache.observe_lease(object.key(), now);
                }
                if let Some(previous) = previous
                    && previous.controller_ref() != object.controller_ref()
                {
                    self.enqueue_for(&previous, now);
                }
            }
            Change::Departed(object) => {
                if let Some(previous) = self.cache.remove(object.resource(), object.key()) {
                    self.observe_gone(&previous, false, now);
                    self.enqueue_for(&previous, now);
                }
            }
            Change::Deleted(object) => {
                let cached = self.cache.remove(object.resource(), object.key());
                for c in &mut self.controllers {
                    if c.reconciler.primary() == object.resource() {
                        Self::supersede_if_respecced(c, object.key(), None);
                    }
                }
                self.observe_gone(&object, true, now);
                self.enqueue_for(&object, now);
                if let Some(previous) = cached
                    && previous.uid() != object.uid()
                {
                    self.observe_gone(&previous, true, now);
                    self.enqueue_for(&previous, now);
                }
            }
        }
    }

    /// Replaces the whole slice of `resource` with a list taken at `version` (upstream
    /// AtomicFIFO's Replace): objects missing from it count as deleted, every affected key is
    /// queued, and the watermark becomes the list's version.
    pub fn replace(
        &mut self,
        resource: Resource,
        objects: Vec<Object>,
        version: Option<ResourceVersion>,
        now: Instant,
    ) {
        for object in &objects {
            if self.cache.uid_of(resource, object.key()).is_none() {
                self.observe_created(object, now);
            }
            self.enqueue_for(object, now);
        }
        let terminating: Vec<Object> = objects
            .iter()
            .filter(|o| o.is_terminating())
            .cloned()
            .collect();
        let changed_leases: Vec<ObjectKey> = objects
            .iter()
            .filter(|o| {
                o.resource() == Resource::Leases
                    && self.cache.leases.get(o.key()).map(|l| l.resource_version)
                        != Some(o.resource_version())
            })
            .map(|o| o.key().clone())
            .collect();
        for key in &changed_leases {
            self.cache.observe_lease(key, now);
        }
        let removed = self.cache.replace(resource, objects);
        for c in &mut self.controllers {
            if c.reconciler.primary() != resource {
                continue;
            }
            let keys: Vec<ObjectKey> = c.plans.keys().cloned().collect();
            for key in keys {
                let (uid, generation) = (
                    self.cache.uid_of(resource, &key).cloned(),
                    self.cache.generation_of(resource, &key),
                );
                if let Some(plan) = c.plans.get_mut(&key)
                    && c.mode.is_tidemark()
                    && (uid.is_none()
                        || plan.owner_uid.is_some() && plan.owner_uid != uid
                        || generation.is_some() && generation != plan.generation)
                {
                    // The relisted cache shows another spec (or no object): the plan's next
                    // steps were made for a state that is gone.
                    plan.superseded = true;
                }
            }
        }
        for object in &removed {
            self.observe_gone(object, true, now);
            self.enqueue_for(object, now);
        }
        for object in &terminating {
            self.observe_gone(object, false, now);
        }
        *self.synced.get_mut(resource) = true;
        *self.relisting.get_mut(resource) = false;
        // A list is as fresh as the server's answer.
        *self.delay.get_mut(resource) = Duration::ZERO;
        *self.watermarks.get_mut(resource) = version;
        *self.moved_at.get_mut(resource) = Some(now);
        if let Some(v) = version {
            self.known.learn(v, now);
            self.prune_known();
            self.observe_acked(resource, v, now);
            for c in &mut self.controllers {
                c.queue.watermark(resource, v, now);
            }
        }
    }

    /// Forgets known revisions every synced cache has reached.
    fn prune_known(&mut self) {
        let lowest = Resource::ALL
            .iter()
            .filter(|r| *self.synced.get(**r))
            .map(|r| *self.watermarks.get(*r))
            .min();
        if let Some(Some(lowest)) = lowest {
            self.known.prune(lowest);
        }
    }

    /// Writes acknowledged at or below `version` are now visible: record how long that took.
    fn observe_acked(&mut self, resource: Resource, version: ResourceVersion, now: Instant) {
        let acked = self.acked.get_mut(resource);
        let seen = match version.get().checked_add(1).and_then(ResourceVersion::new) {
            Some(next) => {
                let later = acked.split_off(&(next, 0));
                std::mem::replace(acked, later)
            }
            None => std::mem::take(acked),
        };
        for (_, (controller, at)) in seen {
            if let Some(c) = self.controllers.get_mut(controller) {
                c.stats
                    .record_cache_lag(resource, now.saturating_duration_since(at));
            }
        }
    }

    /// Every event of `resource` up to `version` that belongs to this shard has been applied.
    pub fn advance(&mut self, resource: Resource, version: ResourceVersion, now: Instant) {
        let slot = self.watermarks.get_mut(resource);
        if slot.is_some_and(|w| w >= version) {
            return;
        }
        *slot = Some(version);
        *self.moved_at.get_mut(resource) = Some(now);
        *self.delay.get_mut(resource) = self
            .known
            .learned_at(version)
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        self.known.learn(version, now);
        self.prune_known();
        self.observe_acked(resource, version, now);
        for c in &mut self.controllers {
            c.queue.watermark(resource, version, now);
        }
    }

    /// The answer to [`Output::Barrier`]: the current revision, or why it could not be read.
    /// Each key it covers is proven and waits (as for its own write) until the watermarks of
    /// everything its controller reads have reached that revision; on failure the keys retry
    /// after their error backoff, still unproven.
    pub fn barrier_done(
        &mut self,
        id: BarrierId,
        result: Result<ResourceVersion, String>,
        now: Instant,
    ) {
        let result = match result {
            Ok(revision) => match self.known.highest() {
                Some(highest) if revision < highest => Err(format!(
                    "the read answered revision {revision}, older than the {highest} this process has already seen (a lagging replica?)"
                )),
                _ => {
                    self.known.learn(revision, now);
                    Ok(revision)
                }
            },
            Err(why) => Err(why),
        };
        let keys = self.barriers.finish(id);
        let mut counted: SmallVec<[usize; 4]> = SmallVec::new();
        for (index, key) in keys {
            let Some(c) = self.controllers.get_mut(index) else {
                continue;
            };
            if !counted.contains(&index) {
                counted.push(index);
                match result {
                    Ok(_) => c.stats.live_reads_ok += 1,
                    Err(_) => c.stats.live_reads_failed += 1,
                }
            }
            match &result {
                Ok(revision) => {
                    tracing::debug!(controller = c.reconciler.name(), %key, %revision, "barrier read: key proven once the cache reaches it");
                    let owner_uid = self.cache.uid_of(c.reconciler.primary(), &key);
                    for resource in c.reconciler.reads() {
                        c.versions
                            .record_write(&key, owner_uid, *resource, Ok(*revision));
                    }
                    c.proofs.prove(&key);
                    c.unknown_outcome.remove(&key);
                    c.queue.wake(&key, now);
                }
                Err(why) => {
                    tracing::warn!(controller = c.reconciler.name(), %key, error = %why, "barrier read failed: destructive work stays parked");
                    let message = format!(
                        "destructive changes paused: the live read that proves the cache fresh failed: {why}"
                    );
                    freshness_unproven(c, &self.cache, &mut self.outbox, key, message, now);
                }
            }
        }
    }

    /// The writer's answer to a write.
    pub fn write_done(&mut self, id: WriteId, result: WriteResult, now: Instant) {
        let Some(pending) = self.writes.remove(&id) else {
            return;
        };
        if let WriteResult::Written { resource_version } = &result
            && let Ok(v) = ResourceVersion::parse(resource_version)
        {
            // Any write's version is a revision the server has reached, whatever its resource.
            self.known.learn(v, now);
        }
        let Some(c) = self.controllers.get_mut(pending.controller) else {
            return;
        };
        let Some(plan) = c.plans.get_mut(&pending.owner) else {
            return;
        };
        match result {
            WriteResult::Written { .. } if !c.reconciler.reads().contains(&pending.resource) => {
                // A resource the controller never reads (a claim, a revision) has no watermark
                // to wait for: nothing to record.
                c.stats.writes += 1;
            }
            WriteResult::Written { resource_version } => {
                c.stats.writes += 1;
                let version = ResourceVersion::parse(&resource_version);
                if let Ok(v) = version {
                    self.next_write += 1;
                    self.acked
                        .get_mut(pending.resource)
                        .insert((v, self.next_write), (pending.controller, now));
                }
                c.versions.record_write(
                    &pending.owner,
                    plan.owner_uid.as_ref(),
                    pending.resource,
                    version,
                );
            }
            WriteResult::Deleted => {
                c.stats.writes += 1;
                // KEP-5647 as upstream implements it has no version for a delete: it tracks
                // none (expectations cover deletes there).
                if let Some((key, uid)) = pending.deleted
                    && c.mode != ConsistencyMode::Upstream136
                    && self.cache.is_live(pending.resource, &key, &uid)
                {
                    c.versions.record_delete(
                        &pending.owner,
                        plan.owner_uid.as_ref(),
                        pending.resource,
                        uid,
                    );
                }
            }
            WriteResult::Failed(error) => {
                c.stats.write_failures += 1;
                if error.kind.outcome_unknown() && c.mode.is_tidemark() {
                    // The write may have landed where the cache cannot see it yet: the next
                    // decision of this key waits for a barrier, whatever it wants to do.
                    c.unknown_outcome.insert(pending.owner.clone());
                }
                let already_gone =
                    error.kind == WriteErrorKind::NotFound && pending.deleted.is_some();
                // A create by deterministic name that finds the object there already is done.
                let already_there = error.kind == WriteErrorKind::AlreadyExists
                    && pending.deleted.is_none()
                    && pending.creates;
                if !already_gone && !already_there {
                    plan.failed = true;
                    // Upstream lowers the expectation of a write that failed: it will never
                    // be observed.
                    if pending.creates {
                        c.expectations.creation_observed(&pending.owner);
                    } else if let Some((_, uid)) = &pending.deleted {
                        c.expectations.deletion_observed(&pending.owner, uid);
                    }
                }
            }
        }
        plan.outstanding -= 1;
        if plan.outstanding == 0 {
            let hold = Self::waits_for_relist(&self.relisting, c.mode, c.reconciler.reads());
            Self::advance_plan(
                &mut self.writes,
                &mut self.next_write,
                &mut self.outbox,
                pending.controller,
                c,
                &pending.owner,
                hold,
                now,
            );
        }
    }

    /// Starts the next step of `owner`'s plan, or finishes the reconcile when there is none;
    /// with `hold`, a next step waits (the plan is marked held) instead of going out.
    #[allow(clippy::too_many_arguments)]
    fn advance_plan(
        writes: &mut AHashMap<WriteId, PendingWrite>,
        next_write: &mut u64,
        outbox: &mut Vec<Output>,
        index: usize,
        c: &mut Controller,
        owner: &ObjectKey,
        hold: bool,
        now: Instant,
    ) {
        let Some(plan) = c.plans.get_mut(owner) else {
            return;
        };
        if hold && !plan.failed && !plan.superseded && !plan.steps.is_empty() {
            plan.held = true;
            return;
        }
        plan.held = false;
        let step = if plan.failed || plan.superseded {
            None
        } else {
            plan.steps.pop_front()
        };
        let Some(step) = step else {
            for _ in 0..plan.unsent_creates {
                c.expectations.creation_observed(owner);
            }
            let outcome = match (plan.failed, plan.requeue_after) {
                (true, _) => Outcome::Failed,
                (false, Some(after)) => Outcome::RequeueAfter(after),
                (false, None) => Outcome::Done,
            };
            if plan.failed {
                c.stats.plans_failed += 1;
            }
            c.stats
                .record_work(now.saturating_duration_since(plan.started));
            c.plans.remove(owner);
            c.queue.finish(owner, outcome, now);
            return;
        };
        plan.outstanding = step.len();
        plan.unsent_creates -= step
            .iter()
            .filter(|a| matches!(a, Action::Create { .. }))
            .count() as i64;
        for action in step {
            *next_write += 1;
            let id = WriteId(*next_write);
            let deleted = match &action {
                Action::Delete { key, uid, .. } => Some((key.clone(), uid.clone())),
                _ => None,
            };
            writes.insert(
                id,
                PendingWrite {
                    controller: index,
                    owner: owner.clone(),
                    resource: action.resource(),
                    deleted,
                    creates: matches!(action, Action::Create { .. }),
                },
            );
            outbox.push(Output::Write(WriteRequest {
                id,
                controller: c.reconciler.name(),
                owner: owner.clone(),
                action,
            }));
        }
    }

    /// Runs due timers and every ready key, and moves what the shard wants done into `out`.
    pub fn poll(&mut self, ctx: &Context, out: &mut Vec<Output>) {
        for index in 0..self.controllers.len() {
            self.poll_controller(index, ctx);
        }
        if let Some((id, controller)) = self.barriers.start() {
            let resource = self.controllers[controller].reconciler.primary();
            self.outbox.push(Output::Barrier { id, resource });
        }
        out.append(&mut self.outbox);
    }

    fn poll_controller(&mut self, index: usize, ctx: &Context) {
        let now = ctx.now;
        let c = &mut self.controllers[index];
        self.fired.clear();
        c.queue.fire(now, &mut self.fired);
        for fired in self.fired.drain(..) {
            if let Fired::ParkExpired { key, target, skips } = fired {
                if let ParkTarget::Watermark { resource, version } = target {
                    c.stats.probes += 1;
                    self.outbox.push(Output::Probe {
                        controller: c.reconciler.name(),
                        key: key.clone(),
                        resource,
                        target: version,
                        watermark: *self.watermarks.get(resource),
                    });
                }
                if skips >= STARVING_AFTER_SKIPS {
                    c.stats.starving += 1;
                    self.outbox.push(Output::Starving {
                        controller: c.reconciler.name(),
                        key,
                        skips,
                    });
                }
            }
        }
        if !self.leading || !c.reconciler.reads().iter().all(|r| *self.synced.get(*r)) {
            return;
        }
        if let Some(hold) = self.hold
            && !c
                .reconciler
                .reads()
                .iter()
                .all(|r| self.watermarks.get(*r).is_some_and(|w| w >= hold))
        {
            return;
        }
        if Self::waits_for_relist(&self.relisting, c.mode, c.reconciler.reads()) {
            return;
        }
        let held: SmallVec<[ObjectKey; 4]> = c
            .plans
            .iter()
            .filter(|(_, p)| p.held && p.outstanding == 0)
            .map(|(k, _)| k.clone())
            .collect();
        for key in held {
            Self::advance_plan(
                &mut self.writes,
                &mut self.next_write,
                &mut self.outbox,
                index,
                c,
                &key,
                false,
                now,
            );
        }
        while let Some(popped) = c.queue.pop() {
            let key = popped.key;
            if c.mode.expectations() && c.expectations.unmet(&key, now).is_some() {
                // Upstream syncs such a key without managing its Pods; the observation that
                // meets the expectations wakes it.
                c.stats.expectation_skips += 1;
                c.queue.park(&key, ParkTarget::Expectations, now);
                continue;
            }
            // Every mode records its writes; only the gated modes act on what the check says,
            // the others count the reconciles that ran on a stale cache.
            let freshness = c.versions.check(&key, &self.watermarks);
            let stale_target = match freshness {
                Freshness::Fresh => None,
                Freshness::Unknown(_) => {
                    c.stats.unknown_freshness += 1;
                    None
                }
                Freshness::Stale { resource, target } => Some(ParkTarget::Watermark {
                    resource,
                    version: target,
                }),
                Freshness::AwaitingDeletes { .. } => Some(ParkTarget::Deletions),
            };
            if stale_target.is_some() && !c.mode.tracks_writes() {
                c.stats.stale_reconciles += 1;
            } else if let Some(target) = stale_target {
                let resource = match &target {
                    ParkTarget::Watermark { resource, .. } => *resource,
                    _ => Resource::Pods,
                };
                c.stats.stale_sync_skips += 1;
                *c.stats.stale_sync_skips_by_resource.get_mut(resource) += 1;
                if c.mode.is_tidemark() {
                    tracing::debug!(controller = c.reconciler.name(), %key, target = ?target, watermarks = ?self.watermarks, "stale sync skip: parked until the cache has the key's own writes");
                    c.queue.park(&key, target, now);
                } else {
                    // KEP-5647 as kube-controller-manager implements it: EnsureReady fails,
                    // the sync returns the error, and the key is requeued rate-limited.
                    c.queue.start(&key);
                    c.queue.finish(&key, Outcome::Failed, now);
                }
                continue;
            }
            if c.unknown_outcome.contains(&key) {
                c.stats.unknown_outcome_barriers += 1;
                tracing::debug!(controller = c.reconciler.name(), %key, "a write's outcome is unknown: barrier before deciding again");
                c.queue.park(&key, ParkTarget::Barrier, now);
                self.barriers.request(index, &key);
                continue;
            }
            if popped.woken {
                c.stats
                    .record_wake(now.saturating_duration_since(popped.ready_since));
            }
            if let Some(parked) = popped.parked_for {
                tracing::debug!(controller = c.reconciler.name(), %key, parked_ms = parked.as_millis() as u64, "woken: the cache caught up");
                c.stats.record_parked(parked);
            }
            c.stats
                .record_queue_latency(now.saturating_duration_since(popped.ready_since));
            c.queue.start(&key);
            c.stats.reconciles += 1;
            let plan = match c.reconciler.reconcile(&key, &self.cache, ctx) {
                Err(error) => {
                    c.stats.reconcile_errors += 1;
                    let outcome = crate::malformed::settle(&error, &mut c.stats, &mut self.outbox);
                    c.queue.finish(&key, outcome, now);
                    continue;
                }
                Ok(plan) => plan,
            };
            let destructive = plan.is_destructive();
            if destructive
                && let Some(from) = self.destructive_from
                && now < from
            {
                c.stats.destructive_held += 1;
                tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: the previous leader's writes may still commit");
                c.queue.finish(&key, Outcome::RequeueAfter(from - now), now);
                continue;
            }
            if c.mode.is_tidemark() && destructive {
                let reads = c.reconciler.reads();
                let unproven = !c.proofs.is_proven(&key)
                    || reads.iter().any(|r| {
                        self.moved_at
                            .get(*r)
                            .is_none_or(|at| now.saturating_duration_since(at) >= QUIET_WATERMARK)
                    });
                if unproven {
                    c.stats.destructive_held += 1;
                    tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: key unproven since start or leadership, barrier requested");
                    c.queue.park(&key, ParkTarget::Barrier, now);
                    self.barriers.request(index, &key);
                    continue;
                }
                let lagging = reads.iter().any(|r| {
                    Self::lags(
                        &self.known,
                        &self.delay,
                        &self.watermarks,
                        self.lag_threshold,
                        *r,
                        now,
                    )
                });
                let verified = c.verified.remove(&key);
                if lagging {
                    let primary = c.reconciler.primary();
                    let expected: Vec<Expected> = std::iter::once((primary, key.clone()))
                        .chain(plan.rests_on.iter().cloned())
                        .map(|(resource, object)| Expected {
                            cached: self.cache.resource_version_of(resource, &object),
                            resource,
                            key: object,
                        })
                        .collect();
                    if verified.as_ref() != Some(&expected) {
                        c.stats.destructive_held += 1;
                        c.stats.lag_live_reads += 1;
                        let objects = expected
                            .iter()
                            .map(|e| (e.resource, e.key.clone()))
                            .collect();
                        tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: a cache it reads is known to lag, live read requested");
                        c.queue.park(&key, ParkTarget::LiveRead, now);
                        let id = self.live_reads.start(index, key.clone(), expected);
                        self.outbox.push(Output::LiveRead {
                            id,
                            controller: c.reconciler.name(),
                            key,
                            objects,
                        });
                        continue;
                    }
                }
            }
            let Plan {
                steps,
                requeue_after,
                ..
            } = plan;
            if destructive && c.reconciler.proof_per_decision() {
                // This decision used its proof; the next one needs a barrier of its own.
                c.proofs.forget(&key);
            }
            let steps: VecDeque<Vec<Action>> =
                steps.into_iter().filter(|s| !s.is_empty()).collect();
            let primary = c.reconciler.primary();
            let counted = |a: &Action| {
                a.resource() != primary && c.reconciler.reads().contains(&a.resource())
            };
            let creates = steps
                .iter()
                .flatten()
                .filter(|a| matches!(a, Action::Create { .. }) && counted(a))
                .count() as i64;
            if c.mode.expectations() {
                let deletes = steps
                    .iter()
                    .flatten()
                    .filter_map(|a| match a {
                        Action::Delete { uid, .. } if counted(a) => Some(uid.clone()),
                        _ => None,
                    })
                    .collect();
                c.expectations.expect(&key, creates, deletes, now);
            }
            let owner_uid = self.cache.uid_of(primary, &key).cloned();
            let generation = self.cache.generation_of(primary, &key);
            c.plans.insert(
                key.clone(),
                PlanProgress {
                    owner_uid,
                    generation,
                    unsent_creates: creates,
                    steps,
                    outstanding: 0,
                    failed: false,
                    superseded: false,
                    held: false,
                    requeue_after,
                    started: now,
                },
            );
            Self::advance_plan(
                &mut self.writes,
                &mut self.next_write,
                &mut self.outbox,
                index,
                c,
                &key,
                false,
                now,
            );
        }
    }

    /// The answer to [`Output::LiveRead`]: each object's current version (`None`: not found),
    /// in the order asked, or why the read failed.
    pub fn live_read_done(
        &mut self,
        id: LiveReadId,
        result: Result<Vec<Option<ResourceVersion>>, String>,
        now: Instant,
    ) {
        let Some(pending) = self.live_reads.finish(id) else {
            return;
        };
        let Some(c) = self.controllers.get_mut(pending.controller) else {
            return;
        };
        let key = pending.key;
        let live = match result {
            Ok(live) => live,
            Err(why) => {
                c.stats.live_reads_failed += 1;
                tracing::warn!(controller = c.reconciler.name(), %key, error = %why, "live read failed: destructive work stays parked");
                let message = format!(
                    "destructive changes paused: the cache lags and the live read that would prove this decision current failed: {why}"
                );
                freshness_unproven(c, &self.cache, &mut self.outbox, key, message, now);
                return;
            }
        };
        c.stats.live_reads_ok += 1;
        if let Some(highest) = live.iter().flatten().max() {
            self.known.learn(*highest, now);
        }
        match judge(&pending.expected, &live) {
            Verdict::Current => {
                tracing::debug!(controller = c.reconciler.name(), %key, "live read matches the cache: the decision goes ahead");
                c.verified.insert(key.clone(), pending.expected);
                c.queue.wake(&key, now);
            }
            Verdict::Behind(targets) => {
                tracing::debug!(controller = c.reconciler.name(), %key, ?targets, "live read found newer versions: decide again once the cache has them");
                let owner_uid = self.cache.uid_of(c.reconciler.primary(), &key);
                for (resource, version) in targets {
                    c.versions
                        .record_write(&key, owner_uid, resource, Ok(version));
                }
                c.queue.wake(&key, now);
            }
            Verdict::Differs => {
                tracing::debug!(controller = c.reconciler.name(), %key, "live read found an object on one side only: barrier before deciding again");
                self.barriers.request(pending.controller, &key);
            }
        }
    }

    /// The earliest timer of any controller.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.controllers
            .iter()
            .filter_map(|c| c.queue.next_deadline())
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
                s
            })
            .collect()
    }

    /// Writes sent and not yet answered.
    pub fn writes_in_flight(&self) -> usize {
        self.writes.len()
    }
}

/// A read meant to prove `key`'s destructive decision current failed: the key stays parked (its
/// retry backs off) and the operator is told on the primary object.
fn freshness_unproven(
    c: &mut Controller,
    cache: &ShardCache,
    outbox: &mut Vec<Output>,
    key: ObjectKey,
    message: String,
    now: Instant,
) {
    c.queue.fail_parked(&key, now);
    let resource = c.reconciler.primary();
    outbox.push(Output::Degraded {
        controller: c.reconciler.name(),
        uid: cache.uid_of(resource, &key).cloned(),
        key,
        resource,
        reason: "FreshnessUnproven",
        message,
    });
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
