//! Range ownership through Leases, sans-IO: one [`Elector`] per range and one per membership
//! slot (a replica holds one slot, so it counts before it holds a range). Every Lease has a name
//! known in advance, so RBAC can grant exactly these. Each round takes every Lease of the namespace as just listed and returns
//! the writes to make; the caller reports each outcome back. A range given back to another
//! replica is drained first: its fence closes at once, and its Lease is released only after the
//! write deadline, when every write sent before has committed or failed.

use crate::leader_election::{Elector, ElectorConfig, LeaseRecord, LeaseStep};
use crate::ranges::{MEMBER_SLOTS, RANGES, RangeHolder, RangeId, member_lease_name, plan};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Why a Lease is written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WritePurpose {
    /// A membership slot's Lease, taken or renewed: this replica counts even while it holds no
    /// range.
    Member(u16),
    /// A range this replica holds, renewed.
    Renew(RangeId),
    /// A free range taken.
    Acquire(RangeId),
    /// A drained range given back (holder cleared).
    Release(RangeId),
}

/// One Lease write a round asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseWrite {
    /// The Lease's name.
    pub name: String,
    /// What to write (its `resource_version` is the one read: the write is a compare-and-swap).
    pub record: LeaseRecord,
    /// No such Lease exists yet: create it.
    pub create: bool,
    /// Why.
    pub purpose: WritePurpose,
}

/// Ranges whose fence opened or closed since the last [`RangeElection::poll_changes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeChanges {
    /// Writes for these may go out now.
    pub gained: Vec<RangeId>,
    /// Writes for these may no longer go out.
    pub lost: Vec<RangeId>,
}

impl RangeChanges {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.gained.is_empty() && self.lost.is_empty()
    }
}

/// One replica's view of the ranges.
#[derive(Clone, Debug)]
pub struct RangeElection {
    config: ElectorConfig,
    prefix: String,
    ranges: Vec<Elector>,
    /// Per range: when its fence was closed to give it back.
    draining: Vec<Option<Instant>>,
    /// One per membership slot: this replica holds one, and the live holders of the others are
    /// the other replicas.
    members: Vec<Elector>,
    /// Per range: whether its fence was open at the last poll.
    reported: Vec<bool>,
}

impl RangeElection {
    /// The election of replica `config.identity` over the Leases named after `prefix`.
    pub fn new(config: ElectorConfig, prefix: impl Into<String>) -> Self {
        let ranges = (0..RANGES).map(|_| Elector::new(config.clone())).collect();
        Self {
            members: (0..MEMBER_SLOTS)
                .map(|_| Elector::new(config.clone()))
                .collect(),
            config,
            prefix: prefix.into(),
            ranges,
            draining: vec![None; usize::from(RANGES)],
            reported: vec![false; usize::from(RANGES)],
        }
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// The membership slots this replica holds (one, unless two rounds raced).
    pub fn member_slots(&self, now: Instant) -> Vec<u16> {
        (0..MEMBER_SLOTS)
            .filter(|slot| self.members[usize::from(*slot)].is_leader(now))
            .collect()
    }

    /// Decides this round's writes from every Lease of the namespace, as just read live (by
    /// name). `wall_now` goes into the records' times; expiry is judged on `now` only.
    pub fn observe(
        &mut self,
        leases: &BTreeMap<String, LeaseRecord>,
        now: Instant,
        wall_now: &str,
    ) -> Vec<LeaseWrite> {
        let mut writes = Vec::new();
        let me = self.config.identity.clone();
        let members = self.membership(leases, now, wall_now, &mut writes);
        let mut holders = Vec::with_capacity(self.ranges.len());
        let mut steps = Vec::with_capacity(self.ranges.len());
        for (i, elector) in self.ranges.iter_mut().enumerate() {
            let name = RangeId(i as u16).lease_name(&self.prefix);
            let step = elector.observe(leases.get(&name).cloned(), now, wall_now);
            holders.push(match &step {
                LeaseStep::Wait { holder, .. } => RangeHolder::Live(holder.clone()),
                LeaseStep::Update {
                    takeover: false, ..
                } => RangeHolder::Live(me.clone()),
                _ => RangeHolder::Free,
            });
            steps.push((name, step));
        }
        let plan = plan(&me, &holders, &members);
        for range in &plan.release {
            let draining = &mut self.draining[usize::from(range.0)];
            if draining.is_none() {
                *draining = Some(now);
            }
        }
        let drained_after = self.config.write_deadline();
        for (i, (name, step)) in steps.into_iter().enumerate() {
            let id = RangeId(i as u16);
            if holders[i] != RangeHolder::Live(me.clone()) {
                self.draining[i] = None;
            }
            let write = |record, create, purpose| LeaseWrite {
                name: name.clone(),
                record,
                create,
                purpose,
            };
            match step {
                LeaseStep::Update {
                    record,
                    takeover: false,
                } => match self.draining[i] {
                    Some(since) if now.saturating_duration_since(since) >= drained_after => {
                        if let Some(released) = self.ranges[i].release(wall_now) {
                            writes.push(write(released, false, WritePurpose::Release(id)));
                        }
                    }
                    _ => writes.push(write(record, false, WritePurpose::Renew(id))),
                },
                LeaseStep::Update {
                    record,
                    takeover: true,
                } if plan.acquire.contains(&id) => {
                    writes.push(write(record, false, WritePurpose::Acquire(id)));
                }
                LeaseStep::Create(record) if plan.acquire.contains(&id) => {
                    writes.push(write(record, true, WritePurpose::Acquire(id)));
                }
                _ => {}
            }
        }
        writes
    }

    /// Renews this replica's membership slot, or takes the first free one; returns the live
    /// holders of the others.
    fn membership(
        &mut self,
        leases: &BTreeMap<String, LeaseRecord>,
        now: Instant,
        wall_now: &str,
        writes: &mut Vec<LeaseWrite>,
    ) -> BTreeSet<String> {
        let mut others = BTreeSet::new();
        let mut ours = None;
        let mut free = None;
        for (slot, elector) in self.members.iter_mut().enumerate() {
            let slot = slot as u16;
            let name = member_lease_name(&self.prefix, slot);
            match elector.observe(leases.get(&name).cloned(), now, wall_now) {
                LeaseStep::Wait { holder, .. } => {
                    others.insert(holder);
                }
                LeaseStep::Update {
                    record,
                    takeover: false,
                } if ours.is_none() => ours = Some((name, record, false, slot)),
                LeaseStep::Update {
                    takeover: false, ..
                } => {
                    // A second slot of ours (two rounds raced): give it back.
                    if let Some(released) = elector.release(wall_now) {
                        writes.push(LeaseWrite {
                            name,
                            record: released,
                            create: false,
                            purpose: WritePurpose::Member(slot),
                        });
                    }
                }
                LeaseStep::Update {
                    record,
                    takeover: true,
                } if free.is_none() => free = Some((name, record, false, slot)),
                LeaseStep::Create(record) if free.is_none() => {
                    free = Some((name, record, true, slot));
                }
                _ => {}
            }
        }
        if let Some((name, record, create, slot)) = ours.or(free) {
            writes.push(LeaseWrite {
                name,
                record,
                create,
                purpose: WritePurpose::Member(slot),
            });
        }
        others
    }

    /// `write` was stored by a request sent at `sent_at`, and came back with
    /// `resource_version`: a held range's fence now lasts the renew deadline after `sent_at`.
    pub fn written(&mut self, write: &LeaseWrite, resource_version: String, sent_at: Instant) {
        let record = write.record.clone();
        match write.purpose {
            WritePurpose::Member(slot) => {
                self.members[usize::from(slot)].written(record, resource_version, sent_at);
            }
            WritePurpose::Renew(id) | WritePurpose::Acquire(id) => {
                self.ranges[usize::from(id.0)].written(record, resource_version, sent_at);
            }
            WritePurpose::Release(id) => self.draining[usize::from(id.0)] = None,
        }
    }

    /// `write` lost a race (`409`); the next round reads again.
    pub fn conflicted(&mut self, write: &LeaseWrite) {
        match write.purpose {
            WritePurpose::Member(slot) => self.members[usize::from(slot)].conflicted(),
            WritePurpose::Renew(id) | WritePurpose::Acquire(id) | WritePurpose::Release(id) => {
                self.ranges[usize::from(id.0)].conflicted();
            }
        }
    }

    /// Until when writes for `range` may go out (`None`: not at all).
    pub fn fence_until(&self, range: RangeId) -> Option<Instant> {
        let i = usize::from(range.0);
        if self.draining[i].is_some() {
            return None;
        }
        self.ranges[i].fence_until()
    }

    /// Whether `range` is being given back (its fence closed, its Lease not released yet).
    pub fn is_draining(&self, range: RangeId) -> bool {
        self.draining[usize::from(range.0)].is_some()
    }

    /// The ranges whose writes may go out at `now`.
    pub fn held(&self, now: Instant) -> Vec<RangeId> {
        (0..RANGES)
            .map(RangeId)
            .filter(|r| self.fence_until(*r).is_some_and(|until| now < until))
            .collect()
    }

    /// The earliest moment after `now` at which a fence closes or a drained range may be
    /// released: the I/O shell wakes then rather than at its next round.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let fences = (0..RANGES).filter_map(|r| self.fence_until(RangeId(r)));
        let drains = self
            .draining
            .iter()
            .flatten()
            .map(|since| *since + self.config.write_deadline());
        fences.chain(drains).filter(|t| *t > now).min()
    }

    /// The ranges whose fence opened or closed since the last call.
    pub fn poll_changes(&mut self, now: Instant) -> RangeChanges {
        let mut changes = RangeChanges::default();
        for i in 0..self.ranges.len() {
            let id = RangeId(i as u16);
            let open = self.fence_until(id).is_some_and(|until| now < until);
            if open != self.reported[i] {
                self.reported[i] = open;
                if open {
                    changes.gained.push(id);
                } else {
                    changes.lost.push(id);
                }
            }
        }
        changes
    }

    /// The writes that give every held range and the membership back at shutdown; every fence
    /// closes now, so no write of ours can follow.
    pub fn release_all(&mut self, wall_now: &str) -> Vec<LeaseWrite> {
        let mut writes = Vec::new();
        for (i, elector) in self.ranges.iter_mut().enumerate() {
            if let Some(record) = elector.release(wall_now) {
                let id = RangeId(i as u16);
                writes.push(LeaseWrite {
                    name: id.lease_name(&self.prefix),
                    record,
                    create: false,
                    purpose: WritePurpose::Release(id),
                });
            }
        }
        for (slot, elector) in self.members.iter_mut().enumerate() {
            if let Some(record) = elector.release(wall_now) {
                writes.push(LeaseWrite {
                    name: member_lease_name(&self.prefix, slot as u16),
                    record,
                    create: false,
                    purpose: WritePurpose::Member(slot as u16),
                });
            }
        }
        writes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The Leases of one namespace as an API server keeps them: a write must carry the version
    /// it read, or it conflicts.
    #[derive(Default)]
    struct Leases {
        stored: BTreeMap<String, LeaseRecord>,
        revision: u64,
    }

    impl Leases {
        /// Applies `write`; the new version, or `None` for a conflict.
        fn apply(&mut self, write: &LeaseWrite) -> Option<String> {
            let current = self.stored.get(&write.name);
            let fits = match current {
                None => write.create,
                Some(c) => !write.create && c.resource_version == write.record.resource_version,
            };
            if !fits {
                return None;
            }
            self.revision += 1;
            let version = self.revision.to_string();
            let mut record = write.record.clone();
            record.resource_version = version.clone();
            self.stored.insert(write.name.clone(), record);
            Some(version)
        }
    }

    fn config(identity: &str) -> ElectorConfig {
        ElectorConfig {
            lease_duration: Duration::from_secs(4),
            renew_deadline: Duration::from_secs(3),
            retry_period: Duration::from_secs(1),
            ..ElectorConfig::new(identity)
        }
    }

    /// One round of `election` at `now` against `leases`.
    fn round(election: &mut RangeElection, leases: &mut Leases, now: Instant) {
        let writes = election.observe(&leases.stored, now, "2026-12-07T00:00:00.000000Z");
        for write in writes {
            match leases.apply(&write) {
                Some(version) => election.written(&write, version, now),
                None => election.conflicted(&write),
            }
        }
    }

    /// No range is open in two replicas at any of `instants`.
    fn assert_single_writer(replicas: &[&RangeElection], now: Instant) {
        for r in 0..RANGES {
            let open: Vec<&str> = replicas
                .iter()
                .filter(|e| e.fence_until(RangeId(r)).is_some_and(|t| now < t))
                .map(|e| e.identity())
                .collect();
            assert!(open.len() <= 1, "range {r} open in {open:?}");
        }
    }

    #[test]
    fn a_lone_replica_takes_every_range_and_may_write_for_each() {
        let t0 = Instant::now();
        let mut leases = Leases::default();
        let mut a = RangeElection::new(config("a"), "tidemark");
        round(&mut a, &mut leases, t0);
        assert_eq!(a.held(t0).len(), usize::from(RANGES));
        let changes = a.poll_changes(t0);
        assert_eq!(changes.gained.len(), usize::from(RANGES));
        assert_eq!(a.member_slots(t0), [0]);
        assert_eq!(
            leases.stored["tidemark-member-00"].holder.as_deref(),
            Some("a")
        );
        assert!(leases.stored.contains_key("tidemark-range-63"));
    }

    #[test]
    fn a_joining_replica_gets_half_and_never_shares_a_range_with_the_first() {
        let t0 = Instant::now();
        let mut leases = Leases::default();
        let mut a = RangeElection::new(config("a"), "tidemark");
        let mut b = RangeElection::new(config("b"), "tidemark");
        round(&mut a, &mut leases, t0);
        for step in 1..=20u64 {
            let now = t0 + Duration::from_millis(500 * step);
            round(&mut b, &mut leases, now);
            assert_single_writer(&[&a, &b], now);
            round(&mut a, &mut leases, now);
            assert_single_writer(&[&a, &b], now);
        }
        let end = t0 + Duration::from_secs(10);
        assert_eq!(a.held(end).len(), 32);
        assert_eq!(b.held(end).len(), 32);
        assert_eq!(a.member_slots(end), [0]);
        assert_eq!(b.member_slots(end), [1], "the first free slot");
    }

    #[test]
    fn a_range_given_back_closes_its_fence_at_once_and_frees_its_lease_after_the_write_deadline() {
        let t0 = Instant::now();
        let mut leases = Leases::default();
        let mut a = RangeElection::new(config("a"), "tidemark");
        let mut b = RangeElection::new(config("b"), "tidemark");
        round(&mut a, &mut leases, t0);
        a.poll_changes(t0);
        round(&mut b, &mut leases, t0);
        let t1 = t0 + Duration::from_millis(100);
        round(&mut a, &mut leases, t1);
        let changes = a.poll_changes(t1);
        assert_eq!(
            changes.lost.len(),
            32,
            "the fences of the ranges given back close"
        );
        assert_eq!(
            leases.stored["tidemark-range-63"].holder.as_deref(),
            Some("a"),
            "the Lease still names a until its writes have committed or failed"
        );
        let drained = t1 + a.config.write_deadline();
        round(&mut a, &mut leases, drained);
        assert_eq!(leases.stored["tidemark-range-63"].holder, None);
        assert_eq!(
            leases.stored["tidemark-range-00"].holder.as_deref(),
            Some("a")
        );
    }

    #[test]
    fn the_ranges_of_a_replica_that_stops_renewing_move_only_after_its_fence_has_closed() {
        let t0 = Instant::now();
        let mut leases = Leases::default();
        let mut a = RangeElection::new(config("a"), "tidemark");
        let mut b = RangeElection::new(config("b"), "tidemark");
        for step in 0..10u64 {
            let now = t0 + Duration::from_millis(500 * step);
            round(&mut a, &mut leases, now);
            round(&mut b, &mut leases, now);
        }
        let paused_at = t0 + Duration::from_millis(4500);
        assert_eq!(a.held(paused_at).len(), 32);
        // a is paused: only b runs rounds.
        for step in 1..=20u64 {
            let now = paused_at + Duration::from_millis(500 * step);
            round(&mut b, &mut leases, now);
            assert_single_writer(&[&a, &b], now);
        }
        let later = paused_at + Duration::from_secs(10);
        assert!(a.held(later).is_empty(), "a's fences closed on their own");
        assert_eq!(b.held(later).len(), usize::from(RANGES));
        // a resumes: it sees every range held by b and asks for none.
        round(&mut a, &mut leases, later);
        assert!(a.held(later).is_empty());
        assert_single_writer(&[&a, &b], later);
    }

    #[test]
    fn a_replica_leaving_gives_back_every_range_and_its_membership() {
        let t0 = Instant::now();
        let mut leases = Leases::default();
        let mut a = RangeElection::new(config("a"), "tidemark");
        round(&mut a, &mut leases, t0);
        let writes = a.release_all("2026-12-07T00:00:01.000000Z");
        assert_eq!(
            writes.len(),
            usize::from(RANGES) + 1,
            "every range and the slot"
        );
        assert!(a.held(t0).is_empty(), "no write may follow the release");
        for w in &writes {
            assert!(leases.apply(w).is_some(), "{}", w.name);
        }
        assert!(leases.stored.values().all(|r| r.holder.is_none()));
    }
}
