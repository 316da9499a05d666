//! Proof of freshness for destructive decisions: which keys are proven, and the barriers (one
//! consistent read of the current revision, shared by every key of a shard waiting at that moment)
//! that prove them.

use crate::key::ObjectKey;
use ahash::AHashSet;

/// Names one barrier read, so a late answer to an older one is recognised.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarrierId(pub u64);

/// The keys of one controller whose destructive decisions are proven. In memory only: after a
/// restart or a lost leadership every key starts unproven, and proof is never granted in bulk.
#[derive(Clone, Debug, Default)]
pub struct Proofs {
    proven: AHashSet<ObjectKey>,
    /// The seeded bug `proof-never-expires`: nothing is ever forgotten.
    sticky: bool,
}

impl Proofs {
    /// Whether `key` has had its barrier since this process (or leadership) began.
    pub fn is_proven(&self, key: &ObjectKey) -> bool {
        self.proven.contains(key)
    }

    /// A barrier answered for `key` and its watermarks will be checked against it.
    pub fn prove(&mut self, key: &ObjectKey) {
        self.proven.insert(key.clone());
    }

    /// The key's object is gone or was replaced: a new object starts unproven.
    pub fn forget(&mut self, key: &ObjectKey) {
        if !self.sticky {
            self.proven.remove(key);
        }
    }

    /// Leadership was lost: another manager may have written since, so nothing stays proven.
    pub fn revoke_all(&mut self) {
        if !self.sticky {
            self.proven.clear();
        }
    }

    /// With `sticky`, a proof is never forgotten (the seeded bug `proof-never-expires`).
    #[cfg(feature = "seeded-bugs")]
    pub fn never_expire(&mut self, sticky: bool) {
        self.sticky = sticky;
    }

    /// How many keys are proven.
    pub fn len(&self) -> usize {
        self.proven.len()
    }

    /// Whether no key is proven.
    pub fn is_empty(&self) -> bool {
        self.proven.is_empty()
    }
}

/// The barrier requests of one shard. A read answers only the keys that asked before it was
/// sent: a key asking while a read is in flight waits for the next one, because only a read
/// started after the decision proves the cache is current for it.
#[derive(Clone, Debug, Default)]
pub struct Barriers {
    waiting: Vec<(usize, ObjectKey)>,
    in_flight: Option<(BarrierId, Vec<(usize, ObjectKey)>)>,
    next: u64,
}

impl Barriers {
    /// `key` of controller `controller` needs a barrier.
    pub fn request(&mut self, controller: usize, key: &ObjectKey) {
        if !self
            .waiting
            .iter()
            .any(|(c, k)| *c == controller && k == key)
        {
            self.waiting.push((controller, key.clone()));
        }
    }

    /// Starts the next read if keys wait and none is in flight; returns its id and the first
    /// waiting controller (whose primary resource the read may list).
    pub fn start(&mut self) -> Option<(BarrierId, usize)> {
        if self.in_flight.is_some() || self.waiting.is_empty() {
            return None;
        }
        self.next += 1;
        let id = BarrierId(self.next);
        let first = self.waiting[0].0;
        self.in_flight = Some((id, std::mem::take(&mut self.waiting)));
        Some((id, first))
    }

    /// The read `id` was answered: the keys it covers. An unknown or old id covers none.
    pub fn finish(&mut self, id: BarrierId) -> Vec<(usize, ObjectKey)> {
        match self.in_flight.take() {
            Some((current, keys)) if current == id => keys,
            other => {
                self.in_flight = other;
                Vec::new()
            }
        }
    }

    /// Keys of controller `controller` waiting for a read or covered by the one in flight.
    pub fn pending_for(&self, controller: usize) -> usize {
        let in_flight = self.in_flight.iter().flat_map(|(_, keys)| keys.iter());
        self.waiting
            .iter()
            .chain(in_flight)
            .filter(|(c, _)| *c == controller)
            .count()
    }

    /// Keys waiting for a read or covered by the one in flight.
    pub fn pending(&self) -> usize {
        self.waiting.len() + self.in_flight.as_ref().map_or(0, |(_, k)| k.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    #[test]
    fn keys_waiting_together_share_one_read() {
        let mut barriers = Barriers::default();
        barriers.request(0, &k("a"));
        barriers.request(0, &k("b"));
        barriers.request(0, &k("a"));
        let (id, first) = barriers.start().expect("a read starts");
        assert_eq!(first, 0);
        assert_eq!(barriers.start(), None, "one read in flight at a time");
        assert_eq!(barriers.finish(id), vec![(0, k("a")), (0, k("b"))]);
        assert_eq!(barriers.pending(), 0);
    }

    #[test]
    fn a_key_asking_during_a_read_waits_for_the_next_one() {
        let mut barriers = Barriers::default();
        barriers.request(0, &k("a"));
        let (first, _) = barriers.start().expect("a read starts");
        barriers.request(1, &k("late"));
        assert_eq!(barriers.finish(first), vec![(0, k("a"))]);
        let (second, controller) = barriers.start().expect("the late key gets its own read");
        assert_ne!(first, second);
        assert_eq!(controller, 1);
        assert_eq!(barriers.finish(second), vec![(1, k("late"))]);
    }

    #[test]
    fn an_answer_to_an_unknown_read_covers_nothing() {
        let mut barriers = Barriers::default();
        barriers.request(0, &k("a"));
        let (id, _) = barriers.start().expect("a read starts");
        assert!(barriers.finish(BarrierId(id.0 + 7)).is_empty());
        assert_eq!(barriers.finish(id).len(), 1, "the real answer still counts");
    }

    #[test]
    fn revoking_leaves_every_key_unproven() {
        let mut proofs = Proofs::default();
        proofs.prove(&k("a"));
        proofs.prove(&k("b"));
        proofs.forget(&k("a"));
        assert!(!proofs.is_proven(&k("a")));
        assert!(proofs.is_proven(&k("b")));
        proofs.revoke_all();
        assert!(proofs.is_empty());
    }
}
