//! Where each object of a routed resource was last sent, so an object whose controlling owner
//! changes (adopted, orphaned) leaves its old shard instead of staying there as a ghost copy
//! that never sees its deletion.

use crate::object::Object;
use crate::router::{Route, ShardId, ShardRouter};
use crate::shard::Change;
use ahash::AHashMap;
use smallvec::SmallVec;

/// Where one change goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The shards that get the change.
    pub route: Route,
    /// The shards the object was in before and is not in now: each gets [`Change::Departed`]
    /// (every shard but its owner's when an orphan is adopted).
    pub left: SmallVec<[ShardId; 2]>,
}

/// How [`Placements`] remembers [`Route::Every`].
const EVERY: u32 = u32::MAX;

fn encode(route: Route) -> u32 {
    match route {
        Route::Shard(s) => s.0 as u32,
        Route::Every => EVERY,
    }
}

fn decode(stored: u32) -> Route {
    if stored == EVERY {
        Route::Every
    } else {
        Route::Shard(ShardId(stored as usize))
    }
}

/// The last shard of every object of one resource, keyed by a 64-bit hash of its namespace and
/// name (about 20 bytes an object; nothing at all with one shard, where nothing can move).
#[derive(Clone, Debug)]
pub struct Placements {
    last: AHashMap<u64, u32>,
    hasher: ahash::RandomState,
    tracking: bool,
}

impl Placements {
    /// Placements for objects routed by `router`.
    pub fn new(router: &ShardRouter) -> Self {
        Self {
            last: AHashMap::new(),
            hasher: ahash::RandomState::with_seeds(
                0x706c_6163_656d_656e,
                0x7473_0000_5647_0002,
                0x6f77_6e65_7273_2121,
                0x6d6f_7665_2121_2121,
            ),
            tracking: router.shards() > 1,
        }
    }

    fn hash(&self, object: &Object) -> u64 {
        let key = object.key();
        self.hasher.hash_one((key.namespace(), key.name()))
    }

    /// A list starts: every placement is about to be recorded anew.
    pub fn clear(&mut self) {
        self.last.clear();
    }

    /// A listed object goes to `route`.
    pub fn listed(&mut self, object: &Object, route: Route) {
        if self.tracking {
            let h = self.hash(object);
            self.last.insert(h, encode(route));
        }
    }

    /// Where `change` goes. A deletion goes where the object was, whatever its owner says now;
    /// an object whose owner moved it also leaves the shard it was in.
    pub fn place(&mut self, router: &ShardRouter, change: &Change) -> Placement {
        let (object, deleted) = match change {
            Change::Applied(o) => (o, false),
            Change::Deleted(o) | Change::Departed(o) => (o, true),
        };
        let routed = router.route(object);
        if !self.tracking {
            return Placement {
                route: routed,
                left: SmallVec::new(),
            };
        }
        let h = self.hash(object);
        if deleted {
            let route = self.last.remove(&h).map_or(routed, decode);
            return Placement {
                route,
                left: SmallVec::new(),
            };
        }
        let before = self.last.insert(h, encode(routed)).map(decode);
        let left = before
            .into_iter()
            .flat_map(|b| b.shards(router.shards()))
            .filter(|s| !routed.contains(*s))
            .collect();
        Placement {
            route: routed,
            left,
        }
    }

    /// Objects whose placement is remembered.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    /// Whether none is remembered.
    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::test_support::{orphan_pod, pod_owned_by, replicaset};

    /// Two ReplicaSets that a four-shard router puts in different shards.
    fn owners_in_two_shards(
        router: &ShardRouter,
    ) -> (crate::ReplicaSetView, crate::ReplicaSetView) {
        let first = replicaset("default", "web-0", 1);
        let first_shard = router.route(&Object::ReplicaSet(first.clone()));
        let second = (1..100)
            .map(|i| replicaset("default", &format!("web-{i}"), 1))
            .find(|rs| router.route(&Object::ReplicaSet(rs.clone())) != first_shard)
            .expect("some name hashes elsewhere");
        (first, second)
    }

    #[test]
    fn an_adopted_pod_leaves_the_shard_of_its_old_owner() {
        let router = ShardRouter::new(4);
        let (old, new) = owners_in_two_shards(&router);
        let mut placements = Placements::new(&router);
        let pod = pod_owned_by(&old, "pod-a");
        let first = placements.place(&router, &Change::Applied(Object::Pod(pod)));
        assert!(first.left.is_empty());
        let adopted = pod_owned_by(&new, "pod-a");
        let moved = placements.place(&router, &Change::Applied(Object::Pod(adopted)));
        let Route::Shard(before) = first.route else {
            panic!("an owned Pod goes to one shard")
        };
        assert_eq!(moved.left.as_slice(), [before]);
        assert_ne!(moved.route, first.route);
    }

    #[test]
    fn an_adopted_orphan_leaves_every_shard_but_its_owners() {
        let router = ShardRouter::new(4);
        let rs = replicaset("default", "web", 1);
        let mut placements = Placements::new(&router);
        let loose = orphan_pod("default", "loose", &[("app", "web")]);
        let first = placements.place(&router, &Change::Applied(Object::Pod(loose)));
        assert_eq!(first.route, Route::Every);
        let adopted = placements.place(
            &router,
            &Change::Applied(Object::Pod(pod_owned_by(&rs, "loose"))),
        );
        let Route::Shard(owner) = adopted.route else {
            panic!("an adopted Pod goes to its owner's shard")
        };
        assert_eq!(adopted.left.len(), 3);
        assert!(!adopted.left.contains(&owner));
    }

    #[test]
    fn a_released_pod_goes_everywhere_and_leaves_nothing() {
        let router = ShardRouter::new(4);
        let rs = replicaset("default", "web", 1);
        let mut placements = Placements::new(&router);
        placements.place(
            &router,
            &Change::Applied(Object::Pod(pod_owned_by(&rs, "p"))),
        );
        let released = orphan_pod("default", "p", &[("app", "other")]);
        let there = placements.place(&router, &Change::Applied(Object::Pod(released.clone())));
        assert_eq!(there.route, Route::Every);
        assert!(there.left.is_empty());
        let gone = placements.place(&router, &Change::Deleted(Object::Pod(released)));
        assert_eq!(gone.route, Route::Every);
    }

    #[test]
    fn a_deletion_goes_where_the_object_was() {
        let router = ShardRouter::new(4);
        let (old, new) = owners_in_two_shards(&router);
        let mut placements = Placements::new(&router);
        let there = placements.place(
            &router,
            &Change::Applied(Object::Pod(pod_owned_by(&old, "p"))),
        );
        let gone = placements.place(
            &router,
            &Change::Deleted(Object::Pod(pod_owned_by(&new, "p"))),
        );
        assert_eq!(gone.route, there.route);
        assert!(placements.is_empty());
    }

    #[test]
    fn an_update_that_keeps_the_owner_moves_nothing() {
        let router = ShardRouter::new(4);
        let (old, _) = owners_in_two_shards(&router);
        let mut placements = Placements::new(&router);
        let pod = Object::Pod(pod_owned_by(&old, "p"));
        placements.place(&router, &Change::Applied(pod.clone()));
        assert!(
            placements
                .place(&router, &Change::Applied(pod))
                .left
                .is_empty()
        );
    }

    #[test]
    fn one_shard_remembers_nothing() {
        let router = ShardRouter::new(1);
        let (old, _) = owners_in_two_shards(&ShardRouter::new(4));
        let mut placements = Placements::new(&router);
        placements.place(
            &router,
            &Change::Applied(Object::Pod(pod_owned_by(&old, "p"))),
        );
        assert!(placements.is_empty());
    }
}
