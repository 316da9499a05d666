//! A shard: its slice of the cache, its watermarks, and per controller a version map, a queue
//! and the write plans in flight. Plain data: events, time and write results go in, writes and
//! probes come out.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::{ObjectKey, Uid};
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
    /// Whether the freshness gate is on (`StaleControllerConsistency<Name>`).
    pub consistency: bool,
}

struct PlanProgress {
    owner_uid: Option<Uid>,
    steps: VecDeque<Vec<Action>>,
    outstanding: usize,
    failed: bool,
    superseded: bool,
    requeue_after: Option<Duration>,
    started: Instant,
}

struct Controller {
    reconciler: Box<dyn Reconciler>,
    consistency: bool,
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
}

impl Shard {
    /// A shard running `controllers`.
    pub fn new(id: ShardId, controllers: Vec<ControllerSpec>) -> Self {
        Self {
            id,
            cache: ShardCache::default(),
            watermarks: PerResource::default(),
            synced: PerResource::default(),
            controllers: controllers
                .into_iter()
                .map(|spec| Controller {
                    stats: ControllerStats::new(spec.reconciler.name()),
                    reconciler: spec.reconciler,
                    consistency: spec.consistency,
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
        }
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
        for c in &mut self.controllers {
            if let Some((owner, 0)) = c.versions.observe_gone(object.uid()) {
                c.queue.wake(&owner, now);
            }
            if removed && c.reconciler.primary() == resource {
                c.versions.forget(object.key());
                c.proofs.forget(object.key());
                c.queue.wake(object.key(), now);
            }
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
                let respecced = object.generation().is_some()
                    && self.cache.generation_of(resource, object.key()) != object.generation();
                for c in &mut self.controllers {
                    if c.reconciler.primary() == resource {
                        if respecced && let Some(plan) = c.plans.get_mut(object.key()) {
                            // The spec the plan was made for is gone: finish the step in flight,
                            // start no further one, and decide again on the new spec.
                            plan.superseded = true;
                        }
                        c.versions.forget_if_replaced(object.key(), object.uid());
                        if replaced {
                            c.proofs.forget(object.key());
                        }
                    }
                }
                if object.is_terminating() {
                    self.observe_gone(&object, false, now);
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
            Change::Deleted(object) => {
                let cached = self.cache.remove(object.resource(), object.key());
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
        for object in &removed {
            self.observe_gone(object, true, now);
            self.enqueue_for(object, now);
        }
        for object in &terminating {
            self.observe_gone(object, false, now);
        }
        *self.synced.get_mut(resource) = true;
        *self.watermarks.get_mut(resource) = version;
        *self.moved_at.get_mut(resource) = Some(now);
        if let Some(v) = version {
            self.observe_acked(resource, v, now);
            for c in &mut self.controllers {
                c.queue.watermark(resource, v, now);
            }
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
                    c.queue.fail_parked(&key, now);
                    let resource = c.reconciler.primary();
                    self.outbox.push(Output::Degraded {
                        controller: c.reconciler.name(),
                        uid: self.cache.uid_of(resource, &key).cloned(),
                        key,
                        resource,
                        reason: "FreshnessUnproven",
                        message: format!(
                            "destructive changes paused: the live read that proves the cache fresh failed: {why}"
                        ),
                    });
                }
            }
        }
    }

    /// The writer's answer to a write.
    pub fn write_done(&mut self, id: WriteId, result: WriteResult, now: Instant) {
        let Some(pending) = self.writes.remove(&id) else {
            return;
        };
        let Some(c) = self.controllers.get_mut(pending.controller) else {
            return;
        };
        let Some(plan) = c.plans.get_mut(&pending.owner) else {
            return;
        };
        match result {
            WriteResult::Written { resource_version }
                if !c.reconciler.reads().contains(&pending.resource) =>
            {
                // A resource the controller never reads (a claim, a revision) has no watermark
                // to wait for: nothing to record.
                let _ = resource_version;
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
                if let Some((key, uid)) = pending.deleted
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
                if error.kind.outcome_unknown() && c.consistency {
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
                }
            }
        }
        plan.outstanding -= 1;
        if plan.outstanding == 0 {
            Self::advance_plan(
                &mut self.writes,
                &mut self.next_write,
                &mut self.outbox,
                pending.controller,
                c,
                &pending.owner,
                now,
            );
        }
    }

    /// Starts the next step of `owner`'s plan, or finishes the reconcile when there is none.
    fn advance_plan(
        writes: &mut AHashMap<WriteId, PendingWrite>,
        next_write: &mut u64,
        outbox: &mut Vec<Output>,
        index: usize,
        c: &mut Controller,
        owner: &ObjectKey,
        now: Instant,
    ) {
        let Some(plan) = c.plans.get_mut(owner) else {
            return;
        };
        let step = if plan.failed || plan.superseded {
            None
        } else {
            plan.steps.pop_front()
        };
        let Some(step) = step else {
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
        while let Some(popped) = c.queue.pop() {
            let key = popped.key;
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
            if let Some(target) = stale_target {
                if c.consistency {
                    tracing::debug!(controller = c.reconciler.name(), %key, target = ?target, watermarks = ?self.watermarks, "stale sync skip: parked until the cache has the key's own writes");
                    c.stats.stale_sync_skips += 1;
                    let resource = match &target {
                        ParkTarget::Watermark { resource, .. } => *resource,
                        ParkTarget::Deletions | ParkTarget::Barrier => Resource::Pods,
                    };
                    *c.stats.stale_sync_skips_by_resource.get_mut(resource) += 1;
                    c.queue.park(&key, target, now);
                    continue;
                }
                c.stats.stale_reconciles += 1;
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
            match c.reconciler.reconcile(&key, &self.cache, ctx) {
                Err(error) => {
                    c.stats.reconcile_errors += 1;
                    let outcome = crate::malformed::settle(&error, &mut c.stats, &mut self.outbox);
                    c.queue.finish(&key, outcome, now);
                }
                Ok(plan)
                    if c.consistency
                        && plan.is_destructive()
                        && (!c.proofs.is_proven(&key)
                            || c.reconciler.reads().iter().any(|r| {
                                self.moved_at.get(*r).is_none_or(|at| {
                                    now.saturating_duration_since(at) >= QUIET_WATERMARK
                                })
                            })) =>
                {
                    c.stats.destructive_held += 1;
                    tracing::debug!(controller = c.reconciler.name(), %key, "destructive plan held: key unproven since start or leadership, barrier requested");
                    c.queue.park(&key, ParkTarget::Barrier, now);
                    self.barriers.request(index, &key);
                }
                Ok(Plan {
                    steps,
                    requeue_after,
                    destructive,
                }) => {
                    if destructive && c.reconciler.proof_per_decision() {
                        // This decision used its proof; the next one needs a barrier of its own.
                        c.proofs.forget(&key);
                    }
                    let steps: VecDeque<Vec<Action>> =
                        steps.into_iter().filter(|s| !s.is_empty()).collect();
                    let owner_uid = self.cache.uid_of(c.reconciler.primary(), &key).cloned();
                    c.plans.insert(
                        key.clone(),
                        PlanProgress {
                            owner_uid,
                            steps,
                            outstanding: 0,
                            failed: false,
                            superseded: false,
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
                        now,
                    );
                }
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

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
