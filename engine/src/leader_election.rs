//! Leader election over a Lease, sans-IO: given the record just read live and a monotonic now,
//! what to write; and until when this process may act as leader (its fence).
//!
//! As client-go's `leaderelection`: a record held by someone else is expired only when it has not
//! changed for its `leaseDurationSeconds`, measured from when *this* process observed the change
//! (never by comparing `renewTime` with the local wall clock); takeover and renewal are updates
//! carrying the observed resourceVersion, so a stale view loses with `409 Conflict`. A leader's
//! fence ends `renew_deadline` after it *sent* its last successful renewal; since the renew
//! deadline is shorter than the lease duration, the fence has ended before anyone can take over.

use std::time::{Duration, Instant};

/// Election timings and who we are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectorConfig {
    /// This process's identity (`holderIdentity`).
    pub identity: String,
    /// How long a non-leader waits on an unchanged record before taking over
    /// (kube-controller-manager: 15 s).
    pub lease_duration: Duration,
    /// How long a leader may act after sending its last successful renewal (10 s).
    pub renew_deadline: Duration,
    /// How often to read and renew (2 s).
    pub retry_period: Duration,
}

impl ElectorConfig {
    /// The kube-controller-manager defaults for `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// How long one write of the leader may take, sent to the API server as the request's
    /// `timeout` and enforced on the client: half the gap between the lease duration and the
    /// renew deadline. A write sent before the fence closed (at the renew deadline) has then
    /// committed or failed before a successor can take the expired Lease.
    pub fn write_deadline(&self) -> Duration {
        self.lease_duration.saturating_sub(self.renew_deadline) / 2
    }

    /// Why these timings cannot keep two leaders apart, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.identity.is_empty() {
            return Err("the identity must not be empty".into());
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            ));
        }
        if self.retry_period >= self.renew_deadline {
            return Err(format!(
                "the retry period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            ));
        }
        Ok(())
    }
}

/// The Lease fields the election reads and writes (`coordination.k8s.io/v1` `LeaseSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `holderIdentity`; `None` when empty (released).
    pub holder: Option<String>,
    /// `leaseDurationSeconds`.
    pub lease_duration_seconds: i32,
    /// `acquireTime` (RFC 3339 with microseconds), informational.
    pub acquire_time: Option<String>,
    /// `renewTime`, informational: expiry is never judged from it.
    pub renew_time: Option<String>,
    /// `leaseTransitions`.
    pub transitions: i32,
    /// `metadata.resourceVersion` as read (empty for a record not written yet).
    pub resource_version: String,
}

/// What to write after reading the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseStep {
    /// There is no Lease: create this one.
    Create(LeaseRecord),
    /// Update the Lease with this record (carrying the observed resourceVersion).
    Update {
        /// The record to write.
        record: LeaseRecord,
        /// It takes the lease from another holder (or a released one).
        takeover: bool,
    },
    /// Another holder's lease is live: read again after the retry period.
    Wait {
        /// The holder.
        holder: String,
        /// How long until it counts as expired if it does not change.
        expires_in: Duration,
    },
}

/// A change of this process's leadership.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LeaderChange {
    /// It became leader.
    Started,
    /// It is no longer leader: its fence ended, another holder was seen, or it released.
    Stopped,
}

/// One process's view of the election.
#[derive(Clone, Debug)]
pub struct Elector {
    config: ElectorConfig,
    observed: Option<(LeaseRecord, Instant)>,
    fence_until: Option<Instant>,
    reported_leader: bool,
}

impl Elector {
    /// An elector that is not leader yet.
    pub fn new(config: ElectorConfig) -> Self {
        Self {
            config,
            observed: None,
            fence_until: None,
            reported_leader: false,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ElectorConfig {
        &self.config
    }

    /// Decides what to write given the Lease as just read live (`None`: it does not exist).
    /// `wall_now` is the timestamp to put in `acquireTime` and `renewTime`.
    pub fn observe(
        &mut self,
        record: Option<LeaseRecord>,
        now: Instant,
        wall_now: &str,
    ) -> LeaseStep {
        let Some(record) = record else {
            self.observed = None;
            return LeaseStep::Create(LeaseRecord {
                holder: Some(self.config.identity.clone()),
                lease_duration_seconds: self.duration_seconds(),
                acquire_time: Some(wall_now.to_string()),
                renew_time: Some(wall_now.to_string()),
                transitions: 0,
                resource_version: String::new(),
            });
        };
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(seen, _)| *seen != record);
        if changed {
            self.observed = Some((record.clone(), now));
        }
        let observed_at = self.observed.as_ref().map_or(now, |(_, at)| *at);
        let ours = record.holder.as_deref() == Some(self.config.identity.as_str());
        if let Some(holder) = record.holder.as_deref().filter(|_| !ours) {
            self.fence_until = None;
            let duration =
                Duration::from_secs(u64::try_from(record.lease_duration_seconds).unwrap_or(0));
            let expires_at = observed_at + duration;
            if expires_at > now {
                return LeaseStep::Wait {
                    holder: holder.to_string(),
                    expires_in: expires_at - now,
                };
            }
        }
        let mut next = LeaseRecord {
            holder: Some(self.config.identity.clone()),
            lease_duration_seconds: self.duration_seconds(),
            acquire_time: record.acquire_time.clone(),
            renew_time: Some(wall_now.to_string()),
            transitions: record.transitions,
            resource_version: record.resource_version.clone(),
        };
        if !ours {
            next.acquire_time = Some(wall_now.to_string());
            next.transitions = record.transitions.saturating_add(1);
        }
        LeaseStep::Update {
            record: next,
            takeover: !ours,
        }
    }

    /// `record` was written (created or updated) by a request sent at `sent_at`; it came back with
    /// `resource_version`. The fence now ends `renew_deadline` after `sent_at`.
    pub fn written(&mut self, mut record: LeaseRecord, resource_version: String, sent_at: Instant) {
        record.resource_version = resource_version;
        self.observed = Some((record, sent_at));
        let until = sent_at + self.config.renew_deadline;
        self.fence_until = Some(self.fence_until.map_or(until, |t| t.max(until)));
    }

    /// A write of ours was refused (`409`: someone else wrote first). The next read decides.
    pub fn conflicted(&mut self) {
        self.observed = None;
    }

    /// The record that releases the lease at shutdown, if we hold it; the fence ends now, so no
    /// write of ours can follow the release.
    pub fn release(&mut self, wall_now: &str) -> Option<LeaseRecord> {
        self.fence_until = None;
        let (record, _) = self.observed.as_ref()?;
        if record.holder.as_deref() != Some(self.config.identity.as_str()) {
            return None;
        }
        Some(LeaseRecord {
            holder: None,
            lease_duration_seconds: 1,
            acquire_time: Some(wall_now.to_string()),
            renew_time: Some(wall_now.to_string()),
            transitions: record.transitions,
            resource_version: record.resource_version.clone(),
        })
    }

    /// Until when this process may write as leader.
    pub fn fence_until(&self) -> Option<Instant> {
        self.fence_until
    }

    /// Whether this process may act as leader at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        self.fence_until.is_some_and(|until| now < until)
    }

    /// The leadership change since the last call, if any.
    pub fn poll_change(&mut self, now: Instant) -> Option<LeaderChange> {
        let leader = self.is_leader(now);
        if leader == self.reported_leader {
            return None;
        }
        self.reported_leader = leader;
        Some(if leader {
            LeaderChange::Started
        } else {
            LeaderChange::Stopped
        })
    }

    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WALL: &str = "2026-12-02T10:00:00.000000Z";

    fn held_by(holder: &str, rv: &str) -> LeaseRecord {
        LeaseRecord {
            holder: Some(holder.into()),
            lease_duration_seconds: 15,
            acquire_time: Some(WALL.into()),
            renew_time: Some(WALL.into()),
            transitions: 3,
            resource_version: rv.into(),
        }
    }

    fn elector(identity: &str) -> Elector {
        Elector::new(ElectorConfig::new(identity))
    }

    #[test]
    fn a_missing_lease_is_created_naming_us() {
        let mut e = elector("a");
        let LeaseStep::Create(record) = e.observe(None, Instant::now(), WALL) else {
            panic!("expected a create");
        };
        assert_eq!(record.holder.as_deref(), Some("a"));
        assert_eq!(record.lease_duration_seconds, 15);
        assert!(
            !e.is_leader(Instant::now()),
            "not leader before the write succeeds"
        );
    }

    #[test]
    fn a_live_lease_of_another_is_not_taken_until_it_stays_unchanged_for_its_duration() {
        let t0 = Instant::now();
        let mut e = elector("b");
        let record = held_by("a", "10");
        assert!(matches!(
            e.observe(Some(record.clone()), t0, WALL),
            LeaseStep::Wait { .. }
        ));
        let almost = t0 + Duration::from_millis(14_900);
        assert!(matches!(
            e.observe(Some(record.clone()), almost, WALL),
            LeaseStep::Wait { .. }
        ));
        let step = e.observe(Some(record), t0 + Duration::from_secs(15), WALL);
        let LeaseStep::Update { record, takeover } = step else {
            panic!("expected a takeover, got {step:?}");
        };
        assert!(takeover);
        assert_eq!(record.holder.as_deref(), Some("b"));
        assert_eq!(record.transitions, 4);
        assert_eq!(
            record.resource_version, "10",
            "the update carries the observed version"
        );
    }

    #[test]
    fn a_renewal_seen_late_restarts_the_expiry_clock_whatever_renew_time_says() {
        let t0 = Instant::now();
        let mut e = elector("b");
        e.observe(Some(held_by("a", "10")), t0, WALL);
        let renewed = LeaseRecord {
            renew_time: Some("1999-01-01T00:00:00.000000Z".into()),
            ..held_by("a", "11")
        };
        let t1 = t0 + Duration::from_secs(14);
        assert!(matches!(
            e.observe(Some(renewed.clone()), t1, WALL),
            LeaseStep::Wait { .. }
        ));
        let step = e.observe(Some(renewed), t1 + Duration::from_secs(10), WALL);
        assert!(
            matches!(step, LeaseStep::Wait { ref holder, .. } if holder == "a"),
            "24 s after the first read but only 10 s after the change: {step:?}"
        );
    }

    #[test]
    fn the_fence_ends_renew_deadline_after_the_renewal_was_sent() {
        let t0 = Instant::now();
        let mut e = elector("a");
        let LeaseStep::Create(record) = e.observe(None, t0, WALL) else {
            panic!("expected a create");
        };
        e.written(record, "5".into(), t0);
        assert_eq!(e.poll_change(t0), Some(LeaderChange::Started));
        assert!(e.is_leader(t0 + Duration::from_millis(9_999)));
        assert!(!e.is_leader(t0 + Duration::from_secs(10)));
        assert_eq!(
            e.poll_change(t0 + Duration::from_secs(10)),
            Some(LeaderChange::Stopped),
            "a leader that could not renew stops on its own clock"
        );
    }

    #[test]
    fn our_own_record_is_renewed_without_a_transition() {
        let t0 = Instant::now();
        let mut e = elector("a");
        e.written(held_by("a", "5"), "6".into(), t0);
        let step = e.observe(Some(held_by("a", "6")), t0 + Duration::from_secs(2), WALL);
        let LeaseStep::Update { record, takeover } = step else {
            panic!("expected a renewal, got {step:?}");
        };
        assert!(!takeover);
        assert_eq!(record.transitions, 3);
        assert_eq!(record.acquire_time.as_deref(), Some(WALL));
    }

    #[test]
    fn seeing_another_holder_ends_our_leadership_at_once() {
        let t0 = Instant::now();
        let mut e = elector("a");
        e.written(held_by("a", "5"), "6".into(), t0);
        e.poll_change(t0);
        e.observe(Some(held_by("b", "9")), t0 + Duration::from_secs(1), WALL);
        assert!(!e.is_leader(t0 + Duration::from_secs(1)));
        assert_eq!(
            e.poll_change(t0 + Duration::from_secs(1)),
            Some(LeaderChange::Stopped)
        );
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let mut e = elector("b");
        let released = LeaseRecord {
            holder: None,
            ..held_by("a", "20")
        };
        let step = e.observe(Some(released), Instant::now(), WALL);
        assert!(matches!(step, LeaseStep::Update { takeover: true, .. }));
    }

    #[test]
    fn release_clears_the_holder_and_ends_the_fence_first() {
        let t0 = Instant::now();
        let mut e = elector("a");
        e.written(held_by("a", "5"), "6".into(), t0);
        let record = e.release(WALL).expect("we hold it");
        assert_eq!(record.holder, None);
        assert_eq!(record.resource_version, "6");
        assert!(!e.is_leader(t0));
        assert_eq!(elector("b").release(WALL), None, "nothing to release");
    }

    #[test]
    fn timings_that_allow_two_leaders_are_rejected() {
        let mut config = ElectorConfig::new("a");
        assert!(config.validate().is_ok());
        config.renew_deadline = config.lease_duration;
        assert!(config.validate().is_err());
        assert!(ElectorConfig::new("").validate().is_err());
    }
}
