//! One resource's slice of the cache: objects by key, with an index from owner UID to dependents
//! and one of the objects no controller owns (the orphans a controller may adopt).

use crate::key::{ObjectKey, Uid};
use ahash::{AHashMap, AHashSet};

/// What the store needs to know about an object.
pub trait Cached: Clone {
    /// namespace/name.
    fn key(&self) -> &ObjectKey;
    /// The UID of the controlling owner, if any.
    fn owner_uid(&self) -> Option<&Uid>;
}

/// Objects of one resource by key, plus the dependents of each owner and the orphans.
#[derive(Clone, Debug)]
pub struct Store<T> {
    objects: AHashMap<ObjectKey, T>,
    by_owner: AHashMap<Uid, AHashSet<ObjectKey>>,
    orphans: AHashSet<ObjectKey>,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Self {
            objects: AHashMap::new(),
            by_owner: AHashMap::new(),
            orphans: AHashSet::new(),
        }
    }
}

impl<T: Cached> Store<T> {
    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&T> {
        self.objects.get(key)
    }

    /// Inserts or replaces an object; returns the previous one.
    pub fn apply(&mut self, object: T) -> Option<T> {
        // An update that keeps the owner (nearly every update) leaves both indexes as they are:
        // one lookup instead of four.
        if let Some(slot) = self.objects.get_mut(object.key())
            && slot.owner_uid() == object.owner_uid()
        {
            return Some(std::mem::replace(slot, object));
        }
        let key = object.key().clone();
        let owned = object.owner_uid().is_some();
        if let Some(owner) = object.owner_uid() {
            self.by_owner
                .entry(owner.clone())
                .or_default()
                .insert(key.clone());
        } else {
            self.orphans.insert(key.clone());
        }
        let previous = self.objects.insert(key.clone(), object);
        // Only an object that was an orphan can leave the set: an owned Pod's update (nearly
        // every update) costs no lookup.
        if owned && previous.as_ref().is_some_and(|p| p.owner_uid().is_none()) {
            self.orphans.remove(&key);
        }
        if let Some(old_owner) = previous.as_ref().and_then(|p| p.owner_uid()) {
            let still = self.objects.get(&key).and_then(|o| o.owner_uid());
            if still != Some(old_owner) {
                self.unindex(old_owner.clone(), &key);
            }
        }
        previous
    }

    /// Removes the object at `key`; returns it.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<T> {
        let removed = self.objects.remove(key)?;
        self.orphans.remove(key);
        if let Some(owner) = removed.owner_uid() {
            self.unindex(owner.clone(), key);
        }
        Some(removed)
    }

    fn unindex(&mut self, owner: Uid, key: &ObjectKey) {
        if let Some(set) = self.by_owner.get_mut(&owner) {
            set.remove(key);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// Replaces every object at once (a later object of a key wins). Returns the objects that
    /// were removed because the new contents no longer hold them.
    pub fn replace(&mut self, objects: Vec<T>) -> Vec<T> {
        // Sized once: a million-Pod relist grew the map by doubling, moving every entry again.
        let old = std::mem::replace(&mut self.objects, AHashMap::with_capacity(objects.len()));
        self.by_owner.clear();
        self.orphans.clear();
        for object in objects {
            self.apply(object);
        }
        old.into_iter()
            .filter(|(key, _)| !self.objects.contains_key(key))
            .map(|(_, object)| object)
            .collect()
    }

    /// The dependents of the owner with `uid`.
    pub fn owned_by<'a>(&'a self, uid: &Uid) -> impl Iterator<Item = &'a T> + 'a {
        self.by_owner
            .get(uid)
            .into_iter()
            .flat_map(|set| set.iter())
            .filter_map(|k| self.objects.get(k))
    }

    /// The objects no controller owns.
    pub fn orphans(&self) -> impl Iterator<Item = &T> {
        self.orphans.iter().filter_map(|k| self.objects.get(k))
    }

    /// Every object.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.objects.values()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::PodView;
    use crate::object::test_support::{orphan_pod, pod_owned_by, replicaset};

    #[test]
    fn an_orphan_is_indexed_until_a_controller_owns_it() {
        let rs = replicaset("ns", "web", 2);
        let mut store: Store<PodView> = Store::default();
        store.apply(orphan_pod("ns", "a", &[("app", "web")]));
        assert_eq!(store.orphans().count(), 1);
        store.apply(pod_owned_by(&rs, "a"));
        assert_eq!(store.orphans().count(), 0);
        store.apply(orphan_pod("ns", "a", &[]));
        store.remove(&ObjectKey::new("ns", "a"));
        assert_eq!(store.orphans().count(), 0);
    }

    #[test]
    fn owner_index_follows_apply_remove_and_replace() {
        let rs = replicaset("ns", "web", 2);
        let mut store: Store<PodView> = Store::default();
        store.apply(pod_owned_by(&rs, "a"));
        store.apply(pod_owned_by(&rs, "b"));
        assert_eq!(store.owned_by(&rs.uid).count(), 2);
        store.remove(&ObjectKey::new("ns", "a"));
        assert_eq!(store.owned_by(&rs.uid).count(), 1);
        let removed = store.replace(vec![pod_owned_by(&rs, "c")]);
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].key.name(), "b");
        let names: Vec<_> = store
            .owned_by(&rs.uid)
            .map(|p| p.key.name().to_string())
            .collect();
        assert_eq!(names, vec!["c"]);
    }

    proptest::proptest! {
        /// Any sequence of applies (each Pod owned by one of two ReplicaSets or by none) and
        /// removals leaves the owner index and the orphans exactly what the objects say.
        #[test]
        fn the_indexes_always_say_what_the_objects_say(
            steps in proptest::collection::vec((0usize..5, 0usize..4), 1..60)
        ) {
            let owners = [replicaset("ns", "one", 1), replicaset("ns", "two", 1)];
            let mut store: Store<PodView> = Store::default();
            for (pod, action) in steps {
                let name = format!("p{pod}");
                match action {
                    0 => { store.remove(&ObjectKey::new("ns", name.as_str())); }
                    1 => { store.apply(orphan_pod("ns", &name, &[])); }
                    owner => { store.apply(pod_owned_by(&owners[owner - 2], &name)); }
                }
                for rs in &owners {
                    let mut indexed: Vec<_> = store.owned_by(&rs.uid).map(|p| p.key.clone()).collect();
                    let mut expected: Vec<_> = store
                        .iter()
                        .filter(|p| p.owner_uid() == Some(&rs.uid))
                        .map(|p| p.key.clone())
                        .collect();
                    indexed.sort();
                    expected.sort();
                    proptest::prop_assert_eq!(indexed, expected);
                }
                let mut orphans: Vec<_> = store.orphans().map(|p| p.key.clone()).collect();
                let mut expected: Vec<_> = store
                    .iter()
                    .filter(|p| p.owner_uid().is_none())
                    .map(|p| p.key.clone())
                    .collect();
                orphans.sort();
                expected.sort();
                proptest::prop_assert_eq!(orphans, expected);
            }
        }
    }
}
