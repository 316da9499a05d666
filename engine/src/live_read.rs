//! Live reads: a destructive decision made on a cache known to lag is carried out only if one
//! consistent read of each object it rests on finds the version the cache holds. The read is
//! taken after the decision, so a match proves the decision's inputs are current to within the
//! read's round trip.

use crate::key::ObjectKey;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use ahash::AHashMap;
use std::time::Instant;

/// Names one live read, so a late answer is recognised.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LiveReadId(pub u64);

/// One object a decision rests on, and the version the cache held when it decided (`None`: not
/// cached, the decision took it as absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Its resource.
    pub resource: Resource,
    /// Its key.
    pub key: ObjectKey,
    /// What the cache held.
    pub cached: Option<ResourceVersion>,
}

/// What a live read says about a decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every object is at the cached version: carry the decision out.
    Current,
    /// The server has newer versions: the cache must reach them before the key decides again.
    Behind(Vec<(Resource, ResourceVersion)>),
    /// An object exists on one side only with no version to wait for (deleted on the server, or
    /// not yet cached): only a barrier can say when the cache has caught up.
    Differs,
}

/// Compares what the cache held with what the server answered, in the same order.
pub fn judge(expected: &[Expected], live: &[Option<ResourceVersion>]) -> Verdict {
    if expected.len() != live.len() {
        return Verdict::Differs;
    }
    let mut behind = Vec::new();
    for (e, l) in expected.iter().zip(live) {
        match (e.cached, *l) {
            (Some(c), Some(l)) if c == l => {}
            (None, None) => {}
            (_, Some(l)) => behind.push((e.resource, l)),
            (Some(_), None) => return Verdict::Differs,
        }
    }
    if behind.is_empty() {
        Verdict::Current
    } else {
        Verdict::Behind(behind)
    }
}

/// A live read in flight: whose decision waits and what it expects.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The controller's index in its shard.
    pub controller: usize,
    /// The key whose decision waits.
    pub key: ObjectKey,
    /// What the cache held.
    pub expected: Vec<Expected>,
    /// When the read was sent: what it finds is true as of then, not as of its answer.
    pub sent: Instant,
}

/// The live reads of one shard.
#[derive(Clone, Debug, Default)]
pub struct LiveReads {
    next: u64,
    in_flight: AHashMap<LiveReadId, Pending>,
}

impl LiveReads {
    /// Starts a read for `key` of controller `controller`, sent at `now`.
    pub fn start(
        &mut self,
        controller: usize,
        key: ObjectKey,
        expected: Vec<Expected>,
        now: Instant,
    ) -> LiveReadId {
        self.next += 1;
        let id = LiveReadId(self.next);
        self.in_flight.insert(
            id,
            Pending {
                controller,
                key,
                expected,
                sent: now,
            },
        );
        id
    }

    /// The read `id` was answered; `None` for an unknown or already answered id.
    pub fn finish(&mut self, id: LiveReadId) -> Option<Pending> {
        self.in_flight.remove(&id)
    }

    /// Reads in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether none is in flight.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rv(n: u64) -> Option<ResourceVersion> {
        ResourceVersion::new(n)
    }

    fn owner(cached: Option<ResourceVersion>) -> Expected {
        Expected {
            resource: Resource::ReplicaSets,
            key: ObjectKey::new("ns", "web"),
            cached,
        }
    }

    #[test]
    fn a_decision_on_current_versions_goes_ahead() {
        assert_eq!(judge(&[owner(rv(7))], &[rv(7)]), Verdict::Current);
    }

    #[test]
    fn a_newer_version_on_the_server_becomes_the_target_to_wait_for() {
        assert_eq!(
            judge(&[owner(rv(7))], &[rv(9)]),
            Verdict::Behind(vec![(
                Resource::ReplicaSets,
                ResourceVersion::new(9).expect("rv")
            )])
        );
    }

    #[test]
    fn an_object_deleted_on_the_server_needs_a_barrier() {
        assert_eq!(judge(&[owner(rv(7))], &[None]), Verdict::Differs);
    }

    #[test]
    fn an_answer_of_the_wrong_length_proves_nothing() {
        assert_eq!(judge(&[owner(rv(7))], &[]), Verdict::Differs);
    }

    #[test]
    fn an_answered_read_is_forgotten() {
        let mut reads = LiveReads::default();
        let id = reads.start(
            0,
            ObjectKey::new("ns", "web"),
            vec![owner(rv(1))],
            Instant::now(),
        );
        assert!(reads.finish(id).is_some());
        assert!(reads.finish(id).is_none());
    }
}
