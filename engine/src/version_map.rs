//! The version map: for each owner key, the highest resourceVersion it wrote per resource and
//! the deletions it is still waiting to observe; the freshness gate reads it.

use crate::key::{ObjectKey, Uid};
use crate::resource::{PerResource, Resource};
use crate::rv::{NotComparable, ResourceVersion};
use ahash::AHashMap;
use smallvec::SmallVec;

/// Whether a key's cache view includes its own writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Every write the key made is visible in the cache (or it made none).
    Fresh,
    /// The cache of `resource` has not reached `target`, the version the key last wrote.
    Stale {
        /// The resource whose watermark is behind.
        resource: Resource,
        /// The written version the watermark must reach.
        target: ResourceVersion,
    },
    /// The key deleted objects whose removal the cache has not shown yet.
    AwaitingDeletes {
        /// The resource of the first pending deletion.
        resource: Resource,
        /// How many deletions are pending.
        pending: usize,
    },
    /// A version could not be compared, so freshness cannot be proven.
    Unknown(NotComparable),
}

#[derive(Clone, Debug, Default)]
struct WriteRecord {
    owner_uid: Option<Uid>,
    written: PerResource<Option<ResourceVersion>>,
    pending_deletes: SmallVec<[(Resource, Uid); 4]>,
    unknown: Option<NotComparable>,
}

/// Owner key -> what it wrote. Records are removed once caught up, when the owner is deleted, or
/// when a new object takes the owner's name (its UID changes).
#[derive(Clone, Debug, Default)]
pub struct VersionMap {
    records: AHashMap<ObjectKey, WriteRecord>,
    delete_owners: AHashMap<Uid, ObjectKey>,
}

impl VersionMap {
    fn record(&mut self, owner: &ObjectKey, owner_uid: Option<&Uid>) -> &mut WriteRecord {
        let record = self.records.entry(owner.clone()).or_default();
        if record.owner_uid.is_none() {
            record.owner_uid = owner_uid.cloned();
        }
        record
    }

    /// Records the version a write of `owner` to `resource` returned (the max is kept, like
    /// upstream `WroteAt`).
    pub fn record_write(
        &mut self,
        owner: &ObjectKey,
        owner_uid: Option<&Uid>,
        resource: Resource,
        version: Result<ResourceVersion, NotComparable>,
    ) {
        let record = self.record(owner, owner_uid);
        match version {
            Ok(rv) => {
                let slot = record.written.get_mut(resource);
                *slot = Some(slot.map_or(rv, |old| old.max(rv)));
            }
            Err(why) => record.unknown = Some(why),
        }
    }

    /// Records that `owner` deleted the object `uid` of `resource`; the key stays gated until the
    /// cache no longer shows that object live.
    pub fn record_delete(
        &mut self,
        owner: &ObjectKey,
        owner_uid: Option<&Uid>,
        resource: Resource,
        uid: Uid,
    ) {
        self.delete_owners.insert(uid.clone(), owner.clone());
        self.record(owner, owner_uid)
            .pending_deletes
            .push((resource, uid));
    }

    /// The cache shows `uid` gone (or terminating); returns the owner that waited for it and how
    /// many of its deletions are still pending.
    pub fn observe_gone(&mut self, uid: &Uid) -> Option<(ObjectKey, usize)> {
        let owner = self.delete_owners.remove(uid)?;
        let remaining = match self.records.get_mut(&owner) {
            Some(record) => {
                record.pending_deletes.retain(|(_, u)| u != uid);
                record.pending_deletes.len()
            }
            None => 0,
        };
        Some((owner, remaining))
    }

    /// Checks `owner` against the watermarks. A caught-up record is cleared; an unknown version is
    /// reported once and then forgotten, which is upstream's fail-open for ordinary work.
    pub fn check(
        &mut self,
        owner: &ObjectKey,
        watermarks: &PerResource<Option<ResourceVersion>>,
    ) -> Freshness {
        let Some(record) = self.records.get_mut(owner) else {
            return Freshness::Fresh;
        };
        if let Some(why) = record.unknown.take() {
            return Freshness::Unknown(why);
        }
        if let Some((resource, _)) = record.pending_deletes.first() {
            return Freshness::AwaitingDeletes {
                resource: *resource,
                pending: record.pending_deletes.len(),
            };
        }
        for (resource, written) in record.written.iter() {
            if let Some(target) = *written {
                let caught_up = watermarks.get(resource).is_some_and(|w| w >= target);
                if !caught_up {
                    return Freshness::Stale { resource, target };
                }
            }
        }
        self.records.remove(owner);
        Freshness::Fresh
    }

    /// Drops everything recorded for `owner` (it was deleted).
    pub fn forget(&mut self, owner: &ObjectKey) {
        if let Some(record) = self.records.remove(owner) {
            for (_, uid) in record.pending_deletes {
                self.delete_owners.remove(&uid);
            }
        }
    }

    /// Drops the record of `owner` when it belongs to another object than `uid`.
    pub fn forget_if_replaced(&mut self, owner: &ObjectKey, uid: &Uid) {
        let replaced = self
            .records
            .get(owner)
            .and_then(|r| r.owner_uid.as_ref())
            .is_some_and(|recorded| recorded != uid);
        if replaced {
            self.forget(owner);
        }
    }

    /// How many owner keys have a record.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when no key has a record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(pods: u64) -> PerResource<Option<ResourceVersion>> {
        PerResource::from_fn(|r| match r {
            Resource::Pods => ResourceVersion::new(pods),
            _ => ResourceVersion::new(1),
        })
    }

    fn rv(v: u64) -> Result<ResourceVersion, NotComparable> {
        ResourceVersion::new(v).ok_or(NotComparable::Zero)
    }

    #[test]
    fn a_key_is_stale_until_the_watermark_reaches_its_highest_write() {
        let mut map = VersionMap::default();
        let key = ObjectKey::new("ns", "web");
        map.record_write(&key, None, Resource::Pods, rv(10));
        map.record_write(&key, None, Resource::Pods, rv(7));
        let target = ResourceVersion::new(10).expect("nonzero");
        assert_eq!(
            map.check(&key, &marks(9)),
            Freshness::Stale {
                resource: Resource::Pods,
                target
            }
        );
        assert_eq!(map.check(&key, &marks(10)), Freshness::Fresh);
        assert!(map.is_empty(), "a caught-up record is cleared");
    }

    #[test]
    fn deletions_are_tracked_until_observed() {
        let mut map = VersionMap::default();
        let key = ObjectKey::new("ns", "web");
        map.record_delete(&key, None, Resource::Pods, Uid::new("p1"));
        map.record_delete(&key, None, Resource::Pods, Uid::new("p2"));
        assert!(matches!(
            map.check(&key, &marks(100)),
            Freshness::AwaitingDeletes { pending: 2, .. }
        ));
        assert_eq!(map.observe_gone(&Uid::new("p1")), Some((key.clone(), 1)));
        assert!(matches!(
            map.check(&key, &marks(100)),
            Freshness::AwaitingDeletes { pending: 1, .. }
        ));
        map.observe_gone(&Uid::new("p2"));
        assert_eq!(map.check(&key, &marks(100)), Freshness::Fresh);
    }

    #[test]
    fn a_non_comparable_written_version_reports_unknown_once() {
        let mut map = VersionMap::default();
        let key = ObjectKey::new("ns", "web");
        map.record_write(&key, None, Resource::Pods, Err(NotComparable::NotDecimal));
        assert_eq!(
            map.check(&key, &marks(5)),
            Freshness::Unknown(NotComparable::NotDecimal)
        );
        assert_eq!(map.check(&key, &marks(5)), Freshness::Fresh);
    }

    #[test]
    fn a_new_owner_under_the_same_name_starts_clean() {
        let mut map = VersionMap::default();
        let key = ObjectKey::new("ns", "web");
        map.record_write(&key, Some(&Uid::new("old")), Resource::Pods, rv(50));
        map.forget_if_replaced(&key, &Uid::new("old"));
        assert_eq!(map.len(), 1);
        map.forget_if_replaced(&key, &Uid::new("new"));
        assert_eq!(map.check(&key, &marks(1)), Freshness::Fresh);
    }

    #[test]
    fn a_missing_watermark_is_stale() {
        let mut map = VersionMap::default();
        let key = ObjectKey::new("ns", "web");
        map.record_write(&key, None, Resource::Pods, rv(3));
        let none = PerResource::from_fn(|_| None);
        assert!(matches!(map.check(&key, &none), Freshness::Stale { .. }));
    }
}
