//! A shard's side of the watch: changes applied to the cache, relists that replace a slice,
//! watermarks that advance, and every key a change concerns fanned out to its controllers'
//! queues (deletions and creations observed, plans made obsolete).

use super::Shard;
use super::messages::Change;
use crate::key::ObjectKey;
use crate::object::Object;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::seeded_bug::SeededBug;
use smallvec::SmallVec;
use std::time::{Duration, Instant};

impl Shard {
    fn enqueue_for(&mut self, object: &Object, now: Instant) {
        self.enqueue_changed(object, None, now);
    }

    /// Queues the keys that depend on `object`, which replaced `previous` in the cache; a
    /// controller for which a Pod's change cannot matter
    /// ([`Reconciler::pod_change_matters`]) is left alone.
    fn enqueue_changed(&mut self, object: &Object, previous: Option<&Object>, now: Instant) {
        let mut keys: SmallVec<[ObjectKey; 2]> = SmallVec::new();
        let pods = match (previous, object) {
            (Some(Object::Pod(before)), Object::Pod(after)) if before.uid == after.uid => {
                Some((before, after))
            }
            _ => None,
        };
        for c in &mut self.controllers {
            if let Some((before, after)) = pods
                && !c.reconciler.pod_change_matters(before, after)
            {
                c.stats.unchanged_pod_events += 1;
                continue;
            }
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

    /// Applies one watch event. The watermark moves only with [`advance`](Self::advance).
    pub fn apply(&mut self, change: Change, now: Instant) {
        self.note_first_unmeasured(&change);
        match change {
            Change::Applied(object) => {
                let resource = object.resource();
                let cached = self.cache.uid_of(resource, object.key()).cloned();
                let replaced = cached.as_ref().is_some_and(|uid| uid != object.uid());
                for c in &mut self.controllers {
                    if c.reconciler.primary() == resource {
                        c.supersede_if_respecced(
                            object.key(),
                            Some(object.uid()),
                            object.generation(),
                            &self.writes,
                            &mut self.outbox,
                        );
                        c.versions.forget_if_replaced(object.key(), object.uid());
                        if replaced {
                            c.proofs.forget(object.key());
                        }
                    }
                }
                if object.is_terminating() {
                    self.observe_gone(&object, false, now);
                }
                if cached.is_none() {
                    self.observe_created(&object, now);
                }
                let previous = self.cache.apply(object.clone());
                self.enqueue_changed(&object, previous.as_ref(), now);
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
                        c.supersede_if_respecced(
                            object.key(),
                            None,
                            None,
                            &self.writes,
                            &mut self.outbox,
                        );
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

    /// Keeps the lowest version delivered above the watermark since it last moved.
    fn note_first_unmeasured(&mut self, change: &Change) {
        let object = change.object();
        let resource = object.resource();
        let Some(version) = object.resource_version() else {
            return;
        };
        if self.watermarks.get(resource).is_some_and(|w| version <= w) {
            return;
        }
        let first = self.first_unmeasured.get_mut(resource);
        if first.is_none_or(|f| version < f) {
            *first = Some(version);
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
                if self.bug != Some(SeededBug::RelistKeepsPlans) {
                    // The relisted cache may show another spec (or no object): the plan's next
                    // steps were then made for a state that is gone.
                    c.supersede_if_respecced(
                        &key,
                        uid.as_ref(),
                        generation,
                        &self.writes,
                        &mut self.outbox,
                    );
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
        *self.relisting.get_mut(resource) = None;
        *self.relist_pending.get_mut(resource) = None;
        // A list is as fresh as the server's answer.
        *self.delay.get_mut(resource) = (Duration::ZERO, None);
        *self.first_unmeasured.get_mut(resource) = None;
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
        let lowest = self
            .synced
            .iter()
            .filter(|(_, synced)| **synced)
            .map(|(r, _)| *self.watermarks.get(r))
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
        let first = self
            .first_unmeasured
            .get_mut(resource)
            .take()
            .filter(|first| *first <= version)
            .unwrap_or(version);
        let measured = self
            .known
            .learned_at(first)
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        let (held, since) = *self.delay.get(resource);
        let still_holds =
            since.is_some_and(|at| now.saturating_duration_since(at) < self.lag_threshold);
        if measured >= held || !still_holds {
            *self.delay.get_mut(resource) = (measured, Some(now));
        }
        self.known.learn(version, now);
        self.prune_known();
        self.observe_acked(resource, version, now);
        for c in &mut self.controllers {
            c.queue.watermark(resource, version, now);
        }
    }
}
