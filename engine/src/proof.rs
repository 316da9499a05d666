//! Proof of freshness for destructive decisions: which keys are proven, and the barriers (one
//! consistent read of the current revision, shared by every key of a shard waiting at that moment)
//! that prove them.

use crate::key::ObjectKey;
use ahash::AHashMap;
use std::time::Instant;

/// Names one barrier read, so a late answer to an older one is recognised.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarrierId(pub u64);

/// The keys of one controller whose destructive decisions are proven, each with the moment its
/// barrier was sent (the cache is proven current as of then, not later). In memory only: after
/// a restart or a lost leadership every key starts unproven, and proof is never granted in bulk.
#[derive(Clone, Debug, Default)]
pub struct Proofs {
    proven: AHashMap<ObjectKey, Instant>,
    /// The seeded bug `proof-never-expires`: nothing is ever forgotten.
    sticky: bool,
}

impl Proofs {
    /// Whether `key` has had its barrier since this process (or leadership) began.
    pub fn is_proven(&self, key: &ObjectKey) -> bool {
        self.proven.contains_key(key)
    }

    /// The moment `key`'s cache is proven current as of: when its barrier was sent.
    pub fn proven_as_of(&self, key: &ObjectKey) -> Option<Instant> {
        self.proven.get(key).copied()
    }

    /// A barrier sent at `as_of` answered for `key`, and its watermarks will be checked
    /// against it.
    pub fn prove(&mut self, key: &ObjectKey, as_of: Instant) {
        self.proven.insert(key.clone(), as_of);
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
    in_flight: Option<InFlight>,
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

    /// Starts the next read at `now` if keys wait and none is in flight; returns its id and
    /// the first waiting controller (whose primary resource the read may list).
    pub fn start(&mut self, now: Instant) -> Option<(BarrierId, usize)> {
        if self.in_flight.is_some() || self.waiting.is_empty() {
            return None;
        }
        self.next += 1;
        let id = BarrierId(self.next);
        let first = self.waiting[0].0;
        self.in_flight = Some(InFlight {
            id,
            sent: now,
            keys: std::mem::take(&mut self.waiting),
        });
        Some((id, first))
    }

    /// The read `id` was answered: the keys it covers and when it was sent. An unknown or old
    /// id covers none.
    pub fn finish(&mut self, id: BarrierId) -> Option<(Vec<(usize, ObjectKey)>, Instant)> {
        match self.in_flight.take() {
            Some(read) if read.id == id => Some((read.keys, read.sent)),
            other => {
                self.in_flight = other;
                None
            }
        }
    }

    /// Keys of controller `controller` waiting for a read or covered by the one in flight.
    pub fn pending_for(&self, controller: usize) -> usize {
        let in_flight = self.in_flight.iter().flat_map(|read| read.keys.iter());
        self.waiting
            .iter()
            .chain(in_flight)
            .filter(|(c, _)| *c == controller)
            .count()
    }

    /// Keys waiting for a read or covered by the one in flight.
    pub fn pending(&self) -> usize {
        self.waiting.len() + self.in_flight.as_ref().map_or(0, |read| read.keys.len())
    }
}

/// The read in flight: which, since when, for whom.
#[derive(Clone, Debug)]
struct InFlight {
    id: BarrierId,
    sent: Instant,
    keys: Vec<(usize, ObjectKey)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    #[test]
    fn keys_waiting_together_share_one_read_and_learn_when_it_was_sent() {
        let mut barriers = Barriers::default();
        let sent = Instant::now();
        barriers.request(0, &k("a"));
        barriers.request(0, &k("b"));
        barriers.request(0, &k("a"));
        let (id, first) = barriers.start(sent).expect("a read starts");
        assert_eq!(first, 0);
        assert_eq!(barriers.start(sent), None, "one read in flight at a time");
        assert_eq!(
            barriers.finish(id),
            Some((vec![(0, k("a")), (0, k("b"))], sent))
        );
        assert_eq!(barriers.pending(), 0);
    }

    #[test]
    fn a_key_asking_during_a_read_waits_for_the_next_one() {
        let mut barriers = Barriers::default();
        barriers.request(0, &k("a"));
        let now = Instant::now();
        let (first, _) = barriers.start(now).expect("a read starts");
        barriers.request(1, &k("late"));
        assert_eq!(barriers.finish(first), Some((vec![(0, k("a"))], now)));
        let (second, controller) = barriers.start(now).expect("the late key gets its own read");
        assert_ne!(first, second);
        assert_eq!(controller, 1);
        assert_eq!(barriers.finish(second), Some((vec![(1, k("late"))], now)));
    }

    #[test]
    fn an_answer_to_an_unknown_read_covers_nothing() {
        let mut barriers = Barriers::default();
        barriers.request(0, &k("a"));
        let (id, _) = barriers.start(Instant::now()).expect("a read starts");
        assert_eq!(barriers.finish(BarrierId(id.0 + 7)), None);
        assert!(
            barriers.finish(id).is_some(),
            "the real answer still counts"
        );
    }

    #[test]
    fn revoking_leaves_every_key_unproven() {
        let mut proofs = Proofs::default();
        let now = Instant::now();
        proofs.prove(&k("a"), now);
        proofs.prove(&k("b"), now);
        proofs.forget(&k("a"));
        assert!(!proofs.is_proven(&k("a")));
        assert!(proofs.is_proven(&k("b")));
        proofs.revoke_all();
        assert!(proofs.is_empty());
    }
}
