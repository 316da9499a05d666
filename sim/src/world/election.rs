//! The election's steps (actors/src/leader.rs): every retry period the process reads its Lease
//! live, the elector decides, the write travels to the server and back like any other (slow,
//! lost, past its deadline), and the outcome opens or closes the fence and makes the shards
//! lead or follow.

use super::{Event, World};
use crate::election::{LEASE_NAME, LEASE_NAMESPACE, elector_config, user_agent};
use loadgen::ApiError;
use loadgen::store::{Subresource, WriteOptions};
use std::time::{Duration, Instant};
use tidemark_engine::{Elector, LeaderChange, LeaseRecord, LeaseStep, ResourceVersion};

/// What became of a Lease write.
#[derive(Clone, Debug)]
pub enum LeaseWriteOutcome {
    /// Written at this resourceVersion.
    Written(String),
    /// Someone wrote first (`409`).
    Conflict,
    /// Not applied or not answered (past its timeout, or the answer lost).
    Failed,
}

impl World {
    /// A new process incarnation's elector; its shards follow until it leads.
    pub(crate) fn start_election(&mut self) {
        self.elector = Elector::new(elector_config(self.epoch));
        self.lease_written = None;
        for shard in &mut self.shards {
            shard.follow();
        }
        let epoch = self.epoch;
        self.after(Duration::ZERO, Event::ElectionRound { epoch });
    }

    /// One round: read the Lease live, decide, send the write.
    pub(crate) fn election_round(&mut self, epoch: u64) {
        if epoch != self.epoch || !self.up {
            return;
        }
        let now = self.process_now();
        let current = self
            .store
            .get(loadgen::Resource::Leases, LEASE_NAMESPACE, LEASE_NAME)
            .and_then(|stored| LeaseRecord::from_lease(&stored.value).ok());
        let wall = tidemark_engine::time::format_micro_time(self.clock.unix_micros());
        match self.elector.observe(current, now, &wall) {
            LeaseStep::Create(record) => self.send_lease(record, true),
            LeaseStep::Update { record, .. } => self.send_lease(record, false),
            LeaseStep::Wait { .. } => {}
        }
        self.align();
        let retry = self.process_span(self.elector.config().retry_period);
        self.after(retry, Event::ElectionRound { epoch });
    }

    fn send_lease(&mut self, record: LeaseRecord, create: bool) {
        let (epoch, sent_at, sent) = (self.epoch, self.process_now(), self.now());
        let latency = self.faults.write_leg(&mut self.rng, sent);
        self.after(
            latency,
            Event::LeaseWriteArrives {
                epoch,
                record,
                create,
                sent_at,
                sent,
            },
        );
    }

    /// A Lease write reaches the server: applied unless its timeout (the retry period, as the
    /// runtime's) has passed, refused on a stale resourceVersion.
    pub(crate) fn lease_write_arrives(
        &mut self,
        epoch: u64,
        record: LeaseRecord,
        create: bool,
        sent_at: Instant,
        sent: Duration,
    ) {
        if let Some(until) = self.held_until(epoch) {
            let held = Event::LeaseWriteArrives {
                epoch,
                record,
                create,
                sent_at,
                sent,
            };
            self.queue.at(until, held);
            return;
        }
        let timeout = elector_config(epoch).retry_period;
        let outcome = if self.now() > sent + timeout {
            LeaseWriteOutcome::Failed
        } else {
            let body = record.to_lease(LEASE_NAMESPACE, LEASE_NAME);
            let ua = user_agent(epoch);
            let written = if create {
                self.store.create(
                    loadgen::Resource::Leases,
                    LEASE_NAMESPACE,
                    body,
                    Some(ua.as_str()),
                )
            } else {
                self.store.update_opts(
                    loadgen::Resource::Leases,
                    LEASE_NAMESPACE,
                    LEASE_NAME,
                    body,
                    Subresource::Main,
                    Some(ua.as_str()),
                    WriteOptions::request(false),
                )
            };
            match written {
                Ok(stored) => LeaseWriteOutcome::Written(stored.rv.to_string()),
                Err(ApiError::Conflict { .. } | ApiError::AlreadyExists { .. }) => {
                    LeaseWriteOutcome::Conflict
                }
                Err(_) => LeaseWriteOutcome::Failed,
            }
        };
        let now = self.now();
        if let LeaseWriteOutcome::Written(rv) = &outcome {
            self.note(format_args!(
                "server: Lease names {} at {rv}",
                record.holder.as_deref().unwrap_or("nobody")
            ));
        }
        let outcome = if self.faults.loses_response(&mut self.rng, now) {
            LeaseWriteOutcome::Failed
        } else {
            outcome
        };
        let latency = self.faults.network(&mut self.rng, now);
        self.after(
            latency,
            Event::LeaseWriteAnswered {
                epoch,
                record,
                outcome,
                sent_at,
            },
        );
    }

    /// A Lease write's answer reaches the elector.
    pub(crate) fn lease_write_answered(
        &mut self,
        epoch: u64,
        record: LeaseRecord,
        outcome: LeaseWriteOutcome,
        sent_at: Instant,
    ) {
        if epoch != self.epoch || !self.up {
            return;
        }
        match outcome {
            LeaseWriteOutcome::Written(version) => {
                self.lease_written = ResourceVersion::parse(&version).ok();
                self.elector.written(record, version, sent_at);
                // The fence closes on its own clock: the shards hear of it then, not at the
                // next round.
                let now = self.process_now();
                if let Some(until) = self.elector.fence_until().filter(|t| *t > now) {
                    let after = self.process_span(until - now) + Duration::from_millis(1);
                    self.after(after, Event::FenceCloses { epoch });
                }
            }
            LeaseWriteOutcome::Conflict => self.elector.conflicted(),
            LeaseWriteOutcome::Failed => {}
        }
        self.align();
    }

    /// Tells the shards of a change of leadership (actors/src/leader.rs `align`).
    pub(crate) fn align(&mut self) {
        let now = self.process_now();
        match self.elector.poll_change(now) {
            Some(LeaderChange::Started) => {
                let revision = self.lease_written;
                let destructive_from = now + self.elector.config().write_deadline();
                let epoch = self.epoch;
                self.note(format_args!("process {epoch} leads"));
                for s in 0..self.shards.len() {
                    self.shards[s].hold_destructive_until(destructive_from);
                    self.shards[s].lead(revision, now);
                    self.pump(s);
                }
            }
            Some(LeaderChange::Stopped) => {
                let epoch = self.epoch;
                self.note(format_args!("process {epoch} stops leading"));
                for shard in &mut self.shards {
                    shard.follow();
                }
            }
            None => {}
        }
    }

    /// Whether process `epoch` may send a write now.
    pub(crate) fn fence_open(&self) -> bool {
        self.elector.is_leader(self.process_now())
    }
}
