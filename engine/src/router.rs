//! Shard routing: a fixed-seed hash of the owner key, so a dependent lands with its controller;
//! an orphan Pod goes to every shard, so it reaches whichever shard holds its future owner; a
//! PersistentVolumeClaim goes with its StatefulSet.

use crate::key::ObjectKey;
use crate::object::{CustomObject, Object};
use crate::resource::Resource;
use crate::views::volume_claim::VolumeClaim;

/// Which shard a key belongs to.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ShardId(pub usize);

/// Where one object goes: one shard, or every shard.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Route {
    /// The shard of its controlling owner (or of its own key).
    Shard(ShardId),
    /// Every shard: a Pod no controller owns yet, which any shard's owner may adopt.
    Every,
}

impl Route {
    /// The shards it names, out of `shards`.
    pub fn shards(self, shards: usize) -> impl Iterator<Item = ShardId> {
        let (from, to) = match self {
            Route::Shard(s) => (s.0, s.0 + 1),
            Route::Every => (0, shards),
        };
        (from..to).map(ShardId)
    }

    /// Pushes `item` onto the slot of each shard it names (a clone only when there are several).
    pub fn deliver<T: Clone>(self, item: T, per_shard: &mut [Vec<T>]) {
        match self {
            Route::Shard(s) => {
                if let Some(slot) = per_shard.get_mut(s.0) {
                    slot.push(item);
                }
            }
            Route::Every => {
                for slot in per_shard.iter_mut() {
                    slot.push(item.clone());
                }
            }
        }
    }

    /// Whether it names `shard`.
    pub fn contains(self, shard: ShardId) -> bool {
        match self {
            Route::Shard(s) => s == shard,
            Route::Every => true,
        }
    }
}

/// Maps keys to shards with ahash under fixed seeds: the same key goes to the same shard in every
/// process, so logs and metrics from different runs line up.
#[derive(Clone, Debug)]
pub struct ShardRouter {
    shards: usize,
    hasher: ahash::RandomState,
}

impl ShardRouter {
    /// A router over `shards` shards (at least one).
    pub fn new(shards: usize) -> Self {
        Self {
            shards: shards.max(1),
            hasher: ahash::RandomState::with_seeds(
                0x7469_6465_6d61_726b,
                0x0000_0000_5647_0001,
                0x6b65_7935_3530_3420,
                0x7368_6172_6473_2121,
            ),
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The shard that owns `key`.
    pub fn shard_of(&self, key: &ObjectKey) -> ShardId {
        let hash = self.hasher.hash_one((key.namespace(), key.name()));
        ShardId((hash % self.shards as u64) as usize)
    }

    /// Where an object goes: its controlling owner's shard when it has one (owners of
    /// namespaced dependents live in the same namespace), a node Lease its Node's, an orphan Pod
    /// every shard, anything else its own key's shard.
    ///
    /// An orphan Pod (or ControllerRevision, which a set adopts the same way) goes everywhere
    /// because the shard that should adopt it is the shard of the
    /// owner whose selector matches it, which only a shard holding that owner can tell: routing
    /// by selector would make the router read every shard's owners, and a hash of the Pod's own
    /// key puts it with its future owner only by chance. Orphans are rare (a Pod created by hand,
    /// one released, one left by a deletion with `propagationPolicy: Orphan`), so a copy in each
    /// shard costs little; the shard whose owner adopts it gets it back alone once the patch is
    /// watched, and the others get [`Change::Departed`](crate::shard::Change::Departed).
    pub fn route(&self, object: &Object) -> Route {
        if let Object::Lease(lease) = object
            && let Some(node) = lease.node_key()
        {
            return Route::Shard(self.shard_of(&node));
        }
        if let Object::Custom(claim) = object
            && claim.resource == Resource::PersistentVolumeClaims
        {
            return self.route_claim(claim);
        }
        match object.controller_ref() {
            Some(owner) => Route::Shard(self.shard_of(&ObjectKey::new(
                object.key().namespace_arc().clone(),
                owner.name.clone(),
            ))),
            None if matches!(
                object.resource(),
                Resource::Pods | Resource::ControllerRevisions
            ) && self.shards > 1 =>
            {
                Route::Every
            }
            None => Route::Shard(self.shard_of(object.key())),
        }
    }

    /// A claim goes with its StatefulSet, which may not be its controller: a claim a scaled-down
    /// Pod owns (`whenScaled: Delete`) goes with the Pod's set. One that names no set (the
    /// default `Retain` policy leaves claims without owners) goes to every shard, as an orphan
    /// Pod does: only its name tells its set, and not unambiguously (`data-my-db-0` may be
    /// template `data` of set `my-db` or template `data-my` of set `db`).
    fn route_claim(&self, claim: &CustomObject) -> Route {
        let set = claim
            .get::<VolumeClaim>()
            .and_then(VolumeClaim::statefulset_name);
        match set {
            Some(set) => {
                Route::Shard(self.shard_of(&ObjectKey::new(claim.key.namespace_arc().clone(), set)))
            }
            None if self.shards > 1 => Route::Every,
            None => Route::Shard(self.shard_of(&claim.key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::test_support::{orphan_pod, pod_owned_by, replicaset};

    #[test]
    fn a_pod_routes_to_the_shard_of_its_controlling_replicaset() {
        let router = ShardRouter::new(7);
        for i in 0..50 {
            let rs = replicaset("default", &format!("web-{i}"), 3);
            let pod = pod_owned_by(&rs, &format!("web-{i}-abcde"));
            assert_eq!(
                router.route(&Object::Pod(pod)),
                router.route(&Object::ReplicaSet(rs))
            );
        }
    }

    #[test]
    fn an_orphan_pod_routes_to_every_shard_and_an_adopted_one_to_its_owner() {
        let router = ShardRouter::new(4);
        let rs = replicaset("default", "web", 3);
        let orphan = orphan_pod("default", "loose", &[("app", "web")]);
        assert_eq!(router.route(&Object::Pod(orphan)), Route::Every);
        assert_eq!(Route::Every.shards(4).count(), 4);
        let adopted = pod_owned_by(&rs, "loose");
        assert_eq!(
            router.route(&Object::Pod(adopted)),
            router.route(&Object::ReplicaSet(rs))
        );
    }

    #[test]
    fn with_one_shard_an_orphan_stays_in_it() {
        let orphan = orphan_pod("default", "loose", &[("app", "web")]);
        assert_eq!(
            ShardRouter::new(1).route(&Object::Pod(orphan)),
            Route::Shard(ShardId(0))
        );
    }

    #[test]
    fn a_claim_goes_with_its_statefulset_whether_the_set_or_its_pod_owns_it() {
        let router = ShardRouter::new(8);
        let set_shard = Route::Shard(router.shard_of(&ObjectKey::new("ns", "db")));
        let claim = |refs: serde_json::Value| {
            let body = serde_json::json!({"metadata": {"name": "data-db-3", "namespace": "ns",
                "uid": "c1", "resourceVersion": "5", "ownerReferences": refs}});
            let (object, _) = Object::decode(
                Resource::PersistentVolumeClaims,
                &serde_json::to_vec(&body).expect("json"),
            )
            .expect("a claim");
            object
        };
        let by_set = claim(
            serde_json::json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
            "name": "db", "uid": "s1", "controller": true}]),
        );
        assert_eq!(router.route(&by_set), set_shard);
        let by_pod = claim(serde_json::json!([{"apiVersion": "v1", "kind": "Pod",
            "name": "db-3", "uid": "p1", "controller": true}]));
        assert_eq!(router.route(&by_pod), set_shard);
        assert_eq!(router.route(&claim(serde_json::json!([]))), Route::Every);
    }

    #[test]
    fn routing_is_stable_across_router_instances() {
        let key = ObjectKey::new("ns", "name");
        assert_eq!(
            ShardRouter::new(16).shard_of(&key),
            ShardRouter::new(16).shard_of(&key)
        );
    }

    #[test]
    fn keys_spread_over_all_shards() {
        let router = ShardRouter::new(4);
        let mut seen = [0usize; 4];
        for i in 0..400 {
            seen[router.shard_of(&ObjectKey::new("ns", format!("k{i}"))).0] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
