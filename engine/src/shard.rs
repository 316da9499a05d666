//! A shard: its slice of the cache, its watermarks, and per controller a version map, a queue
//! and the write plans in flight. Plain data: events, time and write results go in, writes and
//! probes come out.

use crate::action::{Action, Plan};
use crate::cache::ShardCache;
use crate::key::{ObjectKey, Uid};
use crate::object::Object;
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
use std::collections::VecDeque;
use std::time::{Duration, Instant};

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
    requeue_after: Option<Duration>,
    started: Instant,
}

struct Controller {
    reconciler: Box<dyn Reconciler>,
    consistency: bool,
    queue: WorkQueue,
    versions: VersionMap,
    plans: AHashMap<ObjectKey, PlanProgress>,
    stats: ControllerStats,
}

struct PendingWrite {
    controller: usize,
    owner: ObjectKey,
    resource: Resource,
    deleted: Option<(ObjectKey, Uid)>,
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
                })
                .collect(),
            writes: AHashMap::new(),
            next_write: 0,
            outbox: Vec::new(),
            fired: Vec::new(),
        }
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
                c.queue.add(key, now);
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
                c.queue.wake(object.key(), now);
            }
        }
    }

    /// Applies one watch event. The watermark moves only with [`advance`](Self::advance).
    pub fn apply(&mut self, change: Change, now: Instant) {
        match change {
            Change::Applied(object) => {
                let resource = object.resource();
                for c in &mut self.controllers {
                    if c.reconciler.primary() == resource {
                        c.versions.forget_if_replaced(object.key(), object.uid());
                    }
                }
                if object.is_terminating() {
                    self.observe_gone(&object, false, now);
                }
                self.enqueue_for(&object, now);
                if let Some(previous) = self.cache.apply(object.clone())
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
        if let Some(v) = version {
            for c in &mut self.controllers {
                c.queue.watermark(resource, v, now);
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
        for c in &mut self.controllers {
            c.queue.watermark(resource, version, now);
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
            WriteResult::Written { resource_version } => {
                c.stats.writes += 1;
                c.versions.record_write(
                    &pending.owner,
                    plan.owner_uid.as_ref(),
                    pending.resource,
                    ResourceVersion::parse(&resource_version),
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
                let already_gone =
                    error.kind == WriteErrorKind::NotFound && pending.deleted.is_some();
                if !already_gone {
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
        let step = if plan.failed {
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
        if !c.reconciler.reads().iter().all(|r| *self.synced.get(*r)) {
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
                    c.stats.stale_sync_skips += 1;
                    let resource = match &target {
                        ParkTarget::Watermark { resource, .. } => *resource,
                        ParkTarget::Deletions => Resource::Pods,
                    };
                    *c.stats.stale_sync_skips_by_resource.get_mut(resource) += 1;
                    c.queue.park(&key, target, now);
                    continue;
                }
                c.stats.stale_reconciles += 1;
            }
            if popped.woken {
                c.stats
                    .record_wake(now.saturating_duration_since(popped.ready_since));
            }
            c.stats
                .record_queue_latency(now.saturating_duration_since(popped.ready_since));
            c.queue.start(&key);
            c.stats.reconciles += 1;
            match c.reconciler.reconcile(&key, &self.cache, ctx) {
                Err(_) => {
                    c.stats.reconcile_errors += 1;
                    c.queue.finish(&key, Outcome::Failed, now);
                }
                Ok(Plan {
                    steps,
                    requeue_after,
                }) => {
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
            .map(|c| {
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
