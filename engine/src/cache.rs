//! A shard's cache: one [`Store`] per resource, and what an applied change means for it.

use crate::key::{ObjectKey, Uid};
use crate::object::{Object, PodView, ReplicaSetView};
use crate::resource::Resource;
use crate::store::{Cached, Store};

impl Cached for PodView {
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
    /// Pods routed to this shard (by their controlling owner).
    pub pods: Store<PodView>,
    /// ReplicaSets routed to this shard.
    pub replicasets: Store<ReplicaSetView>,
}

impl ShardCache {
    /// Inserts or replaces an object; returns the previous version.
    pub fn apply(&mut self, object: Object) -> Option<Object> {
        match object {
            Object::Pod(p) => self.pods.apply(p).map(Object::Pod),
            Object::ReplicaSet(r) => self.replicasets.apply(r).map(Object::ReplicaSet),
        }
    }

    /// Removes an object; returns what was cached.
    pub fn remove(&mut self, resource: Resource, key: &ObjectKey) -> Option<Object> {
        match resource {
            Resource::Pods => self.pods.remove(key).map(Object::Pod),
            Resource::ReplicaSets => self.replicasets.remove(key).map(Object::ReplicaSet),
        }
    }

    /// Replaces a resource's whole slice; returns the objects no longer present. Objects of other
    /// resources in `objects` are a caller bug and are ignored.
    pub fn replace(&mut self, resource: Resource, objects: Vec<Object>) -> Vec<Object> {
        match resource {
            Resource::Pods => {
                let pods = objects
                    .into_iter()
                    .filter_map(|o| match o {
                        Object::Pod(p) => Some(p),
                        _ => None,
                    })
                    .collect();
                self.pods
                    .replace(pods)
                    .into_iter()
                    .map(Object::Pod)
                    .collect()
            }
            Resource::ReplicaSets => {
                let sets = objects
                    .into_iter()
                    .filter_map(|o| match o {
                        Object::ReplicaSet(r) => Some(r),
                        _ => None,
                    })
                    .collect();
                self.replicasets
                    .replace(sets)
                    .into_iter()
                    .map(Object::ReplicaSet)
                    .collect()
            }
        }
    }

    /// The UID of the object of `resource` cached at `key`, and whether it is live (not
    /// terminating).
    fn uid_at(&self, resource: Resource, key: &ObjectKey) -> Option<(&Uid, bool)> {
        match resource {
            Resource::Pods => self.pods.get(key).map(|p| (&p.uid, !p.terminating)),
            Resource::ReplicaSets => self.replicasets.get(key).map(|r| (&r.uid, !r.terminating)),
        }
    }

    /// The generation of the object of `resource` cached at `key`, for kinds that have one.
    pub fn generation_of(&self, resource: Resource, key: &ObjectKey) -> Option<i64> {
        match resource {
            Resource::Pods => None,
            Resource::ReplicaSets => self.replicasets.get(key).map(|r| r.generation),
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
        }
    }

    /// How many objects of `resource` are cached.
    pub fn len(&self, resource: Resource) -> usize {
        match resource {
            Resource::Pods => self.pods.len(),
            Resource::ReplicaSets => self.replicasets.len(),
        }
    }
}
