//! A shard's cache: one [`Store`] per resource, and what an applied change means for it.

use crate::key::{ObjectKey, Uid};
use crate::object::{CustomObject, Object, PodView, ReplicaSetView};
use crate::resource::Resource;
use crate::store::{Cached, Store};
use crate::views::daemonset::DaemonSetView;
use crate::views::job::JobView;
use crate::views::nodes::{LeaseView, NodeView};
use crate::views::statefulset::StatefulSetView;
use ahash::AHashMap;
use std::time::Instant;

impl Cached for PodView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        self.controller.as_ref().map(|o| &o.uid)
    }
}

impl Cached for NodeView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

impl Cached for LeaseView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

impl Cached for StatefulSetView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

impl Cached for DaemonSetView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

impl Cached for JobView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

impl Cached for CustomObject {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        self.controller.as_ref().map(|o| &o.uid)
    }
}

impl Cached for ReplicaSetView {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn owner_uid(&self) -> Option<&Uid> {
        None
    }
}

/// Everything a shard has cached. Reconcilers read it; only the shard writes it.
#[derive(Clone, Debug, Default)]
pub struct ShardCache {
    /// Pods routed to this shard: by their controlling owner, and every orphan (which any
    /// shard's owner may adopt).
    pub pods: Store<PodView>,
    /// ReplicaSets routed to this shard.
    pub replicasets: Store<ReplicaSetView>,
    /// Nodes routed to this shard (by name).
    pub nodes: Store<NodeView>,
    /// Leases routed to this shard (a node Lease goes with its Node).
    pub leases: Store<LeaseView>,
    /// StatefulSets routed to this shard.
    pub statefulsets: Store<StatefulSetView>,
    /// Jobs routed to this shard.
    pub jobs: Store<JobView>,
    /// DaemonSets routed to this shard.
    pub daemonsets: Store<DaemonSetView>,
    /// When this shard last saw each Lease change (monotonic), the clock node lifecycle
    /// measures silence with.
    lease_observed: AHashMap<ObjectKey, Instant>,
    /// Objects of registered resources, per resource.
    custom: AHashMap<Resource, Store<CustomObject>>,
}

impl ShardCache {
    /// Inserts or replaces an object; returns the previous version.
    pub fn apply(&mut self, object: Object) -> Option<Object> {
        match object {
            Object::Pod(p) => self.pods.apply(p).map(Object::Pod),
            Object::ReplicaSet(r) => self.replicasets.apply(r).map(Object::ReplicaSet),
            Object::Node(n) => self.nodes.apply(n).map(Object::Node),
            Object::Lease(l) => self.leases.apply(l).map(Object::Lease),
            Object::StatefulSet(s) => self.statefulsets.apply(s).map(Object::StatefulSet),
            Object::Job(j) => self.jobs.apply(j).map(Object::Job),
            Object::DaemonSet(d) => self.daemonsets.apply(d).map(Object::DaemonSet),
            Object::Custom(o) => self
                .custom
                .entry(o.resource)
                .or_default()
                .apply(o)
                .map(Object::Custom),
        }
    }

    /// Removes an object; returns what was cached.
    pub fn remove(&mut self, resource: Resource, key: &ObjectKey) -> Option<Object> {
        match resource {
            Resource::Pods => self.pods.remove(key).map(Object::Pod),
            Resource::ReplicaSets => self.replicasets.remove(key).map(Object::ReplicaSet),
            Resource::Nodes => self.nodes.remove(key).map(Object::Node),
            Resource::StatefulSets => self.statefulsets.remove(key).map(Object::StatefulSet),
            Resource::Jobs => self.jobs.remove(key).map(Object::Job),
            Resource::DaemonSets => self.daemonsets.remove(key).map(Object::DaemonSet),
            Resource::Leases => {
                self.lease_observed.remove(key);
                self.leases.remove(key).map(Object::Lease)
            }
            _ => self
                .custom
                .get_mut(&resource)?
                .remove(key)
                .map(Object::Custom),
        }
    }

    /// Replaces a resource's whole slice; returns the objects no longer present. Objects of other
    /// resources in `objects` are a caller bug and are ignored.
    pub fn replace(&mut self, resource: Resource, objects: Vec<Object>) -> Vec<Object> {
        fn swap<T: Cached>(
            store: &mut Store<T>,
            objects: Vec<Object>,
            pick: fn(Object) -> Option<T>,
            wrap: fn(T) -> Object,
        ) -> Vec<Object> {
            let kept = objects.into_iter().filter_map(pick).collect();
            store.replace(kept).into_iter().map(wrap).collect()
        }
        match resource {
            Resource::Pods => swap(
                &mut self.pods,
                objects,
                |o| match o {
                    Object::Pod(p) => Some(p),
                    _ => None,
                },
                Object::Pod,
            ),
            Resource::ReplicaSets => swap(
                &mut self.replicasets,
                objects,
                |o| match o {
                    Object::ReplicaSet(r) => Some(r),
                    _ => None,
                },
                Object::ReplicaSet,
            ),
            Resource::Nodes => swap(
                &mut self.nodes,
                objects,
                |o| match o {
                    Object::Node(n) => Some(n),
                    _ => None,
                },
                Object::Node,
            ),
            Resource::StatefulSets => swap(
                &mut self.statefulsets,
                objects,
                |o| match o {
                    Object::StatefulSet(s) => Some(s),
                    _ => None,
                },
                Object::StatefulSet,
            ),
            Resource::Jobs => swap(
                &mut self.jobs,
                objects,
                |o| match o {
                    Object::Job(j) => Some(j),
                    _ => None,
                },
                Object::Job,
            ),
            Resource::DaemonSets => swap(
                &mut self.daemonsets,
                objects,
                |o| match o {
                    Object::DaemonSet(d) => Some(d),
                    _ => None,
                },
                Object::DaemonSet,
            ),
            Resource::Leases => {
                let removed = swap(
                    &mut self.leases,
                    objects,
                    |o| match o {
                        Object::Lease(l) => Some(l),
                        _ => None,
                    },
                    Object::Lease,
                );
                for gone in &removed {
                    self.lease_observed.remove(gone.key());
                }
                removed
            }
            _ => swap(
                self.custom.entry(resource).or_default(),
                objects,
                |o| match o {
                    Object::Custom(c) => Some(c),
                    _ => None,
                },
                Object::Custom,
            ),
        }
    }

    /// The shard saw the Lease at `key` change at `now`.
    pub fn observe_lease(&mut self, key: &ObjectKey, now: Instant) {
        self.lease_observed.insert(key.clone(), now);
    }

    /// When the shard last saw the Lease at `key` change.
    pub fn lease_observed_at(&self, key: &ObjectKey) -> Option<Instant> {
        self.lease_observed.get(key).copied()
    }

    /// The UID of the object of `resource` cached at `key`, and whether it is live (not
    /// terminating).
    fn uid_at(&self, resource: Resource, key: &ObjectKey) -> Option<(&Uid, bool)> {
        match resource {
            Resource::Pods => self.pods.get(key).map(|p| (&p.uid, !p.terminating)),
            Resource::ReplicaSets => self.replicasets.get(key).map(|r| (&r.uid, !r.terminating)),
            Resource::Nodes => self.nodes.get(key).map(|n| (&n.uid, !n.terminating)),
            Resource::Leases => self.leases.get(key).map(|l| (&l.uid, !l.terminating)),
            Resource::StatefulSets => self.statefulsets.get(key).map(|s| (&s.uid, !s.terminating)),
            Resource::Jobs => self.jobs.get(key).map(|j| (&j.uid, !j.terminating)),
            Resource::DaemonSets => self.daemonsets.get(key).map(|d| (&d.uid, !d.terminating)),
            _ => self.custom(resource, key).map(|o| (&o.uid, !o.terminating)),
        }
    }

    /// The generation of the object of `resource` cached at `key`, for kinds that have one.
    pub fn generation_of(&self, resource: Resource, key: &ObjectKey) -> Option<i64> {
        match resource {
            Resource::ReplicaSets => self.replicasets.get(key).map(|r| r.generation),
            Resource::StatefulSets => self.statefulsets.get(key).map(|s| s.generation),
            Resource::DaemonSets => self.daemonsets.get(key).map(|d| d.generation),
            r if r.projection().is_some() => self.custom(resource, key).map(|o| o.generation),
            _ => None,
        }
    }

    /// The resourceVersion of the object of `resource` cached at `key`.
    pub fn resource_version_of(
        &self,
        resource: Resource,
        key: &ObjectKey,
    ) -> Option<crate::rv::ResourceVersion> {
        match resource {
            Resource::Pods => self.pods.get(key).and_then(|p| p.resource_version),
            Resource::ReplicaSets => self.replicasets.get(key).and_then(|r| r.resource_version),
            Resource::Nodes => self.nodes.get(key).and_then(|n| n.resource_version),
            Resource::Leases => self.leases.get(key).and_then(|l| l.resource_version),
            Resource::StatefulSets => self.statefulsets.get(key).and_then(|s| s.resource_version),
            Resource::Jobs => self.jobs.get(key).and_then(|j| j.resource_version),
            Resource::DaemonSets => self.daemonsets.get(key).and_then(|d| d.resource_version),
            _ => self.custom(resource, key).and_then(|o| o.resource_version),
        }
    }

    /// The UID of the object of `resource` cached at `key`.
    pub fn uid_of(&self, resource: Resource, key: &ObjectKey) -> Option<&Uid> {
        self.uid_at(resource, key).map(|(uid, _)| uid)
    }

    /// Whether the object `uid` is cached at `key`, not terminating.
    pub fn is_live(&self, resource: Resource, key: &ObjectKey, uid: &Uid) -> bool {
        self.uid_at(resource, key)
            .is_some_and(|(u, live)| u == uid && live)
    }

    /// The keys of every cached object of `resource` (for a full resync).
    pub fn keys(&self, resource: Resource) -> Vec<ObjectKey> {
        match resource {
            Resource::Pods => self.pods.iter().map(|p| p.key.clone()).collect(),
            Resource::ReplicaSets => self.replicasets.iter().map(|r| r.key.clone()).collect(),
            Resource::Nodes => self.nodes.iter().map(|n| n.key.clone()).collect(),
            Resource::Leases => self.leases.iter().map(|l| l.key.clone()).collect(),
            Resource::StatefulSets => self.statefulsets.iter().map(|s| s.key.clone()).collect(),
            Resource::Jobs => self.jobs.iter().map(|j| j.key.clone()).collect(),
            Resource::DaemonSets => self.daemonsets.iter().map(|d| d.key.clone()).collect(),
            _ => self.customs(resource).map(|o| o.key.clone()).collect(),
        }
    }

    /// How many objects of `resource` are cached.
    pub fn len(&self, resource: Resource) -> usize {
        match resource {
            Resource::Pods => self.pods.len(),
            Resource::ReplicaSets => self.replicasets.len(),
            Resource::Nodes => self.nodes.len(),
            Resource::Leases => self.leases.len(),
            Resource::StatefulSets => self.statefulsets.len(),
            Resource::Jobs => self.jobs.len(),
            Resource::DaemonSets => self.daemonsets.len(),
            _ => self.custom.get(&resource).map_or(0, Store::len),
        }
    }

    /// The object of the registered `resource` cached at `key`.
    pub fn custom(&self, resource: Resource, key: &ObjectKey) -> Option<&CustomObject> {
        self.custom.get(&resource)?.get(key)
    }

    /// Every cached object of the registered `resource`.
    pub fn customs(&self, resource: Resource) -> impl Iterator<Item = &CustomObject> {
        self.custom.get(&resource).into_iter().flat_map(Store::iter)
    }

    /// The cached objects of the registered `resource` whose controller is `owner`.
    pub fn customs_owned_by<'a>(
        &'a self,
        resource: Resource,
        owner: &'a Uid,
    ) -> impl Iterator<Item = &'a CustomObject> + 'a {
        self.custom
            .get(&resource)
            .into_iter()
            .flat_map(move |store| store.owned_by(owner))
    }
}
