//! Shard routing: a fixed-seed hash of the owner key, so a dependent lands with its controller.

use crate::key::ObjectKey;
use crate::object::Object;

/// Which shard a key belongs to.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ShardId(pub usize);

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

    /// The shard an object belongs to: its controlling owner's shard when it has one (owners of
    /// namespaced dependents live in the same namespace), a node Lease its Node's, else its own.
    pub fn route(&self, object: &Object) -> ShardId {
        if let Object::Lease(lease) = object
            && let Some(node) = lease.node_key()
        {
            return self.shard_of(&node);
        }
        match object.controller_ref() {
            Some(owner) => self.shard_of(&ObjectKey::new(
                object.key().namespace_arc().clone(),
                owner.name.clone(),
            )),
            None => self.shard_of(object.key()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::test_support::{pod_owned_by, replicaset};

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
