//! `ControllerExpectations` as kube-controller-manager keeps them (pkg/controller/controller_utils.go):
//! the creates and deletes a key's last sync issued and has not yet seen in its cache. A key with
//! unmet expectations is not synced again until they are met or expire. This is the baseline
//! modes' protection; Tidemark's own gate subsumes it.

use crate::key::{ObjectKey, Uid};
use ahash::{AHashMap, AHashSet};
use std::time::{Duration, Instant};

/// Upstream's `ExpectationsTimeout`: unmet expectations stop blocking a key after this long.
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Clone, Debug)]
struct Expected {
    adds: i64,
    deletes: AHashSet<Uid>,
    set_at: Instant,
}

/// Per key: creates still to observe (a count, as upstream) and deletions still to observe (by
/// UID, as upstream's `UIDTrackingControllerExpectations`).
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    keys: AHashMap<ObjectKey, Expected>,
}

impl Expectations {
    /// Sets what `key`'s sync is about to issue, replacing what was expected before
    /// (upstream `SetExpectations`).
    pub fn expect(&mut self, key: &ObjectKey, adds: i64, deletes: AHashSet<Uid>, now: Instant) {
        if adds <= 0 && deletes.is_empty() {
            self.keys.remove(key);
            return;
        }
        self.keys.insert(
            key.clone(),
            Expected {
                adds,
                deletes,
                set_at: now,
            },
        );
    }

    /// A create of `key` showed up in the cache, or will never happen (it failed or was not
    /// sent). Returns true when `key`'s expectations are now met.
    pub fn creation_observed(&mut self, key: &ObjectKey) -> bool {
        match self.keys.get_mut(key) {
            Some(e) => {
                e.adds -= 1;
                e.adds <= 0 && e.deletes.is_empty()
            }
            None => false,
        }
    }

    /// The object `uid` that `key` deleted is gone (or terminating) in the cache, or its delete
    /// failed. Returns true when `key`'s expectations are now met.
    pub fn deletion_observed(&mut self, key: &ObjectKey, uid: &Uid) -> bool {
        match self.keys.get_mut(key) {
            Some(e) => e.deletes.remove(uid) && e.adds <= 0 && e.deletes.is_empty(),
            None => false,
        }
    }

    /// Whether `key` may sync: nothing expected, everything observed, or expired
    /// (upstream `SatisfiedExpectations`). Returns how long until they expire otherwise.
    pub fn unmet(&self, key: &ObjectKey, now: Instant) -> Option<Duration> {
        let e = self.keys.get(key)?;
        if e.adds <= 0 && e.deletes.is_empty() {
            return None;
        }
        EXPECTATIONS_TIMEOUT.checked_sub(now.saturating_duration_since(e.set_at))
    }

    /// The key's object is gone: nothing is expected of it any more.
    pub fn forget(&mut self, key: &ObjectKey) {
        self.keys.remove(key);
    }

    /// Keys with a record.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key has a record.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ObjectKey::new("ns", "web")
    }

    fn uids(names: &[&str]) -> AHashSet<Uid> {
        names.iter().map(|n| Uid::new(*n)).collect()
    }

    #[test]
    fn a_key_waits_until_every_create_is_observed() {
        let now = Instant::now();
        let mut e = Expectations::default();
        e.expect(&key(), 2, AHashSet::new(), now);
        assert!(e.unmet(&key(), now).is_some());
        assert!(!e.creation_observed(&key()));
        assert!(e.creation_observed(&key()));
        assert_eq!(e.unmet(&key(), now), None);
    }

    #[test]
    fn only_the_expected_deletions_count() {
        let now = Instant::now();
        let mut e = Expectations::default();
        e.expect(&key(), 0, uids(&["a", "b"]), now);
        assert!(!e.deletion_observed(&key(), &Uid::new("other")));
        assert!(!e.deletion_observed(&key(), &Uid::new("a")));
        assert!(e.deletion_observed(&key(), &Uid::new("b")));
        assert_eq!(e.unmet(&key(), now), None);
    }

    #[test]
    fn unmet_expectations_expire_after_five_minutes() {
        let now = Instant::now();
        let mut e = Expectations::default();
        e.expect(&key(), 1, AHashSet::new(), now);
        assert_eq!(
            e.unmet(&key(), now + Duration::from_secs(60)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(
            e.unmet(&key(), now + EXPECTATIONS_TIMEOUT),
            Some(Duration::ZERO)
        );
        assert_eq!(
            e.unmet(
                &key(),
                now + EXPECTATIONS_TIMEOUT + Duration::from_millis(1)
            ),
            None
        );
    }

    #[test]
    fn a_key_with_no_record_may_sync() {
        assert_eq!(Expectations::default().unmet(&key(), Instant::now()), None);
    }
}
