//! Supervision of a shard inside its actor. A panic in the engine (a reconcile that panics) is
//! caught at the actor's edge and the shard is replaced by a fresh one (`Shard::new`: an empty
//! cache and no proofs, so every key of it is unproven). The fresh shard takes no cache data
//! until the informers relist into it, and that relist is asked for only once a restart backoff
//! has passed and the old shard's writes in flight are answered (or [`ORPHAN_WAIT`] has passed),
//! so the list shows what they did. Answers to the old shard's writes and barriers carry its
//! generation in their ids' top bits and are dropped. Sans-IO: time is passed in.

use crate::informer::backoff::ReflectorBackoff;
use std::time::{Duration, Instant};
use tidemark_engine::Resource;

/// Bits of a write or barrier id left to the shard; the generation takes the rest.
const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// How long a restarted shard waits for the old shard's writes in flight before it relists
/// anyway (the client's write deadline is 30 s).
pub const ORPHAN_WAIT: Duration = Duration::from_secs(45);

/// Why and since when a shard is down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// When it panicked.
    pub since: Instant,
    /// The panic's message.
    pub reason: String,
    /// The informers were asked to relist into it.
    pub relist_asked: bool,
}

#[derive(Debug)]
struct Recovery {
    since: Instant,
    reason: String,
    /// Not before this (the restart backoff).
    due: Instant,
    /// The resync request the relist must answer, once asked.
    asked: Option<u64>,
    /// Per resource (by index): a list answering the request has arrived.
    listed: Vec<bool>,
}

/// The supervision state of one shard actor.
#[derive(Debug)]
pub struct Supervision {
    generation: u64,
    restarts: u64,
    backoff: ReflectorBackoff,
    in_flight: u64,
    orphans: u64,
    recovery: Option<Recovery>,
    reads: Vec<Resource>,
}

impl Supervision {
    /// Supervision of a shard whose controllers read `reads`. Restarts back off from 1 s,
    /// doubling up to 60 s, starting over after 5 quiet minutes.
    pub fn new(reads: Vec<Resource>) -> Self {
        Self {
            generation: 0,
            restarts: 0,
            backoff: ReflectorBackoff::new(
                Duration::from_secs(1),
                Duration::from_secs(60),
                Duration::from_secs(300),
            ),
            in_flight: 0,
            orphans: 0,
            recovery: None,
            reads,
        }
    }

    /// Uses `backoff` between restarts.
    pub fn with_backoff(mut self, backoff: ReflectorBackoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Restarts so far.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Why the shard is down, if it is.
    pub fn down(&self) -> Option<Down> {
        self.recovery.as_ref().map(|r| Down {
            since: r.since,
            reason: r.reason.clone(),
            relist_asked: r.asked.is_some(),
        })
    }

    fn tag(&self, id: u64) -> u64 {
        (self.generation << ID_BITS) | (id & ID_MASK)
    }

    fn untag(&self, tagged: u64) -> Option<u64> {
        (tagged >> ID_BITS == self.generation).then_some(tagged & ID_MASK)
    }

    /// The id a write of the shard goes out with; counted until answered.
    pub fn write_sent(&mut self, id: u64) -> u64 {
        self.in_flight += 1;
        self.tag(id)
    }

    /// The id a write of the shard went out with (to withdraw it).
    pub fn write_tagged(&self, id: u64) -> u64 {
        self.tag(id)
    }

    /// The id a barrier read of the shard goes out with.
    pub fn barrier_sent(&self, id: u64) -> u64 {
        self.tag(id)
    }

    /// An answer to the write sent as `tagged`: the shard's own id, or `None` when it was a
    /// write of a shard that has since been replaced.
    pub fn write_answered(&mut self, tagged: u64) -> Option<u64> {
        match self.untag(tagged) {
            Some(id) => {
                self.in_flight = self.in_flight.saturating_sub(1);
                Some(id)
            }
            None => {
                self.orphans = self.orphans.saturating_sub(1);
                None
            }
        }
    }

    /// An answer to the barrier read sent as `tagged`: the shard's own id, or `None`.
    pub fn barrier_answered(&self, tagged: u64) -> Option<u64> {
        self.untag(tagged)
    }

    /// The shard panicked with `reason` at `now` and is being replaced: returns the restart
    /// backoff, after which [`may_ask_relist`](Self::may_ask_relist) should be asked.
    pub fn panicked(&mut self, reason: String, now: Instant) -> Duration {
        self.generation += 1;
        self.restarts += 1;
        self.orphans += std::mem::take(&mut self.in_flight);
        let delay = self.backoff.next_jittered(now);
        self.recovery = Some(Recovery {
            since: now,
            reason,
            due: now + delay,
            asked: None,
            listed: vec![false; Resource::count()],
        });
        delay
    }

    /// Whether the relist may be asked for now: the backoff has passed and the old shard's
    /// writes are answered, or waited for long enough.
    pub fn may_ask_relist(&self, now: Instant) -> bool {
        self.recovery.as_ref().is_some_and(|r| {
            r.asked.is_none() && now >= r.due && (self.orphans == 0 || now >= r.since + ORPHAN_WAIT)
        })
    }

    /// When to check again, while the relist waits for the old shard's writes.
    pub fn next_check(&self, now: Instant) -> Option<Instant> {
        let r = self.recovery.as_ref().filter(|r| r.asked.is_none())?;
        Some(r.due.max(now).min(r.since + ORPHAN_WAIT).max(now))
    }

    /// The relist was asked for as resync request `epoch`.
    pub fn relist_asked(&mut self, epoch: u64) {
        if let Some(r) = &mut self.recovery {
            r.asked = Some(epoch);
        }
    }

    /// Whether a list of `resource` answering resync request `epoch` may replace the shard's
    /// slice. While the shard recovers, only lists that began after the relist was asked for
    /// are taken; once every resource it reads has one, it is up again.
    pub fn accept_list(&mut self, resource: Resource, epoch: u64) -> bool {
        let Some(r) = &mut self.recovery else {
            return true;
        };
        if r.asked.is_none_or(|asked| epoch < asked) {
            return false;
        }
        r.listed[resource.index()] = true;
        if self.reads.iter().all(|read| r.listed[read.index()]) {
            self.recovery = None;
        }
        true
    }

    /// Whether watch events of `resource` may be applied: not while the shard recovers and has
    /// no list of it yet.
    pub fn accept_events(&self, resource: Resource) -> bool {
        self.recovery
            .as_ref()
            .is_none_or(|r| r.listed[resource.index()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supervision() -> Supervision {
        Supervision::new(vec![Resource::ReplicaSets, Resource::Pods])
    }

    #[test]
    fn answers_to_a_replaced_shards_writes_are_dropped_and_hold_its_relist() {
        let mut s = supervision();
        let now = Instant::now();
        let old = s.write_sent(7);
        assert_eq!(s.write_answered(s.tag(7)), Some(7), "the shard's own write");
        let eight = s.write_sent(8);
        let delay = s.panicked("boom".into(), now);
        assert!(delay >= Duration::from_secs(1));
        let later = now + Duration::from_secs(3);
        assert!(
            !s.may_ask_relist(later),
            "a write of the old shard is in flight"
        );
        let new = s.write_sent(7);
        assert_ne!(
            old, new,
            "the same id of another generation is another write"
        );
        assert_eq!(s.write_answered(eight), None);
        assert!(s.may_ask_relist(later));
        assert!(
            !s.may_ask_relist(now),
            "not before the restart backoff has passed"
        );
    }

    #[test]
    fn an_unanswered_old_write_holds_the_relist_only_so_long() {
        let mut s = supervision();
        let now = Instant::now();
        let _ = s.write_sent(1);
        s.panicked("boom".into(), now);
        assert!(!s.may_ask_relist(now + Duration::from_secs(10)));
        assert!(s.may_ask_relist(now + ORPHAN_WAIT));
    }

    #[test]
    fn the_shard_is_down_until_every_resource_it_reads_is_listed_again() {
        let mut s = supervision();
        let now = Instant::now();
        s.panicked("index out of bounds".into(), now);
        assert_eq!(s.restarts(), 1);
        assert!(
            !s.accept_list(Resource::Pods, 0),
            "not before the relist is asked"
        );
        assert!(!s.accept_events(Resource::Pods));
        s.relist_asked(3);
        assert!(
            !s.accept_list(Resource::Pods, 2),
            "a list that began before"
        );
        assert!(s.accept_list(Resource::Pods, 3));
        assert!(s.accept_events(Resource::Pods));
        assert!(!s.accept_events(Resource::ReplicaSets));
        assert!(s.down().is_some_and(|d| d.relist_asked));
        assert!(s.accept_list(Resource::ReplicaSets, 4));
        assert_eq!(s.down(), None, "up again");
        assert!(s.accept_list(Resource::ReplicaSets, 0), "any list once up");
    }

    #[test]
    fn barriers_of_a_replaced_shard_are_dropped() {
        let mut s = supervision();
        let sent = s.barrier_sent(5);
        assert_eq!(s.barrier_answered(sent), Some(5));
        s.panicked("boom".into(), Instant::now());
        assert_eq!(s.barrier_answered(sent), None);
    }
}
